// The engine when its data directory stops taking writes: a full disk, a
// filesystem remounted read-only, an fdatasync that fails. Faults come from a
// FaultInjectionEnv under the engine (the log and SQLite both go through it).
// In each case: writes are refused with a clear error and consume nothing,
// queries keep working, nothing acknowledged is lost, health names the
// condition, and writes resume by themselves once it is over; a clean stop
// leaves a directory the next start accepts.
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/core/engine.h"

#include "engine_test_util.h"
#include "fault_injection_env.h"
#include "manual_clock_env.h"
#include "test_dirs.h"

namespace cairn::testing {
namespace {

class EngineDiskFaultsTest : public ::testing::Test {
 protected:
  EngineDiskFaultsTest() { options_.maintenance_interval_ms = 0; }

  void SetUp() override {
    Open();
    ASSERT_TRUE(engine_->CreateTable("t", TableOptions{}).ok());
  }

  void Open() {
    engine_.reset();
    auto opened = Engine::Open(&clock_, dir_.path(), options_);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    engine_ = std::move(opened).value();
  }

  void CleanStopAndStart() {
    ASSERT_TRUE(engine_->SealAll().ok());
    ASSERT_TRUE(engine_->Close().ok());
    Open();
  }

  // `count` readings of `device`, one second apart, ending a minute ago.
  std::vector<Record> Readings(const std::string& device, int first, int count) {
    std::vector<Record> records;
    for (int i = first; i < first + count; ++i) {
      records.push_back(Temperature(device, clock_.NowUnixNanos() - (100000 - i) * kSecond, i));
    }
    return records;
  }

  size_t Count(const std::string& device) {
    RangeQuery query;
    query.table = "t";
    query.device_id = device;
    query.limit = 0;
    auto rows = engine_->Range(query);
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    return rows.ok() ? rows->rows.size() : 0;
  }

  static std::optional<HealthProblem> Problem(const EngineHealth& health, std::string_view key) {
    for (const HealthProblem& problem : health.problems) {
      if (problem.key == key) return problem;
    }
    return std::nullopt;
  }

  ScopedTempDir dir_{"cairn-disk-faults"};
  FaultInjectionEnv faults_{Env::Default()};
  ManualClockEnv clock_{&faults_};
  EngineOptions options_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(EngineDiskFaultsTest, ADiskFullOnceRefusesWritesConsumesNothingAndWritesResumeWithoutARestart) {
  ASSERT_TRUE(engine_->Write("t", Readings("d", 0, 100)).ok());
  const uint64_t last_lsn = engine_->Stats().last_lsn;

  faults_.FailFromNth(FaultOp::kWrite, 1, Status::ResourceExhausted("write: No space left on device"));
  for (int attempt = 0; attempt < 3; ++attempt) {
    Result<WriteResult> refused = engine_->Write("t", Readings("d", 100, 50));
    ASSERT_TRUE(refused.status().Is(StatusCode::kResourceExhausted)) << refused.status().ToString();
    const std::string& message = refused.status().message();
    EXPECT_NE(message.find("no space left on the filesystem holding " + dir_.path()), std::string::npos)
        << message;
    EXPECT_NE(message.find("bytes free"), std::string::npos) << message;
    EXPECT_NE(message.find("writes resume once space is freed"), std::string::npos) << message;
  }
  // A new series needs the catalog, which is full too.
  EXPECT_TRUE(engine_->Write("t", Readings("new", 0, 5)).status().Is(StatusCode::kResourceExhausted));
  EXPECT_EQ(engine_->Stats().last_lsn, last_lsn) << "a refused write consumes no LSN";
  EXPECT_EQ(Count("d"), 100u) << "queries keep working";
  EXPECT_EQ(Count("new"), 0u);

  EngineHealth health = engine_->Health();
  EXPECT_EQ(health.level, HealthLevel::kDegraded);
  const std::optional<HealthProblem> full = Problem(health, "disk.full");
  ASSERT_TRUE(full.has_value());
  EXPECT_EQ(full->component, "disk");
  EXPECT_NE(full->message.find(dir_.path()), std::string::npos) << full->message;
  EXPECT_NE(full->message.find("bytes free"), std::string::npos) << full->message;
  EXPECT_NE(full->remedy.find("writes resume by themselves"), std::string::npos) << full->remedy;

  // Space is back: the very next writes go through, with the next LSNs.
  faults_.ClearFaults();
  Result<WriteResult> resumed = engine_->Write("t", Readings("d", 100, 50));
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  EXPECT_EQ(resumed->first_lsn, last_lsn + 1);
  ASSERT_TRUE(engine_->Write("t", Readings("new", 0, 5)).ok());
  EXPECT_FALSE(Problem(engine_->Health(), "disk.full").has_value());
  EXPECT_EQ(engine_->Health().level, HealthLevel::kOk);

  // Two clean stops and starts: the log is accepted each time, and every
  // acknowledged reading is there under its own device.
  for (int restart = 0; restart < 2; ++restart) {
    CleanStopAndStart();
    EXPECT_EQ(Count("d"), 150u + restart);
    EXPECT_EQ(Count("new"), 5u);
    ASSERT_TRUE(engine_->Write("t", Readings("d", 150 + restart, 1)).ok());
  }
}

TEST_F(EngineDiskFaultsTest, AReadOnlyFilesystemRefusesWritesUntilItIsWritableAgain) {
  ASSERT_TRUE(engine_->Write("t", Readings("d", 0, 10)).ok());
  faults_.FailFromNth(FaultOp::kWrite, 1,
                      Status::PermissionDenied("write " + dir_.path() + "/log/x: Read-only file system"));
  Result<WriteResult> refused = engine_->Write("t", Readings("d", 10, 10));
  ASSERT_TRUE(refused.status().Is(StatusCode::kResourceExhausted)) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("refuses writes"), std::string::npos)
      << refused.status().message();
  const std::optional<HealthProblem> read_only = Problem(engine_->Health(), "disk.read_only");
  ASSERT_TRUE(read_only.has_value());
  EXPECT_EQ(read_only->component, "disk");
  EXPECT_NE(read_only->message.find("Read-only file system"), std::string::npos) << read_only->message;
  EXPECT_EQ(Count("d"), 10u);

  faults_.ClearFaults();
  ASSERT_TRUE(engine_->Write("t", Readings("d", 10, 10)).ok());
  EXPECT_EQ(engine_->Health().level, HealthLevel::kOk);
  CleanStopAndStart();
  EXPECT_EQ(Count("d"), 20u);
}

// After a failed fdatasync the engine never takes the data for durable: the
// group is not acknowledged, and once the log has settled its readings never
// come back, not even after a power cut.
TEST_F(EngineDiskFaultsTest, AGroupWhoseSyncFailedIsNotAcknowledgedAndNeverComesBack) {
  ASSERT_TRUE(engine_->Write("t", Readings("d", 0, 10)).ok());
  faults_.FailFromNth(FaultOp::kSync, 1, Status::IOError("fdatasync: Input/output error"));
  Result<WriteResult> failed = engine_->Write("t", Readings("lost", 0, 7));
  ASSERT_FALSE(failed.ok());
  EXPECT_TRUE(failed.status().Is(StatusCode::kUnavailable)) << failed.status().ToString();
  EXPECT_EQ(Count("lost"), 0u) << "an unacknowledged group is not visible";
  const std::optional<HealthProblem> io = Problem(engine_->Health(), "log.io_error");
  ASSERT_TRUE(io.has_value());
  EXPECT_NE(io->message.find("Input/output error"), std::string::npos) << io->message;

  faults_.ClearFaults();
  ASSERT_TRUE(engine_->Write("t", Readings("d", 10, 10)).ok());
  EXPECT_EQ(engine_->Health().level, HealthLevel::kOk);
  ASSERT_TRUE(faults_.SimulatePowerCut().ok());
  Open();
  EXPECT_EQ(Count("d"), 20u);
  EXPECT_EQ(Count("lost"), 0u);
  // The writer who got the error retries: the readings are stored now.
  Result<WriteResult> retried = engine_->Write("t", Readings("lost", 0, 7));
  ASSERT_TRUE(retried.ok()) << retried.status().ToString();
  EXPECT_EQ(retried->stored, 7u);
}

// A sync that fails once is settled by writing the group again and syncing
// that: the write is acknowledged, and durable.
TEST_F(EngineDiskFaultsTest, ASyncThatFailsOnceIsSettledAndTheWriteIsDurable) {
  ASSERT_TRUE(engine_->Write("t", Readings("d", 0, 1)).ok());  // the series is in the catalog
  faults_.FailNth(FaultOp::kSync, 1, Status::IOError("fdatasync: Input/output error"));
  Result<WriteResult> written = engine_->Write("t", Readings("d", 1, 10));
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_EQ(faults_.InjectedCount(FaultOp::kSync), 1);
  ASSERT_TRUE(faults_.SimulatePowerCut().ok());
  Open();
  EXPECT_EQ(Count("d"), 11u);
}

// Sealing under a full disk keeps the head's records for a later seal.
TEST_F(EngineDiskFaultsTest, ASealThatHitsAFullDiskKeepsTheHead) {
  ASSERT_TRUE(engine_->Write("t", Readings("d", 0, 40)).ok());
  const EngineStats before = engine_->Stats();
  faults_.FailFromNth(FaultOp::kWrite, 1, Status::ResourceExhausted("write: No space left on device"));
  EXPECT_FALSE(engine_->SealAll().ok());
  EXPECT_EQ(engine_->Stats().head_records, before.head_records);
  EXPECT_EQ(Count("d"), 40u);
  // A power cut now: the log still holds them.
  ASSERT_TRUE(faults_.SimulatePowerCut().ok());
  faults_.ClearFaults();
  Open();
  EXPECT_EQ(Count("d"), 40u);
  ASSERT_TRUE(engine_->SealAll().ok());
  CleanStopAndStart();
  EXPECT_EQ(Count("d"), 40u);
  EXPECT_EQ(engine_->Stats().head_records, 0u);
}

// A full disk does not keep the engine from starting: queries work, writes
// wait for room.
TEST_F(EngineDiskFaultsTest, AnEngineStartsOnAFullDisk) {
  ASSERT_TRUE(engine_->Write("t", Readings("d", 0, 10)).ok());
  CleanStopAndStart();
  ASSERT_TRUE(engine_->Close().ok());
  engine_.reset();
  faults_.FailFromNth(FaultOp::kWrite, 1, Status::ResourceExhausted("write: No space left on device"));
  Open();
  EXPECT_TRUE(Problem(engine_->Health(), "disk.full").has_value());
  EXPECT_EQ(Count("d"), 10u);
  EXPECT_TRUE(engine_->Write("t", Readings("d", 10, 1)).status().Is(StatusCode::kResourceExhausted));
  faults_.ClearFaults();
  ASSERT_TRUE(engine_->Write("t", Readings("d", 10, 1)).ok());
  CleanStopAndStart();
  EXPECT_EQ(Count("d"), 11u);
}

}  // namespace
}  // namespace cairn::testing
