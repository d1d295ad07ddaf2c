// CheckSqliteWal on real WAL files made by SQLite: intact, with a flipped
// byte in the first or the last commit, cut in the middle of its last frame
// (a torn append), and with a damaged header.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "cairn/core/sqlite_database.h"

#include "storage/sqlite_wal_check.h"
#include "test_dirs.h"

namespace cairn {
namespace {

constexpr uint64_t kHeader = 32, kFrame = 24 + 4096;

class SqliteWalCheckTest : public ::testing::Test {
 protected:
  // Three commits of one row each, the WAL copied before the close
  // checkpoints it away.
  void SetUp() override {
    const std::string db_path = dir_.PathOf("file.db");
    auto db = SqliteDb::Open(db_path, "unix", /*read_only=*/false, 64, SqliteSynchronous::kFull);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    ASSERT_TRUE((*db)->Exec("PRAGMA wal_autocheckpoint=0").ok());
    ASSERT_TRUE((*db)->Exec("CREATE TABLE t(x)").ok());
    ASSERT_TRUE((*db)->Exec("INSERT INTO t VALUES(randomblob(100))").ok());
    ASSERT_TRUE((*db)->Exec("INSERT INTO t VALUES(randomblob(100))").ok());
    wal_ = dir_.PathOf("copy-wal");
    std::filesystem::copy_file(db_path + "-wal", wal_);
    ASSERT_TRUE((*db)->Close().ok());
  }

  void FlipByteAt(uint64_t offset) {
    std::fstream file(wal_, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(static_cast<std::streamoff>(offset));
    char byte = 0;
    file.get(byte);
    file.seekp(static_cast<std::streamoff>(offset));
    file.put(static_cast<char>(byte ^ 0x01));
  }

  uint64_t Frames() { return (std::filesystem::file_size(wal_) - kHeader) / kFrame; }

  ScopedTempDir dir_{"cairn-wal-check"};
  std::string wal_;
};

TEST_F(SqliteWalCheckTest, AnIntactWalLosesNothing) {
  auto check = CheckSqliteWal(Env::Default(), wal_);
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  EXPECT_EQ(check->frames_in_file, Frames());
  EXPECT_EQ(check->frames_committed, Frames());
  EXPECT_EQ(check->commits_lost, 0u);
  EXPECT_FALSE(check->damaged());
}

TEST_F(SqliteWalCheckTest, AFlippedByteInTheFirstFrameLosesEveryCommit) {
  FlipByteAt(kHeader + 24 + 1000);
  auto check = CheckSqliteWal(Env::Default(), wal_);
  ASSERT_TRUE(check.ok());
  EXPECT_EQ(check->frames_committed, 0u);
  EXPECT_EQ(check->commits_lost, 3u);
  EXPECT_TRUE(check->damaged());
}

TEST_F(SqliteWalCheckTest, AFlippedByteInTheLastFrameLosesTheLastCommit) {
  FlipByteAt(kHeader + (Frames() - 1) * kFrame + 24 + 10);
  auto check = CheckSqliteWal(Env::Default(), wal_);
  ASSERT_TRUE(check.ok());
  EXPECT_EQ(check->frames_committed, Frames() - 1);
  EXPECT_EQ(check->commits_lost, 1u);
}

TEST_F(SqliteWalCheckTest, AWalCutInItsLastFrameIsATornAppendNotDamage) {
  std::filesystem::resize_file(wal_, kHeader + (Frames() - 1) * kFrame + 100);
  auto check = CheckSqliteWal(Env::Default(), wal_);
  ASSERT_TRUE(check.ok());
  EXPECT_EQ(check->commits_lost, 0u);
  EXPECT_FALSE(check->damaged());
}

TEST_F(SqliteWalCheckTest, ADamagedHeaderWithFramesAfterItIsDamage) {
  FlipByteAt(18);  // a salt: the header's checksum no longer holds
  auto check = CheckSqliteWal(Env::Default(), wal_);
  ASSERT_TRUE(check.ok());
  EXPECT_TRUE(check->header_damaged);
  EXPECT_TRUE(check->damaged());
}

TEST_F(SqliteWalCheckTest, AMissingOrEmptyWalIsNothing) {
  auto missing = CheckSqliteWal(Env::Default(), dir_.PathOf("none-wal"));
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->damaged());
  std::filesystem::resize_file(wal_, 0);
  auto empty = CheckSqliteWal(Env::Default(), wal_);
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->damaged());
  EXPECT_EQ(empty->frames_in_file, 0u);
}

}  // namespace
}  // namespace cairn
