#include "fault_injection_env.h"

#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "manual_clock_env.h"
#include "test_dirs.h"

namespace cairn {
namespace {

class FaultInjectionEnvTest : public ::testing::Test {
 protected:
  ScopedTempDir dir_{"cairn-fault-env"};
  FaultInjectionEnv env_{Env::Default()};

  std::string Path(std::string_view name) const { return dir_.PathOf(name); }

  std::unique_ptr<File> Open(const std::string& path, OpenMode mode) {
    auto file = env_.OpenFile(path, mode);
    EXPECT_TRUE(file.ok()) << file.status().ToString();
    return file.ok() ? std::move(file).value() : nullptr;
  }

  // Creates `name` with `contents`, durably (data synced, directory synced).
  void CreateDurable(std::string_view name, std::string_view contents) {
    std::unique_ptr<File> file = Open(Path(name), OpenMode::kCreateTruncate);
    ASSERT_NE(file, nullptr);
    ASSERT_TRUE(file->Append(contents).ok());
    ASSERT_TRUE(file->Sync().ok());
    ASSERT_TRUE(env_.SyncDir(dir_.path()).ok());
  }

  // Reads through the real filesystem, not the env under test.
  std::string OnDisk(std::string_view name) {
    auto contents = Env::Default()->ReadFileToString(Path(name));
    return contents.ok() ? *contents : "<" + contents.status().ToString() + ">";
  }

  bool ExistsOnDisk(std::string_view name) { return Env::Default()->FileExists(Path(name)); }
};

// ---- power cuts --------------------------------------------------------------

TEST_F(FaultInjectionEnvTest, PowerCutDropsUnsyncedBytesAndKeepsSyncedOnes) {
  std::unique_ptr<File> file = Open(Path("log"), OpenMode::kCreateExclusive);
  ASSERT_TRUE(file->Append("A").ok());
  ASSERT_TRUE(file->Sync().ok());
  ASSERT_TRUE(env_.SyncDir(dir_.path()).ok());
  ASSERT_TRUE(file->Append("B").ok());
  EXPECT_EQ(OnDisk("log"), "AB");

  ASSERT_TRUE(env_.SimulatePowerCut().ok());

  auto reopened = env_.ReadFileToString(Path("log"));
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  EXPECT_EQ(*reopened, "A");
}

TEST_F(FaultInjectionEnvTest, OverwriteThenCutRestoresTheOldBytes) {
  CreateDurable("data", "0123456789");
  std::unique_ptr<File> file = Open(Path("data"), OpenMode::kReadWrite);
  ASSERT_TRUE(file->WriteAt(2, "ab").ok());
  ASSERT_TRUE(file->WriteAt(3, "XYZ").ok());  // overlaps the first overwrite
  ASSERT_TRUE(file->WriteAt(8, "tail beyond").ok());
  EXPECT_EQ(OnDisk("data"), "01aXYZ67tail beyond");

  ASSERT_TRUE(env_.SimulatePowerCut().ok());
  EXPECT_EQ(OnDisk("data"), "0123456789");
}

TEST_F(FaultInjectionEnvTest, TruncateThenCutRestoresTheTail) {
  CreateDurable("data", "0123456789");
  std::unique_ptr<File> file = Open(Path("data"), OpenMode::kReadWrite);
  ASSERT_TRUE(file->Truncate(4).ok());
  ASSERT_TRUE(file->Append("ab").ok());
  ASSERT_TRUE(file->Truncate(2).ok());
  EXPECT_EQ(OnDisk("data"), "01");

  ASSERT_TRUE(env_.SimulatePowerCut().ok());
  EXPECT_EQ(OnDisk("data"), "0123456789");
}

TEST_F(FaultInjectionEnvTest, CreateTruncateOfDurableFileIsUndone) {
  CreateDurable("data", "durable");
  std::unique_ptr<File> file = Open(Path("data"), OpenMode::kCreateTruncate);
  ASSERT_TRUE(file->Append("replacement").ok());
  ASSERT_TRUE(env_.SimulatePowerCut().ok());
  EXPECT_EQ(OnDisk("data"), "durable");
}

TEST_F(FaultInjectionEnvTest, SyncedOverwriteSurvives) {
  CreateDurable("data", "0123456789");
  std::unique_ptr<File> file = Open(Path("data"), OpenMode::kReadWrite);
  ASSERT_TRUE(file->WriteAt(0, "ab").ok());
  ASSERT_TRUE(file->Sync().ok());
  ASSERT_TRUE(file->WriteAt(5, "cd").ok());
  ASSERT_TRUE(env_.SimulatePowerCut().ok());
  EXPECT_EQ(OnDisk("data"), "ab23456789");
}

TEST_F(FaultInjectionEnvTest, NewFileNotDirSyncedDisappears) {
  std::unique_ptr<File> file = Open(Path("fresh"), OpenMode::kCreateExclusive);
  ASSERT_TRUE(file->Append("synced data, but no directory entry").ok());
  ASSERT_TRUE(file->Sync().ok());
  EXPECT_TRUE(ExistsOnDisk("fresh"));

  ASSERT_TRUE(env_.SimulatePowerCut().ok());
  EXPECT_FALSE(ExistsOnDisk("fresh"));
  EXPECT_FALSE(env_.FileExists(Path("fresh")));
}

TEST_F(FaultInjectionEnvTest, NewFileDirSyncedStays) {
  std::unique_ptr<File> file = Open(Path("fresh"), OpenMode::kReadWrite);
  ASSERT_TRUE(file->Append("kept").ok());
  ASSERT_TRUE(env_.SyncDir(dir_.path() + "/").ok());  // spelling does not matter
  ASSERT_TRUE(env_.SimulatePowerCut().ok());
  // The entry is durable, the unsynced data is not.
  EXPECT_TRUE(ExistsOnDisk("fresh"));
  EXPECT_EQ(OnDisk("fresh"), "");
}

TEST_F(FaultInjectionEnvTest, DirSyncOfAnotherDirectoryDoesNotHelp) {
  ASSERT_TRUE(env_.CreateDirs(Path("sub")).ok());
  std::unique_ptr<File> file = Open(Path("sub/fresh"), OpenMode::kReadWrite);
  ASSERT_TRUE(file->Sync().ok());
  ASSERT_TRUE(env_.SyncDir(dir_.path()).ok());
  ASSERT_TRUE(env_.SimulatePowerCut().ok());
  EXPECT_FALSE(ExistsOnDisk("sub/fresh"));
  EXPECT_TRUE(ExistsOnDisk("sub"));  // directories are not modelled
}

TEST_F(FaultInjectionEnvTest, RenameNotDirSyncedIsUndone) {
  CreateDurable("CURRENT", "old");
  std::unique_ptr<File> temporary = Open(Path("CURRENT.tmp"), OpenMode::kCreateTruncate);
  ASSERT_TRUE(temporary->Append("new").ok());
  ASSERT_TRUE(temporary->Sync().ok());
  temporary.reset();
  ASSERT_TRUE(env_.SyncDir(dir_.path()).ok());  // CURRENT.tmp is durable
  ASSERT_TRUE(env_.RenameFile(Path("CURRENT.tmp"), Path("CURRENT")).ok());
  EXPECT_EQ(OnDisk("CURRENT"), "new");
  EXPECT_FALSE(ExistsOnDisk("CURRENT.tmp"));

  ASSERT_TRUE(env_.SimulatePowerCut().ok());
  EXPECT_EQ(OnDisk("CURRENT"), "old");
  EXPECT_EQ(OnDisk("CURRENT.tmp"), "new");
}

TEST_F(FaultInjectionEnvTest, RenameDirSyncedSurvives) {
  CreateDurable("CURRENT", "old");
  ASSERT_TRUE(env_.WriteFileAtomically(Path("CURRENT"), "new").ok());
  ASSERT_TRUE(env_.SimulatePowerCut().ok());
  EXPECT_EQ(OnDisk("CURRENT"), "new");
  EXPECT_FALSE(ExistsOnDisk("CURRENT.tmp"));
}

TEST_F(FaultInjectionEnvTest, ChainOfUnsyncedChangesUnwindsNewestFirst) {
  CreateDurable("a", "A");
  CreateDurable("b", "B");
  ASSERT_TRUE(env_.RenameFile(Path("a"), Path("b")).ok());  // b := A, old B replaced
  ASSERT_TRUE(env_.RenameFile(Path("b"), Path("c")).ok());  // c := A
  std::unique_ptr<File> file = Open(Path("a"), OpenMode::kCreateExclusive);
  ASSERT_TRUE(file->Append("new a").ok());
  ASSERT_TRUE(file->Sync().ok());
  EXPECT_EQ(*Env::Default()->ListDir(dir_.path()), (std::vector<std::string>{"a", "c"}));

  ASSERT_TRUE(env_.SimulatePowerCut().ok());
  EXPECT_EQ(*Env::Default()->ListDir(dir_.path()), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(OnDisk("a"), "A");
  EXPECT_EQ(OnDisk("b"), "B");
}

TEST_F(FaultInjectionEnvTest, RemovalNotDirSyncedComesBackWithDurableContents) {
  CreateDurable("segment", "synced");
  {
    std::unique_ptr<File> file = Open(Path("segment"), OpenMode::kReadWrite);
    ASSERT_TRUE(file->Append(" unsynced").ok());
  }
  ASSERT_TRUE(env_.RemoveFile(Path("segment")).ok());
  EXPECT_FALSE(ExistsOnDisk("segment"));
  ASSERT_TRUE(env_.SimulatePowerCut().ok());
  EXPECT_EQ(OnDisk("segment"), "synced");
}

TEST_F(FaultInjectionEnvTest, RemovalDirSyncedIsFinal) {
  CreateDurable("segment", "synced");
  ASSERT_TRUE(env_.RemoveFile(Path("segment")).ok());
  ASSERT_TRUE(env_.SyncDir(dir_.path()).ok());
  ASSERT_TRUE(env_.SimulatePowerCut().ok());
  EXPECT_FALSE(ExistsOnDisk("segment"));
}

TEST_F(FaultInjectionEnvTest, FilesExistingBeforeTheEnvAreDurable) {
  {
    auto file = Env::Default()->OpenFile(Path("preexisting"), OpenMode::kCreateTruncate);
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE((*file)->Append("from before").ok());
  }
  std::unique_ptr<File> file = Open(Path("preexisting"), OpenMode::kReadWrite);
  ASSERT_TRUE(file->Append(", lost").ok());
  ASSERT_TRUE(env_.SimulatePowerCut().ok());
  EXPECT_EQ(OnDisk("preexisting"), "from before");
}

TEST_F(FaultInjectionEnvTest, HandleFollowsItsFileThroughRename) {
  std::unique_ptr<File> file = Open(Path("staging"), OpenMode::kCreateExclusive);
  ASSERT_TRUE(file->Append("one").ok());
  ASSERT_TRUE(env_.RenameFile(Path("staging"), Path("final")).ok());
  ASSERT_TRUE(file->Append(" two").ok());
  ASSERT_TRUE(file->Sync().ok());
  ASSERT_TRUE(env_.SyncDir(dir_.path()).ok());
  ASSERT_TRUE(file->Append(" three").ok());
  ASSERT_TRUE(env_.SimulatePowerCut().ok());
  EXPECT_FALSE(ExistsOnDisk("staging"));
  EXPECT_EQ(OnDisk("final"), "one two");
}

TEST_F(FaultInjectionEnvTest, HandlesOpenedBeforeTheCutFailAfterIt) {
  CreateDurable("data", "abc");
  std::unique_ptr<File> writer = Open(Path("data"), OpenMode::kReadWrite);
  std::unique_ptr<File> reader = Open(Path("data"), OpenMode::kReadOnly);
  ASSERT_TRUE(env_.SimulatePowerCut().ok());

  char buffer[4];
  std::vector<Status> results = {writer->WriteAt(0, "x"),
                                 writer->Append("x"),
                                 writer->Truncate(0),
                                 writer->Sync(),
                                 writer->ReadAt(0, 1, buffer).status(),
                                 writer->Size().status(),
                                 reader->ReadAt(0, 1, buffer).status()};
  for (const Status& status : results) {
    EXPECT_TRUE(status.Is(StatusCode::kIOError)) << status.ToString();
    EXPECT_NE(status.message().find("power cut"), std::string::npos) << status.ToString();
  }
  EXPECT_EQ(writer->path(), Path("data"));
  EXPECT_EQ(OnDisk("data"), "abc");

  // The env itself works on: reopening gives live handles.
  std::unique_ptr<File> again = Open(Path("data"), OpenMode::kReadWrite);
  ASSERT_TRUE(again->Append("d").ok());
  ASSERT_TRUE(again->Sync().ok());
  EXPECT_EQ(*env_.ReadFileToString(Path("data")), "abcd");
}

TEST_F(FaultInjectionEnvTest, ExposureCountsWhatACutWouldLose) {
  EXPECT_EQ(env_.CurrentExposure().unsynced_bytes, 0u);
  std::unique_ptr<File> file = Open(Path("f"), OpenMode::kCreateExclusive);
  EXPECT_EQ(env_.CurrentExposure().unsynced_entry_changes, 1u);
  ASSERT_TRUE(file->Append("12345").ok());
  EXPECT_EQ(env_.CurrentExposure().unsynced_bytes, 5u);
  ASSERT_TRUE(file->Sync().ok());
  ASSERT_TRUE(env_.SyncDir(dir_.path()).ok());
  EXPECT_EQ(env_.CurrentExposure().unsynced_bytes, 0u);
  EXPECT_EQ(env_.CurrentExposure().unsynced_entry_changes, 0u);
}

TEST_F(FaultInjectionEnvTest, ConcurrentWritersAreSerialisedSafely) {
  constexpr int kThreads = 4;
  constexpr int kAppends = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t] {
      std::unique_ptr<File> file = Open(Path("t" + std::to_string(t)), OpenMode::kCreateExclusive);
      for (int i = 0; i < kAppends; ++i) {
        ASSERT_TRUE(file->Append("x").ok());
        if (i == kAppends / 2 - 1) {
          ASSERT_TRUE(file->Sync().ok());
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_TRUE(env_.SyncDir(dir_.path()).ok());
  ASSERT_TRUE(env_.SimulatePowerCut().ok());
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(OnDisk("t" + std::to_string(t)), std::string(kAppends / 2, 'x'));
  }
}

// ---- injected faults ---------------------------------------------------------

TEST_F(FaultInjectionEnvTest, NthWriteFailsWithTheChosenErrorAsAStatus) {
  std::unique_ptr<File> file = Open(Path("f"), OpenMode::kCreateExclusive);
  env_.FailNth(FaultOp::kWrite, 3, Status::ResourceExhausted("disk full (injected)"));
  EXPECT_TRUE(file->Append("1").ok());
  EXPECT_TRUE(file->WriteAt(1, "2").ok());
  Status third = file->Append("3");
  EXPECT_TRUE(third.Is(StatusCode::kResourceExhausted));
  EXPECT_EQ(third.message(), "disk full (injected)");
  // Once only, and the failed write had no effect.
  EXPECT_TRUE(file->Append("4").ok());
  EXPECT_EQ(OnDisk("f"), "124");
  EXPECT_EQ(env_.CallCount(FaultOp::kWrite), 4);
  EXPECT_EQ(env_.InjectedCount(FaultOp::kWrite), 1);
}

TEST_F(FaultInjectionEnvTest, TruncateCountsAsAWrite) {
  std::unique_ptr<File> file = Open(Path("f"), OpenMode::kCreateExclusive);
  ASSERT_TRUE(file->Append("abc").ok());
  env_.FailNth(FaultOp::kWrite, 1, Status::IOError("injected"));
  EXPECT_TRUE(file->Truncate(1).Is(StatusCode::kIOError));
  EXPECT_EQ(OnDisk("f"), "abc");
}

TEST_F(FaultInjectionEnvTest, PersistentFaultFailsEveryCallFromTheNth) {
  std::unique_ptr<File> file = Open(Path("f"), OpenMode::kCreateExclusive);
  env_.FailFromNth(FaultOp::kWrite, 2, Status::IOError("medium error"));
  EXPECT_TRUE(file->Append("a").ok());
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(file->Append("b").Is(StatusCode::kIOError));
  EXPECT_EQ(env_.InjectedCount(FaultOp::kWrite), 5);
  env_.ClearFaults();
  EXPECT_TRUE(file->Append("c").ok());
  EXPECT_EQ(OnDisk("f"), "ac");
}

TEST_F(FaultInjectionEnvTest, FailedSyncMakesNothingDurable) {
  std::unique_ptr<File> file = Open(Path("log"), OpenMode::kCreateExclusive);
  ASSERT_TRUE(env_.SyncDir(dir_.path()).ok());
  ASSERT_TRUE(file->Append("first").ok());
  env_.FailNth(FaultOp::kSync, 1, Status::IOError("fdatasync: EIO (injected)"));
  Status sync = file->Sync();
  EXPECT_TRUE(sync.Is(StatusCode::kIOError));
  EXPECT_EQ(sync.message(), "fdatasync: EIO (injected)");
  ASSERT_TRUE(env_.SimulatePowerCut().ok());
  EXPECT_EQ(OnDisk("log"), "");
}

TEST_F(FaultInjectionEnvTest, FailedSyncDirLeavesEntriesAtRisk) {
  std::unique_ptr<File> file = Open(Path("fresh"), OpenMode::kCreateExclusive);
  ASSERT_TRUE(file->Sync().ok());
  env_.FailNth(FaultOp::kSync, 1, Status::IOError("injected"));
  EXPECT_FALSE(env_.SyncDir(dir_.path()).ok());
  ASSERT_TRUE(env_.SimulatePowerCut().ok());
  EXPECT_FALSE(ExistsOnDisk("fresh"));
}

TEST_F(FaultInjectionEnvTest, FailedRenameChangesNothing) {
  CreateDurable("a", "A");
  env_.FailNth(FaultOp::kRename, 1, Status::PermissionDenied("injected"));
  EXPECT_TRUE(env_.RenameFile(Path("a"), Path("b")).Is(StatusCode::kPermissionDenied));
  EXPECT_TRUE(ExistsOnDisk("a"));
  EXPECT_FALSE(ExistsOnDisk("b"));
  EXPECT_TRUE(env_.RenameFile(Path("a"), Path("b")).ok());
  EXPECT_EQ(env_.CallCount(FaultOp::kRename), 2);
}

TEST_F(FaultInjectionEnvTest, ExternalCallsShareThePlan) {
  env_.FailNth(FaultOp::kSync, 2, Status::IOError("injected"));
  EXPECT_TRUE(env_.ConsultFaultPlan(FaultOp::kSync).ok());
  EXPECT_TRUE(env_.SyncDir(dir_.path()).Is(StatusCode::kIOError));
  EXPECT_TRUE(env_.ConsultFaultPlan(FaultOp::kSync).ok());
  EXPECT_EQ(env_.CallCount(FaultOp::kSync), 3);
  EXPECT_EQ(env_.InjectedCount(FaultOp::kSync), 1);
}

TEST_F(FaultInjectionEnvTest, CountersReset) {
  std::unique_ptr<File> file = Open(Path("f"), OpenMode::kCreateExclusive);
  ASSERT_TRUE(file->Append("a").ok());
  ASSERT_TRUE(file->Sync().ok());
  EXPECT_EQ(env_.CallCount(FaultOp::kWrite), 1);
  EXPECT_EQ(env_.CallCount(FaultOp::kSync), 1);
  env_.ResetCounters();
  EXPECT_EQ(env_.CallCount(FaultOp::kWrite), 0);
  EXPECT_EQ(env_.CallCount(FaultOp::kSync), 0);
  EXPECT_EQ(env_.InjectedCount(FaultOp::kWrite), 0);
  EXPECT_EQ(FaultOpName(FaultOp::kRename), "rename");
}

// The acceptance test of the whole model: WriteFileAtomically must, with any
// one write, sync or rename failing and a power cut right after, leave
// either the old or the new contents, never a mix or nothing; and when it
// reported success, the new contents.
TEST_F(FaultInjectionEnvTest, SweepOverNthFaultKeepsAtomicReplaceAtomic) {
  const std::string old_contents(3000, 'o');
  const std::string new_contents(5000, 'n');
  for (FaultOp op : {FaultOp::kWrite, FaultOp::kSync, FaultOp::kRename}) {
    int64_t visited = 0;
    for (int64_t n = 1;; ++n) {
      SCOPED_TRACE(std::string(FaultOpName(op)) + " #" + std::to_string(n));
      ASSERT_LT(n, 100) << "the fault never stopped firing";
      CreateDurable("META", old_contents);
      env_.ResetCounters();
      env_.FailNth(op, n, Status::IOError("injected"));
      Status status = env_.WriteFileAtomically(Path("META"), new_contents);
      const bool fired = env_.InjectedCount(op) > 0;
      env_.ClearFaults();
      if (fired) {
        EXPECT_TRUE(status.Is(StatusCode::kIOError)) << status.ToString();
        ++visited;
      } else {
        EXPECT_TRUE(status.ok()) << status.ToString();
      }
      ASSERT_TRUE(env_.SimulatePowerCut().ok());
      const std::string after = OnDisk("META");
      if (status.ok()) {
        EXPECT_EQ(after, new_contents);
      } else {
        EXPECT_TRUE(after == old_contents || after == new_contents) << after.substr(0, 20);
      }
      if (!fired) break;
    }
    // WriteFileAtomically does one write, two syncs (file, directory) and one
    // rename.
    EXPECT_EQ(visited, op == FaultOp::kSync ? 2 : 1);
  }
}

// A log-like workload (append, sync per record) swept over every write and
// sync: whatever failed, after a power cut the file holds a prefix of whole
// records, and at least every record whose sync succeeded.
TEST_F(FaultInjectionEnvTest, SweepOverNthFaultNeverLosesAcknowledgedRecords) {
  for (FaultOp op : {FaultOp::kWrite, FaultOp::kSync}) {
    for (int64_t n = 1;; ++n) {
      SCOPED_TRACE(std::string(FaultOpName(op)) + " #" + std::to_string(n));
      ASSERT_LT(n, 100);
      if (Env::Default()->FileExists(Path("log"))) {
        ASSERT_TRUE(Env::Default()->RemoveFile(Path("log")).ok());
      }
      env_.ResetCounters();
      env_.FailNth(op, n, Status::IOError("injected"));
      std::string acknowledged;
      {
        auto opened = env_.OpenFile(Path("log"), OpenMode::kCreateExclusive);
        ASSERT_TRUE(opened.ok());
        std::unique_ptr<File> log = std::move(opened).value();
        Status status = env_.SyncDir(dir_.path());
        for (int record = 0; record < 5 && status.ok(); ++record) {
          const std::string bytes = "record" + std::to_string(record) + ";";
          status = log->Append(bytes);
          if (status.ok()) status = log->Sync();
          if (status.ok()) acknowledged += bytes;
        }
      }
      const bool fired = env_.InjectedCount(op) > 0;
      env_.ClearFaults();
      ASSERT_TRUE(env_.SimulatePowerCut().ok());
      auto after = env_.ReadFileToString(Path("log"));
      if (acknowledged.empty() && !after.ok()) {
        EXPECT_TRUE(after.status().Is(StatusCode::kNotFound));
      } else {
        ASSERT_TRUE(after.ok()) << after.status().ToString();
        EXPECT_EQ(*after, acknowledged);
      }
      if (!fired) {
        EXPECT_EQ(acknowledged, "record0;record1;record2;record3;record4;");
        break;
      }
    }
  }
}

TEST_F(FaultInjectionEnvTest, ComposesWithManualClock) {
  ManualClockEnv clock(&env_);
  const int64_t start = clock.MonotonicNanos();
  ASSERT_TRUE(clock.WriteFileAtomically(Path("x"), "1").ok());
  clock.SleepForMicros(10);
  EXPECT_EQ(clock.MonotonicNanos(), start + 10'000);
  EXPECT_EQ(env_.CallCount(FaultOp::kRename), 1);
}

}  // namespace
}  // namespace cairn
