#include <string>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "cairn/core/sqlite_database.h"
#include "cairn/platform/env.h"

#include "fault_injection_env.h"
#include "storage/env_vfs.h"
#include "test_dirs.h"

namespace cairn {
namespace {

// Registers `env` as `name` for the lifetime of the object.
class ScopedVfs {
 public:
  ScopedVfs(Env* env, std::string name) : name_(std::move(name)) {
    Status registered = RegisterEnvVfs(env, name_);
    EXPECT_TRUE(registered.ok()) << registered.ToString();
  }
  ~ScopedVfs() { EXPECT_TRUE(UnregisterEnvVfs(name_).ok()); }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

int64_t CountRows(SqliteDb& db, const std::string& table) {
  Result<Statement*> statement = db.Prepare("SELECT count(*) FROM " + table);
  EXPECT_TRUE(statement.ok()) << statement.status().ToString();
  if (!statement.ok()) return -1;
  StatementResetter reset(*statement);
  Result<bool> row = (*statement)->Step();
  EXPECT_TRUE(row.ok() && *row);
  return (*statement)->ColumnInt64(0);
}

TEST(EnvVfsTest, CreateWriteReopenReadBack) {
  ScopedTempDir dir("storage-vfs");
  ScopedVfs vfs(Env::Default(), "cairn-test-default");
  std::string path = dir.PathOf("basic.db");
  {
    Result<std::unique_ptr<SqliteDb>> db = SqliteDb::Open(path, vfs.name(), false, 512);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    ASSERT_TRUE((*db)->Exec("CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)").ok());
    ASSERT_TRUE((*db)->Begin().ok());
    Result<Statement*> insert = (*db)->Prepare("INSERT INTO t(k, v) VALUES(?1, ?2)");
    ASSERT_TRUE(insert.ok()) << insert.status().ToString();
    for (int i = 0; i < 200; ++i) {
      ASSERT_TRUE((*insert)->BindInt64(1, i).ok());
      ASSERT_TRUE((*insert)->BindBlob(2, std::string(100 + i, static_cast<char>('a' + i % 26))).ok());
      Status run = (*insert)->Run();
      ASSERT_TRUE(run.ok()) << run.ToString();
    }
    ASSERT_TRUE((*db)->Commit().ok());
    // While open, the WAL carries the commit.
    EXPECT_TRUE(Env::Default()->FileExists(path + "-wal"));
    ASSERT_TRUE((*db)->Close().ok());
  }
  // A clean close checkpoints and removes the WAL: the file stands alone.
  EXPECT_FALSE(Env::Default()->FileExists(path + "-wal"));
  EXPECT_FALSE(Env::Default()->FileExists(path + "-shm"));

  Result<std::unique_ptr<SqliteDb>> db = SqliteDb::Open(path, vfs.name(), true, 256);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  EXPECT_EQ(CountRows(**db, "t"), 200);
  Result<Statement*> select = (*db)->Prepare("SELECT v FROM t WHERE k = ?1");
  ASSERT_TRUE(select.ok());
  ASSERT_TRUE((*select)->BindInt64(1, 150).ok());
  Result<bool> row = (*select)->Step();
  ASSERT_TRUE(row.ok() && *row);
  EXPECT_EQ((*select)->ColumnBlob(0), std::string(250, static_cast<char>('a' + 150 % 26)));
  (*select)->Reset();
  // A reader leaves no WAL behind.
  ASSERT_TRUE((*db)->Close().ok());
  EXPECT_FALSE(Env::Default()->FileExists(path + "-wal"));
}

TEST(EnvVfsTest, RegisteringTwice) {
  FaultInjectionEnv other(Env::Default());
  ScopedVfs vfs(Env::Default(), "cairn-test-twice");
  EXPECT_TRUE(RegisterEnvVfs(Env::Default(), vfs.name()).ok());
  EXPECT_TRUE(RegisterEnvVfs(&other, vfs.name()).Is(StatusCode::kInvalidArgument));
  // SQLite's own VFS names are not ours to take.
  EXPECT_TRUE(RegisterEnvVfs(Env::Default(), "unix").Is(StatusCode::kInvalidArgument));
  EXPECT_TRUE(UnregisterEnvVfs("cairn-test-never-registered").Is(StatusCode::kNotFound));
  // The registration is visible to SQLite and is not the default.
  EXPECT_NE(sqlite3_vfs_find(vfs.name().c_str()), nullptr);
  EXPECT_STRNE(sqlite3_vfs_find(nullptr)->zName, vfs.name().c_str());
}

TEST(EnvVfsTest, ReadOnlyOpenOfMissingFileIsNotFound) {
  ScopedTempDir dir("storage-vfs");
  ScopedVfs vfs(Env::Default(), "cairn-test-missing");
  Result<std::unique_ptr<SqliteDb>> db = SqliteDb::Open(dir.PathOf("absent.db"), vfs.name(), true, 256);
  ASSERT_FALSE(db.ok());
  EXPECT_TRUE(db.status().Is(StatusCode::kNotFound)) << db.status().ToString();
  EXPECT_NE(db.status().message().find("absent.db"), std::string::npos);
  EXPECT_FALSE(Env::Default()->FileExists(dir.PathOf("absent.db")));
}

TEST(EnvVfsTest, UnknownVfsIsInvalidArgument) {
  ScopedTempDir dir("storage-vfs");
  Result<std::unique_ptr<SqliteDb>> db = SqliteDb::Open(dir.PathOf("x.db"), "cairn-test-nope", false, 256);
  ASSERT_FALSE(db.ok());
  EXPECT_TRUE(db.status().Is(StatusCode::kInvalidArgument));
}

TEST(EnvVfsTest, SecondConnectionToOpenFileIsBusy) {
  ScopedTempDir dir("storage-vfs");
  ScopedVfs vfs(Env::Default(), "cairn-test-busy");
  std::string path = dir.PathOf("busy.db");
  Result<std::unique_ptr<SqliteDb>> writer = SqliteDb::Open(path, vfs.name(), false, 256);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  ASSERT_TRUE((*writer)->Exec("CREATE TABLE t(x)").ok());

  Result<std::unique_ptr<SqliteDb>> reader = SqliteDb::Open(path, vfs.name(), true, 256);
  ASSERT_FALSE(reader.ok());
  EXPECT_TRUE(reader.status().Is(StatusCode::kBusy)) << reader.status().ToString();
  Result<std::unique_ptr<SqliteDb>> second_writer = SqliteDb::Open(path, vfs.name(), false, 256);
  ASSERT_FALSE(second_writer.ok());
  EXPECT_TRUE(second_writer.status().Is(StatusCode::kBusy)) << second_writer.status().ToString();

  ASSERT_TRUE((*writer)->Close().ok());
  reader = SqliteDb::Open(path, vfs.name(), true, 256);
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
}

TEST(EnvVfsTest, ReadOnlyHandleCannotWriteOrCheckpoint) {
  ScopedTempDir dir("storage-vfs");
  ScopedVfs vfs(Env::Default(), "cairn-test-readonly");
  std::string path = dir.PathOf("ro.db");
  {
    Result<std::unique_ptr<SqliteDb>> db = SqliteDb::Open(path, vfs.name(), false, 256);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec("CREATE TABLE t(x); INSERT INTO t VALUES(1)").ok());
  }
  Result<std::unique_ptr<SqliteDb>> db = SqliteDb::Open(path, vfs.name(), true, 256);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  Status insert = (*db)->Exec("INSERT INTO t VALUES(2)");
  EXPECT_TRUE(insert.Is(StatusCode::kPermissionDenied)) << insert.ToString();
  EXPECT_TRUE((*db)->Checkpoint().Is(StatusCode::kFailedPrecondition));
  EXPECT_EQ(CountRows(**db, "t"), 1);
}

TEST(EnvVfsTest, ReaderSeesCommitsLeftInWalWithoutCheckpointing) {
  // A writer that dies before checkpointing leaves its commits in the WAL; a
  // reader must see them and leave the WAL exactly as it found it.
  ScopedTempDir dir("storage-vfs");
  FaultInjectionEnv env(Env::Default());
  ScopedVfs vfs(&env, "cairn-test-wal-reader");
  std::string path = dir.PathOf("wal.db");
  {
    Result<std::unique_ptr<SqliteDb>> db = SqliteDb::Open(path, vfs.name(), false, 256);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec("CREATE TABLE t(x); INSERT INTO t VALUES(1); INSERT INTO t VALUES(2)").ok());
    // Power cut with the connection still open: everything committed was
    // synced (synchronous=FULL) and stays; the handle dies.
    ASSERT_TRUE(env.SimulatePowerCut().ok());
  }
  Result<uint64_t> wal_size = Env::Default()->FileSize(path + "-wal");
  ASSERT_TRUE(wal_size.ok());
  ASSERT_GT(*wal_size, 0u);
  Result<std::string> wal_before = Env::Default()->ReadFileToString(path + "-wal");
  ASSERT_TRUE(wal_before.ok());
  {
    Result<std::unique_ptr<SqliteDb>> db = SqliteDb::Open(path, vfs.name(), true, 256);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    EXPECT_EQ(CountRows(**db, "t"), 2);
  }
  Result<std::string> wal_after = Env::Default()->ReadFileToString(path + "-wal");
  ASSERT_TRUE(wal_after.ok());
  EXPECT_EQ(*wal_before, *wal_after);
  // The next writer checkpoints it.
  {
    Result<std::unique_ptr<SqliteDb>> db = SqliteDb::Open(path, vfs.name(), false, 256);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    EXPECT_EQ(CountRows(**db, "t"), 2);
  }
  EXPECT_FALSE(Env::Default()->FileExists(path + "-wal"));
}

TEST(EnvVfsTest, InjectedErrorsBecomeStatusesWithTheEnvMessage) {
  ScopedTempDir dir("storage-vfs");
  FaultInjectionEnv env(Env::Default());
  ScopedVfs vfs(&env, "cairn-test-errors");
  std::string path = dir.PathOf("errors.db");
  Result<std::unique_ptr<SqliteDb>> db = SqliteDb::Open(path, vfs.name(), false, 256);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE((*db)->Exec("CREATE TABLE t(x)").ok());

  env.FailNth(FaultOp::kSync, 1, Status::IOError("injected sync failure"));
  Status failed = (*db)->Exec("INSERT INTO t VALUES(1)");
  ASSERT_FALSE(failed.ok());
  EXPECT_TRUE(failed.Is(StatusCode::kIOError)) << failed.ToString();
  EXPECT_NE(failed.message().find("injected sync failure"), std::string::npos) << failed.ToString();
  EXPECT_NE(failed.message().find(path), std::string::npos) << failed.ToString();

  env.FailNth(FaultOp::kWrite, 1, Status::ResourceExhausted("injected: no space left on device"));
  Status full = (*db)->Exec("INSERT INTO t VALUES(2)");
  ASSERT_FALSE(full.ok());
  EXPECT_TRUE(full.Is(StatusCode::kResourceExhausted)) << full.ToString();
}

TEST(EnvVfsTest, TemporaryFilesLiveInMemory) {
  // With temp_store=FILE, VACUUM builds the new database in a nameless
  // temporary file and an index build over more data than the page cache
  // holds spills sorted runs to others; none of them may appear on disk.
  ScopedTempDir dir("storage-vfs");
  FaultInjectionEnv env(Env::Default());
  ScopedVfs vfs(&env, "cairn-test-temp");
  Result<std::unique_ptr<SqliteDb>> db = SqliteDb::Open(dir.PathOf("temp.db"), vfs.name(), false, 64);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE((*db)->Exec("PRAGMA temp_store=FILE").ok());
  ASSERT_TRUE((*db)->Exec("CREATE TABLE t(x)").ok());
  ASSERT_TRUE((*db)
                  ->Exec("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000) "
                         "INSERT INTO t SELECT randomblob(200) FROM n")
                  .ok());
  Status indexed = (*db)->Exec("CREATE INDEX t_x ON t(x)");
  ASSERT_TRUE(indexed.ok()) << indexed.ToString();
  Status vacuumed = (*db)->Exec("VACUUM");
  ASSERT_TRUE(vacuumed.ok()) << vacuumed.ToString();
  Result<Statement*> check = (*db)->Prepare("SELECT count(*) FROM t INDEXED BY t_x WHERE x > x'00'");
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  Result<bool> row = (*check)->Step();
  ASSERT_TRUE(row.ok() && *row) << row.status().ToString();
  EXPECT_GT((*check)->ColumnInt64(0), 2900);
  (*check)->Reset();
  Result<std::vector<std::string>> names = Env::Default()->ListDir(dir.path());
  ASSERT_TRUE(names.ok());
  for (const std::string& name : *names) {
    EXPECT_TRUE(name == "temp.db" || name == "temp.db-wal") << name;
  }
}

}  // namespace
}  // namespace cairn
