#include <set>

#include "engine_test_util.h"

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
  EXPECT_EQ(std::get<double>(ints->buckets[0].values[0]), 359.0 * 360 / 2);
  EXPECT_EQ(std::get<int64_t>(ints->buckets[0].values[1]), 359);
  q.field = "missing";
  EXPECT_EQ(engine_->Aggregate(q).status().code(), StatusCode::kNotFound);
  q.field = "t";
  q.step = 0;
  EXPECT_EQ(engine_->Aggregate(q).status().code(), StatusCode::kInvalidArgument);
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
