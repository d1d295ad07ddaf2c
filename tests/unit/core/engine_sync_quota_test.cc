// The sync quota (EngineOptions::sync_quota): backpressure, drop_oldest,
// downsample and the free-disk floor, on real period files.
#include <atomic>
#include <cmath>
#include <map>
#include <set>

#include "engine_test_util.h"
#include "model/exact_sum.h"

namespace cairn::testing {
namespace {

// Reports a free-space figure the test sets, so the floor can be crossed
// both ways without filling a disk.
class FreeSpaceEnv : public ManualClockEnv {
 public:
  FreeSpaceEnv() : ManualClockEnv(Env::Default()) {}
  Result<uint64_t> FreeSpace(const std::string&) override { return free_.load(); }
  std::atomic<uint64_t> free_{uint64_t{1} << 40};
};

class EngineSyncQuotaTest : public ::testing::Test {
 protected:
  EngineSyncQuotaTest() {
    options_.maintenance_interval_ms = 0;
    options_.sync_quota.check_interval_ms = 0;
  }

  void SetUp() override {
    Open();
    TableOptions synced;
    ASSERT_TRUE(engine_->CreateTable("t", synced).ok());
    TableOptions local;
    local.sync = false;
    ASSERT_TRUE(engine_->CreateTable("local", local).ok());
  }

  void Open() {
    engine_.reset();
    auto opened = Engine::Open(&env_, dir_.path(), options_);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    engine_ = std::move(opened).value();
  }

  void Reopen(SyncQuotaOptions quota) {
    quota.check_interval_ms = 0;
    ASSERT_TRUE(engine_->Close().ok());
    options_.sync_quota = quota;
    Open();
  }

  int64_t Start() { return PeriodStart(Period::kDay, env_.NowUnixNanos()) + 3600 * kSecond; }

  // `count` records of device `device`, one per second from `first`, the
  // temperature of record i being Celsius(i).
  void WriteSeconds(const std::string& device, int64_t first, int count) {
    std::vector<Record> batch;
    for (int i = 0; i < count; ++i) {
      batch.push_back(MakeRecord(
          device, "env", first + i * kSecond,
          {{"temperature", Celsius(i)}, {"count", Count(i)}, {"state", std::string(i % 2 ? "ok" : "warm")}}));
      if (batch.size() == 500 || i + 1 == count) {
        auto written = engine_->Write("t", batch);
        ASSERT_TRUE(written.ok()) << written.status().ToString();
        batch.clear();
      }
    }
  }

  // Noisy, as real sensors are: values that compress like field data, not
  // like a counter.
  static double Celsius(int i) { return 20.0 + static_cast<double>(Mix(i) % 1000) / 100.0; }
  static int64_t Count(int i) { return static_cast<int64_t>(Mix(i + 7) % 100000); }
  static uint64_t Mix(int i) {
    uint64_t x = static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    return x ^ (x >> 32);
  }

  // Every change of `t`, by LSN.
  std::map<uint64_t, RecordRow> Changes() {
    std::map<uint64_t, RecordRow> all;
    uint64_t after = 0;
    for (int rounds = 0; rounds < 10000; ++rounds) {
      auto changes = engine_->ReadChanges("t", after, UINT64_MAX, 1000);
      EXPECT_TRUE(changes.ok()) << changes.status().ToString();
      if (!changes.ok() || changes->covered_through == after) break;
      for (size_t i = 0; i < changes->records.size(); ++i) all[changes->lsns[i]] = changes->records[i];
      after = changes->covered_through;
    }
    return all;
  }

  void Confirm(uint64_t first, uint64_t last) {
    SyncLedger ledger;
    ledger.table = "t";
    ledger.confirmed.Add(first, last);
    ASSERT_TRUE(engine_->SaveSyncLedger(ledger).ok());
  }

  uint64_t UnsyncedBytes(const LsnRangeSet& confirmed = {}) {
    auto summary = engine_->SummarizeUnsynced("t", confirmed);
    EXPECT_TRUE(summary.ok());
    return summary.ok() ? summary->bytes : 0;
  }

  std::vector<RecordRow> RangeOf(const std::string& measure) {
    RangeQuery query;
    query.table = "t";
    query.device_id = "d";
    query.measure_name = measure;
    query.limit = 0;
    auto range = engine_->Range(query);
    EXPECT_TRUE(range.ok()) << range.status().ToString();
    return range.ok() ? range->rows : std::vector<RecordRow>{};
  }

  void MaintainOk() {
    Status s = engine_->Maintain();
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  ScopedTempDir dir_;
  FreeSpaceEnv env_;
  EngineOptions options_;
  std::unique_ptr<Engine> engine_;
};

const Value* FieldOf(const RecordRow& row, const std::string& name) {
  for (const Field& f : row.fields) {
    if (f.name == name) return &f.value;
  }
  return nullptr;
}

TEST_F(EngineSyncQuotaTest, BackpressureRefusesSyncedWritesUntilTheBacklogIsConfirmed) {
  WriteSeconds("d", Start(), 3000);
  ASSERT_TRUE(engine_->SealAll().ok());
  const uint64_t unsynced = UnsyncedBytes();
  ASSERT_GT(unsynced, 0u);
  SyncQuotaOptions quota;
  quota.max_unsynced_bytes = unsynced / 2;
  Reopen(quota);
  EXPECT_FALSE(engine_->QuotaStatus().refusing_writes);  // not measured yet
  MaintainOk();
  SyncQuotaStatus status = engine_->QuotaStatus();
  EXPECT_TRUE(status.enabled);
  EXPECT_EQ(status.policy, QuotaPolicy::kBackpressure);
  EXPECT_EQ(status.unsynced_bytes, unsynced);
  EXPECT_TRUE(status.over_budget);
  EXPECT_FALSE(status.below_floor);
  EXPECT_TRUE(status.refusing_writes);
  EXPECT_GT(status.checked_at, 0);

  auto refused = engine_->Write("t", {Temperature("d", Start() + 5000 * kSecond, 1)});
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(refused.status().Is(StatusCode::kResourceExhausted));
  EXPECT_NE(refused.status().message().find("sync quota reached"), std::string::npos)
      << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("backpressure"), std::string::npos);
  // A table that is not synced is not held back by the budget.
  auto local = engine_->Write("local", {Temperature("d", Start(), 1)});
  EXPECT_TRUE(local.ok()) << local.status().ToString();
  EXPECT_EQ(engine_->QuotaStatus().writes_refused, 1u);
  // Nothing stored was touched, and the refused record is not there.
  EXPECT_EQ(RangeOf("env").size(), 3000u);
  EXPECT_EQ(Changes().size(), 3000u);
  // Records their source already counts as delivered are taken over budget.
  auto received = engine_->WriteReceived("t", {Temperature("d", Start() + 6000 * kSecond, 1)});
  EXPECT_TRUE(received.ok()) << received.status().ToString();
  EXPECT_EQ(RangeOf("env").size(), 3001u);
  EXPECT_EQ(engine_->QuotaStatus().writes_refused, 1u);

  // The cloud confirms the backlog: writes are taken again.
  Confirm(1, engine_->Stats().last_lsn);
  MaintainOk();
  status = engine_->QuotaStatus();
  EXPECT_FALSE(status.over_budget);
  EXPECT_FALSE(status.refusing_writes);
  EXPECT_EQ(status.unsynced_bytes, 0u);
  auto accepted = engine_->Write("t", {Temperature("d", Start() + 5000 * kSecond, 1)});
  EXPECT_TRUE(accepted.ok()) << accepted.status().ToString();
  EXPECT_EQ(status.records_dropped + status.records_downsampled, 0u);
}

TEST_F(EngineSyncQuotaTest, DropOldestDeletesTheOldestUnconfirmedRecordsOnly) {
  WriteSeconds("d", Start(), 6000);
  ASSERT_TRUE(engine_->SealAll().ok());
  const std::map<uint64_t, RecordRow> before = Changes();
  ASSERT_EQ(before.size(), 6000u);
  // The first 1000 records reached the cloud.
  const uint64_t first_lsn = before.begin()->first;
  const uint64_t confirmed_through = std::next(before.begin(), 999)->first;
  Confirm(first_lsn, confirmed_through);
  LsnRangeSet confirmed;
  confirmed.Add(first_lsn, confirmed_through);
  const uint64_t unsynced = UnsyncedBytes(confirmed);
  SyncQuotaOptions quota;
  quota.max_unsynced_bytes = unsynced / 2;
  quota.policy = QuotaPolicy::kDropOldest;
  Reopen(quota);
  MaintainOk();

  SyncQuotaStatus status = engine_->QuotaStatus();
  EXPECT_GT(status.records_dropped, 0u);
  EXPECT_LT(status.records_dropped, 5000u);
  EXPECT_FALSE(status.over_budget) << status.unsynced_bytes << " > " << status.max_unsynced_bytes;
  EXPECT_FALSE(status.refusing_writes);
  EXPECT_EQ(status.records_downsampled, 0u);

  // What is left: every confirmed record, then exactly the newest
  // unconfirmed ones (the dropped ones were the lowest LSNs).
  std::vector<RecordRow> rows = RangeOf("env");
  ASSERT_EQ(rows.size(), 6000u - status.records_dropped);
  for (size_t i = 0; i < rows.size(); ++i) {
    const int index = i < 1000 ? static_cast<int>(i) : static_cast<int>(i + status.records_dropped);
    EXPECT_EQ(rows[i].timestamp, Start() + index * kSecond) << i;
    EXPECT_EQ(std::get<double>(*FieldOf(rows[i], "temperature")), Celsius(index));
  }
  // The feed carries the survivors only, in LSN order.
  std::map<uint64_t, RecordRow> after = Changes();
  EXPECT_EQ(after.size(), rows.size());
  // Writes go on, and a reopen finds the same data.
  auto written = engine_->Write("t", {Temperature("d", Start() + 7000 * kSecond, 1)});
  EXPECT_TRUE(written.ok()) << written.status().ToString();
  Reopen(quota);
  EXPECT_EQ(RangeOf("env").size(), rows.size() + 1);
}

TEST_F(EngineSyncQuotaTest, DownsampleReplacesOldUnconfirmedStepsByAggregates) {
  // 30 minutes at 1 Hz from a whole minute; the first 5 minutes confirmed.
  WriteSeconds("d", Start(), 1800);
  ASSERT_TRUE(engine_->SealAll().ok());
  const std::map<uint64_t, RecordRow> before = Changes();
  const uint64_t first_lsn = before.begin()->first;
  const uint64_t confirmed_through = std::next(before.begin(), 299)->first;
  Confirm(first_lsn, confirmed_through);
  LsnRangeSet confirmed;
  confirmed.Add(first_lsn, confirmed_through);
  SyncQuotaOptions quota;
  quota.max_unsynced_bytes = UnsyncedBytes(confirmed) / 3;
  quota.policy = QuotaPolicy::kDownsample;
  quota.downsample_step_seconds = 60;
  Reopen(quota);
  MaintainOk();

  SyncQuotaStatus status = engine_->QuotaStatus();
  EXPECT_FALSE(status.over_budget) << status.unsynced_bytes << " > " << status.max_unsynced_bytes;
  EXPECT_EQ(status.records_dropped, 0u);
  ASSERT_GT(status.aggregates_written, 0u);
  EXPECT_EQ(status.records_downsampled, status.aggregates_written * 60);

  // Raw: the confirmed 5 minutes, and the minutes not downsampled (newest).
  std::vector<RecordRow> raw = RangeOf("env");
  EXPECT_EQ(raw.size(), 1800u - status.records_downsampled);
  for (size_t i = 0; i < 300; ++i) EXPECT_EQ(raw[i].timestamp, Start() + static_cast<int64_t>(i) * kSecond);
  // Aggregates: one per downsampled minute, from minute 5 on.
  std::vector<RecordRow> aggregates = RangeOf("env@60s");
  ASSERT_EQ(aggregates.size(), status.aggregates_written);
  for (size_t m = 0; m < aggregates.size(); ++m) {
    const RecordRow& a = aggregates[m];
    const int first = 300 + static_cast<int>(m) * 60;
    EXPECT_EQ(a.timestamp, Start() + first * kSecond);
    EXPECT_EQ(a.version, 0u);
    double min = 1e9, max = -1e9, sum = 0;
    for (int i = first; i < first + 60; ++i) {
      min = std::min(min, Celsius(i));
      max = std::max(max, Celsius(i));
      sum += Celsius(i);
    }
    ASSERT_NE(FieldOf(a, "temperature.min"), nullptr);
    EXPECT_EQ(std::get<double>(*FieldOf(a, "temperature.min")), min);
    EXPECT_EQ(std::get<double>(*FieldOf(a, "temperature.max")), max);
    EXPECT_NEAR(std::get<double>(*FieldOf(a, "temperature.avg")), sum / 60, 1e-9);
    EXPECT_EQ(std::get<int64_t>(*FieldOf(a, "temperature.count")), 60);
    int64_t count_min = INT64_MAX, count_max = INT64_MIN, count_sum = 0;
    for (int i = first; i < first + 60; ++i) {
      count_min = std::min(count_min, Count(i));
      count_max = std::max(count_max, Count(i));
      count_sum += Count(i);
    }
    EXPECT_EQ(std::get<int64_t>(*FieldOf(a, "count.min")), count_min);
    EXPECT_EQ(std::get<int64_t>(*FieldOf(a, "count.max")), count_max);
    ASSERT_NE(FieldOf(a, "count.sum"), nullptr);
    EXPECT_EQ(std::get<int64_t>(*FieldOf(a, "count.sum")), count_sum);
    EXPECT_EQ(FieldOf(a, "temperature.sum"), nullptr);  // a double field's aggregate has no sum
    // The newest reading of a text field, and how many there were.
    EXPECT_EQ(std::get<std::string>(*FieldOf(a, "state.last")), (59 % 2) ? "ok" : "warm");
    EXPECT_EQ(std::get<int64_t>(*FieldOf(a, "state.count")), 60);
  }
  // The feed sends the aggregates (they are unconfirmed) and the raw
  // records left; none of the replaced ones.
  std::map<uint64_t, RecordRow> after = Changes();
  size_t aggregates_in_feed = 0;
  for (const auto& [lsn, row] : after) {
    if (row.measure_name == "env@60s") ++aggregates_in_feed;
    EXPECT_TRUE(before.count(lsn)) << "an aggregate takes the LSN of a record it replaced";
  }
  EXPECT_EQ(aggregates_in_feed, aggregates.size());
  EXPECT_EQ(after.size(), 1800u - status.records_downsampled + aggregates.size());
}

TEST_F(EngineSyncQuotaTest, LateReadingsMergeIntoTheirStepsAggregate) {
  WriteSeconds("d", Start(), 600);
  ASSERT_TRUE(engine_->SealAll().ok());
  SyncQuotaOptions quota;
  quota.max_unsynced_bytes = UnsyncedBytes() / 3;
  quota.policy = QuotaPolicy::kDownsample;
  Reopen(quota);
  MaintainOk();
  std::vector<RecordRow> aggregates = RangeOf("env@60s");
  ASSERT_GE(aggregates.size(), 2u);
  const RecordRow first_step = aggregates[0];
  // The cloud has everything so far; then 150 late readings of the first
  // minute arrive, between the seconds, hotter than any before.
  Confirm(1, engine_->Stats().last_lsn);
  std::vector<Record> late;
  for (int i = 0; i < 150; ++i) {
    late.push_back(MakeRecord("d", "env", Start() + (i / 3) * kSecond + (i % 3 + 1) * kSecond / 4,
                              {{"temperature", 40.0 + Celsius(1000 + i)},
                               {"count", Count(1000 + i)},
                               {"state", std::string("hot")}}));
  }
  auto late_written = engine_->Write("t", late);
  ASSERT_TRUE(late_written.ok());
  ASSERT_EQ(late_written->stored, 150u) << late_written->records[0].reason;
  ASSERT_TRUE(engine_->SealAll().ok());
  LsnRangeSet confirmed;
  confirmed.Add(1, engine_->Stats().last_lsn - 150);
  quota.max_unsynced_bytes = UnsyncedBytes(confirmed) * 3 / 4;
  Reopen(quota);
  MaintainOk();
  SyncQuotaStatus status = engine_->QuotaStatus();
  EXPECT_EQ(status.records_downsampled, 150u);
  EXPECT_EQ(status.aggregates_written, 1u);
  EXPECT_EQ(status.records_dropped, 0u);

  aggregates = RangeOf("env@60s");
  ASSERT_GE(aggregates.size(), 2u);
  const RecordRow& merged = aggregates[0];
  EXPECT_EQ(merged.timestamp, first_step.timestamp);
  EXPECT_EQ(merged.version, first_step.version + 1);
  const int64_t old_count = std::get<int64_t>(*FieldOf(first_step, "temperature.count"));
  EXPECT_EQ(std::get<int64_t>(*FieldOf(merged, "temperature.count")), old_count + 150);
  EXPECT_EQ(std::get<double>(*FieldOf(merged, "temperature.min")),
            std::get<double>(*FieldOf(first_step, "temperature.min")));
  double late_max = 0, late_sum = 0;
  int64_t late_count_max = 0;
  for (int i = 0; i < 150; ++i) {
    late_max = std::max(late_max, 40.0 + Celsius(1000 + i));
    late_sum += 40.0 + Celsius(1000 + i);
    late_count_max = std::max(late_count_max, Count(1000 + i));
  }
  EXPECT_EQ(std::get<double>(*FieldOf(merged, "temperature.max")), late_max);
  const double old_sum =
      std::get<double>(*FieldOf(first_step, "temperature.avg")) * static_cast<double>(old_count);
  EXPECT_NEAR(std::get<double>(*FieldOf(merged, "temperature.avg")),
              (old_sum + late_sum) / static_cast<double>(old_count + 150), 1e-9);
  EXPECT_EQ(std::get<int64_t>(*FieldOf(merged, "count.max")),
            std::max(std::get<int64_t>(*FieldOf(first_step, "count.max")), late_count_max));
  int64_t late_count_sum = 0;
  for (int i = 0; i < 150; ++i) late_count_sum += Count(1000 + i);
  EXPECT_EQ(std::get<int64_t>(*FieldOf(merged, "count.sum")),
            std::get<int64_t>(*FieldOf(first_step, "count.sum")) + late_count_sum);
  // The late raw readings are gone; the newer version goes to the cloud.
  std::map<uint64_t, RecordRow> feed = Changes();
  bool merged_in_feed = false;
  for (const auto& [lsn, row] : feed) {
    if (lsn <= engine_->Stats().last_lsn - 150) continue;
    EXPECT_EQ(row.measure_name, "env@60s");
    merged_in_feed = merged_in_feed || (row.timestamp == merged.timestamp && row.version == merged.version);
  }
  EXPECT_TRUE(merged_in_feed);
}

// Int64 fields past 2^53 keep their exact sum in `f.sum` and an average
// rounded once from it; a step whose sum would leave int64 stays raw
// rather than be replaced by an inexact aggregate.
TEST_F(EngineSyncQuotaTest, DownsampledInt64FieldsKeepExactSumsOrStayRaw) {
  constexpr int64_t kBase = (int64_t{1} << 53) + 1;
  const auto big = [&](int i) { return i / 60 == 1 ? INT64_MAX - Count(i) : kBase + Count(i); };
  std::vector<Record> batch;
  for (int i = 0; i < 600; ++i) {
    batch.push_back(MakeRecord("d", "env", Start() + i * kSecond,
                               {{"temperature", Celsius(i)}, {"count", Count(i)}, {"big", big(i)}}));
  }
  ASSERT_TRUE(engine_->Write("t", batch).ok());
  ASSERT_TRUE(engine_->SealAll().ok());
  SyncQuotaOptions quota;
  quota.max_unsynced_bytes = UnsyncedBytes() / 3;
  quota.policy = QuotaPolicy::kDownsample;
  Reopen(quota);
  MaintainOk();
  std::vector<RecordRow> aggregates = RangeOf("env@60s");
  ASSERT_GE(aggregates.size(), 2u);
  for (const RecordRow& a : aggregates) {
    const int minute = static_cast<int>((a.timestamp - Start()) / (60 * kSecond));
    SCOPED_TRACE("minute " + std::to_string(minute));
    EXPECT_NE(minute, 1) << "the minute whose sum leaves int64 was aggregated";
    ExactSum sum;
    for (int i = minute * 60; i < minute * 60 + 60; ++i) sum.Add(big(i));
    ASSERT_NE(FieldOf(a, "big.sum"), nullptr);
    EXPECT_EQ(std::get<int64_t>(*FieldOf(a, "big.sum")), sum.ToInt64());
    EXPECT_EQ(std::get<double>(*FieldOf(a, "big.avg")), sum.DividedBy(60));
  }
  size_t raw_in_minute_1 = 0;
  for (const RecordRow& row : RangeOf("env")) {
    if (row.timestamp >= Start() + 60 * kSecond && row.timestamp < Start() + 120 * kSecond) ++raw_in_minute_1;
  }
  EXPECT_EQ(raw_in_minute_1, 60u);
}

TEST_F(EngineSyncQuotaTest, TheFreeDiskFloorRefusesEveryTableAndDropOldestReclaims) {
  WriteSeconds("d", Start(), 3000);
  ASSERT_TRUE(engine_->SealAll().ok());
  SyncQuotaOptions quota;
  quota.min_free_bytes = 1ull << 30;
  quota.policy = QuotaPolicy::kDropOldest;
  Reopen(quota);
  env_.free_ = 100ull << 20;
  MaintainOk();
  SyncQuotaStatus status = engine_->QuotaStatus();
  EXPECT_TRUE(status.below_floor);
  EXPECT_FALSE(status.over_budget);
  EXPECT_EQ(status.free_bytes, 100ull << 20);
  EXPECT_TRUE(status.refusing_writes);
  // The policy freed what it could (the unsynced backlog), and the floor
  // still holds every table back.
  EXPECT_EQ(status.records_dropped, 3000u);
  EXPECT_EQ(RangeOf("env").size(), 0u);
  for (const std::string table : {"t", "local"}) {
    auto refused = engine_->Write(table, {Temperature("d", Start(), 1)});
    ASSERT_FALSE(refused.ok()) << table;
    EXPECT_TRUE(refused.status().Is(StatusCode::kResourceExhausted));
    EXPECT_NE(refused.status().message().find("below the sync quota's floor"), std::string::npos)
        << refused.status().ToString();
  }
  // The floor is hard, also for records already delivered by their source.
  EXPECT_TRUE(engine_->WriteReceived("t", {Temperature("d", Start(), 1)})
                  .status()
                  .Is(StatusCode::kResourceExhausted));
  env_.free_ = 2ull << 30;
  MaintainOk();
  EXPECT_FALSE(engine_->QuotaStatus().refusing_writes);
  EXPECT_TRUE(engine_->Write("local", {Temperature("d", Start(), 1)}).ok());
  EXPECT_TRUE(engine_->Write("t", {Temperature("d", Start(), 1)}).ok());
}

TEST_F(EngineSyncQuotaTest, BackpressureUnderTheFloorDropsNothing) {
  WriteSeconds("d", Start(), 1000);
  ASSERT_TRUE(engine_->SealAll().ok());
  SyncQuotaOptions quota;
  quota.min_free_bytes = 1ull << 30;
  Reopen(quota);
  env_.free_ = 1ull << 20;
  MaintainOk();
  EXPECT_TRUE(engine_->QuotaStatus().refusing_writes);
  EXPECT_EQ(engine_->QuotaStatus().records_dropped, 0u);
  EXPECT_EQ(RangeOf("env").size(), 1000u);
  EXPECT_FALSE(engine_->Write("local", {Temperature("d", Start(), 1)}).ok());
}

TEST_F(EngineSyncQuotaTest, OptionsAreChecked) {
  EngineOptions options;
  options.sync_quota.downsample_step_seconds = 7;
  auto opened = Engine::Open(&env_, dir_.PathOf("other"), options);
  EXPECT_TRUE(opened.status().Is(StatusCode::kInvalidArgument));
  EXPECT_EQ(ParseQuotaPolicy("drop_oldest").value(), QuotaPolicy::kDropOldest);
  EXPECT_EQ(QuotaPolicyName(QuotaPolicy::kDownsample), "downsample");
  EXPECT_TRUE(ParseQuotaPolicy("drop_newest").status().Is(StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace cairn::testing
