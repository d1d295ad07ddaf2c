#include "engine/health/health_board.h"

#include <gtest/gtest.h>

namespace cairn {
namespace {

HealthProblem Problem(std::string key, HealthLevel level, std::string message) {
  HealthProblem p;
  p.key = std::move(key);
  p.level = level;
  p.component = "test";
  p.message = std::move(message);
  return p;
}

TEST(HealthBoardTest, EmptyBoardIsOk) {
  HealthBoard board;
  EngineHealth health = board.Snapshot();
  EXPECT_EQ(health.level, HealthLevel::kOk);
  EXPECT_TRUE(health.problems.empty());
  EXPECT_EQ(HealthLevelName(health.level), "ok");
}

TEST(HealthBoardTest, WorstLevelWinsAndRaisingAgainKeepsTheFirstTime) {
  HealthBoard board;
  board.Raise(Problem("disk.full", HealthLevel::kDegraded, "no space"), 100);
  board.Raise(Problem("catalog.missing", HealthLevel::kFailing, "gone"), 200);
  board.Raise(Problem("disk.full", HealthLevel::kDegraded, "still no space"), 300);
  EngineHealth health = board.Snapshot();
  EXPECT_EQ(health.level, HealthLevel::kFailing);
  ASSERT_EQ(health.problems.size(), 2u);
  EXPECT_EQ(health.problems[0].key, "catalog.missing");
  EXPECT_EQ(health.problems[1].key, "disk.full");
  EXPECT_EQ(health.problems[1].message, "still no space");
  EXPECT_EQ(health.problems[1].since_unix_nanos, 100);

  board.Clear("catalog.missing");
  EXPECT_EQ(board.Snapshot().level, HealthLevel::kDegraded);
  EXPECT_FALSE(board.Has("catalog.missing"));
  EXPECT_TRUE(board.Has("disk.full"));
}

TEST(HealthBoardTest, ClearPrefixForgetsOnlyMatchingKeys) {
  HealthBoard board;
  board.Raise(Problem("period.damaged:a/1.db", HealthLevel::kDegraded, "x"), 1);
  board.Raise(Problem("period.damaged:a/2.db", HealthLevel::kDegraded, "y"), 1);
  board.Raise(Problem("period.quarantined:a/3.db", HealthLevel::kDegraded, "z"), 1);
  board.ClearPrefix("period.damaged:");
  EngineHealth health = board.Snapshot();
  ASSERT_EQ(health.problems.size(), 1u);
  EXPECT_EQ(health.problems[0].key, "period.quarantined:a/3.db");
}

}  // namespace
}  // namespace cairn
