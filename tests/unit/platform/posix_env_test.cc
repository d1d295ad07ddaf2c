// Tests of the POSIX Env against the real operating system: temp files, a
// pseudo-terminal, fork for cross-process locks.
#include <algorithm>
#include <atomic>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/timex.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cairn/platform/env.h"

#include "pty_pair.h"
#include "test_dirs.h"

namespace cairn {
namespace {

// Runs `attempt` in a forked child and returns its exit status (0-255).
int InChild(const std::function<int()>& attempt) {
  pid_t child = fork();
  if (child == 0) _exit(attempt());
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

class PosixEnvTest : public ::testing::Test {
 protected:
  Env* env_ = Env::Default();
  ScopedTempDir dir_{"cairn-posix-env"};

  std::string Path(std::string_view name) const { return dir_.PathOf(name); }

  void WriteWhole(const std::string& path, std::string_view contents) {
    auto file = env_->OpenFile(path, OpenMode::kCreateTruncate);
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    ASSERT_TRUE((*file)->WriteAt(0, contents).ok());
  }

  std::string ReadWhole(const std::string& path) {
    auto contents = env_->ReadFileToString(path);
    EXPECT_TRUE(contents.ok()) << contents.status().ToString();
    return contents.ok() ? *contents : std::string("<unreadable>");
  }
};

// ---- clocks ----------------------------------------------------------------

TEST_F(PosixEnvTest, WallClockAgreesWithTime) {
  const int64_t before = static_cast<int64_t>(std::time(nullptr));
  const int64_t now_seconds = env_->NowUnixNanos() / 1'000'000'000;
  const int64_t after = static_cast<int64_t>(std::time(nullptr));
  EXPECT_GE(now_seconds, before - 1);
  EXPECT_LE(now_seconds, after + 1);
}

TEST_F(PosixEnvTest, MonotonicClockNeverGoesBack) {
  int64_t previous = env_->MonotonicNanos();
  for (int i = 0; i < 1000; ++i) {
    int64_t now = env_->MonotonicNanos();
    ASSERT_GE(now, previous);
    previous = now;
  }
}

TEST_F(PosixEnvTest, TheBootIdIsTheKernelsAndStable) {
  const std::string id = env_->BootId();
  Result<std::string> kernel = env_->ReadFileToString("/proc/sys/kernel/random/boot_id");
  if (!kernel.ok()) GTEST_SKIP() << "this system does not name its boots";
  EXPECT_EQ(id + "\n", *kernel);
  EXPECT_EQ(id.size(), 36u);  // a UUID
  EXPECT_EQ(env_->BootId(), id);
}

TEST_F(PosixEnvTest, WallClockSynchronisationAgreesWithTheKernel) {
  // The answer depends on the machine; it must be what the kernel's clock
  // discipline state says, read here directly.
  struct timex state = {};
  const int clock_state = ::adjtimex(&state);
  const bool expected = clock_state >= 0 && clock_state != TIME_ERROR && (state.status & STA_UNSYNC) == 0;
  EXPECT_EQ(env_->WallClockSynchronized(), expected);
}

TEST_F(PosixEnvTest, SleepLastsAtLeastTheRequestedTime) {
  const int64_t before = env_->MonotonicNanos();
  env_->SleepForMicros(2000);
  EXPECT_GE(env_->MonotonicNanos() - before, 2'000'000);
  env_->SleepForMicros(0);
  env_->SleepForMicros(-5);
}

// ---- files -----------------------------------------------------------------

TEST_F(PosixEnvTest, WriteReadAppendTruncateSizeSync) {
  auto opened = env_->OpenFile(Path("data"), OpenMode::kCreateExclusive);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<File> file = std::move(opened).value();
  EXPECT_EQ(file->path(), Path("data"));

  ASSERT_TRUE(file->Append("hello").ok());
  ASSERT_TRUE(file->Append(" world").ok());
  EXPECT_EQ(*file->Size(), 11u);
  ASSERT_TRUE(file->WriteAt(0, "J").ok());
  ASSERT_TRUE(file->Sync().ok());

  char buffer[32] = {};
  auto read = file->ReadAt(0, sizeof(buffer), buffer);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(std::string(buffer, *read), "Jello world");

  auto middle = file->ReadAt(6, 3, buffer);
  ASSERT_TRUE(middle.ok());
  EXPECT_EQ(std::string(buffer, *middle), "wor");

  auto past_end = file->ReadAt(100, 4, buffer);
  ASSERT_TRUE(past_end.ok());
  EXPECT_EQ(*past_end, 0u);

  ASSERT_TRUE(file->Truncate(5).ok());
  EXPECT_EQ(*file->Size(), 5u);
  // Append continues at the new end, not where the last append stopped.
  ASSERT_TRUE(file->Append("!").ok());
  ASSERT_TRUE(file->Truncate(8).ok());
  ASSERT_TRUE(file->Sync().ok());
  EXPECT_EQ(ReadWhole(Path("data")), std::string("Jello!\0\0", 8));
  EXPECT_EQ(*env_->FileSize(Path("data")), 8u);
}

TEST_F(PosixEnvTest, WriteAtBeyondEndZeroFillsAndMovesAppendPoint) {
  auto file = env_->OpenFile(Path("gap"), OpenMode::kCreateTruncate);
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->WriteAt(4, "xy").ok());
  ASSERT_TRUE((*file)->Append("z").ok());
  EXPECT_EQ(ReadWhole(Path("gap")), std::string("\0\0\0\0xyz", 7));
}

TEST_F(PosixEnvTest, OffsetsBeyondFourGibibytesWork) {
  // Exercises 64-bit file offsets, which 32-bit ARM gets only with
  // _FILE_OFFSET_BITS=64. The file is sparse: it takes one block on disk.
  const uint64_t far = (uint64_t{5} << 30) + 3;
  auto file = env_->OpenFile(Path("sparse"), OpenMode::kCreateTruncate);
  ASSERT_TRUE(file.ok());
  Status written = (*file)->WriteAt(far, "far");
  if (written.Is(StatusCode::kResourceExhausted) || written.Is(StatusCode::kIOError)) {
    GTEST_SKIP() << "filesystem refuses a sparse 5 GiB file: " << written.ToString();
  }
  ASSERT_TRUE(written.ok()) << written.ToString();
  EXPECT_EQ(*(*file)->Size(), far + 3);
  EXPECT_EQ(*env_->FileSize(Path("sparse")), far + 3);
  char buffer[3] = {};
  auto read = (*file)->ReadAt(far, 3, buffer);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(std::string(buffer, *read), "far");
  ASSERT_TRUE((*file)->Append("!").ok());
  EXPECT_EQ(*(*file)->Size(), far + 4);
  ASSERT_TRUE((*file)->Truncate(far).ok());
  EXPECT_EQ(*(*file)->Size(), far);
}

TEST_F(PosixEnvTest, ReadOnlyRequiresExistingFileAndRefusesWrites) {
  auto missing = env_->OpenFile(Path("missing"), OpenMode::kReadOnly);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.status().Is(StatusCode::kNotFound)) << missing.status().ToString();
  EXPECT_NE(missing.status().message().find(Path("missing")), std::string::npos);
  EXPECT_FALSE(env_->FileExists(Path("missing")));

  WriteWhole(Path("present"), "abc");
  auto file = env_->OpenFile(Path("present"), OpenMode::kReadOnly);
  ASSERT_TRUE(file.ok());
  EXPECT_FALSE((*file)->WriteAt(0, "x").ok());
  EXPECT_FALSE((*file)->Append("x").ok());
  EXPECT_FALSE((*file)->Truncate(0).ok());
  EXPECT_EQ(ReadWhole(Path("present")), "abc");
}

TEST_F(PosixEnvTest, ReadWriteCreatesMissingAndKeepsExisting) {
  auto created = env_->OpenFile(Path("rw"), OpenMode::kReadWrite);
  ASSERT_TRUE(created.ok());
  EXPECT_EQ(*(*created)->Size(), 0u);
  ASSERT_TRUE((*created)->Append("one").ok());
  created.value().reset();

  auto reopened = env_->OpenFile(Path("rw"), OpenMode::kReadWrite);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ(*(*reopened)->Size(), 3u);
  // The append point starts at the existing end.
  ASSERT_TRUE((*reopened)->Append("two").ok());
  EXPECT_EQ(ReadWhole(Path("rw")), "onetwo");
}

TEST_F(PosixEnvTest, CreateTruncateEmptiesExistingFile) {
  WriteWhole(Path("t"), "old contents");
  auto file = env_->OpenFile(Path("t"), OpenMode::kCreateTruncate);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(*(*file)->Size(), 0u);
  EXPECT_EQ(ReadWhole(Path("t")), "");
}

TEST_F(PosixEnvTest, CreateExclusiveRefusesExistingFile) {
  WriteWhole(Path("x"), "keep");
  auto file = env_->OpenFile(Path("x"), OpenMode::kCreateExclusive);
  ASSERT_FALSE(file.ok());
  EXPECT_TRUE(file.status().Is(StatusCode::kAlreadyExists)) << file.status().ToString();
  EXPECT_EQ(ReadWhole(Path("x")), "keep");
}

TEST_F(PosixEnvTest, OpeningADirectoryAsFileFails) {
  auto file = env_->OpenFile(dir_.path(), OpenMode::kReadOnly);
  EXPECT_FALSE(file.ok());
}

TEST_F(PosixEnvTest, OpenInMissingDirectoryIsNotFound) {
  auto file = env_->OpenFile(Path("no/such/dir/file"), OpenMode::kCreateTruncate);
  ASSERT_FALSE(file.ok());
  EXPECT_TRUE(file.status().Is(StatusCode::kNotFound));
}

TEST_F(PosixEnvTest, PermissionErrorsArePermissionDenied) {
  ASSERT_TRUE(env_->CreateDirs(Path("readonly")).ok());
  ASSERT_EQ(chmod(Path("readonly").c_str(), 0500), 0);
  const std::string target = Path("readonly/f");
  auto attempt = [&target] {
    auto file = Env::Default()->OpenFile(target, OpenMode::kCreateTruncate);
    return file.status().Is(StatusCode::kPermissionDenied) ? 0 : 1;
  };
  if (geteuid() != 0) {
    EXPECT_EQ(attempt(), 0);
  } else {
    // Root bypasses file modes; an unprivileged child does not.
    EXPECT_EQ(InChild([&] {
                if (setgid(65534) != 0 || setuid(65534) != 0) return 2;
                return attempt();
              }),
              0);
  }
  ASSERT_EQ(chmod(Path("readonly").c_str(), 0700), 0);
}

TEST_F(PosixEnvTest, FileExistsAndFileSize) {
  EXPECT_FALSE(env_->FileExists(Path("f")));
  auto missing = env_->FileSize(Path("f"));
  EXPECT_TRUE(missing.status().Is(StatusCode::kNotFound));
  WriteWhole(Path("f"), "12345");
  EXPECT_TRUE(env_->FileExists(Path("f")));
  EXPECT_EQ(*env_->FileSize(Path("f")), 5u);
  EXPECT_TRUE(env_->FileExists(dir_.path()));
}

TEST_F(PosixEnvTest, RenameReplacesTargetAndRemoveDeletes) {
  WriteWhole(Path("a"), "new");
  WriteWhole(Path("b"), "old");
  ASSERT_TRUE(env_->RenameFile(Path("a"), Path("b")).ok());
  EXPECT_FALSE(env_->FileExists(Path("a")));
  EXPECT_EQ(ReadWhole(Path("b")), "new");

  Status missing = env_->RenameFile(Path("a"), Path("c"));
  EXPECT_TRUE(missing.Is(StatusCode::kNotFound)) << missing.ToString();

  ASSERT_TRUE(env_->RemoveFile(Path("b")).ok());
  EXPECT_FALSE(env_->FileExists(Path("b")));
  EXPECT_TRUE(env_->RemoveFile(Path("b")).Is(StatusCode::kNotFound));
}

TEST_F(PosixEnvTest, CreateDirsMakesParentsAndIsIdempotent) {
  const std::string deep = Path("one/two/three");
  ASSERT_TRUE(env_->CreateDirs(deep).ok());
  EXPECT_TRUE(env_->FileExists(deep));
  EXPECT_TRUE(env_->CreateDirs(deep).ok());
  EXPECT_TRUE(env_->CreateDirs(deep + "/").ok());
  EXPECT_TRUE(env_->CreateDirs(Path("one//two/four")).ok());
  EXPECT_TRUE(env_->FileExists(Path("one/two/four")));

  WriteWhole(Path("plain"), "");
  EXPECT_FALSE(env_->CreateDirs(Path("plain")).ok());
  EXPECT_FALSE(env_->CreateDirs(Path("plain/sub")).ok());
  EXPECT_TRUE(env_->CreateDirs("").Is(StatusCode::kInvalidArgument));
}

TEST_F(PosixEnvTest, RemoveDirRemovesOnlyEmptyDirectories) {
  ASSERT_TRUE(env_->CreateDirs(Path("d/e")).ok());
  EXPECT_FALSE(env_->RemoveDir(Path("d")).ok());
  ASSERT_TRUE(env_->RemoveDir(Path("d/e")).ok());
  ASSERT_TRUE(env_->RemoveDir(Path("d")).ok());
  EXPECT_FALSE(env_->FileExists(Path("d")));
  EXPECT_TRUE(env_->RemoveDir(Path("d")).Is(StatusCode::kNotFound));
}

TEST_F(PosixEnvTest, SyncDirWorksOnDirectoriesOnly) {
  EXPECT_TRUE(env_->SyncDir(dir_.path()).ok());
  EXPECT_TRUE(env_->SyncDir(Path("missing")).Is(StatusCode::kNotFound));
  WriteWhole(Path("file"), "x");
  EXPECT_FALSE(env_->SyncDir(Path("file")).ok());
}

TEST_F(PosixEnvTest, ListDirIsSortedWithoutDots) {
  for (const char* name : {"c", "a", "b.log", "B"}) WriteWhole(Path(name), "");
  ASSERT_TRUE(env_->CreateDirs(Path("sub")).ok());
  auto names = env_->ListDir(dir_.path());
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{"B", "a", "b.log", "c", "sub"}));
  auto empty = env_->ListDir(Path("sub"));
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  EXPECT_TRUE(env_->ListDir(Path("missing")).status().Is(StatusCode::kNotFound));
}

TEST_F(PosixEnvTest, FreeSpaceIsReported) {
  auto free_bytes = env_->FreeSpace(dir_.path());
  ASSERT_TRUE(free_bytes.ok()) << free_bytes.status().ToString();
  EXPECT_GT(*free_bytes, 0u);
  EXPECT_TRUE(env_->FreeSpace(Path("missing")).status().Is(StatusCode::kNotFound));
}

TEST_F(PosixEnvTest, ReadFileToStringReadsEverything) {
  std::string big(200000, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7);
  WriteWhole(Path("big"), big);
  EXPECT_EQ(ReadWhole(Path("big")), big);
  WriteWhole(Path("empty"), "");
  EXPECT_EQ(ReadWhole(Path("empty")), "");
  EXPECT_TRUE(env_->ReadFileToString(Path("missing")).status().Is(StatusCode::kNotFound));
}

TEST_F(PosixEnvTest, WriteFileAtomicallyReplacesAndLeavesNoTemporary) {
  ASSERT_TRUE(env_->WriteFileAtomically(Path("meta"), "v1").ok());
  EXPECT_EQ(ReadWhole(Path("meta")), "v1");
  ASSERT_TRUE(env_->WriteFileAtomically(Path("meta"), "version two").ok());
  EXPECT_EQ(ReadWhole(Path("meta")), "version two");
  EXPECT_EQ(*env_->ListDir(dir_.path()), std::vector<std::string>{"meta"});
  EXPECT_FALSE(env_->WriteFileAtomically(Path("missing/meta"), "v").ok());
}

TEST(PathTest, JoinPathUsesExactlyOneSlash) {
  EXPECT_EQ(JoinPath("a", "b"), "a/b");
  EXPECT_EQ(JoinPath("a/", "b"), "a/b");
  EXPECT_EQ(JoinPath("a//", "/b"), "a/b");
  EXPECT_EQ(JoinPath("/", "b"), "/b");
  EXPECT_EQ(JoinPath("", "b"), "b");
  EXPECT_EQ(JoinPath("/var/lib/cairn", "log/000001.log"), "/var/lib/cairn/log/000001.log");
}

TEST(PathTest, DirNameFollowsPosix) {
  EXPECT_EQ(DirName("a/b"), "a");
  EXPECT_EQ(DirName("/var/lib/cairn/LOCK"), "/var/lib/cairn");
  EXPECT_EQ(DirName("file"), ".");
  EXPECT_EQ(DirName("/file"), "/");
  EXPECT_EQ(DirName("/"), "/");
  EXPECT_EQ(DirName("a/b/"), "a");
  EXPECT_EQ(DirName("a//b"), "a");
  EXPECT_EQ(DirName(""), ".");
}

// ---- locks -----------------------------------------------------------------

constexpr int kChildLocked = 10;
constexpr int kChildBusy = 11;
constexpr int kChildOtherError = 12;

int TryLockInChild(const std::string& path) {
  auto lock = Env::Default()->LockFile(path);
  if (lock.ok()) return kChildLocked;
  if (lock.status().Is(StatusCode::kBusy) &&
      lock.status().message() == path + " is locked by another process") {
    return kChildBusy;
  }
  return kChildOtherError;
}

TEST_F(PosixEnvTest, SecondLockInProcessIsBusyUntilFirstIsReleased) {
  const std::string path = Path("LOCK");
  auto first = env_->LockFile(path);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ((*first)->path(), path);
  EXPECT_TRUE(env_->FileExists(path));

  auto second = env_->LockFile(path);
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(second.status().Is(StatusCode::kBusy));
  EXPECT_NE(second.status().message().find(path), std::string::npos);

  // The same file under another spelling is the same lock.
  auto aliased = env_->LockFile(dir_.path() + "/./LOCK");
  EXPECT_TRUE(aliased.status().Is(StatusCode::kBusy));

  first.value().reset();
  auto third = env_->LockFile(path);
  EXPECT_TRUE(third.ok()) << third.status().ToString();
}

TEST_F(PosixEnvTest, OtherProcessCannotLockWhileHeld) {
  const std::string path = Path("LOCK");
  {
    auto held = env_->LockFile(path);
    ASSERT_TRUE(held.ok());
    EXPECT_EQ(InChild([&] { return TryLockInChild(path); }), kChildBusy);
    // The parent still holds it after the child exited.
    EXPECT_TRUE(env_->LockFile(path).status().Is(StatusCode::kBusy));
  }
  EXPECT_EQ(InChild([&] { return TryLockInChild(path); }), kChildLocked);
}

TEST_F(PosixEnvTest, LockInMissingDirectoryFails) {
  EXPECT_TRUE(env_->LockFile(Path("missing/LOCK")).status().Is(StatusCode::kNotFound));
}

// ---- serial ----------------------------------------------------------------

class SerialPortTest : public PosixEnvTest {
 protected:
  void SetUp() override {
    auto pty = PtyPair::Open();
    ASSERT_TRUE(pty.ok()) << pty.status().ToString();
    pty_ = std::move(pty).value();
  }

  // Reads until `n` bytes arrived or a read times out.
  std::string ReadFromPort(SerialPort* port, size_t n) {
    std::string data;
    while (data.size() < n) {
      char buffer[256];
      auto got = port->Read(buffer, std::min(sizeof(buffer), n - data.size()), 5000);
      if (!got.ok() || *got == 0) break;
      data.append(buffer, *got);
    }
    return data;
  }

  std::unique_ptr<PtyPair> pty_;
};

TEST_F(SerialPortTest, DataFlowsBothWays) {
  auto port = env_->OpenSerialPort(pty_->slave_path(), 115200);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  EXPECT_EQ((*port)->path(), pty_->slave_path());

  // Bytes a cooked terminal would interpret (CR, ^C, ^D, DEL, 0xff) must
  // pass through unchanged in raw mode.
  const std::string to_device = std::string("query\r\n\x03\x04\x7f\xff", 11) + std::string(1, '\0');
  ASSERT_TRUE(pty_->Write(to_device).ok());
  EXPECT_EQ(ReadFromPort(port->get(), to_device.size()), to_device);

  ASSERT_TRUE((*port)->Write("reply\n", -1).ok());
  EXPECT_EQ(pty_->ReadUntil("\n", 5000), "reply\n");
}

TEST_F(SerialPortTest, LargeWriteArrivesWhole) {
  auto port = env_->OpenSerialPort(pty_->slave_path(), 9600);
  ASSERT_TRUE(port.ok());
  std::string payload;
  for (int i = 0; i < 2000; ++i) payload += "line " + std::to_string(i) + "\n";
  payload += "END";
  std::string received;
  std::thread reader([&] { received = pty_->ReadUntil("END", 20000); });
  EXPECT_TRUE((*port)->Write(payload, -1).ok());
  reader.join();
  EXPECT_EQ(received, payload);
}

TEST_F(SerialPortTest, ReadTimesOutWithZero) {
  auto port = env_->OpenSerialPort(pty_->slave_path(), 115200);
  ASSERT_TRUE(port.ok());
  char buffer[8];
  auto got = (*port)->Read(buffer, sizeof(buffer), 20);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, 0u);
  auto immediate = (*port)->Read(buffer, sizeof(buffer), 0);
  ASSERT_TRUE(immediate.ok());
  EXPECT_EQ(*immediate, 0u);
}

TEST_F(SerialPortTest, UnsupportedBaudRateIsInvalidArgument) {
  auto port = env_->OpenSerialPort(pty_->slave_path(), 12345);
  ASSERT_FALSE(port.ok());
  EXPECT_TRUE(port.status().Is(StatusCode::kInvalidArgument));
  EXPECT_NE(port.status().message().find("12345"), std::string::npos);
  EXPECT_TRUE(env_->OpenSerialPort(pty_->slave_path(), 0).status().Is(StatusCode::kInvalidArgument));
  EXPECT_TRUE(env_->OpenSerialPort(pty_->slave_path(), 1200).ok());
  EXPECT_TRUE(env_->OpenSerialPort(pty_->slave_path(), 921600).ok());
}

TEST_F(SerialPortTest, HangupIsUnavailable) {
  auto port = env_->OpenSerialPort(pty_->slave_path(), 115200);
  ASSERT_TRUE(port.ok());
  pty_->CloseMaster();
  char buffer[8];
  auto got = (*port)->Read(buffer, sizeof(buffer), 5000);
  ASSERT_FALSE(got.ok());
  EXPECT_TRUE(got.status().Is(StatusCode::kUnavailable)) << got.status().ToString();
}

TEST_F(SerialPortTest, NonTerminalsAndMissingDevicesAreRefused) {
  WriteWhole(Path("not-a-tty"), "");
  EXPECT_FALSE(env_->OpenSerialPort(Path("not-a-tty"), 115200).ok());
  EXPECT_TRUE(env_->OpenSerialPort(Path("no-such-tty"), 115200).status().Is(StatusCode::kNotFound));
}

// ---- randomness and threads ------------------------------------------------

TEST_F(PosixEnvTest, RandomBytesAreFilledAndDiffer) {
  std::vector<uint8_t> first(64, 0);
  std::vector<uint8_t> second(64, 0);
  ASSERT_TRUE(env_->RandomBytes(first).ok());
  ASSERT_TRUE(env_->RandomBytes(second).ok());
  // Each check fails by chance with probability 2^-512.
  EXPECT_TRUE(std::any_of(first.begin(), first.end(), [](uint8_t b) { return b != 0; }));
  EXPECT_NE(first, second);

  std::vector<uint8_t> large(1 << 20, 0);
  ASSERT_TRUE(env_->RandomBytes(large).ok());
  EXPECT_NE(std::count(large.begin(), large.end(), 0), static_cast<long>(large.size()));
  EXPECT_TRUE(env_->RandomBytes(std::span<uint8_t>()).ok());
}

TEST_F(PosixEnvTest, StartThreadRunsFunctionOnAnotherThread) {
  std::atomic<bool> ran{false};
  std::thread::id worker_id;
  std::thread thread = env_->StartThread([&] {
    worker_id = std::this_thread::get_id();
    ran = true;
  });
  ASSERT_TRUE(thread.joinable());
  thread.join();
  EXPECT_TRUE(ran);
  EXPECT_NE(worker_id, std::this_thread::get_id());
}

TEST_F(PosixEnvTest, DefaultIsOneInstance) { EXPECT_EQ(Env::Default(), Env::Default()); }

}  // namespace
}  // namespace cairn
