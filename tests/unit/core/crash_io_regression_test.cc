// Reproducers of the defects the I/O-error sweep (crash_io_sweep_test.cc)
// found, one per defect, each reduced to the fewest steps that show it. A
// test whose defect is not fixed yet is skipped with a line naming it; the
// skip goes when the fix lands (and the sweep's DeferredKinds entry with it).
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/core/engine.h"
#include "cairn/core/record.h"
#include "cairn/core/table.h"
#include "cairn/platform/env.h"

#include "crash_no_sync_env.h"
#include "fault_injection_env.h"
#include "manual_clock_env.h"
#include "test_dirs.h"

namespace cairn {
namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;
constexpr char kTable[] = "readings";

class CrashIoRegressionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.durability = Durability::kFull;
    options_.maintenance_interval_ms = 0;
    ASSERT_TRUE(Open().ok());
    TableOptions table;
    table.period = Period::kHour;
    ASSERT_TRUE(engine_->CreateTable(kTable, table).ok());
  }

  Status Open() {
    auto opened = Engine::Open(&env_, dir_.path(), options_);
    if (!opened.ok()) return opened.status();
    engine_ = std::move(opened).value();
    return Status::Ok();
  }

  // Four readings of one series, a different second for each batch.
  std::vector<Record> Batch(int index) {
    std::vector<Record> records;
    for (int i = 0; i < 4; ++i) {
      Record record;
      record.device_id = "gw-1";
      record.measure_name = "env#temperature";
      record.timestamp = clock_.NowUnixNanos() - (600 - index * 10 - i) * kNanosPerSecond;
      record.fields = {Field{"value", 20.0 + index}};
      records.push_back(std::move(record));
    }
    return records;
  }

  void WriteAcknowledged(int index) {
    auto written = engine_->Write(kTable, Batch(index));
    ASSERT_TRUE(written.ok()) << "batch " << index << ": " << written.status().ToString();
    ASSERT_EQ(written->stored, 4u);
  }

  // Fails the next call of `op` once, writes batch `index`, which must fail
  // in the write-ahead log (the series exists, so the log is all it
  // touches).
  void WriteFailingInTheLog(int index, FaultOp op, Status error, FailedWriteEffect effect) {
    env_.FailNth(op, 1, std::move(error), effect);
    auto written = engine_->Write(kTable, Batch(index));
    env_.ClearFaults();
    ASSERT_FALSE(written.ok());
    ASSERT_NE(written.status().message().find("write-ahead log"), std::string::npos)
        << written.status().ToString();
  }

  // The batches whose readings the engine returns, each whole; a batch
  // present in part fails the test.
  std::set<int> BatchesPresent() {
    RangeQuery query;
    query.table = kTable;
    query.device_id = "gw-1";
    query.limit = 0;
    auto rows = engine_->Range(query);
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    std::map<int, int> counts;
    for (const RecordRow& row : rows.ok() ? rows->rows : std::vector<RecordRow>{}) {
      counts[static_cast<int>(std::get<double>(row.fields.at(0).value)) - 20]++;
    }
    std::set<int> batches;
    for (const auto& [batch, count] : counts) {
      EXPECT_EQ(count, 4) << "batch " << batch << " is there in part";
      batches.insert(batch);
    }
    return batches;
  }

  ScopedTempDir dir_{"cairn-io-regression"};
  // The env decides what is durable; real syncs would only cost time.
  NoSyncEnv no_sync_{Env::Default()};
  ManualClockEnv clock_{&no_sync_};
  FaultInjectionEnv env_{&clock_};
  EngineOptions options_;
  std::unique_ptr<Engine> engine_;
};

// The disk is full for one log append (ENOSPC, half the record written) and
// has room again at once: the next write must be taken without a restart,
// and survive a power cut.
// Sweep: write call 474 (and every log append or segment-header write) in
// once mode, "writes refused after a transient fault".
TEST_F(CrashIoRegressionTest, WritesResumeWithoutRestartAfterTheLogFailedOnce) {
  WriteAcknowledged(0);
  WriteFailingInTheLog(1, FaultOp::kWrite, Status::ResourceExhausted("write: No space left on device (injected)"),
                       FailedWriteEffect::kHalfWritten);
  WriteAcknowledged(2);
  ASSERT_TRUE(env_.SimulatePowerCut().ok());
  engine_.reset();
  ASSERT_TRUE(Open().ok());
  const std::set<int> present = BatchesPresent();
  EXPECT_TRUE(present.count(0) && present.count(2));
  EXPECT_FALSE(present.count(3));
}

// A batch refused for lack of space, then a clean stop (seal, close) and two
// starts: the second start must not refuse. Issue's first row.
// Sweep: open call 22 in once mode, write call 285 in once mode, "open
// refused under durability full" (LSN gap between segments).
TEST_F(CrashIoRegressionTest, CleanRestartsAfterAFailedLogAppendAreNotRefused) {
  WriteAcknowledged(0);
  WriteFailingInTheLog(1, FaultOp::kWrite, Status::ResourceExhausted("write: No space left on device (injected)"),
                       FailedWriteEffect::kNothing);
  (void)engine_->SealAll();
  (void)engine_->Close();
  engine_.reset();
  ASSERT_TRUE(Open().ok());
  WriteAcknowledged(2);
  ASSERT_TRUE(engine_->Close().ok());
  engine_.reset();
  const Status reopened = Open();
  ASSERT_TRUE(reopened.ok()) << reopened.ToString();
  const std::set<int> present = BatchesPresent();
  EXPECT_TRUE(present.count(0) && present.count(2));
}

// fdatasync of the log fails (EIO) and keeps failing until the engine is
// gone, so the log cannot settle: the record stays readable in the page
// cache but never reaches the disk (FaultInjectionEnv models Linux). A
// restart replays it from the page cache and starts the next segment after
// it; readings acknowledged after the restart must survive a power cut.
// Sweep: sync call 1 (and 65 more) in forever mode, sync call 71 in once
// mode, "open refused under durability full", then "acknowledged reading
// lost by the repair".
TEST_F(CrashIoRegressionTest, RestartAfterAFailedLogSyncDoesNotBuildOnDataTheDiskNeverGot) {
  WriteAcknowledged(0);
  env_.FailFromNth(FaultOp::kSync, 1, Status::IOError("fdatasync: Input/output error (injected)"));
  auto written = engine_->Write(kTable, Batch(1));
  ASSERT_FALSE(written.ok());
  (void)engine_->Close();
  engine_.reset();
  env_.ClearFaults();
  ASSERT_TRUE(Open().ok());
  WriteAcknowledged(2);
  engine_.reset();
  ASSERT_TRUE(env_.SimulatePowerCut().ok());
  const Status reopened = Open();
  ASSERT_TRUE(reopened.ok()) << reopened.ToString();
  const std::set<int> present = BatchesPresent();
  EXPECT_TRUE(present.count(0) && present.count(2));
}

// Retention drops a period file past retention by unlinking the .db and its
// -wal; it once synced the directory only after both and ignored the error.
// With the directory sync failing (EIO) and the checkpoint at close failing
// with it, the .db on disk holds only what an earlier checkpoint put there;
// the newest version of a reading is in the -wal. A power cut that kept the
// -wal's unlink and undid the .db's (the entry changes of one directory are
// independent in FaultInjectionEnv's model) brought the file back without
// its WAL, and the reading showed its older version. Now the -wal goes only
// once the .db's unlink is synced, and a seal checkpoints its WAL into the
// .db before the log lets go of it: whichever entry changes a cut keeps,
// the file comes back whole or not at all. Once past retention a reading
// may be gone, but never back in a state that a later write replaced.
// Sweep: sync call 101 failing forever, "expired reading back in another
// state" (reordered cut, some entry changes kept).
TEST(CrashIoRetentionRegressionTest, RetentionNeverBringsBackAPeriodFileWithoutItsWal) {
  int came_back = 0;
  // The cut's choices come from its seed: some seeds undo the .db's unlink.
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE("cut seed " + std::to_string(seed));
    ScopedTempDir dir("cairn-io-retention");
    NoSyncEnv no_sync(Env::Default());
    ManualClockEnv clock(&no_sync);
    FaultInjectionEnv env(&clock);
    EngineOptions options;
    options.maintenance_interval_ms = 0;
    auto open = [&] { return Engine::Open(&env, dir.path(), options); };
    auto engine = open();
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    TableOptions table;
    table.period = Period::kHour;
    table.retention_seconds = 2 * 3600;
    ASSERT_TRUE((*engine)->CreateTable(kTable, table).ok());
    Record reading;
    reading.device_id = "gw-1";
    reading.measure_name = "env#temperature";
    reading.timestamp = clock.NowUnixNanos() - 60 * kNanosPerSecond;
    reading.fields = {Field{"value", 1.0}};
    ASSERT_TRUE((*engine)->Write(kTable, {reading}).ok());
    ASSERT_TRUE((*engine)->SealAll().ok());
    // A clean restart checkpoints version 0 into the .db.
    ASSERT_TRUE((*engine)->Close().ok());
    engine = open();
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    reading.version = 1;
    reading.fields = {Field{"value", 2.0}};
    auto written = (*engine)->Write(kTable, {reading});
    ASSERT_TRUE(written.ok() && written->stored == 1);
    ASSERT_TRUE((*engine)->SealAll().ok());

    // The reading's period file, which retention is about to drop.
    const std::string table_dir = JoinPath(dir.path(), kTable);
    Result<std::vector<std::string>> names = Env::Default()->ListDir(table_dir);
    ASSERT_TRUE(names.ok()) << names.status().ToString();
    std::string db;
    for (const std::string& name : *names) {
      if (name.size() > 3 && name.compare(name.size() - 3, 3, ".db") == 0) db = JoinPath(table_dir, name);
    }
    ASSERT_FALSE(db.empty());

    clock.AdvanceNanos(int64_t{3} * 3600 * kNanosPerSecond);
    env.FailFromNth(FaultOp::kSync, 1, Status::IOError("fsync: Input/output error (injected)"));
    (void)(*engine)->Maintain();
    env.ClearFaults();
    ASSERT_FALSE(Env::Default()->FileExists(db)) << "retention did not drop " << db;
    engine->reset();
    PowerCutOptions cut;
    cut.keep_some_entry_changes = true;
    cut.seed = seed;
    ASSERT_TRUE(env.SimulatePowerCut(cut).ok());
    if (!Env::Default()->FileExists(db)) continue;
    ++came_back;

    engine = open();
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    auto got = (*engine)->Get(kTable, reading.device_id, reading.measure_name, reading.timestamp);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    if (got->has_value()) {
      EXPECT_EQ((*got)->version, 1u) << "an expired reading came back in the version a later write replaced";
    }
  }
  EXPECT_GT(came_back, 0) << "no seed undid the .db's unlink: the cut was never tried";
}

}  // namespace
}  // namespace cairn
