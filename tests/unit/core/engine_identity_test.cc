// Series identity (DESIGN §3): the tags other than the device are part of a
// series' identity, a table's declared attributes are metadata, and a data
// directory from catalog format 1 migrates on open.
#include <cstdlib>

#include <gtest/gtest.h>

#include "engine_test_util.h"

namespace cairn::testing {
namespace {

Record Tagged(const std::string& device, const std::string& measure, int64_t ts, std::vector<Field> fields,
              TagMap tags, uint64_t version = 0) {
  Record r = MakeRecord(device, measure, ts, std::move(fields), version);
  r.dimensions = std::move(tags);
  return r;
}

class EngineIdentityTest : public EngineFixture {
 protected:
  RangeResult RangeOf(const std::string& device, TagMap tags = {}, const std::string& measure = "") {
    RangeQuery q;
    q.table = "t";
    q.device_id = device;
    q.measure_name = measure;
    q.tags = std::move(tags);
    q.limit = 0;
    Result<RangeResult> r = engine_->Range(q);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : RangeResult{};
  }

  // Every reading of the table's two-sensor setup is where it belongs.
  void ExpectTwoSensors(int64_t t0) {
    RangeResult all = RangeOf("gw1");
    ASSERT_EQ(all.rows.size(), 4u);
    // Ordered by time, then dimensions.
    EXPECT_EQ(all.rows[0].dimensions, (TagMap{{"site", "a"}}));
    EXPECT_EQ(all.rows[1].dimensions, (TagMap{{"site", "b"}}));
    EXPECT_EQ(std::get<double>(all.rows[0].fields[0].value), 1.0);
    EXPECT_EQ(std::get<double>(all.rows[1].fields[0].value), 2.0);
    EXPECT_EQ(all.rows[2].timestamp, t0 + kSecond);
    RangeResult b = RangeOf("gw1", {{"site", "b"}});
    ASSERT_EQ(b.rows.size(), 2u);
    EXPECT_EQ(std::get<double>(b.rows[1].fields[0].value), 4.0);
    Result<std::optional<RecordRow>> got = engine_->Get("t", "gw1", "env", t0, {{"site", "a"}});
    ASSERT_TRUE(got.ok() && got->has_value());
    EXPECT_EQ(std::get<double>((*got)->fields[0].value), 1.0);
    got = engine_->Get("t", "gw1", "env", t0);  // no series without dimensions
    ASSERT_TRUE(got.ok());
    EXPECT_FALSE(got->has_value());
    Result<std::vector<RecordRow>> latest = engine_->Latest("t", "gw1");
    ASSERT_TRUE(latest.ok());
    ASSERT_EQ(latest->size(), 2u);
    EXPECT_EQ(std::get<double>((*latest)[0].fields[0].value), 3.0);
    EXPECT_EQ(std::get<double>((*latest)[1].fields[0].value), 4.0);
  }
};

TEST_F(EngineIdentityTest, ReadingsToldApartByATagAreTwoSeries) {
  CreateTable();
  const int64_t t0 = Now();
  WriteResult w = WriteOk({Tagged("gw1", "env", t0, {{"t", 1.0}}, {{"site", "a"}}),
                           Tagged("gw1", "env", t0, {{"t", 2.0}}, {{"site", "b"}}),
                           Tagged("gw1", "env", t0 + kSecond, {{"t", 3.0}}, {{"site", "a"}}),
                           Tagged("gw1", "env", t0 + kSecond, {{"t", 4.0}}, {{"site", "b"}})});
  EXPECT_EQ(w.stored, 4u);
  EXPECT_EQ(w.duplicates, 0u);
  ExpectTwoSensors(t0);
  EXPECT_EQ(engine_->Stats().series, 2u);
  // The same reading again is a duplicate of its own series only.
  w = WriteOk({Tagged("gw1", "env", t0, {{"t", 1.0}}, {{"site", "a"}})});
  EXPECT_EQ(w.duplicates, 1u);

  Reopen();  // replayed from the log
  ExpectTwoSensors(t0);
  ASSERT_TRUE(engine_->SealAll().ok());
  Reopen();  // read from the period file
  ExpectTwoSensors(t0);
  auto measures = engine_->ListMeasures("t");
  ASSERT_TRUE(measures.ok());
  ASSERT_EQ(measures->size(), 1u);
  EXPECT_EQ((*measures)[0].series, 2u);
  EXPECT_EQ((*measures)[0].devices, 1u);
  EXPECT_EQ((*measures)[0].dimensions, (std::set<std::string>{"site"}));
  auto devices = engine_->ListDevices("t");
  ASSERT_TRUE(devices.ok());
  EXPECT_EQ((*devices)[0].measures, (std::vector<std::string>{"env"}));
}

TEST_F(EngineIdentityTest, ALostCatalogIsRebuiltWithEachSeriesDimensions) {
  CreateTable();
  const int64_t t0 = Now();
  WriteOk({Tagged("gw1", "env", t0, {{"t", 1.0}}, {{"site", "a"}}),
           Tagged("gw1", "env", t0, {{"t", 2.0}}, {{"site", "b"}}),
           Tagged("gw1", "env", t0 + kSecond, {{"t", 3.0}}, {{"site", "a"}}),
           Tagged("gw1", "env", t0 + kSecond, {{"t", 4.0}}, {{"site", "b"}})});
  ASSERT_TRUE(engine_->SealAll().ok());
  ASSERT_TRUE(engine_->Close().ok());
  for (const char* file : {"catalog.db", "catalog.db-wal", "catalog.db-shm"}) {
    (void)Env::Default()->RemoveFile(dir_.PathOf(file));
  }
  Open();
  EXPECT_TRUE(recovery_.catalog_rebuilt);
  ExpectTwoSensors(t0);
  // New writes with the same tags land in the rebuilt series.
  WriteResult w = WriteOk({Tagged("gw1", "env", t0, {{"t", 2.0}}, {{"site", "b"}})});
  EXPECT_EQ(w.duplicates, 1u);
  EXPECT_EQ(engine_->Stats().series, 2u);
}

TEST_F(EngineIdentityTest, AttributesAreMetadataThatDoesNotSplitSeries) {
  TableOptions options;
  options.attributes = {"firmware"};
  CreateTable("t", options);
  const int64_t t0 = Now();
  WriteOk({Tagged("gw1", "env", t0, {{"t", 1.0}}, {{"site", "a"}, {"firmware", "1.2"}})});
  WriteOk({Tagged("gw1", "env", t0 + kSecond, {{"t", 2.0}}, {{"site", "a"}, {"firmware", "1.3"}})});
  EXPECT_EQ(engine_->Stats().series, 1u);
  RangeResult all = RangeOf("gw1");
  ASSERT_EQ(all.rows.size(), 2u);
  for (const RecordRow& row : all.rows) {
    EXPECT_EQ(row.dimensions, (TagMap{{"site", "a"}}));
    EXPECT_EQ(row.attributes, (TagMap{{"firmware", "1.3"}}));  // latest write wins
  }
  EXPECT_EQ(RangeOf("gw1", {{"firmware", "1.3"}}).rows.size(), 2u);
  EXPECT_TRUE(RangeOf("gw1", {{"firmware", "1.2"}}).rows.empty());
  // A write without the attribute leaves it as it is.
  WriteOk({Tagged("gw1", "env", t0 + 2 * kSecond, {{"t", 3.0}}, {{"site", "a"}})});
  Reopen();
  all = RangeOf("gw1");
  ASSERT_EQ(all.rows.size(), 3u);
  EXPECT_EQ(all.rows[2].attributes, (TagMap{{"firmware", "1.3"}}));
  Result<TableInfo> table = engine_->GetTable("t");
  ASSERT_TRUE(table.ok());
  EXPECT_EQ(table->options.attributes, (std::set<std::string>{"firmware"}));
  options.attributes = {std::string("bad\nname")};
  EXPECT_EQ(engine_->CreateTable("u", options).code(), StatusCode::kInvalidArgument);
}

TEST_F(EngineIdentityTest, PagesContinueAcrossSeriesWithEqualTimestamps) {
  CreateTable();
  const int64_t t0 = Now();
  std::vector<Record> records;
  for (int i = 0; i < 5; ++i) {
    for (const char* site : {"a", "b", "c"}) {
      records.push_back(Tagged("gw1", "env", t0 + i * kSecond, {{"t", double(i)}}, {{"site", site}}));
    }
  }
  WriteOk(records);
  for (Order order : {Order::kAscending, Order::kDescending}) {
    RangeQuery q;
    q.table = "t";
    q.device_id = "gw1";
    q.order = order;
    q.limit = 2;
    std::vector<std::pair<int64_t, std::string>> seen;
    for (int page = 0; page < 20; ++page) {
      Result<RangeResult> r = engine_->Range(q);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      for (const RecordRow& row : r->rows) seen.emplace_back(row.timestamp, row.dimensions.at("site"));
      if (r->next_page_token.empty()) break;
      q.page_token = r->next_page_token;
    }
    ASSERT_EQ(seen.size(), 15u);
    std::set<std::pair<int64_t, std::string>> unique(seen.begin(), seen.end());
    EXPECT_EQ(unique.size(), 15u);
  }
}

TEST_F(EngineIdentityTest, AggregatesSpanTheMatchingSeriesOrGroupThemByTag) {
  CreateTable();
  const int64_t t0 = Now() - Now() % (60 * kSecond);
  WriteOk({Tagged("gw1", "env", t0, {{"n", int64_t{1}}}, {{"site", "a"}, {"rack", "1"}}),
           Tagged("gw1", "env", t0, {{"n", int64_t{10}}}, {{"site", "b"}, {"rack", "1"}}),
           Tagged("gw1", "env", t0 + kSecond, {{"n", int64_t{100}}}, {{"site", "b"}, {"rack", "2"}}),
           Tagged("gw1", "env", t0 + 2 * kSecond, {{"n", 2.5}}, {{"site", "c"}})});
  AggregateQuery q;
  q.table = "t";
  q.device_id = "gw1";
  q.measure_name = "env";
  q.field = "n";
  q.from = t0;
  q.to = t0 + 60 * kSecond;
  q.step = 60 * kSecond;
  q.functions = {AggregateFunction::kSum, AggregateFunction::kCount};
  // n is int64 in three series and double in the fourth: the query must narrow.
  EXPECT_EQ(engine_->Aggregate(q).status().code(), StatusCode::kInvalidArgument);
  q.tags = {{"site", "b"}};
  Result<AggregateResult> b = engine_->Aggregate(q);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_EQ(b->buckets.size(), 1u);
  EXPECT_EQ(std::get<int64_t>(b->buckets[0].values[0]), 110);
  q.tags = {{"rack", "1"}};
  q.group_by = {"site"};
  Result<AggregateResult> grouped = engine_->Aggregate(q);
  ASSERT_TRUE(grouped.ok()) << grouped.status().ToString();
  ASSERT_EQ(grouped->buckets.size(), 2u);
  EXPECT_EQ(grouped->buckets[0].group, (TagMap{{"site", "a"}}));
  EXPECT_EQ(std::get<int64_t>(grouped->buckets[0].values[0]), 1);
  EXPECT_EQ(grouped->buckets[1].group, (TagMap{{"site", "b"}}));
  EXPECT_EQ(std::get<int64_t>(grouped->buckets[1].values[0]), 10);
  q.tags = {{"site", "nowhere"}};
  Result<AggregateResult> none = engine_->Aggregate(q);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->buckets.empty());
}

// A data directory as cairnd 0.1.0 left it (tests/fixtures/
// make_datadir_catalog_v1.sh): its catalog is migrated, each series keeps
// its readings and takes the tags it last stored as its dimensions.
TEST(EngineCatalogMigrationTest, AVersion1DataDirectoryOpensWithEveryReading) {
  ScopedTempDir dir;
  const std::string command = std::string("tar -xzf ") + CAIRN_TEST_FIXTURES +
                              "/datadir_catalog_v1.tar.gz -C " + dir.path();
  ASSERT_EQ(std::system(command.c_str()), 0);
  EngineOptions options;
  options.maintenance_interval_ms = 0;
  RecoveryReport report;
  auto opened = Engine::Open(Env::Default(), dir.PathOf("data"), options, &report);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Engine& engine = **opened;
  const int64_t base = 1763625600000000000;
  RangeQuery q;
  q.table = "plant";
  q.device_id = "gw1";
  q.limit = 0;
  Result<RangeResult> gw1 = engine.Range(q);
  ASSERT_TRUE(gw1.ok()) << gw1.status().ToString();
  ASSERT_EQ(gw1->rows.size(), 9u);  // 6 sealed env readings, 3 power readings from the log
  size_t env = 0, power = 0;
  for (const RecordRow& row : gw1->rows) {
    if (row.measure_name == "env") {
      EXPECT_EQ(row.dimensions, (TagMap{{"site", "a"}}));
      EXPECT_EQ(row.timestamp, base + static_cast<int64_t>(env) * 60 * kSecond);
      ++env;
    } else {
      EXPECT_EQ(row.measure_name, "power");
      EXPECT_EQ(row.dimensions, (TagMap{{"phase", "l1"}}));
      ++power;
    }
  }
  EXPECT_EQ(env, 6u);
  EXPECT_EQ(power, 3u);
  q.device_id = "gw2";
  Result<RangeResult> gw2 = engine.Range(q);
  ASSERT_TRUE(gw2.ok());
  ASSERT_EQ(gw2->rows.size(), 2u);
  EXPECT_TRUE(gw2->rows[0].dimensions.empty());

  // The same tags keep writing into the migrated series; other tags start one.
  Record again = Tagged("gw1", "env", base, {{"t", 20.5}, {"n", int64_t{0}}}, {{"site", "a"}});
  Record other = Tagged("gw1", "env", base, {{"t", 99.0}}, {{"site", "b"}});
  Result<WriteResult> w = engine.Write("plant", {again, other});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->duplicates, 1u);
  EXPECT_EQ(w->stored, 1u);
  ASSERT_TRUE(engine.Close().ok());
  opened = Engine::Open(Env::Default(), dir.PathOf("data"), options, &report);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  q.device_id = "gw1";
  q.measure_name = "env";
  gw1 = (*opened)->Range(q);
  ASSERT_TRUE(gw1.ok());
  EXPECT_EQ(gw1->rows.size(), 7u);
}

}  // namespace
}  // namespace cairn::testing
