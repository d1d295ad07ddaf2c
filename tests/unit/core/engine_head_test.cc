// The Head alone (head.h): the budget accounting, the latest index per
// series, and taking a seal's records out, on series built by the test.
#include <gtest/gtest.h>

#include "engine/head/head.h"
#include "engine/query/series_snapshot.h"
#include "engine_test_util.h"

namespace cairn::testing {
namespace {

constexpr int64_t kT0 = 1'700'000'000 * kSecond;

ChunkRecord At(int64_t second, double value, int64_t ttl = 0, uint64_t version = 0) {
  ChunkRecord r;
  r.timestamp = kT0 + second * kSecond;
  r.values = {Value{value}};
  r.ttl = ttl;
  r.version = version;
  return r;
}

class HeadTest : public ::testing::Test {
 protected:
  HeadTest() : env_(Env::Default()) {}

  // A new series of table_ (its latest index known: it has no older data).
  Series& AddSeries(const std::string& device, TagMap dimensions, TagMap attributes = {}) {
    auto series = std::make_unique<Series>();
    series->id = next_id_++;
    series->device_id = device;
    series->measure_name = "env";
    series->AddField(table_.schemas, "temperature", FieldType::kDouble);
    series->dimensions = std::move(dimensions);
    series->dimensions_key = EncodeTagMap(series->dimensions);
    series->attributes = std::move(attributes);
    series->latest_known = true;
    Series& raw = *series;
    table_.series.emplace(raw.KeyRef(), std::move(series));
    return raw;
  }

  static size_t Bytes(const Series& s) { return s.head.bytes(); }

  // The latest visible record of every series of `device` whose tags match
  // `tags`, by the index alone, as Engine::Latest's fast path reads it.
  std::vector<ChunkRecord> LatestByTags(const std::string& device, const TagMap& tags, int64_t now) {
    std::vector<ChunkRecord> out;
    for (const auto& [key, series] : table_.series) {
      if (key.device_id != device || !TagsMatch(*series, tags)) continue;
      EXPECT_TRUE(Head::LatestAnswers(*series, now));
      if (std::optional<ChunkRecord> latest = Head::Latest(*series)) out.push_back(*latest);
    }
    return out;
  }

  ManualClockEnv env_;
  TableState table_;
  int64_t next_id_ = 1;
};

TEST_F(HeadTest, CountsEveryEntryAgainstTheBudgetAndReplacesBySameTimestamp) {
  Head head(&env_, /*memory_budget_bytes=*/1 << 20, /*seal_records=*/3);
  Series& a = AddSeries("a", {});
  Series& b = AddSeries("b", {});
  head.Insert(a, At(2, 1.0), 1);
  head.Insert(a, At(1, 2.0), 2);
  head.Insert(b, At(1, 3.0), 3);
  EXPECT_EQ(head.records(), 3u);
  EXPECT_EQ(a.head_bytes, Bytes(a));
  EXPECT_EQ(head.bytes(), Bytes(a) + Bytes(b));
  // Ascending by timestamp whatever the arrival order.
  ASSERT_EQ(a.head.size(), 2u);
  EXPECT_EQ(a.head.lsn(0), 2u);
  EXPECT_EQ(a.head.lsn(1), 1u);

  // A record at a timestamp already held replaces it: one entry, new LSN.
  ChunkRecord wide = At(2, 9.0, 0, 1);
  wide.values.push_back(Value{std::string(200, 'x')});
  head.Insert(a, std::move(wide), 4);
  EXPECT_EQ(head.records(), 3u);
  EXPECT_EQ(a.head.lsn(1), 4u);
  EXPECT_EQ(std::get<std::string>(a.head.Record(1, a.fields()).values[1]), std::string(200, 'x'));
  EXPECT_EQ(head.bytes(), Bytes(a) + Bytes(b));
  EXPECT_FALSE(head.Full(a));
  head.Insert(a, At(3, 1.0), 5);
  EXPECT_TRUE(head.Full(a));

  head.Forget(a);
  EXPECT_EQ(head.records(), 1u);
  EXPECT_EQ(head.bytes(), Bytes(b));
}

TEST_F(HeadTest, OverBudgetSealsTheLargestHeadsUntilHalfTheBudgetIsLeft) {
  Series& small = AddSeries("small", {});
  Series& middle = AddSeries("middle", {});
  Series& large = AddSeries("large", {});
  // Heads of 1, 12 and 60 entries (a head's block grows by a quarter and
  // one entry); their sizes, measured on a head without a budget, set the
  // budgets below.
  const auto fill = [&](Head& head) {
    uint64_t lsn = 1;
    head.Insert(small, At(0, 0), lsn++);
    for (int i = 0; i < 12; ++i) head.Insert(middle, At(i, 0), lsn++);
    for (int i = 0; i < 60; ++i) head.Insert(large, At(i, 0), lsn++);
  };
  const auto empty_all = [&](Head& head) {
    for (Series* s : {&small, &middle, &large}) {
      head.Forget(*s);
      s->head = SeriesHead();
      s->head_bytes = 0;
    }
  };
  size_t small_bytes = 0, middle_bytes = 0;
  {
    Head probe(&env_, SIZE_MAX, 1024);
    fill(probe);
    small_bytes = Bytes(small);
    middle_bytes = Bytes(middle);
    ASSERT_LT(small_bytes, middle_bytes);
    ASSERT_GT(Bytes(large), small_bytes + middle_bytes);
    empty_all(probe);
  }
  {
    // Over budget; leaving the small and the middle head is half of it.
    Head head(&env_, 2 * (small_bytes + middle_bytes), 1024);
    fill(head);
    EXPECT_TRUE(head.OverBudget());
    EXPECT_EQ(head.SealForBudget({&small, &middle, &large}), (std::set<const Series*>{&large}));
    empty_all(head);
  }
  {
    // Half the budget holds the small head alone: the two largest go.
    Head head(&env_, 2 * small_bytes, 1024);
    fill(head);
    EXPECT_EQ(head.SealForBudget({&small, &middle, &large}), (std::set<const Series*>{&middle, &large}));
    empty_all(head);
  }
  {
    Head head(&env_, SIZE_MAX / 2, 1024);
    fill(head);
    EXPECT_FALSE(head.OverBudget());
    EXPECT_TRUE(head.SealForBudget({&small, &middle, &large}).empty());
    empty_all(head);
  }
}

TEST_F(HeadTest, LatestPerSeriesByTagsFollowsTheNewestTimestampAndItsExpiry) {
  Head head(&env_, 1 << 20, 1024);
  Series& north = AddSeries("a", {{"site", "north"}}, {{"owner", "ops"}});
  Series& south = AddSeries("a", {{"site", "south"}});
  Series& other = AddSeries("b", {{"site", "north"}});
  head.Insert(north, At(10, 1.0), 1);
  head.Insert(north, At(5, 2.0), 2);  // older: the latest stays
  head.Insert(south, At(7, 3.0, /*ttl=*/kT0 / kSecond + 100), 3);
  head.Insert(other, At(20, 4.0), 4);
  const int64_t now = kT0 + 50 * kSecond;

  auto latest = LatestByTags("a", {{"site", "north"}}, now);
  ASSERT_EQ(latest.size(), 1u);
  EXPECT_EQ(latest[0].timestamp, kT0 + 10 * kSecond);
  EXPECT_EQ(std::get<double>(latest[0].values[0]), 1.0);
  // An attribute selects too; no tag at all selects each of the device's series.
  EXPECT_EQ(LatestByTags("a", {{"owner", "ops"}}, now).size(), 1u);
  EXPECT_EQ(LatestByTags("a", {}, now).size(), 2u);
  EXPECT_TRUE(LatestByTags("a", {{"site", "east"}}, now).empty());

  // Once the south reading's ttl passes, the index no longer answers for it.
  EXPECT_TRUE(Head::LatestAnswers(south, now));
  EXPECT_FALSE(Head::LatestAnswers(south, kT0 + 101 * kSecond));
  EXPECT_TRUE(Head::LatestAnswers(north, kT0 + 101 * kSecond));
}

TEST_F(HeadTest, ALatestComputedBeforeAWriteIsNotCached) {
  Head head(&env_, 1 << 20, 1024);
  Series& s = AddSeries("a", {});
  s.latest_known = false;  // as after a restart: older data may be sealed
  const uint64_t generation = s.generation;
  head.Insert(s, At(3, 1.0), 1);
  EXPECT_FALSE(Head::LatestAnswers(s, kT0));
  Head::CacheLatest(s, generation, At(1, 0.5));  // computed before the write
  EXPECT_FALSE(Head::LatestAnswers(s, kT0));
  Head::CacheLatest(s, s.generation, At(3, 1.0));
  ASSERT_TRUE(Head::LatestAnswers(s, kT0));
  EXPECT_EQ(Head::Latest(s)->timestamp, kT0 + 3 * kSecond);
  Head::CacheLatest(s, s.generation, std::nullopt);
  EXPECT_TRUE(Head::LatestAnswers(s, kT0));
  EXPECT_FALSE(Head::Latest(s).has_value());
}

TEST_F(HeadTest, RemoveSealedTakesOutWhatTheSealCommittedAndKeepsNewerVersions) {
  Head head(&env_, 1 << 20, 1024);
  Series& s = AddSeries("a", {});
  for (int i = 0; i < 4; ++i) head.Insert(s, At(i, i), static_cast<uint64_t>(i) + 1);
  // The seal works on a copy taken under the lock, as the engine's does.
  std::vector<SealedEntry> taken;
  for (size_t i = 0; i < s.head.size(); ++i) taken.push_back({s.head.timestamp(i), s.head.lsn(i)});
  env_.AdvanceSeconds(5);
  // Meanwhile a newer version of second 1 arrives, and a new second 9.
  head.Insert(s, At(1, 10.0, 0, 1), 5);
  head.Insert(s, At(9, 9.0), 6);
  std::vector<SealedEntry> sealed(taken.rbegin(), taken.rend());  // any order
  head.RemoveSealed(s, sealed);
  ASSERT_EQ(s.head.size(), 2u);
  EXPECT_EQ(s.head.lsn(0), 5u);  // the newer version of second 1 stays
  EXPECT_EQ(s.head.lsn(1), 6u);
  EXPECT_EQ(s.head.version(0), 1u);
  EXPECT_EQ(std::get<double>(s.head.Record(0, s.fields()).values[0]), 10.0);
  EXPECT_EQ(head.records(), 2u);
  EXPECT_EQ(head.bytes(), Bytes(s));
  EXPECT_EQ(s.head_bytes, Bytes(s));
  EXPECT_EQ(s.sealed_max_timestamp, kT0 + 3 * kSecond);
  EXPECT_EQ(s.head_since_monotonic_ns, env_.MonotonicNanos());
}

}  // namespace
}  // namespace cairn::testing
