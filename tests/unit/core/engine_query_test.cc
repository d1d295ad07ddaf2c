#include <filesystem>
#include <set>

#include "chunk/chunk_codec.h"
#include "engine_test_util.h"
#include "storage/env_vfs.h"
#include "storage/period_file.h"

namespace cairn::testing {
namespace {

class EngineQueryTest : public EngineFixture {
 protected:
  // 300 one-second records for device d, measures env#a and env#b, half of
  // them sealed into chunks and half in the head.
  void Load() {
    CreateTable();
    base_ = Now() - 3600 * kSecond;
    std::vector<Record> batch;
    for (int i = 0; i < 300; ++i) {
      batch.push_back(MakeRecord("d", "env#a", base_ + i * kSecond, {{"v", static_cast<double>(i)}}));
      batch.push_back(MakeRecord("d", "env#b", base_ + i * kSecond, {{"v", static_cast<double>(-i)}}));
      if (i == 149) {
        WriteOk(batch);
        batch.clear();
        ASSERT_TRUE(engine_->SealAll().ok());
      }
    }
    WriteOk(batch);
    WriteOk({MakeRecord("d", "other", base_, {{"v", 1.0}})});
  }

  RangeQuery Query() {
    RangeQuery q;
    q.table = "t";
    q.device_id = "d";
    return q;
  }

  int64_t base_ = 0;
};

TEST_F(EngineQueryTest, RangeAscendingDescendingAndPrefix) {
  Load();
  RangeQuery q = Query();
  q.measure_name = "env#a";
  q.limit = 0;
  auto all = engine_->Range(q);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->rows.size(), 300u);
  for (int i = 0; i < 300; ++i) {
    EXPECT_EQ(all->rows[static_cast<size_t>(i)].timestamp, base_ + i * kSecond);
    EXPECT_EQ(std::get<double>(all->rows[static_cast<size_t>(i)].fields[0].value), i);
  }
  q.order = Order::kDescending;
  q.from = base_ + 100 * kSecond;
  q.to = base_ + 200 * kSecond;
  auto desc = engine_->Range(q);
  ASSERT_TRUE(desc.ok());
  ASSERT_EQ(desc->rows.size(), 100u);
  EXPECT_EQ(desc->rows.front().timestamp, base_ + 199 * kSecond);
  EXPECT_EQ(desc->rows.back().timestamp, base_ + 100 * kSecond);

  RangeQuery prefix = Query();
  prefix.measure_prefix = "env#";
  prefix.limit = 0;
  auto both = engine_->Range(prefix);
  ASSERT_TRUE(both.ok());
  ASSERT_EQ(both->rows.size(), 600u);
  EXPECT_EQ(both->rows[0].measure_name, "env#a");  // same timestamp: ordered by measure
  EXPECT_EQ(both->rows[1].measure_name, "env#b");
  RangeQuery every = Query();
  every.limit = 0;
  EXPECT_EQ(engine_->Range(every)->rows.size(), 601u);
}

TEST_F(EngineQueryTest, PagingVisitsEveryRowOnce) {
  Load();
  for (Order order : {Order::kAscending, Order::kDescending}) {
    RangeQuery q = Query();
    q.measure_prefix = "env#";
    q.order = order;
    q.limit = 37;
    std::vector<std::pair<int64_t, std::string>> seen;
    for (int pages = 0; pages < 100; ++pages) {
      auto page = engine_->Range(q);
      ASSERT_TRUE(page.ok()) << page.status().ToString();
      ASSERT_LE(page->rows.size(), 37u);
      for (const RecordRow& r : page->rows) seen.emplace_back(r.timestamp, r.measure_name);
      if (page->next_page_token.empty()) break;
      q.page_token = page->next_page_token;
    }
    ASSERT_EQ(seen.size(), 600u);
    std::set<std::pair<int64_t, std::string>> unique(seen.begin(), seen.end());
    EXPECT_EQ(unique.size(), 600u);
    EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end(), [&](const auto& a, const auto& b) {
      return order == Order::kAscending ? a < b : b < a;
    }));
  }
  RangeQuery bad = Query();
  bad.page_token = "garbage";
  EXPECT_EQ(engine_->Range(bad).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(EngineQueryTest, LatestAndLatestBatch) {
  Load();
  auto latest = engine_->Latest("t", "d");
  ASSERT_TRUE(latest.ok());
  ASSERT_EQ(latest->size(), 3u);
  EXPECT_EQ((*latest)[0].measure_name, "env#a");
  EXPECT_EQ((*latest)[0].timestamp, base_ + 299 * kSecond);
  EXPECT_EQ((*latest)[2].measure_name, "other");
  auto one = engine_->Latest("t", "d", "env#b");
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ(std::get<double>((*one)[0].fields[0].value), -299.0);
  // After a restart the index is rebuilt from sealed chunks and the log.
  ASSERT_TRUE(engine_->SealAll().ok());
  Reopen();
  one = engine_->Latest("t", "d", "env#b");
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].timestamp, base_ + 299 * kSecond);
  WriteOk({Temperature("e", Now(), 5.0)});
  auto batch = engine_->LatestBatch("t", {"e", "nobody", "d"}, "env#a");
  ASSERT_TRUE(batch.ok());
  ASSERT_EQ(batch->size(), 1u);  // e has no env#a; nobody has nothing
  EXPECT_EQ((*batch)[0].device_id, "d");
  batch = engine_->LatestBatch("t", {"e", "d"});
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(batch->size(), 4u);
}

// A limited read decodes the chunks near the end it starts from, not the
// whole period: `latest` after a restart (nothing cached) of a device with
// hundreds of sealed chunks decodes a handful. A late write of the newest
// timestamp, sealed into a chunk that starts hours earlier, must still win.
TEST_F(EngineQueryTest, LimitedReadsDecodeOnlyTheChunksNearTheirEnd) {
  options_.seal_records = 100;
  Reopen();
  CreateTable();
  constexpr int kRecords = 20'000;
  const int64_t base = Now() - (kRecords + 60) * kSecond;
  std::vector<Record> batch;
  for (int i = 0; i < kRecords; ++i) {
    batch.push_back(MakeRecord("d", "env", base + i * kSecond, {{"v", static_cast<double>(i)}}));
    if (batch.size() == 1000) {
      WriteOk(batch);
      batch.clear();
    }
  }
  ASSERT_TRUE(engine_->SealAll().ok());
  WriteOk({MakeRecord("d", "env", base, {{"v", -1.0}}, 1),
           MakeRecord("d", "env", base + (kRecords - 1) * kSecond, {{"v", -2.0}}, 1)});
  ASSERT_TRUE(engine_->SealAll().ok());
  Reopen();

  const uint64_t before = engine_->Stats().chunks_decoded;
  auto latest = engine_->Latest("t", "d", "env");
  ASSERT_TRUE(latest.ok()) << latest.status().ToString();
  ASSERT_EQ(latest->size(), 1u);
  EXPECT_EQ((*latest)[0].timestamp, base + (kRecords - 1) * kSecond);
  EXPECT_EQ(std::get<double>((*latest)[0].fields[0].value), -2.0);
  const uint64_t decoded = engine_->Stats().chunks_decoded - before;
  EXPECT_LE(decoded, 8u) << "of about " << kRecords / 100 << " chunks";

  RangeQuery q = Query();
  q.limit = 10;
  for (Order order : {Order::kDescending, Order::kAscending}) {
    q.order = order;
    auto rows = engine_->Range(q);
    ASSERT_TRUE(rows.ok()) << rows.status().ToString();
    ASSERT_EQ(rows->rows.size(), 10u);
    for (int k = 0; k < 10; ++k) {
      const int i = order == Order::kDescending ? kRecords - 1 - k : k;
      const double want = i == 0 ? -1.0 : i == kRecords - 1 ? -2.0 : static_cast<double>(i);
      EXPECT_EQ(rows->rows[static_cast<size_t>(k)].timestamp, base + i * kSecond);
      EXPECT_EQ(std::get<double>(rows->rows[static_cast<size_t>(k)].fields[0].value), want);
    }
  }
  EXPECT_LE(engine_->Stats().chunks_decoded - before, 40u);
}

TEST_F(EngineQueryTest, TtlHidesRecordsFromTheMomentItPasses) {
  CreateTable();
  const int64_t now = Now();
  const int64_t now_s = now / kSecond;
  WriteOk({MakeRecord("d", "m", now - 20 * kSecond, {{"v", 1.0}}),
           MakeRecord("d", "m", now - 10 * kSecond, {{"v", 2.0}}, 0, now_s + 60)});
  auto latest = engine_->Latest("t", "d", "m");
  ASSERT_EQ(latest->size(), 1u);
  EXPECT_EQ(std::get<double>((*latest)[0].fields[0].value), 2.0);
  clock_.AdvanceSeconds(59);
  EXPECT_TRUE(engine_->Get("t", "d", "m", now - 10 * kSecond)->has_value());
  clock_.AdvanceSeconds(1);
  EXPECT_FALSE(engine_->Get("t", "d", "m", now - 10 * kSecond)->has_value());
  latest = engine_->Latest("t", "d", "m");
  ASSERT_EQ(latest->size(), 1u);
  EXPECT_EQ(std::get<double>((*latest)[0].fields[0].value), 1.0);
  ASSERT_TRUE(engine_->SealAll().ok());
  RangeQuery q;
  q.table = "t";
  q.device_id = "d";
  EXPECT_EQ(engine_->Range(q)->rows.size(), 1u);
}

TEST_F(EngineQueryTest, DefaultTtlCountsFromTheReadingTime) {
  TableOptions options;
  options.default_ttl_seconds = 100;
  CreateTable("t", options);
  const int64_t ts = Now() - 50 * kSecond;
  WriteOk({Temperature("d", ts, 1.0)});
  auto row = engine_->Get("t", "d", "env", ts);
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_EQ((*row)->ttl, ts / kSecond + 100);
  clock_.AdvanceSeconds(50);
  EXPECT_FALSE(engine_->Get("t", "d", "env", ts)->has_value());
}

TEST_F(EngineQueryTest, AggregatesAgreeBetweenStatisticsAndDecoding) {
  CreateTable();
  const int64_t base = PeriodStart(Period::kDay, Now()) - 86400 * kSecond;  // yesterday, one whole day
  options_.seal_records = 180;  // chunks of 30 minutes: two per hour bucket
  Reopen();
  std::vector<Record> batch;
  for (int i = 0; i < 8640; ++i) {
    batch.push_back(MakeRecord("d", "env", base + i * 10 * kSecond,
                               {{"t", 20.0 + (i % 100) * 0.01}, {"n", static_cast<int64_t>(i)}}));
  }
  WriteOk(batch);
  AggregateQuery q;
  q.table = "t";
  q.device_id = "d";
  q.measure_name = "env";
  q.field = "t";
  q.from = base;
  q.to = base + 86400 * kSecond;
  q.step = 3600 * kSecond;
  q.functions = {AggregateFunction::kMin, AggregateFunction::kMax,   AggregateFunction::kAvg,
                 AggregateFunction::kSum, AggregateFunction::kCount, AggregateFunction::kFirst,
                 AggregateFunction::kLast};
  auto from_head = engine_->Aggregate(q);
  ASSERT_TRUE(from_head.ok()) << from_head.status().ToString();
  ASSERT_EQ(from_head->buckets.size(), 24u);
  ASSERT_TRUE(engine_->SealAll().ok());
  auto from_chunks = engine_->Aggregate(q);
  ASSERT_TRUE(from_chunks.ok());
  ASSERT_EQ(from_chunks->buckets.size(), 24u);
  for (size_t b = 0; b < 24; ++b) {
    const AggregateBucket& x = from_head->buckets[b];
    const AggregateBucket& y = from_chunks->buckets[b];
    EXPECT_EQ(x.start, base + static_cast<int64_t>(b) * 3600 * kSecond);
    EXPECT_EQ(x.count, 360u);
    EXPECT_EQ(y.count, 360u);
    EXPECT_EQ(std::get<double>(x.values[0]), std::get<double>(y.values[0]));
    EXPECT_EQ(std::get<double>(x.values[1]), std::get<double>(y.values[1]));
    EXPECT_NEAR(std::get<double>(x.values[2]), std::get<double>(y.values[2]), 1e-9);
    EXPECT_NEAR(std::get<double>(x.values[3]), std::get<double>(y.values[3]), 1e-6);
    EXPECT_EQ(std::get<int64_t>(x.values[4]), 360);
    EXPECT_EQ(std::get<double>(x.values[5]), std::get<double>(y.values[5]));
    EXPECT_EQ(std::get<double>(x.values[6]), std::get<double>(y.values[6]));
  }
  // Overwrite one reading with a higher version: the bucket must reflect it.
  WriteOk({MakeRecord("d", "env", base, {{"t", 99.0}, {"n", int64_t{0}}}, 1)});
  auto replaced = engine_->Aggregate(q);
  ASSERT_TRUE(replaced.ok());
  EXPECT_EQ(std::get<double>(replaced->buckets[0].values[1]), 99.0);
  EXPECT_EQ(replaced->buckets[0].count, 360u);
  q.field = "n";
  q.functions = {AggregateFunction::kSum, AggregateFunction::kMax};
  auto ints = engine_->Aggregate(q);
  ASSERT_TRUE(ints.ok());
  EXPECT_EQ(std::get<int64_t>(ints->buckets[0].values[0]), 359 * 360 / 2);
  EXPECT_EQ(std::get<int64_t>(ints->buckets[0].values[1]), 359);
  q.field = "missing";
  EXPECT_EQ(engine_->Aggregate(q).status().code(), StatusCode::kNotFound);
  q.field = "t";
  q.step = 0;
  EXPECT_EQ(engine_->Aggregate(q).status().code(), StatusCode::kInvalidArgument);
}

constexpr int64_t kInt64Max = INT64_MAX;
constexpr int64_t kInt64Min = INT64_MIN;
constexpr int64_t k2p53 = int64_t{1} << 53;

AggregateQuery IntegerQuery(int64_t from, int64_t to, int64_t step) {
  AggregateQuery q;
  q.table = "t";
  q.device_id = "d";
  q.measure_name = "m";
  q.field = "n";
  q.from = from;
  q.to = to;
  q.step = step;
  q.functions = {AggregateFunction::kSum, AggregateFunction::kAvg, AggregateFunction::kCount,
                 AggregateFunction::kMin, AggregateFunction::kMax, AggregateFunction::kFirst,
                 AggregateFunction::kLast};
  return q;
}

// Int64 sums and means are exact wherever the readings are: in the head,
// in sealed chunks answered from their statistics, or decoded, across two
// period files. Through doubles, 2^53 + 1 would read as 2^53 and the
// int64 extremes would not cancel.
TEST_F(EngineQueryTest, IntegerAggregatesAreExactInHeadChunksAndPeriodFiles) {
  CreateTable();
  const int64_t today = PeriodStart(Period::kDay, Now());
  const int64_t day_a = today - 2 * 86400 * kSecond, day_b = today - 86400 * kSecond;
  const auto put = [&](int64_t at, int64_t n) { WriteOk({MakeRecord("d", "m", at, {{"n", n}})}); };
  // Day A sums to 2^53 + 1 (the extremes cancel), day B too, today's head adds 1.
  put(day_a + 1 * kSecond, k2p53 + 1);
  put(day_a + 2 * kSecond, 1);
  put(day_a + 3 * kSecond, kInt64Max);
  put(day_a + 4 * kSecond, kInt64Min);
  put(day_b + 1 * kSecond, -(k2p53 + 1));
  put(day_b + 2 * kSecond, k2p53 + 1);
  put(day_b + 3 * kSecond, k2p53 + 1);
  const int64_t to = Now() + kSecond;
  const auto check_whole = [&](const char* where) {
    SCOPED_TRACE(where);
    auto whole = engine_->Aggregate(IntegerQuery(day_a, to, to - day_a));
    ASSERT_TRUE(whole.ok()) << whole.status().ToString();
    ASSERT_EQ(whole->buckets.size(), 1u);
    const std::vector<Value>& v = whole->buckets[0].values;
    EXPECT_EQ(v[0], Value(int64_t{18014398509481987}));  // 2^54 + 3; as a double it would be ...988
    EXPECT_EQ(v[1], Value(2251799813685248.5));          // (2^54 + 3) / 8, rounded once
    EXPECT_EQ(v[2], Value(int64_t{8}));
    EXPECT_EQ(v[3], Value(kInt64Min));
    EXPECT_EQ(v[4], Value(kInt64Max));
    EXPECT_EQ(v[5], Value(k2p53 + 1));
    EXPECT_EQ(v[6], Value(int64_t{1}));

    auto daily = engine_->Aggregate(IntegerQuery(day_a, today, 86400 * kSecond));
    ASSERT_TRUE(daily.ok()) << daily.status().ToString();
    ASSERT_EQ(daily->buckets.size(), 2u);
    for (const AggregateBucket& bucket : daily->buckets) {
      EXPECT_EQ(bucket.values[0], Value(k2p53 + 1)) << bucket.start;
    }
    EXPECT_EQ(daily->buckets[0].values[1], Value(2251799813685248.0));  // (2^53 + 1) / 4: a tie, to even
    EXPECT_EQ(daily->buckets[1].values[1], Value(3002399751580331.0));  // (2^53 + 1) / 3, exact
    EXPECT_EQ(daily->buckets[1].values[3], Value(-(k2p53 + 1)));
    EXPECT_EQ(daily->buckets[1].values[4], Value(k2p53 + 1));  // not tied with 2^53 by doubles
  };
  put(today + kSecond, 1);
  check_whole("everything in the head");
  ASSERT_TRUE(engine_->SealAll().ok());
  check_whole("two period files, answered from chunk statistics");
  put(day_a + 5 * kSecond, 0);  // a head record inside day A's chunk: that chunk is decoded
  auto mixed = engine_->Aggregate(IntegerQuery(day_a, to, to - day_a));
  ASSERT_TRUE(mixed.ok()) << mixed.status().ToString();
  EXPECT_EQ(mixed->buckets[0].values[0], Value(int64_t{18014398509481987}));
  EXPECT_EQ(mixed->buckets[0].values[2], Value(int64_t{9}));
  ASSERT_TRUE(engine_->SealAll().ok());
  auto resealed = engine_->Aggregate(IntegerQuery(day_a, to, to - day_a));
  ASSERT_TRUE(resealed.ok()) << resealed.status().ToString();
  EXPECT_EQ(resealed->buckets[0].values[0], Value(int64_t{18014398509481987}));
}

// A sum that leaves int64 is an error naming its bucket; the mean, count
// and the other functions of the same buckets stay exact.
TEST_F(EngineQueryTest, IntegerSumOverflowIsReportedWithItsBucket) {
  CreateTable();
  const int64_t base = PeriodStart(Period::kDay, Now()) - 86400 * kSecond;
  WriteOk({MakeRecord("d", "m", base, {{"n", kInt64Max}}),
           MakeRecord("d", "m", base + kSecond, {{"n", int64_t{1}}}),
           MakeRecord("d", "m", base + 3600 * kSecond, {{"n", kInt64Min}}),
           MakeRecord("d", "m", base + 3601 * kSecond, {{"n", int64_t{-1}}})});
  for (const bool sealed : {false, true}) {
    SCOPED_TRACE(sealed ? "sealed" : "head");
    if (sealed) {
      ASSERT_TRUE(engine_->SealAll().ok());
    }
    AggregateQuery q = IntegerQuery(base, base + 7200 * kSecond, 3600 * kSecond);
    auto overflow = engine_->Aggregate(q);
    ASSERT_FALSE(overflow.ok());
    EXPECT_EQ(overflow.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(overflow.status().message().find("sum overflows int64 in the bucket starting at " +
                                               std::to_string(base) + " ns"),
              std::string::npos)
        << overflow.status().ToString();
    EXPECT_NE(overflow.status().message().find("9223372036854775808"), std::string::npos);
    q.from = base + 3600 * kSecond;  // the negative bucket alone
    overflow = engine_->Aggregate(q);
    ASSERT_FALSE(overflow.ok());
    EXPECT_NE(overflow.status().message().find("-9223372036854775809"), std::string::npos)
        << overflow.status().ToString();
    q.from = base;
    q.functions = {AggregateFunction::kAvg, AggregateFunction::kCount, AggregateFunction::kMax};
    auto rest = engine_->Aggregate(q);
    ASSERT_TRUE(rest.ok()) << rest.status().ToString();
    ASSERT_EQ(rest->buckets.size(), 2u);
    EXPECT_EQ(rest->buckets[0].values[0], Value(4611686018427387904.0));   // 2^63 / 2
    EXPECT_EQ(rest->buckets[1].values[0], Value(-4611686018427387904.0));  // (-2^63 - 1) / 2, rounded
    EXPECT_EQ(rest->buckets[0].values[1], Value(int64_t{2}));
    EXPECT_EQ(rest->buckets[0].values[2], Value(kInt64Max));
  }
}

// Many extreme values over many sealed chunks: the statistics carry exact
// sums, and the totals cancel to a small number.
TEST_F(EngineQueryTest, ManyExtremeIntegersSumExactlyOverManyChunks) {
  CreateTable();
  options_.seal_records = 97;
  Reopen();
  const int64_t base = PeriodStart(Period::kDay, Now()) - 86400 * kSecond;
  std::vector<Record> batch;
  for (int i = 0; i < 10000; ++i) {
    batch.push_back(MakeRecord("d", "m", base + i * kSecond, {{"n", i % 2 == 0 ? kInt64Max : kInt64Min}}));
  }
  batch.push_back(MakeRecord("d", "m", base + 10000 * kSecond, {{"n", int64_t{1}}}));
  WriteOk(batch);  // 5000 * (2^63 - 1) - 5000 * 2^63 + 1 = -4999
  ASSERT_TRUE(engine_->SealAll().ok());
  auto result = engine_->Aggregate(IntegerQuery(base, base + 86400 * kSecond, 86400 * kSecond));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(result->buckets.size(), 1u);
  EXPECT_EQ(result->buckets[0].values[0], Value(int64_t{-4999}));
  EXPECT_EQ(result->buckets[0].values[1], Value(-4999.0 / 10001.0));
  EXPECT_EQ(result->buckets[0].values[2], Value(int64_t{10001}));
}

// A chunk sealed by a release before exact int64 sums carries version 1
// statistics, whose int64 sum is a double. Made here by rewriting a sealed
// chunk's statistics as such a release wrote them: sum and avg decode the
// chunk and stay exact; count and max still come from the statistics.
TEST_F(EngineQueryTest, Version1ChunkStatisticsAreNotTrustedForIntegerSums) {
  CreateTable();
  const int64_t day = PeriodStart(Period::kDay, Now()) - 86400 * kSecond;
  WriteOk({MakeRecord("d", "m", day + kSecond, {{"n", k2p53 + 1}}),
           MakeRecord("d", "m", day + 2 * kSecond, {{"n", int64_t{1}}})});
  ASSERT_TRUE(engine_->SealAll().ok());
  ASSERT_TRUE(engine_->Close().ok());
  engine_.reset();
  std::string path;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(dir_.path()) / "t")) {
    if (entry.path().extension() == ".db") path = entry.path().string();
  }
  ASSERT_FALSE(path.empty());
  {
    const std::string vfs = "cairn-test-v1-stats";
    ASSERT_TRUE(RegisterEnvVfs(Env::Default(), vfs).ok());
    auto file = PeriodFile::OpenWritable(Env::Default(), vfs, path, "t", Period::kDay, day, 256);
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    auto series = (*file)->ListSeries();
    ASSERT_TRUE(series.ok() && series->size() == 1);
    auto chunks = (*file)->ReadChunks(series->front().series_id, INT64_MIN, INT64_MAX, /*with_data=*/true);
    ASSERT_TRUE(chunks.ok() && chunks->size() == 1);
    ChunkRow row = chunks->front();
    auto stats = DecodeChunkStats(row.stats, row.fields);
    ASSERT_TRUE(stats.ok() && stats->fields[0].integer_sum.has_value());
    stats->fields[0].integer_sum.reset();
    stats->fields[0].sum = static_cast<double>(k2p53 + 1) + 1.0;  // what version 1 stored: 2^53
    row.stats = EncodeChunkStats(*stats, row.fields);
    ASSERT_EQ(row.stats[0], 1) << "version 1 statistics";
    std::vector<ChunkRow> added = {row};
    ASSERT_TRUE((*file)->ReplaceChunks({{row.series_id, row.start_ns, row.seq}}, {}, added).ok());
    ASSERT_TRUE((*file)->Close().ok());
    file->reset();
    ASSERT_TRUE(UnregisterEnvVfs(vfs).ok());
  }
  Open();
  auto result = engine_->Aggregate(IntegerQuery(day, day + 86400 * kSecond, 86400 * kSecond));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(result->buckets.size(), 1u);
  EXPECT_EQ(result->buckets[0].values[0], Value(k2p53 + 2));
  EXPECT_EQ(result->buckets[0].values[1], Value(4503599627370497.0));  // (2^53 + 2) / 2
  EXPECT_EQ(result->buckets[0].values[2], Value(int64_t{2}));
  EXPECT_EQ(result->buckets[0].values[4], Value(k2p53 + 1));
}

TEST_F(EngineQueryTest, ListDevicesAndMeasures) {
  CreateTable();
  Record a = MakeRecord("d1", "env", Now(), {{"t", 1.0}, {"ok", true}});
  a.dimensions = {{"site", "north"}};
  WriteOk({a, MakeRecord("d2", "env", Now(), {{"t", 2.0}, {"label", std::string("x")}}),
           MakeRecord("d2", "power", Now(), {{"watts", int64_t{5}}})});
  auto devices = engine_->ListDevices("t");
  ASSERT_TRUE(devices.ok());
  ASSERT_EQ(devices->size(), 2u);
  EXPECT_EQ((*devices)[1].measures, (std::vector<std::string>{"env", "power"}));
  auto measures = engine_->ListMeasures("t");
  ASSERT_TRUE(measures.ok());
  ASSERT_EQ(measures->size(), 2u);
  const MeasureInfo& env = (*measures)[0];
  EXPECT_EQ(env.devices, 2u);
  EXPECT_EQ(env.fields.size(), 3u);
  EXPECT_EQ(env.fields.at("label"), FieldType::kString);
  EXPECT_EQ(env.fields.at("ok"), FieldType::kBool);
  Reopen();
  measures = engine_->ListMeasures("t");
  EXPECT_EQ((*measures)[0].fields.size(), 3u);
  EXPECT_EQ((*measures)[1].fields.at("watts"), FieldType::kInt64);
}

}  // namespace
}  // namespace cairn::testing
