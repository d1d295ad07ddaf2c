#include <gtest/gtest.h>

#include "cairn/core/sync_ledger.h"

namespace cairn {
namespace {

TEST(LsnRangeSetTest, NormalisesMergesAndAnswers) {
  LsnRangeSet set({{20, 30}, {1, 5}, {6, 9}, {25, 40}, {50, 49}});
  EXPECT_EQ(set.ranges(), (std::vector<LsnRange>{{1, 9}, {20, 40}}));
  EXPECT_TRUE(set.Contains(1));
  EXPECT_TRUE(set.Contains(9));
  EXPECT_FALSE(set.Contains(10));
  EXPECT_TRUE(set.ContainsAll(20, 40));
  EXPECT_FALSE(set.ContainsAll(8, 20));
  EXPECT_EQ(set.ContiguousFrom(1), 9u);
  EXPECT_EQ(set.ContiguousFrom(10), 9u);
  EXPECT_EQ(set.ContiguousFrom(21), 40u);
  EXPECT_EQ(set.Gaps(45), (std::vector<LsnRange>{{10, 19}, {41, 45}}));
  EXPECT_EQ(set.Gaps(15), (std::vector<LsnRange>{{10, 15}}));
  set.Add(10, 19);
  EXPECT_EQ(set.ranges(), (std::vector<LsnRange>{{1, 40}}));
  EXPECT_TRUE(set.Gaps(40).empty());
  EXPECT_EQ(LsnRangeSet().Gaps(3), (std::vector<LsnRange>{{1, 3}}));
  EXPECT_EQ(LsnRangeSet().ContiguousFrom(1), 0u);
  LsnRangeSet top({{5, UINT64_MAX}, {7, 9}});
  EXPECT_EQ(top.ranges(), (std::vector<LsnRange>{{5, UINT64_MAX}}));
  EXPECT_EQ(top.Gaps(UINT64_MAX), (std::vector<LsnRange>{{1, 4}}));
}

TEST(SyncLaneTest, NamesRoundTrip) {
  for (SyncLane lane : kAllSyncLanes) EXPECT_EQ(*ParseSyncLane(SyncLaneName(lane)), lane);
  EXPECT_TRUE(ParseSyncLane("Live").status().Is(StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace cairn
