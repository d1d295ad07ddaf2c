// The kernel's write counters: parsing their text, and reading them for real.
#include "cairn/platform/write_counters.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <vector>

#include "cairn/platform/env.h"

#include "test_dirs.h"

namespace cairn {
namespace {

TEST(WriteCountersTest, ProcessIoTextGivesWriteBytesLessCancelled) {
  const std::string text =
      "rchar: 6976\nwchar: 512\nsyscr: 10\nsyscw: 2\nread_bytes: 0\n"
      "write_bytes: 1048576\ncancelled_write_bytes: 4096\n";
  Result<uint64_t> bytes = ParseProcessIoBytesWritten(text);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(*bytes, 1048576u - 4096u);
  // More cancelled than written (a truncate of pages another process
  // dirtied) is 0, not a wrapped-around count.
  EXPECT_EQ(*ParseProcessIoBytesWritten("write_bytes: 10\ncancelled_write_bytes: 4096\n"), 0u);
}

TEST(WriteCountersTest, ProcessIoTextWithoutTheLinesIsRefused) {
  EXPECT_EQ(ParseProcessIoBytesWritten("rchar: 1\nwchar: 2\n").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(ParseProcessIoBytesWritten("write_bytes: x\ncancelled_write_bytes: 0\n").status().code(),
            StatusCode::kCorruption);
  // "write_bytes" must be the whole key, not a prefix of another.
  EXPECT_EQ(ParseProcessIoBytesWritten("write_bytes_total: 5\ncancelled_write_bytes: 0\n").status().code(),
            StatusCode::kCorruption);
}

TEST(WriteCountersTest, BlockStatTextGivesSectorsWrittenTimes512) {
  // Linux 5.x+: 17 fields; the 7th is sectors written.
  const std::string stat =
      "   12093     2371  1108602    11388    41721    36002  2914344   191736        0    95348   205804"
      "        0        0        0        0     4212    2679\n";
  Result<uint64_t> bytes = ParseBlockStatBytesWritten(stat);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(*bytes, 2914344ull * 512);
  // Old kernels: 11 fields, same 7th.
  EXPECT_EQ(*ParseBlockStatBytesWritten("1 2 3 4 5 6 7 8 9 10 11"), 7u * 512);
  EXPECT_EQ(ParseBlockStatBytesWritten("1 2 3 4 5 6").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(ParseBlockStatBytesWritten("1 2 3 4 5 6 seven 8").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(ParseBlockStatBytesWritten("").status().code(), StatusCode::kCorruption);
}

// The real counters on this machine. The kernel under the test may lack
// task I/O accounting, or keep the temp directory on tmpfs: then the answer
// must be Unavailable with a reason, never a made-up number.
TEST(WriteCountersTest, ProcessCounterGrowsWhenThisProcessWritesAndSyncs) {
  Env* env = Env::Default();
  Result<uint64_t> before = env->ProcessBytesWritten();
  if (!before.ok()) {
    EXPECT_EQ(before.status().code(), StatusCode::kUnavailable) << before.status().ToString();
    GTEST_SKIP() << "no process write accounting: " << before.status().ToString();
  }
  // The unit tests' TMPDIR is usually tmpfs, which the kernel counts no
  // writes for; the working directory (the build tree) is on a disk.
  ScopedTempDir temp("cairn-write-counters");
  std::string where = temp.path();
  Result<BlockDeviceWrites> device = env->BlockDeviceWritesOf(where);
  if (!device.ok()) {
    EXPECT_EQ(device.status().code(), StatusCode::kUnavailable) << device.status().ToString();
    where = ".";
    device = env->BlockDeviceWritesOf(where);
  }
  if (!device.ok()) GTEST_SKIP() << "neither TMPDIR nor . has a block device: " << device.status().ToString();
  const std::string path = JoinPath(where, "cairn-write-counters-test.tmp");
  auto file = env->OpenFile(path, OpenMode::kCreateTruncate);
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Append(std::string(1 << 20, 'x')).ok());
  ASSERT_TRUE((*file)->Sync().ok());
  Result<uint64_t> after = env->ProcessBytesWritten();
  ASSERT_TRUE(after.ok());
  // The kernel charges whole dirtied pages at write time: at least the MiB.
  EXPECT_GE(*after - *before, uint64_t{1} << 20);

  file->reset();
  EXPECT_TRUE(env->RemoveFile(path).ok());
  Result<BlockDeviceWrites> device_after = env->BlockDeviceWritesOf(where);
  ASSERT_TRUE(device_after.ok());
  EXPECT_FALSE(device_after->name.empty());
  EXPECT_EQ(device_after->name, device->name);
  EXPECT_GT(device_after->major, 0u);
  EXPECT_GE(device_after->bytes_written_since_boot, device->bytes_written_since_boot + (uint64_t{1} << 20));
  EXPECT_GT(device_after->disk_size_bytes, 0u);
  EXPECT_FALSE(device_after->boot_id.empty());
}

TEST(WriteCountersTest, TmpfsHasNoDeviceCount) {
  Env* env = Env::Default();
  if (::access("/dev/shm", W_OK) != 0) GTEST_SKIP() << "no /dev/shm";
  Result<BlockDeviceWrites> device = env->BlockDeviceWritesOf("/dev/shm");
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(device.status().message().find("without a block device"), std::string::npos)
      << device.status().ToString();
  EXPECT_EQ(env->BlockDeviceWritesOf("/no/such/path/at/all").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace cairn

namespace cairn {
namespace {

// The resident set is the process's real RAM: touching 32 MiB more of it
// must show, within the slack of the allocator and the kernel's accounting.
TEST(ProcessMemoryTest, ResidentBytesFollowMemoryTheProcessTouches) {
  Env* env = Env::Default();
  Result<uint64_t> before = env->ProcessResidentBytes();
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  EXPECT_GT(*before, uint64_t{1} << 20);
  constexpr size_t kTouched = size_t{32} << 20;
  std::vector<char> block(kTouched);
  for (size_t i = 0; i < kTouched; i += 4096) block[i] = static_cast<char>(i);
  Result<uint64_t> after = env->ProcessResidentBytes();
  ASSERT_TRUE(after.ok());
  EXPECT_GE(*after, *before + kTouched - (size_t{4} << 20));
  EXPECT_NE(block[4096], 1);
}

}  // namespace
}  // namespace cairn
