#include "engine_test_util.h"

namespace cairn::testing {
namespace {

using EngineStorageTest = EngineFixture;

size_t CountRows(Engine* engine, const std::string& device) {
  RangeQuery q;
  q.table = "t";
  q.device_id = device;
  q.limit = 0;
  auto r = engine->Range(q);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? r->rows.size() : 0;
}

TEST_F(EngineStorageTest, RecoversUnsealedRecordsFromTheLog) {
  CreateTable();
  for (int i = 0; i < 100; ++i) WriteOk({Temperature("d", Now() - (100 - i) * kSecond, i)});
  Reopen();
  EXPECT_EQ(recovery_.records_replayed, 100u);
  EXPECT_EQ(CountRows(engine_.get(), "d"), 100u);
}

TEST_F(EngineStorageTest, SealWritesPeriodFilesAndCheckpointReleasesTheLog) {
  options_.log_segment_bytes = 4096;  // many small segments
  Reopen();
  CreateTable();
  for (int b = 0; b < 50; ++b) {
    std::vector<Record> batch;
    for (int i = 0; i < 20; ++i)
      batch.push_back(Temperature("d" + std::to_string(i), Now() - (1000 - b) * kSecond, b));
    WriteOk(batch);
  }
  const uint64_t log_before = engine_->Stats().log_bytes;
  ASSERT_TRUE(engine_->SealAll().ok());
  EngineStats stats = engine_->Stats();
  EXPECT_EQ(stats.head_records, 0u);
  EXPECT_GT(stats.chunks_sealed, 0u);
  EXPECT_EQ(stats.checkpoint_lsn, stats.last_lsn + 1);
  EXPECT_LT(stats.log_bytes, log_before / 4);
  EXPECT_GT(stats.period_file_bytes, 0u);
  const std::string stem = PeriodFileStem(Period::kDay, PeriodStart(Period::kDay, Now() - 1000 * kSecond));
  EXPECT_TRUE(clock_.FileExists(dir_.PathOf("t/" + stem + ".db")));
  Reopen();
  EXPECT_EQ(recovery_.records_replayed, 0u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(CountRows(engine_.get(), "d" + std::to_string(i)), 50u);
}

TEST_F(EngineStorageTest, PeriodsRollOverAndRetentionDropsWholeFiles) {
  TableOptions options;
  options.period = Period::kHour;
  options.retention_seconds = 3 * 3600;
  CreateTable("t", options);
  for (int hour = 0; hour < 6; ++hour) {
    WriteOk({Temperature("d", Now() - kSecond, hour)});
    ASSERT_TRUE(engine_->Maintain().ok());
    ASSERT_TRUE(engine_->SealAll().ok());
    clock_.AdvanceSeconds(3600);
  }
  ASSERT_TRUE(engine_->Maintain().ok());
  auto files = clock_.ListDir(dir_.PathOf("t"));
  ASSERT_TRUE(files.ok());
  size_t db_files = 0;
  for (const std::string& f : *files) db_files += f.size() > 3 && f.compare(f.size() - 3, 3, ".db") == 0;
  // Hours older than retention are gone; the current and next hour exist.
  EXPECT_LE(db_files, 5u);
  EXPECT_GE(db_files, 3u);
  const size_t rows = CountRows(engine_.get(), "d");
  EXPECT_GE(rows, 2u);
  EXPECT_LE(rows, 3u);
  Reopen();
  EXPECT_EQ(CountRows(engine_.get(), "d"), rows);
}

TEST_F(EngineStorageTest, LateWritesAndCompactionKeepOneVersionPerTimestamp) {
  TableOptions options;
  options.period = Period::kHour;
  CreateTable("t", options);
  const int64_t hour = PeriodStart(Period::kHour, Now()) - 3600 * kSecond;
  std::vector<Record> batch;
  for (int i = 0; i < 100; ++i) batch.push_back(Temperature("d", hour + i * kSecond, i));
  WriteOk(batch);
  ASSERT_TRUE(engine_->SealAll().ok());
  // Late data into the sealed hour: new versions and new timestamps.
  batch.clear();
  for (int i = 50; i < 150; ++i) batch.push_back(Temperature("d", hour + i * kSecond, 1000 + i, 1));
  WriteOk(batch);
  ASSERT_TRUE(engine_->SealAll().ok());
  EXPECT_EQ(CountRows(engine_.get(), "d"), 150u);
  const std::string path = dir_.PathOf("t/" + PeriodFileStem(Period::kHour, hour) + ".db");
  clock_.AdvanceSeconds(3600);  // the hour is long closed: compaction may run
  ASSERT_TRUE(engine_->Maintain().ok());
  RangeQuery q;
  q.table = "t";
  q.device_id = "d";
  q.limit = 0;
  auto rows = engine_->Range(q);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->rows.size(), 150u);
  EXPECT_EQ(std::get<double>(rows->rows[49].fields[0].value), 49.0);
  EXPECT_EQ(std::get<double>(rows->rows[50].fields[0].value), 1050.0);
  EXPECT_EQ(rows->rows[50].version, 1u);
  Reopen();
  EXPECT_EQ(CountRows(engine_.get(), "d"), 150u);
  EXPECT_TRUE(clock_.FileExists(path));
}

TEST_F(EngineStorageTest, MiddleOfLogCorruptionIsTypedAndRepairable) {
  options_.log_segment_bytes = 1024;
  Reopen();
  CreateTable();
  for (int i = 0; i < 40; ++i) WriteOk({Temperature("d", Now() - (100 - i) * kSecond, i)});
  ASSERT_TRUE(engine_->Close().ok());
  engine_.reset();
  auto segments = clock_.ListDir(dir_.PathOf("log"));
  ASSERT_TRUE(segments.ok());
  ASSERT_GE(segments->size(), 3u);
  // Damage the first segment: later segments make it mid-log corruption.
  const std::string victim = dir_.PathOf("log/" + (*segments)[0]);
  auto file = clock_.OpenFile(victim, OpenMode::kReadWrite);
  ASSERT_TRUE(file.ok());
  auto size = (*file)->Size();
  ASSERT_TRUE((*file)->WriteAt(*size - 5, "XXXX").ok());
  file->reset();
  auto opened = Engine::Open(&clock_, dir_.path(), options_);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kCorruption);
  EXPECT_NE(opened.status().message().find((*segments)[0]), std::string::npos) << opened.status().ToString();
  EXPECT_NE(opened.status().message().find("offset"), std::string::npos) << opened.status().ToString();
  auto repaired = Engine::RepairLog(&clock_, dir_.path());
  ASSERT_TRUE(repaired.ok()) << repaired.status().ToString();
  // Only the damaged record's reading is lost; the intact ones after it stay.
  EXPECT_EQ(repaired->readings_lost, 1u);
  EXPECT_GT(repaired->readings_kept_after_damage, 0u);
  Open();
  const size_t survivors = CountRows(engine_.get(), "d");
  EXPECT_EQ(survivors, 39u);
  // Writing goes on after the repair.
  WriteOk({Temperature("d", Now(), 1.0)});
  EXPECT_EQ(CountRows(engine_.get(), "d"), survivors + 1);
}

TEST_F(EngineStorageTest, MemoryBudgetSealsLargestHeads) {
  options_.head_memory_budget_bytes = 64 * 1024;
  options_.seal_records = 100000;
  Reopen();
  CreateTable();
  std::vector<Record> batch;
  for (int i = 0; i < 3000; ++i) batch.push_back(Temperature("big", Now() - (4000 - i) * kSecond, i));
  WriteOk(batch);
  EXPECT_GT(engine_->Stats().head_bytes, options_.head_memory_budget_bytes);
  ASSERT_TRUE(engine_->Maintain().ok());
  EXPECT_LE(engine_->Stats().head_bytes, options_.head_memory_budget_bytes);
  EXPECT_EQ(CountRows(engine_.get(), "big"), 3000u);
}

// One memory budget divides into the pools; the heads keep to their half
// under a write of many series, and SQLite's heap to about the caches'
// share (plus what the catalog and schemas take beside it).
TEST_F(EngineStorageTest, OneMemoryBudgetBoundsTheHeadsAndThePageCaches) {
  EngineOptions divided;
  divided.memory_budget_bytes = 16 << 20;
  divided.max_open_period_files = 8;
  divided = ApplyMemoryBudget(divided);
  EXPECT_EQ(divided.head_memory_budget_bytes, size_t{8} << 20);
  EXPECT_EQ(divided.writer_cache_kib, 2048);
  EXPECT_EQ(divided.reader_cache_kib, 256);
  EngineOptions unset;
  unset.head_memory_budget_bytes = 12345;
  EXPECT_EQ(ApplyMemoryBudget(unset).head_memory_budget_bytes, 12345u) << "no budget: the pools as given";
  EngineOptions tiny;
  tiny.memory_budget_bytes = 1 << 20;
  tiny = ApplyMemoryBudget(tiny);
  EXPECT_EQ(tiny.head_memory_budget_bytes, size_t{1} << 20);
  EXPECT_EQ(tiny.writer_cache_kib, 256);

  options_.memory_budget_bytes = 4 << 20;
  options_.seal_records = 100000;
  Reopen();
  CreateTable();
  const EngineStats before = engine_->Stats();
  EXPECT_EQ(before.memory_budget_bytes, uint64_t{4} << 20);
  EXPECT_EQ(before.head_budget_bytes, uint64_t{2} << 20);
  EXPECT_EQ(before.page_cache_budget_bytes, (2 * 512 + 8 * 64) * uint64_t{1024});
  for (int round = 0; round < 20; ++round) {
    std::vector<Record> batch;
    for (int device = 0; device < 500; ++device) {
      for (int i = 0; i < 10; ++i) {
        batch.push_back(Temperature("d" + std::to_string(device), Now() - (4000 - round * 10 - i) * kSecond, i));
      }
    }
    WriteOk(batch);
    ASSERT_TRUE(engine_->Maintain().ok());
    const EngineStats stats = engine_->Stats();
    EXPECT_LE(stats.head_bytes, stats.head_budget_bytes) << "round " << round;
    EXPECT_LE(stats.sqlite_memory_bytes, stats.page_cache_budget_bytes + (4 << 20)) << "round " << round;
  }
  EXPECT_EQ(CountRows(engine_.get(), "d7"), 200u);
}

// Writers that outrun the sealer wait for it: one thread writing as fast as
// it can, the maintenance thread sealing for the budget, and the heads (with
// the copies a running seal holds) stay within their budget but for about a
// write.
TEST_F(EngineStorageTest, WritersWaitForTheSealerWhileTheHeadsAreOverBudget) {
  options_.memory_budget_bytes = 4 << 20;
  options_.seal_records = 1000000;
  options_.seal_age_ms = 3600 * 1000;  // only the budget seals
  options_.maintenance_interval_ms = 1000;
  Reopen();
  CreateTable();
  const uint64_t budget = engine_->Stats().head_budget_bytes;
  constexpr int kRounds = 60, kDevices = 500, kPerDevice = 20;
  uint64_t highest = 0;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<Record> batch;
    for (int device = 0; device < kDevices; ++device) {
      for (int i = 0; i < kPerDevice; ++i) {
        const int64_t age = (kRounds - round) * kPerDevice - i;
        batch.push_back(Temperature("d" + std::to_string(device), Now() - age * kSecond, i));
      }
    }
    WriteOk(batch);
    highest = std::max(highest, engine_->Stats().head_bytes);
  }
  const EngineStats stats = engine_->Stats();
  EXPECT_GT(stats.chunks_sealed, 0u) << "the budget sealed";
  EXPECT_LE(highest, budget + budget / 2) << "budget " << budget;
  EXPECT_EQ(CountRows(engine_.get(), "d7"), uint64_t{kRounds * kPerDevice});
}

// Sealing every head at once (a stop) copies them in batches of a quarter
// of the head budget, not all at once: the copies never double the heads.
TEST_F(EngineStorageTest, SealingEveryHeadCopiesThemInBatchesOfAQuarterOfTheBudget) {
  options_.memory_budget_bytes = 4 << 20;
  options_.seal_records = 1000000;
  options_.seal_age_ms = 3600 * 1000;
  options_.maintenance_interval_ms = 0;  // nothing seals until SealAll
  Reopen();
  CreateTable();
  const uint64_t budget = engine_->Stats().head_budget_bytes;
  constexpr int kDevices = 400, kPerDevice = 200;
  std::vector<Record> batch;
  for (int device = 0; device < kDevices; ++device) {
    for (int i = 0; i < kPerDevice; ++i) {
      batch.push_back(Temperature("d" + std::to_string(device), Now() - (kPerDevice - i) * kSecond, i));
    }
  }
  WriteOk(batch);
  const uint64_t heads = engine_->Stats().head_bytes;
  ASSERT_GT(heads, budget) << "the heads hold more than one batch";
  ASSERT_TRUE(engine_->SealAll().ok());
  const EngineStats stats = engine_->Stats();
  EXPECT_EQ(stats.head_records, 0u);
  EXPECT_GT(stats.seal_copies_peak_bytes, 0u);
  // A quarter of the budget, or 1 MiB when that is less, plus the one head
  // that crossed it.
  const uint64_t limit = std::max<uint64_t>(budget / 4, 1 << 20);
  EXPECT_LE(stats.seal_copies_peak_bytes, limit + heads / kDevices + 64) << "heads " << heads;
  EXPECT_LT(stats.seal_copies_peak_bytes, heads / 2);
  for (const std::string device : {"d0", "d199", "d399"}) {
    EXPECT_EQ(CountRows(engine_.get(), device), uint64_t{kPerDevice}) << device;
  }
}

}  // namespace
}  // namespace cairn::testing
