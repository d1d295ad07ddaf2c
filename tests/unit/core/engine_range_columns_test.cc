// Range and RangeColumnar against a model: rewrites, late records sealed
// into overlapping chunks, expiry, two series of one measure, the head and
// sealed chunks mixed, both orders, limits, paging and field filters. And
// the work a limited read does: chunks decoded, not readings in range.
#include <map>
#include <optional>
#include <random>

#include "engine_test_util.h"

namespace cairn::testing {
namespace {

struct ModelRecord {
  uint64_t version = 0;
  double a = 0;
  std::optional<int64_t> b;
  int64_t ttl = 0;
};

// series ("x" or "y") -> timestamp -> newest version.
using Model = std::map<std::string, std::map<int64_t, ModelRecord>>;

struct ModelRow {
  int64_t timestamp;
  std::string sensor;
  ModelRecord record;
};

class EngineRangeColumnsTest : public EngineFixture {
 protected:
  // Writes a random workload into table t, device d, measure m, dimension
  // sensor=x|y, sealing at random points, and returns what must be visible
  // once the clock has moved kExpiryStep seconds on.
  Model Load(uint32_t seed) {
    table_ = "t" + std::to_string(seed);
    CreateTable(table_);
    std::mt19937 random(seed);
    base_ = Now() - 6 * 3600 * kSecond;
    const int64_t now_s = Now() / kSecond;
    Model model;
    for (int batch = 0; batch < 40; ++batch) {
      std::vector<Record> records;
      for (int k = 0; k < 60; ++k) {
        const std::string sensor = random() % 3 == 0 ? "y" : "x";
        auto& series = model[sensor];
        // Mostly in order, some late, some rewrites of a stored timestamp.
        int64_t ts = base_ + (batch * 60 + k) * kSecond;
        if (random() % 10 == 0) ts -= static_cast<int64_t>(random() % 600) * kSecond;
        ts = std::max(ts, base_);
        uint64_t version = 0;
        if (auto it = series.find(ts); it != series.end()) version = it->second.version + 1;
        ModelRecord r{version, static_cast<double>(random() % 10000) / 100, std::nullopt, 0};
        if (random() % 4 != 0) r.b = static_cast<int64_t>(random() % 1000) - 500;
        if (random() % 8 == 0) r.ttl = now_s + (random() % 2 == 0 ? 10 : 100000);
        std::vector<Field> fields{{"a", r.a}};
        if (r.b) fields.push_back({"b", *r.b});
        Record record = MakeRecord("d", "m", ts, fields, version, r.ttl);
        record.dimensions = {{"sensor", sensor}};
        records.push_back(record);
        series[ts] = r;
      }
      WriteOk(records, table_);
      if (random() % 3 == 0) {
        EXPECT_TRUE(engine_->SealAll().ok());
      }
    }
    clock_.AdvanceSeconds(kExpiryStep);
    const int64_t later_s = Now() / kSecond;
    for (auto& [sensor, series] : model) {
      std::erase_if(series, [&](const auto& entry) { return entry.second.ttl != 0 && entry.second.ttl <= later_s; });
    }
    return model;
  }

  // The model's rows of [from, to) in the answer's order.
  static std::vector<ModelRow> Expected(const Model& model, int64_t from, int64_t to, Order order) {
    std::vector<ModelRow> rows;
    for (const auto& [sensor, series] : model) {
      for (auto it = series.lower_bound(from); it != series.end() && it->first < to; ++it) {
        rows.push_back(ModelRow{it->first, sensor, it->second});
      }
    }
    std::sort(rows.begin(), rows.end(), [](const ModelRow& p, const ModelRow& q) {
      return std::tie(p.timestamp, p.sensor) < std::tie(q.timestamp, q.sensor);
    });
    if (order == Order::kDescending) std::reverse(rows.begin(), rows.end());
    return rows;
  }

  RangeQuery Query(int64_t from, int64_t to, Order order, size_t limit) {
    RangeQuery q;
    q.table = table_;
    q.device_id = "d";
    q.measure_name = "m";
    q.from = from;
    q.to = to;
    q.order = order;
    q.limit = limit;
    return q;
  }

  static constexpr int64_t kExpiryStep = 100;
  std::string table_ = "t";
  int64_t base_ = 0;
};

// Every page of every query, as rows and as columns, against the model.
TEST_F(EngineRangeColumnsTest, RowsAndColumnsMatchTheModel) {
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const Model model = Load(seed);
    std::mt19937 random(seed * 7919);
    for (int query = 0; query < 24; ++query) {
      const int64_t from = base_ + static_cast<int64_t>(random() % 2400) * kSecond - 300 * kSecond;
      const int64_t to = from + static_cast<int64_t>(random() % 3000) * kSecond;
      const Order order = random() % 2 == 0 ? Order::kAscending : Order::kDescending;
      const size_t limit = random() % 3 == 0 ? 0 : 1 + random() % 400;
      const std::vector<ModelRow> want = Expected(model, from, to, order);
      RangeQuery q = Query(from, to, order, limit);
      size_t seen = 0;
      for (int page = 0; page < 10000; ++page) {
        auto rows = engine_->Range(q);
        auto columns = engine_->RangeColumnar(q);
        ASSERT_TRUE(rows.ok() && columns.ok()) << rows.status().ToString() << columns.status().ToString();
        const RangeColumns& c = columns->columns;
        ASSERT_EQ(rows->rows.size(), c.size());
        EXPECT_EQ(rows->next_page_token, columns->next_page_token);
        for (size_t i = 0; i < rows->rows.size(); ++i, ++seen) {
          ASSERT_LT(seen, want.size());
          const RecordRow& row = rows->rows[i];
          const ModelRow& expected = want[seen];
          ASSERT_EQ(row.timestamp, expected.timestamp) << "row " << seen;
          EXPECT_EQ(row.dimensions.at("sensor"), expected.sensor);
          EXPECT_EQ(row.version, expected.record.version);
          EXPECT_EQ(row.ttl, expected.record.ttl);
          ASSERT_EQ(row.fields.size(), expected.record.b ? 2u : 1u);
          EXPECT_EQ(row.fields[0].name, "a");
          EXPECT_EQ(std::get<double>(row.fields[0].value), expected.record.a);
          if (expected.record.b) {
            EXPECT_EQ(std::get<int64_t>(row.fields[1].value), *expected.record.b);
          }
          // The same row as columns.
          EXPECT_EQ(c.timestamps[i], row.timestamp);
          EXPECT_EQ(c.series[c.row_series[i]].dimensions, row.dimensions);
          EXPECT_EQ(c.version(i), row.version);
          EXPECT_EQ(c.ttl(i), row.ttl);
          for (const ValueColumn& column : c.columns) {
            if (column.name == "a") {
              EXPECT_EQ(column.doubles[i], expected.record.a);
            }
            if (column.name == "b") {
              EXPECT_EQ(column.present[i] != 0, expected.record.b.has_value());
            }
          }
        }
        if (rows->next_page_token.empty()) break;
        q.page_token = rows->next_page_token;
      }
      EXPECT_EQ(seen, want.size()) << "from " << from << " to " << to << " limit " << limit;
    }
  }
}

TEST_F(EngineRangeColumnsTest, AFieldFilterDecodesAndReturnsOnlyThoseFields) {
  const Model model = Load(11);
  RangeQuery q = Query(INT64_MIN, INT64_MAX, Order::kAscending, 0);
  q.fields = {"b"};
  auto columns = engine_->RangeColumnar(q);
  ASSERT_TRUE(columns.ok()) << columns.status().ToString();
  ASSERT_EQ(columns->columns.columns.size(), 1u);
  EXPECT_EQ(columns->columns.columns[0].name, "b");
  // Records without b are not rows of the answer.
  size_t with_b = 0;
  for (const auto& [sensor, series] : model) {
    for (const auto& [ts, r] : series) with_b += r.b.has_value();
  }
  EXPECT_EQ(columns->columns.size(), with_b);
  for (uint8_t present : columns->columns.columns[0].present) EXPECT_EQ(present, 1);
  q.fields = {"no such field"};
  columns = engine_->RangeColumnar(q);
  ASSERT_TRUE(columns.ok());
  EXPECT_EQ(columns->columns.size(), 0u);
  q.fields = {""};
  EXPECT_FALSE(engine_->RangeColumnar(q).ok());
}

// A limited read decodes the chunks it returns rows from, however many
// readings lie in the range.
TEST_F(EngineRangeColumnsTest, LimitedReadsDecodeChunksNotTheRange) {
  CreateTable();
  constexpr int kRecords = 50'000;
  const int64_t base = Now() - (kRecords + 60) * kSecond;
  std::vector<Record> batch;
  for (int i = 0; i < kRecords; ++i) {
    batch.push_back(MakeRecord("d", "m", base + i * kSecond, {{"v", static_cast<double>(i)}}));
    if (batch.size() == 1000) {
      WriteOk(batch);
      batch.clear();
      ASSERT_TRUE(engine_->SealAll().ok());
    }
  }
  Reopen();
  for (Order order : {Order::kAscending, Order::kDescending}) {
    const uint64_t before = engine_->Stats().chunks_decoded;
    auto page = engine_->RangeColumnar(Query(INT64_MIN, INT64_MAX, order, 1));
    ASSERT_TRUE(page.ok());
    ASSERT_EQ(page->columns.size(), 1u);
    EXPECT_EQ(page->columns.timestamps[0], order == Order::kAscending ? base : base + (kRecords - 1) * kSecond);
    EXPECT_LE(engine_->Stats().chunks_decoded - before, 1u);
    // The next page, from the token in the middle of nowhere special.
    RangeQuery next = Query(INT64_MIN, INT64_MAX, order, 10);
    next.page_token = page->next_page_token;
    const uint64_t before_next = engine_->Stats().chunks_decoded;
    auto second = engine_->RangeColumnar(next);
    ASSERT_TRUE(second.ok());
    ASSERT_EQ(second->columns.size(), 10u);
    EXPECT_LE(engine_->Stats().chunks_decoded - before_next, 2u);
  }
}

// A range over more period files than the open-file cache keeps opens each
// file once, and a limited read opens only the files it takes rows from.
TEST_F(EngineRangeColumnsTest, RangesOpenEachPeriodFileOnce) {
  options_.max_open_period_files = 2;
  Reopen();
  TableOptions hourly;
  hourly.period = Period::kHour;
  CreateTable("t", hourly);
  constexpr int kHours = 12;
  const int64_t base = (Now() / (3600 * kSecond) - kHours - 1) * 3600 * kSecond;
  for (int hour = 0; hour < kHours; ++hour) {
    std::vector<Record> batch;
    for (int i = 0; i < 100; ++i) {
      batch.push_back(MakeRecord("d", "m", base + hour * 3600 * kSecond + i * 30 * kSecond, {{"v", double(i)}}));
    }
    WriteOk(batch);
    ASSERT_TRUE(engine_->SealAll().ok());
  }
  for (Order order : {Order::kAscending, Order::kDescending}) {
    SCOPED_TRACE(order == Order::kAscending ? "ascending" : "descending");
    Reopen();  // at most the two newest files cached
    uint64_t before = engine_->Stats().period_file_opens;
    auto all = engine_->RangeColumnar(Query(INT64_MIN, INT64_MAX, order, 0));
    ASSERT_TRUE(all.ok());
    EXPECT_EQ(all->columns.size(), size_t{kHours} * 100);
    // Each file once at most; the two the cache holds may be open already.
    const uint64_t opens = engine_->Stats().period_file_opens - before;
    EXPECT_LE(opens, uint64_t{kHours});
    EXPECT_GE(opens, uint64_t{kHours} - 2);
    // One row: one file (the cache holds the two used last, which may
    // already include it).
    before = engine_->Stats().period_file_opens;
    auto one = engine_->RangeColumnar(Query(INT64_MIN, INT64_MAX, order, 1));
    ASSERT_TRUE(one.ok());
    ASSERT_EQ(one->columns.size(), 1u);
    EXPECT_LE(engine_->Stats().period_file_opens - before, 1u);
    EXPECT_EQ(one->columns.timestamps[0],
              order == Order::kAscending ? base : base + (kHours - 1) * 3600 * kSecond + 99 * 30 * kSecond);
  }
}

}  // namespace
}  // namespace cairn::testing
