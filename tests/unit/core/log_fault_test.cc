// The log under failing I/O and power cuts (FaultInjectionEnv), and after
// process crashes that leave a torn tail.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/platform/env.h"

#include "fault_injection_env.h"
#include "log/log_format.h"
#include "log/log_reader.h"
#include "log/log_writer.h"
#include "test_dirs.h"

namespace cairn {
namespace {

struct ReplayedRecord {
  uint64_t first_lsn;
  uint32_t count;
  std::string payload;
  bool operator==(const ReplayedRecord&) const = default;
};

std::string PayloadFor(uint64_t lsn) { return "reading-" + std::to_string(lsn) + std::string(20, 'r'); }

Status ReplayAll(Env* env, const std::string& dir, std::vector<ReplayedRecord>* records,
                 LogReplayStats* stats) {
  records->clear();
  return ReplayLog(
      env, dir, 0,
      [&](uint64_t first_lsn, uint32_t count, std::string_view payload) {
        records->push_back({first_lsn, count, std::string(payload)});
        return Status::Ok();
      },
      stats);
}

std::unique_ptr<LogWriter> OpenWriter(Env* env, const std::string& dir, uint64_t next_lsn,
                                      uint64_t segment_bytes = 64ull << 20) {
  LogWriterOptions options;
  options.segment_bytes = segment_bytes;
  Result<std::unique_ptr<LogWriter>> writer = LogWriter::Open(env, dir, next_lsn, options);
  EXPECT_TRUE(writer.ok()) << writer.status().ToString();
  return writer.ok() ? std::move(writer).value() : nullptr;
}

Status AppendOne(LogWriter* writer, uint64_t lsn, std::vector<ReplayedRecord>* appended) {
  std::string payload = PayloadFor(lsn);
  Status status = writer->Append(lsn, 1, payload);
  if (status.ok()) appended->push_back({lsn, 1, payload});
  return status;
}

class LogFaultTest : public ::testing::Test {
 protected:
  std::string LogDir() const { return temp_.PathOf("log"); }

  ScopedTempDir temp_{"cairn-log-fault"};
  FaultInjectionEnv env_{Env::Default()};
};

TEST_F(LogFaultTest, PowerCutLosesExactlyTheUnsyncedRecords) {
  std::unique_ptr<LogWriter> writer = OpenWriter(&env_, LogDir(), 1);
  ASSERT_NE(writer, nullptr);
  std::vector<ReplayedRecord> appended;
  for (uint64_t lsn = 1; lsn <= 5; ++lsn) ASSERT_TRUE(AppendOne(writer.get(), lsn, &appended).ok());
  ASSERT_TRUE(writer->Sync().ok());
  const std::vector<ReplayedRecord> synced = appended;
  for (uint64_t lsn = 6; lsn <= 8; ++lsn) ASSERT_TRUE(AppendOne(writer.get(), lsn, &appended).ok());
  EXPECT_EQ(writer->SyncedThroughLsn(), 6u);
  EXPECT_GT(env_.CurrentExposure().unsynced_bytes, 0u);

  ASSERT_TRUE(env_.SimulatePowerCut().ok());
  writer.reset();

  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  Status status = ReplayAll(&env_, LogDir(), &records, &stats);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(records, synced);
  EXPECT_EQ(stats.next_lsn, 6u);
}

TEST_F(LogFaultTest, RolloverSyncsTheFullSegmentEvenWithoutExplicitSyncs) {
  std::unique_ptr<LogWriter> writer = OpenWriter(&env_, LogDir(), 1, 200);
  ASSERT_NE(writer, nullptr);
  std::vector<ReplayedRecord> appended;
  for (uint64_t lsn = 1; lsn <= 40; ++lsn) ASSERT_TRUE(AppendOne(writer.get(), lsn, &appended).ok());
  const uint64_t synced_through = writer->SyncedThroughLsn();
  ASSERT_GT(synced_through, 1u);
  ASSERT_LT(synced_through, 41u);

  ASSERT_TRUE(env_.SimulatePowerCut().ok());
  writer.reset();

  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  Status status = ReplayAll(&env_, LogDir(), &records, &stats);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(records, std::vector<ReplayedRecord>(appended.begin(), appended.begin() + (synced_through - 1)));
  EXPECT_EQ(stats.next_lsn, synced_through);
}

TEST_F(LogFaultTest, ReopenAfterPowerCutStartsANewSegmentAndReplaySeesBoth) {
  std::unique_ptr<LogWriter> writer = OpenWriter(&env_, LogDir(), 1);
  ASSERT_NE(writer, nullptr);
  std::vector<ReplayedRecord> appended;
  for (uint64_t lsn = 1; lsn <= 3; ++lsn) ASSERT_TRUE(AppendOne(writer.get(), lsn, &appended).ok());
  ASSERT_TRUE(writer->Sync().ok());
  std::vector<ReplayedRecord> lost;
  for (uint64_t lsn = 4; lsn <= 5; ++lsn) ASSERT_TRUE(AppendOne(writer.get(), lsn, &lost).ok());
  ASSERT_TRUE(env_.SimulatePowerCut().ok());
  writer.reset();

  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  ASSERT_TRUE(ReplayAll(&env_, LogDir(), &records, &stats).ok());
  ASSERT_EQ(stats.next_lsn, 4u);
  writer = OpenWriter(&env_, LogDir(), stats.next_lsn);
  ASSERT_NE(writer, nullptr);
  // LSNs 4 and 5 are reused by new records: the lost ones were never durable.
  for (uint64_t lsn = 4; lsn <= 6; ++lsn) ASSERT_TRUE(AppendOne(writer.get(), lsn, &appended).ok());
  ASSERT_TRUE(writer->Sync().ok());
  ASSERT_TRUE(env_.SimulatePowerCut().ok());
  writer.reset();

  Status status = ReplayAll(&env_, LogDir(), &records, &stats);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(records, appended);
  EXPECT_EQ(stats.segments, (std::vector<std::string>{JoinPath(LogDir(), log_format::SegmentFileName(1)),
                                                      JoinPath(LogDir(), log_format::SegmentFileName(4))}));
  EXPECT_EQ(stats.next_lsn, 7u);
}

TEST_F(LogFaultTest, ReopenAfterAProcessCrashWithATornTail) {
  Env* env = Env::Default();
  std::unique_ptr<LogWriter> writer = OpenWriter(env, LogDir(), 1);
  ASSERT_NE(writer, nullptr);
  std::vector<ReplayedRecord> appended;
  for (uint64_t lsn = 1; lsn <= 4; ++lsn) ASSERT_TRUE(AppendOne(writer.get(), lsn, &appended).ok());
  writer.reset();
  // The crash hit in the middle of writing record 5: half of it is there.
  std::string torn;
  log_format::EncodeRecord(&torn, 5, 1, PayloadFor(5));
  {
    Result<std::unique_ptr<File>> file =
        env->OpenFile(JoinPath(LogDir(), log_format::SegmentFileName(1)), OpenMode::kReadWrite);
    ASSERT_TRUE(file.ok());
    Result<uint64_t> size = (*file)->Size();
    ASSERT_TRUE(size.ok());
    ASSERT_TRUE((*file)->WriteAt(*size, torn.substr(0, torn.size() / 2)).ok());
  }

  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  ASSERT_TRUE(ReplayAll(env, LogDir(), &records, &stats).ok());
  EXPECT_EQ(records, appended);
  EXPECT_EQ(stats.torn_tail_bytes, torn.size() / 2);
  writer = OpenWriter(env, LogDir(), stats.next_lsn);
  ASSERT_NE(writer, nullptr);
  for (uint64_t lsn = 5; lsn <= 7; ++lsn) ASSERT_TRUE(AppendOne(writer.get(), lsn, &appended).ok());
  ASSERT_TRUE(writer->Close().ok());

  Status status = ReplayAll(env, LogDir(), &records, &stats);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(records, appended);
  EXPECT_EQ(stats.torn_tail_bytes, 0u);
}

TEST_F(LogFaultTest, TornTailTruncationIsDurable) {
  std::unique_ptr<LogWriter> writer = OpenWriter(&env_, LogDir(), 1);
  ASSERT_NE(writer, nullptr);
  std::vector<ReplayedRecord> appended;
  for (uint64_t lsn = 1; lsn <= 3; ++lsn) ASSERT_TRUE(AppendOne(writer.get(), lsn, &appended).ok());
  ASSERT_TRUE(writer->Close().ok());
  const std::string path = JoinPath(LogDir(), log_format::SegmentFileName(1));
  {
    // Durable garbage after the last record, e.g. a zero-extended tail that
    // reached the disk.
    Result<std::unique_ptr<File>> file = env_.OpenFile(path, OpenMode::kReadWrite);
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE((*file)->Append(std::string(100, '\0')).ok());
    ASSERT_TRUE((*file)->Sync().ok());
  }
  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  ASSERT_TRUE(ReplayAll(&env_, LogDir(), &records, &stats).ok());
  EXPECT_EQ(stats.torn_tail_bytes, 100u);

  // Were the truncation not synced, the power cut would bring the tail back.
  ASSERT_TRUE(env_.SimulatePowerCut().ok());
  ASSERT_TRUE(ReplayAll(&env_, LogDir(), &records, &stats).ok());
  EXPECT_EQ(stats.torn_tail_bytes, 0u);
  EXPECT_EQ(records, appended);
}

TEST_F(LogFaultTest, OpenReportsAFailedSyncAndCanBeRetried) {
  env_.FailNth(FaultOp::kSync, 1, Status::IOError("injected"));
  Result<std::unique_ptr<LogWriter>> failed = LogWriter::Open(&env_, LogDir(), 1, LogWriterOptions());
  EXPECT_TRUE(failed.status().Is(StatusCode::kIOError)) << failed.status().ToString();
  std::unique_ptr<LogWriter> writer = OpenWriter(&env_, LogDir(), 1);
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer->Append(1, 1, "x").ok());
  ASSERT_TRUE(writer->Close().ok());
}

TEST_F(LogFaultTest, RemovedSegmentsStayRemovedAfterAPowerCut) {
  std::unique_ptr<LogWriter> writer = OpenWriter(&env_, LogDir(), 1, 100);
  ASSERT_NE(writer, nullptr);
  std::vector<ReplayedRecord> appended;
  for (uint64_t lsn = 1; lsn <= 6; ++lsn) ASSERT_TRUE(AppendOne(writer.get(), lsn, &appended).ok());
  ASSERT_TRUE(writer->Sync().ok());
  ASSERT_TRUE(writer->RemoveSegmentsBelow(4).ok());
  ASSERT_TRUE(env_.SimulatePowerCut().ok());
  writer.reset();

  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  ASSERT_TRUE(ReplayAll(&env_, LogDir(), &records, &stats).ok());
  EXPECT_EQ(records, std::vector<ReplayedRecord>(appended.begin() + 3, appended.end()));
  EXPECT_EQ(stats.next_lsn, 7u);
}

// Fails the N-th write (or sync) for N = 1, 2, ... until the workload runs
// clean, so every write and sync the writer issues fails once. A writer that
// got an error retries the same record, as a client would, and the workload
// goes on. Then a crash and a power cut must both leave a log that replays
// without corruption, holds every record that was acknowledged (a crash) or
// synced (a power cut) and nothing else, and can be continued.
class LogFaultSweepTest : public ::testing::TestWithParam<FaultOp> {};

TEST_P(LogFaultSweepTest, EveryFailureLeavesAReplayableLog) {
  const FaultOp op = GetParam();
  bool workload_ran_clean = false;
  for (int64_t n = 1; n <= 200 && !workload_ran_clean; ++n) {
    for (bool power_cut : {false, true}) {
      SCOPED_TRACE("failing " + std::string(FaultOpName(op)) + " #" + std::to_string(n) +
                   (power_cut ? " then power cut" : " then crash"));
      ScopedTempDir temp("cairn-log-sweep");
      const std::string dir = temp.PathOf("log");
      FaultInjectionEnv env(Env::Default());
      env.FailNth(op, n, Status::IOError("injected"));

      std::vector<ReplayedRecord> appended;
      uint64_t synced_through = 1;
      int failures = 0;
      LogWriterOptions options;
      options.segment_bytes = 150;
      Result<std::unique_ptr<LogWriter>> opened = LogWriter::Open(&env, dir, 1, options);
      if (!opened.ok()) {
        ++failures;
        opened = LogWriter::Open(&env, dir, 1, options);
      }
      ASSERT_TRUE(opened.ok()) << opened.status().ToString();
      std::unique_ptr<LogWriter> writer = std::move(opened).value();
      for (uint64_t lsn = 1; lsn <= 8;) {
        Status status = AppendOne(writer.get(), lsn, &appended);
        if (status.ok() && lsn % 3 == 0) status = writer->Sync();
        synced_through = writer->SyncedThroughLsn();
        if (!status.ok()) {
          ASSERT_TRUE(status.Is(StatusCode::kIOError)) << status.ToString();
          ASSERT_LT(++failures, 3) << "a fault injected once keeps failing: " << status.ToString();
          // A failed append left nothing in the log; a failed sync was
          // settled by writing the records again.
          EXPECT_EQ(writer->NextLsn(), appended.empty() ? 1 : appended.back().first_lsn + 1);
          if (writer->NextLsn() == lsn) continue;  // the append failed: retry it
        }
        ++lsn;
      }
      if (env.InjectedCount(op) == 0) workload_ran_clean = true;
      ASSERT_TRUE(writer->Failure().ok()) << writer->Failure().ToString();
      EXPECT_EQ(appended.size(), 8u);

      env.ClearFaults();
      if (power_cut) {
        ASSERT_TRUE(env.SimulatePowerCut().ok());
      }
      writer.reset();

      std::vector<ReplayedRecord> records;
      LogReplayStats stats;
      Status replayed = ReplayAll(&env, dir, &records, &stats);
      ASSERT_TRUE(replayed.ok()) << replayed.ToString();
      ASSERT_LE(records.size(), appended.size());
      EXPECT_EQ(records, std::vector<ReplayedRecord>(appended.begin(), appended.begin() + records.size()));
      EXPECT_GE(stats.next_lsn, synced_through) << "a synced record was lost";
      if (!power_cut) {
        EXPECT_EQ(records, appended) << "a crash keeps everything written";
      }

      // The log can be continued from where replay ended.
      std::unique_ptr<LogWriter> next = OpenWriter(&env, dir, stats.next_lsn, 150);
      ASSERT_NE(next, nullptr);
      ASSERT_TRUE(next->Append(stats.next_lsn, 1, "continued").ok());
      ASSERT_TRUE(next->Close().ok());
      ASSERT_TRUE(ReplayAll(&env, dir, &records, &stats).ok());
      ASSERT_FALSE(records.empty());
      EXPECT_EQ(records.back().payload, "continued");
    }
  }
  EXPECT_TRUE(workload_ran_clean) << "the sweep never reached a fault-free run";
}

INSTANTIATE_TEST_SUITE_P(WritesAndSyncs, LogFaultSweepTest,
                         ::testing::Values(FaultOp::kWrite, FaultOp::kSync),
                         [](const ::testing::TestParamInfo<FaultOp>& info) {
                           return std::string(FaultOpName(info.param));
                         });

}  // namespace
}  // namespace cairn
