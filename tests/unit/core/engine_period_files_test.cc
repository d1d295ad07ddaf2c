// PeriodFiles alone, on real files in a temp dir: the LRU of handles, the
// read-only handle reopened writable in place, and what each access does
// with a missing file.
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "cairn/platform/env.h"

#include "engine/sealing/period_files.h"
#include "storage/env_vfs.h"
#include "test_dirs.h"

namespace cairn {
namespace {

constexpr int64_t kDay = int64_t{86'400} * 1'000'000'000;
// 2023-11-14, long before any test runs: never the current period.
const int64_t kOldDay = PeriodStart(Period::kDay, int64_t{1'700'000'000} * 1'000'000'000);

class PeriodFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status registered = RegisterEnvVfs(Env::Default(), vfs_);
    ASSERT_TRUE(registered.ok()) << registered.ToString();
    ASSERT_TRUE(Env::Default()->CreateDirs(dir_.PathOf("t")).ok());
    ASSERT_TRUE(Env::Default()->CreateDirs(dir_.PathOf("u")).ok());
  }

  std::unique_ptr<PeriodFiles> Make(size_t max_open) {
    PeriodFiles::Options options;
    options.max_open = max_open;
    return std::make_unique<PeriodFiles>(Env::Default(), dir_.path(), vfs_, options);
  }

  std::shared_ptr<PeriodHandle> GetOk(PeriodFiles& files, const std::string& table, int64_t start,
                                      PeriodAccess access) {
    auto handle = files.Get(table, Period::kDay, start, access);
    EXPECT_TRUE(handle.ok()) << handle.status().ToString();
    return handle.ok() ? *handle : nullptr;
  }

  static bool ReadOnly(PeriodHandle& handle) {
    MutexLock lock(&handle.mutex);
    return handle.file->read_only();
  }

  ScopedTempDir dir_{"engine-period-files"};
  std::string vfs_ = "cairn-test-period-files";
};

TEST_F(PeriodFilesTest, PathsFollowTableAndPeriodStem) {
  auto files = Make(4);
  EXPECT_EQ(files->TableDir("t"), dir_.PathOf("t"));
  EXPECT_EQ(files->PeriodPath("t", Period::kDay, kOldDay),
            dir_.PathOf("t") + "/" + PeriodFileStem(Period::kDay, kOldDay) + ".db");
}

TEST_F(PeriodFilesTest, MissingFileIsNotFoundUnlessCreated) {
  auto files = Make(4);
  const std::string path = files->PeriodPath("t", Period::kDay, kOldDay);
  for (PeriodAccess access : {PeriodAccess::kRead, PeriodAccess::kWrite}) {
    auto missing = files->Get("t", Period::kDay, kOldDay, access);
    ASSERT_FALSE(missing.ok());
    EXPECT_TRUE(missing.status().Is(StatusCode::kNotFound)) << missing.status().ToString();
    EXPECT_NE(missing.status().message().find(path), std::string::npos);
  }
  EXPECT_FALSE(Env::Default()->FileExists(path));
  EXPECT_EQ(files->OpenCount(), 0u);
  ASSERT_NE(GetOk(*files, "t", kOldDay, PeriodAccess::kCreate), nullptr);
  EXPECT_TRUE(Env::Default()->FileExists(path));
  EXPECT_EQ(files->OpenCount(), 1u);
}

TEST_F(PeriodFilesTest, ReadOnlyHandleIsReopenedWritableInPlace) {
  auto files = Make(4);
  ASSERT_NE(GetOk(*files, "t", kOldDay, PeriodAccess::kCreate), nullptr);
  files->Forget("t", kOldDay);
  EXPECT_EQ(files->OpenCount(), 0u);

  std::shared_ptr<PeriodHandle> reader = GetOk(*files, "t", kOldDay, PeriodAccess::kRead);
  ASSERT_NE(reader, nullptr);
  EXPECT_TRUE(ReadOnly(*reader));
  std::shared_ptr<PeriodHandle> writer = GetOk(*files, "t", kOldDay, PeriodAccess::kWrite);
  ASSERT_NE(writer, nullptr);
  EXPECT_EQ(writer.get(), reader.get());
  EXPECT_FALSE(ReadOnly(*reader));
  // Reads after that get the same (now writable) handle.
  EXPECT_EQ(GetOk(*files, "t", kOldDay, PeriodAccess::kRead).get(), reader.get());
  EXPECT_EQ(files->OpenCount(), 1u);
}

TEST_F(PeriodFilesTest, CurrentPeriodOpensWritableEvenForReads) {
  auto files = Make(4);
  const int64_t today = PeriodStart(Period::kDay, Env::Default()->NowUnixNanos());
  ASSERT_NE(GetOk(*files, "t", today, PeriodAccess::kCreate), nullptr);
  files->Forget("t", today);
  std::shared_ptr<PeriodHandle> handle = GetOk(*files, "t", today, PeriodAccess::kRead);
  ASSERT_NE(handle, nullptr);
  EXPECT_FALSE(ReadOnly(*handle));
}

TEST_F(PeriodFilesTest, LeastRecentlyUsedUnheldHandlesAreClosed) {
  auto files = Make(2);
  std::weak_ptr<PeriodHandle> day0_first = GetOk(*files, "t", kOldDay, PeriodAccess::kCreate);
  std::weak_ptr<PeriodHandle> day1_first = GetOk(*files, "t", kOldDay + kDay, PeriodAccess::kCreate);
  EXPECT_FALSE(day0_first.expired());
  ASSERT_NE(GetOk(*files, "t", kOldDay + 2 * kDay, PeriodAccess::kCreate), nullptr);
  EXPECT_EQ(files->OpenCount(), 2u);
  // The least recently used handle was closed and dropped, the other kept.
  EXPECT_TRUE(day0_first.expired());
  EXPECT_FALSE(day1_first.expired());

  // Day 0 opens again; day 2 (held) stays the same object.
  std::shared_ptr<PeriodHandle> day2 = GetOk(*files, "t", kOldDay + 2 * kDay, PeriodAccess::kRead);
  std::shared_ptr<PeriodHandle> day0 = GetOk(*files, "t", kOldDay, PeriodAccess::kRead);
  EXPECT_EQ(files->OpenCount(), 2u);
  EXPECT_EQ(GetOk(*files, "t", kOldDay + 2 * kDay, PeriodAccess::kRead).get(), day2.get());
}

TEST_F(PeriodFilesTest, HeldHandlesAreNotClosedByEviction) {
  auto files = Make(1);
  std::shared_ptr<PeriodHandle> held = GetOk(*files, "t", kOldDay, PeriodAccess::kCreate);
  std::shared_ptr<PeriodHandle> other = GetOk(*files, "t", kOldDay + kDay, PeriodAccess::kCreate);
  ASSERT_NE(held, nullptr);
  ASSERT_NE(other, nullptr);
  // Both are held: the cache runs over its limit rather than close one in use.
  EXPECT_EQ(files->OpenCount(), 2u);
  {
    MutexLock lock(&held->mutex);
    auto series = held->file->ListSeries();
    EXPECT_TRUE(series.ok()) << series.status().ToString();
  }
  other.reset();
  ASSERT_NE(GetOk(*files, "t", kOldDay + 2 * kDay, PeriodAccess::kCreate), nullptr);
  EXPECT_EQ(files->OpenCount(), 2u);  // the held one and the newest
  EXPECT_EQ(GetOk(*files, "t", kOldDay, PeriodAccess::kRead).get(), held.get());
}

TEST_F(PeriodFilesTest, ForgetClosesOnlyTheNamedTableAndPeriod) {
  auto files = Make(8);
  for (const char* table : {"t", "u"}) {
    for (int i = 0; i < 2; ++i) ASSERT_NE(GetOk(*files, table, kOldDay + i * kDay, PeriodAccess::kCreate), nullptr);
  }
  EXPECT_EQ(files->OpenCount(), 4u);
  files->Forget("t", kOldDay);
  EXPECT_EQ(files->OpenCount(), 3u);
  files->Forget("u", INT64_MIN);
  EXPECT_EQ(files->OpenCount(), 1u);
  EXPECT_TRUE(files->CloseAll().ok());
  EXPECT_EQ(files->OpenCount(), 0u);
}

}  // namespace
}  // namespace cairn
