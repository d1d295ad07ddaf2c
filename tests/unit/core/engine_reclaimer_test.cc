// The Reclaimer alone (reclaimer.h): retention's rule, and the sync quota's
// decisions and rewrites on a real catalog and a real period file, reached
// through a ReclaimerStore of the test's own instead of an engine.
#include <atomic>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "engine/engine_impl.h"
#include "engine/reclaim/reclaimer.h"
#include "engine_test_util.h"
#include "storage/env_vfs.h"

namespace cairn::testing {
namespace {

const int64_t kDay = PeriodStart(Period::kDay, ManualClockEnv::kDefaultStartUnixNanos);
const std::vector<ChunkField> kFields = {{"temperature", FieldType::kDouble}};
constexpr int kRecords = 300;  // one per second from kDay, LSN = second + 1
constexpr size_t kChunkRecords = 30;
constexpr uint64_t kConfirmedThrough = 30;

// Reports a free-space figure the test sets.
class FreeSpaceEnv : public ManualClockEnv {
 public:
  FreeSpaceEnv() : ManualClockEnv(Env::Default()) {}
  Result<uint64_t> FreeSpace(const std::string&) override { return free_.load(); }
  std::atomic<uint64_t> free_{uint64_t{1} << 40};
};

// One synced table "t" with one day file, and the unsynced table "local",
// as the engine would present them.
class FileStore final : public ReclaimerStore {
 public:
  FileStore(Catalog* catalog, PeriodFile* file) : catalog_(catalog), file_(file) {}

  Result<std::vector<SyncedTable>> SyncedTables() override {
    return std::vector<SyncedTable>{{"t", Period::kDay, {kDay}}};
  }
  bool IsSynced(const std::string& table) override { return table == "t"; }
  // The bytes of unconfirmed records in the file, as the engine counts them
  // for sealed chunks (the head is empty here).
  Result<UnsyncedSummary> SummarizeUnsynced(const std::string& table, const LsnRangeSet& confirmed) override {
    if (table != "t") return Status::NotFound("no table " + table);
    UnsyncedSummary summary;
    CAIRN_ASSIGN_OR_RETURN(uint64_t max_lsn, file_->MaxLsn());
    CAIRN_RETURN_IF_ERROR(ForEachUnconfirmedChunk(*file_, confirmed, max_lsn, [&](ChunkRow& row) {
      uint64_t unconfirmed = 0;
      for (uint64_t lsn : row.lsns) unconfirmed += confirmed.Contains(lsn) ? 0 : 1;
      summary.bytes += unconfirmed * (row.stats.size() + row.data_bytes) / row.count;
      return true;
    }));
    return summary;
  }
  Status WithPeriodFile(const std::string& table, Period, int64_t start,
                        const std::function<Status(PeriodFile&)>& work) override {
    if (table != "t" || start != kDay) return Status::NotFound("no such period file");
    return work(*file_);
  }
  Status EnsureAggregateSeries(const std::string& table, const std::vector<AggregateRequest>& requests,
                               std::map<int64_t, AggregateTarget>* targets) override {
    std::vector<CatalogSeries> created;
    for (const AggregateRequest& r : requests) {
      const int64_t id = next_id_++;
      created.push_back(CatalogSeries{
          id, table, r.raw->device_id, r.measure, r.raw->shard, r.fields, r.raw->dimensions, {}});
      (*targets)[r.raw->series_id] =
          AggregateTarget{id, r.measure, r.fields, r.raw->dimensions, {}, r.raw->shard};
    }
    return catalog_->PutSeries(created);
  }
  void SeriesRewritten(const std::string&, const std::set<int64_t>& touched,
                       const std::vector<ChunkRow>&) override {
    rewritten.insert(touched.begin(), touched.end());
  }
  Result<uint64_t> WithSealsHeld(const std::function<Result<uint64_t>()>& work) override {
    ++seals_held;
    return work();
  }

  std::set<int64_t> rewritten;
  int seals_held = 0;

 private:
  Catalog* const catalog_;
  PeriodFile* const file_;
  int64_t next_id_ = 100;
};

class ReclaimerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    vfs_ = VfsNameFor(&env_);
    ASSERT_TRUE(RegisterEnvVfs(&env_, vfs_).ok());
    auto catalog = Catalog::Open(vfs_, dir_.PathOf("catalog.db"));
    ASSERT_TRUE(catalog.ok()) << catalog.status().ToString();
    catalog_ = std::move(catalog).value();
    auto file = PeriodFile::OpenWritable(&env_, vfs_, dir_.PathOf("day.db"), "t", Period::kDay, kDay, 256);
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    file_ = std::move(file).value();
    // Series 1: kRecords readings of a noisy sensor, kChunkRecords to a chunk.
    PeriodSeries series{1, "a", "env", 0, kFields, {}};
    std::vector<ChunkRecord> records;
    std::vector<uint64_t> lsns;
    for (int i = 0; i < kRecords; ++i) {
      ChunkRecord r;
      r.timestamp = kDay + i * kSecond;
      r.values = {Value{20.0 + static_cast<double>((i * 7919) % 1013) / 37.0}};
      records.push_back(std::move(r));
      lsns.push_back(static_cast<uint64_t>(i) + 1);
    }
    std::vector<ChunkRow> chunks;
    ASSERT_TRUE(EncodeSeriesChunks(1, kFields, records, lsns, kChunkRecords, &chunks).ok());
    ASSERT_TRUE(file_->WriteChunks({series}, chunks).ok());
    ASSERT_TRUE(catalog_->PutSeries({CatalogSeries{1, "t", "a", "env", 0, kFields, {}, {}}}).ok());
    SyncLedger ledger;
    ledger.table = "t";
    ledger.confirmed = LsnRangeSet({LsnRange{1, kConfirmedThrough}});
    ASSERT_TRUE(catalog_->SaveSyncLedger(ledger).ok());
    ASSERT_TRUE(catalog_->SetCheckpoint(1, {PeriodSealMark{"t", kDay, kRecords}}).ok());
    store_ = std::make_unique<FileStore>(catalog_.get(), file_.get());
  }

  void TearDown() override {
    file_.reset();
    if (catalog_) (void)catalog_->Close();
    catalog_.reset();
    (void)UnregisterEnvVfs(vfs_);
  }

  std::unique_ptr<Reclaimer> Make(SyncQuotaOptions quota) {
    quota.check_interval_ms = 0;
    return std::make_unique<Reclaimer>(&env_, dir_.path(), quota, catalog_.get(), store_.get());
  }

  // Every LSN the file holds, by series id.
  std::map<int64_t, std::set<uint64_t>> LsnsBySeries() {
    std::map<int64_t, std::set<uint64_t>> out;
    auto series = file_->ListSeries();
    EXPECT_TRUE(series.ok());
    for (const PeriodSeries& s : *series) {
      auto rows = file_->ReadChunks(s.series_id, INT64_MIN, INT64_MAX, /*with_data=*/false);
      EXPECT_TRUE(rows.ok());
      for (const ChunkRow& row : *rows) out[s.series_id].insert(row.lsns.begin(), row.lsns.end());
    }
    return out;
  }

  uint64_t Unsynced(Reclaimer& reclaimer) {
    auto measured = reclaimer.Measure();
    EXPECT_TRUE(measured.ok()) << measured.status().ToString();
    return measured.ok() ? measured->unsynced_bytes : 0;
  }

  ScopedTempDir dir_;
  FreeSpaceEnv env_;
  std::string vfs_;
  std::unique_ptr<Catalog> catalog_;
  std::unique_ptr<PeriodFile> file_;
  std::unique_ptr<FileStore> store_;
};

TEST(RetentionTest, DropsOnlyPeriodsWhollyPastRetention) {
  const int64_t retention = 2 * 86400;
  const int64_t end_of_day = NextPeriodStart(Period::kDay, kDay);
  // The day ended exactly `retention` ago: every reading in it is past.
  EXPECT_TRUE(PastRetention(Period::kDay, kDay, retention, end_of_day + retention * kSecond));
  // One nanosecond earlier its last instant is still within retention.
  EXPECT_FALSE(PastRetention(Period::kDay, kDay, retention, end_of_day + retention * kSecond - 1));
  // A reading older than retention does not make its period go while the
  // period's end is within it.
  EXPECT_FALSE(PastRetention(Period::kDay, kDay, retention, kDay + retention * kSecond + 1));
}

TEST_F(ReclaimerTest, BackpressureRefusesSyncedWritesUntilTheBacklogIsConfirmed) {
  SyncQuotaOptions quota;
  quota.max_unsynced_bytes = 1;
  auto reclaimer = Make(quota);
  ASSERT_TRUE(reclaimer->Admit("t", false).ok());  // nothing measured yet
  ASSERT_TRUE(reclaimer->Check().ok());
  SyncQuotaStatus status = reclaimer->QuotaStatus();
  EXPECT_TRUE(status.enabled);
  EXPECT_TRUE(status.over_budget);
  EXPECT_TRUE(status.refusing_writes);
  EXPECT_GT(status.unsynced_bytes, 0u);
  Status refused = reclaimer->Admit("t", false);
  EXPECT_TRUE(refused.Is(StatusCode::kResourceExhausted)) << refused.ToString();
  EXPECT_NE(refused.message().find("sync quota reached"), std::string::npos);
  EXPECT_TRUE(reclaimer->Admit("t", /*received=*/true).ok());
  EXPECT_TRUE(reclaimer->Admit("local", false).ok());
  EXPECT_EQ(reclaimer->QuotaStatus().writes_refused, 1u);
  // Backpressure never rewrites.
  EXPECT_EQ(store_->seals_held, 0);
  EXPECT_EQ(LsnsBySeries()[1].size(), static_cast<size_t>(kRecords));

  SyncLedger ledger;
  ledger.table = "t";
  ledger.confirmed = LsnRangeSet({LsnRange{1, kRecords}});
  ASSERT_TRUE(catalog_->SaveSyncLedger(ledger).ok());
  ASSERT_TRUE(reclaimer->Check().ok());
  EXPECT_EQ(reclaimer->QuotaStatus().unsynced_bytes, 0u);
  EXPECT_FALSE(reclaimer->QuotaStatus().refusing_writes);
  EXPECT_TRUE(reclaimer->Admit("t", false).ok());
}

TEST_F(ReclaimerTest, FloorRefusesEveryWriteAndLiftsWhenSpaceReturns) {
  SyncQuotaOptions quota;
  quota.min_free_bytes = 1 << 20;
  auto reclaimer = Make(quota);
  env_.free_ = 1000;
  ASSERT_TRUE(reclaimer->Check().ok());
  EXPECT_TRUE(reclaimer->QuotaStatus().below_floor);
  for (const char* table : {"t", "local", "unknown"}) {
    for (bool received : {false, true}) {
      Status refused = reclaimer->Admit(table, received);
      EXPECT_TRUE(refused.Is(StatusCode::kResourceExhausted)) << table;
      EXPECT_NE(refused.message().find("below the sync quota's floor"), std::string::npos);
    }
  }
  env_.free_ = uint64_t{1} << 30;
  ASSERT_TRUE(reclaimer->Check().ok());
  EXPECT_FALSE(reclaimer->QuotaStatus().below_floor);
  EXPECT_TRUE(reclaimer->Admit("local", false).ok());
}

TEST_F(ReclaimerTest, ChecksNoMoreOftenThanTheInterval) {
  SyncQuotaOptions quota;
  quota.max_unsynced_bytes = 1;
  quota.check_interval_ms = 1000;
  auto reclaimer = std::make_unique<Reclaimer>(&env_, dir_.path(), quota, catalog_.get(), store_.get());
  ASSERT_TRUE(reclaimer->Check().ok());
  const int64_t first = reclaimer->QuotaStatus().checked_at;
  env_.AdvanceNanos(999'000'000);
  ASSERT_TRUE(reclaimer->Check().ok());
  EXPECT_EQ(reclaimer->QuotaStatus().checked_at, first);
  env_.AdvanceNanos(1'000'000);
  ASSERT_TRUE(reclaimer->Check().ok());
  EXPECT_GT(reclaimer->QuotaStatus().checked_at, first);
}

TEST_F(ReclaimerTest, DropOldestRemovesTheLowestUnconfirmedLsnsAndKeepsConfirmedOnes) {
  SyncQuotaOptions probe;
  const uint64_t before = Unsynced(*Make(probe));
  ASSERT_GT(before, 0u);
  SyncQuotaOptions quota;
  quota.policy = QuotaPolicy::kDropOldest;
  quota.max_unsynced_bytes = before / 2;
  auto reclaimer = Make(quota);
  ASSERT_TRUE(reclaimer->Check().ok()) << reclaimer->QuotaStatus().last_error;
  const SyncQuotaStatus status = reclaimer->QuotaStatus();
  EXPECT_FALSE(status.over_budget);
  EXPECT_FALSE(status.refusing_writes);  // drop_oldest frees instead of refusing
  EXPECT_LE(status.unsynced_bytes, quota.max_unsynced_bytes);
  EXPECT_EQ(store_->seals_held, 1);
  EXPECT_EQ(store_->rewritten, std::set<int64_t>{1});

  const std::set<uint64_t> left = LsnsBySeries()[1];
  EXPECT_EQ(status.records_dropped, kRecords - left.size());
  EXPECT_GT(status.records_dropped, 0u);
  // Every confirmed reading stays; the dropped ones are the oldest
  // unconfirmed: what is left above the confirmed range is contiguous up
  // to the newest.
  for (uint64_t lsn = 1; lsn <= kConfirmedThrough; ++lsn) EXPECT_TRUE(left.count(lsn)) << lsn;
  const uint64_t first_kept = *left.upper_bound(kConfirmedThrough);
  EXPECT_GT(first_kept, kConfirmedThrough + 1);
  for (uint64_t lsn = first_kept; lsn <= kRecords; ++lsn) EXPECT_TRUE(left.count(lsn)) << lsn;
  // A dropped reading may have been the file's highest: its mark is gone.
  auto marks = catalog_->LoadSealMarks();
  ASSERT_TRUE(marks.ok());
  EXPECT_TRUE(marks->empty());
}

TEST_F(ReclaimerTest, DownsampleReplacesStepsByAggregatesCarryingTheStepsHighestLsn) {
  SyncQuotaOptions probe;
  const uint64_t before = Unsynced(*Make(probe));
  SyncQuotaOptions quota;
  quota.policy = QuotaPolicy::kDownsample;
  quota.downsample_step_seconds = 60;
  // A little over budget: downsampling the oldest unconfirmed chunks frees
  // enough, so no drop pass runs.
  quota.max_unsynced_bytes = before - before / 20;
  auto reclaimer = Make(quota);
  ASSERT_TRUE(reclaimer->Check().ok()) << reclaimer->QuotaStatus().last_error;
  const SyncQuotaStatus status = reclaimer->QuotaStatus();
  EXPECT_GE(status.records_downsampled, kChunkRecords);
  EXPECT_GE(status.aggregates_written, 1u);
  EXPECT_EQ(status.records_dropped, 0u);
  EXPECT_LT(status.unsynced_bytes, before);

  // The aggregate series is in the catalog and in the file.
  auto series = catalog_->LoadSeries();
  ASSERT_TRUE(series.ok());
  int64_t aggregate_id = 0;
  for (const CatalogSeries& s : *series) {
    if (s.measure_name == "env@60s") aggregate_id = s.series_id;
  }
  ASSERT_NE(aggregate_id, 0);
  auto lsns = LsnsBySeries();
  ASSERT_EQ(lsns[aggregate_id].size(), status.aggregates_written);
  // Each aggregate keeps the highest LSN of its step's records: 60 (second
  // 59) for the first step's unconfirmed part; none takes a confirmed one.
  EXPECT_TRUE(lsns[aggregate_id].count(60));
  for (uint64_t lsn : lsns[aggregate_id]) EXPECT_GT(lsn, kConfirmedThrough);
  // Raw readings replaced are gone, confirmed ones stay.
  for (uint64_t lsn = 1; lsn <= kConfirmedThrough; ++lsn) EXPECT_TRUE(lsns[1].count(lsn)) << lsn;
  EXPECT_EQ(lsns[1].size() + status.records_downsampled, static_cast<size_t>(kRecords));
  EXPECT_EQ(store_->rewritten, (std::set<int64_t>{1, aggregate_id}));
}

}  // namespace
}  // namespace cairn::testing
