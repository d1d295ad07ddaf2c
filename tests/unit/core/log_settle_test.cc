// The writer after a failed write or sync: it never syncs again what a
// failed sync may have dropped, it settles back to a known state (cutting
// the segment back and writing again from memory, or starting a new segment
// that declares where the log ends), a failed record never comes back once
// it has settled, and writes resume by themselves when the disk does.
#include <atomic>
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
#include "log_test_util.h"
#include "test_dirs.h"

namespace cairn {
namespace {

using testing::ReplayedRecord;

// Files whose next Append, when armed, writes only half of its bytes and then
// fails as a full disk does, and whose Truncate fails while `truncate_fails`
// is set: a segment that can be neither finished nor cut back.
class ShortWriteEnv : public EnvWrapper {
 public:
  explicit ShortWriteEnv(Env* target) : EnvWrapper(target) {}

  std::atomic<int> short_appends{0};
  std::atomic<bool> truncate_fails{false};

  Result<std::unique_ptr<File>> OpenFile(const std::string& path, OpenMode mode) override {
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<File> file, target()->OpenFile(path, mode));
    return std::unique_ptr<File>(new ShortWriteFile(std::move(file), this));
  }

 private:
  class ShortWriteFile : public File {
   public:
    ShortWriteFile(std::unique_ptr<File> file, ShortWriteEnv* env) : file_(std::move(file)), env_(env) {}
    Result<size_t> ReadAt(uint64_t offset, size_t n, char* dst) override {
      return file_->ReadAt(offset, n, dst);
    }
    Status WriteAt(uint64_t offset, std::string_view data) override { return file_->WriteAt(offset, data); }
    Status Append(std::string_view data) override {
      if (env_->short_appends > 0) {
        --env_->short_appends;
        CAIRN_RETURN_IF_ERROR(file_->Append(data.substr(0, data.size() / 2)));
        return Status::ResourceExhausted("write " + path() + ": No space left on device");
      }
      return file_->Append(data);
    }
    Status Truncate(uint64_t size) override {
      if (env_->truncate_fails) return Status::IOError("truncate " + path() + ": Input/output error");
      return file_->Truncate(size);
    }
    Status Sync() override { return file_->Sync(); }
    Result<uint64_t> Size() override { return file_->Size(); }
    const std::string& path() const override { return file_->path(); }

   private:
    std::unique_ptr<File> file_;
    ShortWriteEnv* env_;
  };
};

class LogSettleTest : public testing::LogDirTest {
 protected:
  std::unique_ptr<LogWriter> Open(Env* env, uint64_t next_lsn = 1) {
    Result<std::unique_ptr<LogWriter>> writer = LogWriter::Open(env, LogDir(), next_lsn, LogWriterOptions());
    EXPECT_TRUE(writer.ok()) << writer.status().ToString();
    return writer.ok() ? std::move(writer).value() : nullptr;
  }

  std::vector<ReplayedRecord> ReplayedFrom(Env* env, LogReplayStats* stats = nullptr) {
    std::vector<ReplayedRecord> records;
    LogReplayStats local;
    Status status = ReplayLog(
        env, LogDir(), 0,
        [&](uint64_t first_lsn, uint32_t count, std::string_view payload) {
          records.push_back({first_lsn, count, std::string(payload)});
          return Status::Ok();
        },
        stats ? stats : &local);
    EXPECT_TRUE(status.ok()) << status.ToString();
    return records;
  }
};

TEST_F(LogSettleTest, AHalfWrittenRecordIsCutAndTheNextAppendGoesOn) {
  ShortWriteEnv env(Env::Default());
  std::unique_ptr<LogWriter> writer = Open(&env);
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer->Append(1, 1, "one", /*sync=*/true).ok());
  const uint64_t size_after_one = FileSize(SegmentPath(1));

  env.short_appends = 1;
  Status failed = writer->Append(2, 1, std::string(200, 'x'), /*sync=*/true);
  ASSERT_TRUE(failed.Is(StatusCode::kResourceExhausted)) << failed.ToString();
  // Nothing of the failed record stays: not its LSN, not its bytes.
  EXPECT_EQ(writer->NextLsn(), 2u);
  EXPECT_TRUE(writer->Failure().ok()) << writer->Failure().ToString();
  EXPECT_EQ(FileSize(SegmentPath(1)), size_after_one);

  // Space is back: the same LSN is appended without a restart.
  ASSERT_TRUE(writer->Append(2, 1, "two", /*sync=*/true).ok());
  ASSERT_TRUE(writer->Close().ok());
  EXPECT_EQ(ReplayedFrom(Env::Default()), (std::vector<ReplayedRecord>{{1, 1, "one"}, {2, 1, "two"}}));
}

TEST_F(LogSettleTest, ASegmentThatCannotBeCutBackIsLeftForOneThatDeclaresWhereTheLogEnds) {
  ShortWriteEnv env(Env::Default());
  std::unique_ptr<LogWriter> writer = Open(&env);
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer->Append(1, 1, "one", /*sync=*/true).ok());

  env.short_appends = 1;
  env.truncate_fails = true;
  const std::string lost(200, 'x');
  ASSERT_TRUE(writer->Append(2, 1, lost, /*sync=*/true).Is(StatusCode::kResourceExhausted));
  // Settled all the same: a new segment at LSN 2 declares that the log
  // before it ends at 2, whatever segment 1 holds after that.
  EXPECT_TRUE(writer->Failure().ok()) << writer->Failure().ToString();
  EXPECT_TRUE(env.FileExists(SegmentPath(2)));
  const log_format::SegmentHeader header = log_format::DecodeSegmentHeader(ReadFile(SegmentPath(2)));
  ASSERT_EQ(header.state, log_format::SegmentHeader::State::kValid);
  EXPECT_EQ(header.previous_end_lsn, 2u);

  ASSERT_TRUE(writer->Append(2, 1, "two", /*sync=*/true).ok());
  ASSERT_TRUE(writer->Close().ok());
  LogReplayStats stats;
  EXPECT_EQ(ReplayedFrom(Env::Default(), &stats),
            (std::vector<ReplayedRecord>{{1, 1, "one"}, {2, 1, "two"}}));
  // The half record is still in segment 1, and never replayed.
  EXPECT_EQ(stats.abandoned_bytes, (log_format::kRecordHeaderSize + lost.size()) / 2);
}

TEST_F(LogSettleTest, AFailedSyncIsNeverRetriedTheRecordsAreWrittenAgain) {
  FaultInjectionEnv env(Env::Default());
  std::unique_ptr<LogWriter> writer = Open(&env);
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer->Append(1, 1, "one").ok());
  ASSERT_TRUE(writer->Append(2, 1, "two").ok());

  env.FailNth(FaultOp::kSync, 1, Status::IOError("fdatasync: Input/output error"));
  const int64_t writes_before = env.CallCount(FaultOp::kWrite);
  const int64_t syncs_before = env.CallCount(FaultOp::kSync);
  // The failed sync may have dropped the pages: the writer cuts the segment
  // back to its durable length, writes both records again from memory and
  // syncs that. Then they are durable.
  ASSERT_TRUE(writer->Sync().ok());
  EXPECT_EQ(env.InjectedCount(FaultOp::kSync), 1);
  EXPECT_EQ(env.CallCount(FaultOp::kWrite), writes_before + 2) << "a cut and one write of both records";
  EXPECT_EQ(env.CallCount(FaultOp::kSync), syncs_before + 2)
      << "the failed sync and the one after the rewrite";
  EXPECT_EQ(writer->SyncedThroughLsn(), 3u);
  ASSERT_TRUE(env.SimulatePowerCut().ok());
  writer.reset();
  EXPECT_EQ(ReplayedFrom(&env), (std::vector<ReplayedRecord>{{1, 1, "one"}, {2, 1, "two"}}));
}

TEST_F(LogSettleTest, ARecordWhoseSyncFailedForGoodNeverComesBackOnceSettled) {
  FaultInjectionEnv env(Env::Default());
  std::unique_ptr<LogWriter> writer = Open(&env);
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer->Append(1, 1, "one", /*sync=*/true).ok());

  env.FailFromNth(FaultOp::kSync, 1, Status::IOError("fdatasync: Input/output error"));
  Status failed = writer->Append(2, 1, "unacknowledged", /*sync=*/true);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(writer->NextLsn(), 2u) << "the failed record took no LSN";
  EXPECT_FALSE(writer->Failure().ok()) << "nothing can be synced: the state is not known yet";
  // While the device refuses, every call that writes fails with the reason.
  EXPECT_FALSE(writer->Append(2, 1, "retry", /*sync=*/true).ok());

  env.ClearFaults();
  // Closing settles: the record is cut before the segment is closed, so a
  // crash or a restart now never replays it.
  ASSERT_TRUE(writer->Close().ok());
  EXPECT_EQ(ReplayedFrom(&env), (std::vector<ReplayedRecord>{{1, 1, "one"}}));
}

TEST_F(LogSettleTest, WritesResumeWhenTheDeviceDoes) {
  FaultInjectionEnv env(Env::Default());
  std::unique_ptr<LogWriter> writer = Open(&env);
  ASSERT_NE(writer, nullptr);
  env.FailFromNth(FaultOp::kWrite, 1, Status::PermissionDenied("write: Read-only file system"));
  for (int attempt = 0; attempt < 3; ++attempt) {
    Status refused = writer->Append(1, 1, "one", /*sync=*/true);
    EXPECT_TRUE(refused.Is(StatusCode::kPermissionDenied)) << refused.ToString();
    EXPECT_EQ(writer->NextLsn(), 1u);
  }
  env.ClearFaults();
  ASSERT_TRUE(writer->Append(1, 1, "one", /*sync=*/true).ok());
  ASSERT_TRUE(writer->Failure().ok());
  ASSERT_TRUE(env.SimulatePowerCut().ok());
  writer.reset();
  EXPECT_EQ(ReplayedFrom(&env), (std::vector<ReplayedRecord>{{1, 1, "one"}}));
}

TEST_F(LogSettleTest, AFullDiskAtOpenLeavesTheWriterWaitingForRoom) {
  FaultInjectionEnv env(Env::Default());
  env.FailFromNth(FaultOp::kWrite, 1, Status::ResourceExhausted("write: No space left on device"));
  std::unique_ptr<LogWriter> writer = Open(&env, 7);
  ASSERT_NE(writer, nullptr);
  EXPECT_TRUE(writer->Failure().Is(StatusCode::kResourceExhausted)) << writer->Failure().ToString();
  EXPECT_TRUE(writer->Append(7, 1, "seven", /*sync=*/true).Is(StatusCode::kResourceExhausted));
  env.ClearFaults();
  ASSERT_TRUE(writer->Append(7, 1, "seven", /*sync=*/true).ok());
  ASSERT_TRUE(writer->Close().ok());
  EXPECT_EQ(ReplayedFrom(&env), (std::vector<ReplayedRecord>{{7, 1, "seven"}}));
}

// Another failure than a full disk at Open is for the operator to see now.
TEST_F(LogSettleTest, AnIoErrorAtOpenFailsTheOpen) {
  FaultInjectionEnv env(Env::Default());
  env.FailNth(FaultOp::kWrite, 1, Status::IOError("write: Input/output error"));
  EXPECT_TRUE(LogWriter::Open(&env, LogDir(), 1, LogWriterOptions()).status().Is(StatusCode::kIOError));
  EXPECT_TRUE(Segments().empty()) << "the partial segment is removed";
}

// After an interval-mode sync failed and could not be settled, the
// acknowledged records wait in memory and are written at the next settle.
TEST_F(LogSettleTest, AcknowledgedRecordsWaitInMemoryUntilTheyCanBeWritten) {
  FaultInjectionEnv env(Env::Default());
  std::unique_ptr<LogWriter> writer = Open(&env);
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer->Append(1, 1, "one").ok());
  env.FailFromNth(FaultOp::kSync, 1, Status::IOError("fdatasync: Input/output error"));
  EXPECT_FALSE(writer->Sync().ok());
  EXPECT_EQ(writer->NextLsn(), 2u) << "an acknowledged record keeps its place";
  env.ClearFaults();
  ASSERT_TRUE(writer->Sync().ok());
  ASSERT_TRUE(env.SimulatePowerCut().ok());
  writer.reset();
  EXPECT_EQ(ReplayedFrom(&env), (std::vector<ReplayedRecord>{{1, 1, "one"}}));
}

// A writer that could not settle before its process stopped leaves records
// that read back (clean pages of a failed sync) but are not on the disk.
// The next start writes them again before replaying them, so what replay
// builds on survives a power cut.
TEST_F(LogSettleTest, TheNextStartWritesAgainWhatAFailedSyncLeftOnlyInThePageCache) {
  FaultInjectionEnv env(Env::Default());
  {
    std::unique_ptr<LogWriter> writer = Open(&env);
    ASSERT_NE(writer, nullptr);
    ASSERT_TRUE(writer->Append(1, 1, "one").ok());
    env.FailFromNth(FaultOp::kSync, 1, Status::IOError("fdatasync: Input/output error"));
    EXPECT_FALSE(writer->Sync().ok());
    EXPECT_FALSE(writer->Close().ok());
  }
  env.ClearFaults();
  EXPECT_EQ(ReplayedFrom(&env), (std::vector<ReplayedRecord>{{1, 1, "one"}})) << "it reads back";
  ASSERT_TRUE(RewriteLogTail(&env, LogDir()).ok());
  ASSERT_TRUE(env.SimulatePowerCut().ok());
  EXPECT_EQ(ReplayedFrom(&env), (std::vector<ReplayedRecord>{{1, 1, "one"}})) << "and is on the disk";
}

TEST_F(LogSettleTest, UnsyncedRecordsAreSyncedBeforeTheyOutgrowTheirMemory) {
  FaultInjectionEnv env(Env::Default());
  LogWriterOptions options;
  options.max_unsynced_bytes = 1000;
  Result<std::unique_ptr<LogWriter>> writer = LogWriter::Open(&env, LogDir(), 1, options);
  ASSERT_TRUE(writer.ok());
  for (uint64_t lsn = 1; lsn <= 30; ++lsn) ASSERT_TRUE((*writer)->Append(lsn, 1, std::string(100, 'r')).ok());
  // 121 bytes a record: at most 8 wait unsynced at any time.
  EXPECT_GE((*writer)->SyncedThroughLsn(), 30u - 8);
}

}  // namespace
}  // namespace cairn
