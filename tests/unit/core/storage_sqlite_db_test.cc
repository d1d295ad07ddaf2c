#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "cairn/core/sqlite_database.h"
#include "cairn/platform/env.h"

#include "storage/env_vfs.h"
#include "test_dirs.h"

namespace cairn {
namespace {

class SqliteDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status registered = RegisterEnvVfs(Env::Default(), vfs_);
    ASSERT_TRUE(registered.ok()) << registered.ToString();
    Result<std::unique_ptr<SqliteDb>> db = SqliteDb::Open(dir_.PathOf("test.db"), vfs_, false, 256);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(db).value();
    ASSERT_TRUE(db_->Exec("CREATE TABLE t(k INTEGER PRIMARY KEY, i INTEGER, d REAL, s TEXT, b BLOB)").ok());
  }

  // The single value of a one-row, one-column query, as text.
  std::string QueryText(const std::string& sql) {
    Result<Statement*> statement = db_->Prepare(sql);
    EXPECT_TRUE(statement.ok()) << statement.status().ToString();
    if (!statement.ok()) return "";
    StatementResetter reset(*statement);
    Result<bool> row = (*statement)->Step();
    EXPECT_TRUE(row.ok() && *row) << sql;
    return (*statement)->ColumnText(0);
  }

  ScopedTempDir dir_{"storage-sqlite"};
  std::string vfs_ = "cairn-test-sqlite-db";
  std::unique_ptr<SqliteDb> db_;
};

TEST_F(SqliteDbTest, PragmasAreApplied) {
  EXPECT_EQ(QueryText("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(QueryText("PRAGMA locking_mode"), "exclusive");
  EXPECT_EQ(QueryText("PRAGMA synchronous"), "2");  // FULL
  EXPECT_EQ(QueryText("PRAGMA cache_size"), "-256");
  EXPECT_EQ(QueryText("PRAGMA foreign_keys"), "0");
  EXPECT_EQ(QueryText("PRAGMA temp_store"), "2");  // MEMORY

  Result<std::unique_ptr<SqliteDb>> normal =
      SqliteDb::Open(dir_.PathOf("normal.db"), vfs_, false, 128, SqliteSynchronous::kNormal);
  ASSERT_TRUE(normal.ok());
  Result<Statement*> synchronous = (*normal)->Prepare("PRAGMA synchronous");
  ASSERT_TRUE(synchronous.ok());
  StatementResetter reset(*synchronous);
  ASSERT_TRUE((*synchronous)->Step().ok());
  EXPECT_EQ((*synchronous)->ColumnInt64(0), 1);  // NORMAL
}

// A file this open creates gets the asked page size; one that exists keeps
// its own, whatever a later open asks.
TEST_F(SqliteDbTest, ANewFileGetsThePageSizeAskedAndAnOldFileKeepsItsOwn) {
  const auto page_size = [](SqliteDb* db) -> int64_t {
    Result<Statement*> statement = db->Prepare("PRAGMA page_size");
    EXPECT_TRUE(statement.ok());
    if (!statement.ok()) return 0;
    StatementResetter reset(*statement);
    EXPECT_TRUE((*statement)->Step().ok());
    return (*statement)->ColumnInt64(0);
  };
  EXPECT_EQ(page_size(db_.get()), 4096);  // SQLite's default, asked for nothing
  db_.reset();

  const std::string small = dir_.PathOf("small.db");
  {
    Result<std::unique_ptr<SqliteDb>> db =
        SqliteDb::Open(small, vfs_, false, 128, SqliteSynchronous::kFull, kEnginePageSize);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    ASSERT_TRUE((*db)->Exec("CREATE TABLE t(b BLOB)").ok());
    ASSERT_TRUE((*db)->Exec("INSERT INTO t VALUES (zeroblob(3000))").ok());
    EXPECT_EQ(page_size(db->get()), kEnginePageSize);
  }
  {
    // Reopened asking for another size: the file's own stands.
    Result<std::unique_ptr<SqliteDb>> db = SqliteDb::Open(small, vfs_, false, 128, SqliteSynchronous::kFull, 8192);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    EXPECT_EQ(page_size(db->get()), kEnginePageSize);
  }
  {
    Result<std::unique_ptr<SqliteDb>> db =
        SqliteDb::Open(dir_.PathOf("test.db"), vfs_, false, 128, SqliteSynchronous::kFull, kEnginePageSize);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    EXPECT_EQ(page_size(db->get()), 4096);
  }
  for (int bad : {-1, 100, 1000, 131072}) {
    Result<std::unique_ptr<SqliteDb>> db =
        SqliteDb::Open(dir_.PathOf("bad.db"), vfs_, false, 128, SqliteSynchronous::kFull, bad);
    EXPECT_EQ(db.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST_F(SqliteDbTest, BindsAndReadsEveryType) {
  Result<Statement*> insert = db_->Prepare("INSERT INTO t(k, i, d, s, b) VALUES(?1, ?2, ?3, ?4, ?5)");
  ASSERT_TRUE(insert.ok());
  const std::string blob("\0\x01\xff", 3);
  ASSERT_TRUE((*insert)->BindInt64(1, 1).ok());
  ASSERT_TRUE((*insert)->BindInt64(2, std::numeric_limits<int64_t>::min()).ok());
  ASSERT_TRUE((*insert)->BindDouble(3, -0.5).ok());
  ASSERT_TRUE((*insert)->BindText(4, "grüße").ok());
  ASSERT_TRUE((*insert)->BindBlob(5, blob).ok());
  ASSERT_TRUE((*insert)->Run().ok());
  // Empty text and blob stay empty values, not NULL.
  ASSERT_TRUE((*insert)->BindInt64(1, 2).ok());
  ASSERT_TRUE((*insert)->BindNull(2).ok());
  ASSERT_TRUE((*insert)->BindDouble(3, 0).ok());
  ASSERT_TRUE((*insert)->BindText(4, "").ok());
  ASSERT_TRUE((*insert)->BindBlob(5, "").ok());
  ASSERT_TRUE((*insert)->Run().ok());

  Result<Statement*> select = db_->Prepare("SELECT i, d, s, b, s IS NULL, b IS NULL FROM t ORDER BY k");
  ASSERT_TRUE(select.ok());
  Result<bool> row = (*select)->Step();
  ASSERT_TRUE(row.ok() && *row);
  EXPECT_EQ((*select)->ColumnInt64(0), std::numeric_limits<int64_t>::min());
  EXPECT_EQ((*select)->ColumnDouble(1), -0.5);
  EXPECT_EQ((*select)->ColumnText(2), "grüße");
  EXPECT_EQ((*select)->ColumnBlob(3), blob);
  row = (*select)->Step();
  ASSERT_TRUE(row.ok() && *row);
  EXPECT_TRUE((*select)->ColumnIsNull(0));
  EXPECT_EQ((*select)->ColumnText(2), "");
  EXPECT_EQ((*select)->ColumnBlob(3), "");
  EXPECT_EQ((*select)->ColumnInt64(4), 0);
  EXPECT_EQ((*select)->ColumnInt64(5), 0);
  row = (*select)->Step();
  ASSERT_TRUE(row.ok());
  EXPECT_FALSE(*row);
}

TEST_F(SqliteDbTest, PreparedStatementsAreCachedAndHandedOutClean) {
  Result<Statement*> first = db_->Prepare("SELECT ?1");
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE((*first)->BindInt64(1, 42).ok());
  Result<bool> row = (*first)->Step();
  ASSERT_TRUE(row.ok() && *row);
  // Abandoned mid-result: the next Prepare resets it and clears bindings.
  Result<Statement*> second = db_->Prepare("SELECT ?1");
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*first, *second);
  row = (*second)->Step();
  ASSERT_TRUE(row.ok() && *row);
  EXPECT_TRUE((*second)->ColumnIsNull(0));
  (*second)->Reset();
  Result<Statement*> other = db_->Prepare("SELECT ?1 + 1");
  ASSERT_TRUE(other.ok());
  EXPECT_NE(*other, *first);
}

TEST_F(SqliteDbTest, PrepareRejectsMoreThanOneStatementAndBadSql) {
  Result<Statement*> two = db_->Prepare("SELECT 1; SELECT 2");
  EXPECT_TRUE(two.status().Is(StatusCode::kInvalidArgument)) << two.status().ToString();
  Result<Statement*> trailing = db_->Prepare("SELECT 1;  \n");
  EXPECT_TRUE(trailing.ok()) << trailing.status().ToString();
  Result<Statement*> bad = db_->Prepare("SELEC 1");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(bad.status().Is(StatusCode::kInternal));
  EXPECT_NE(bad.status().message().find("syntax error"), std::string::npos) << bad.status().ToString();
  EXPECT_NE(bad.status().message().find(dir_.PathOf("test.db")), std::string::npos);
}

TEST_F(SqliteDbTest, TransactionsCommitAndRollBack) {
  ASSERT_TRUE(db_->Begin().ok());
  EXPECT_TRUE(db_->InTransaction());
  ASSERT_TRUE(db_->Exec("INSERT INTO t(k) VALUES(1)").ok());
  ASSERT_TRUE(db_->Commit().ok());
  EXPECT_FALSE(db_->InTransaction());
  ASSERT_TRUE(db_->Begin().ok());
  ASSERT_TRUE(db_->Exec("INSERT INTO t(k) VALUES(2)").ok());
  EXPECT_EQ(db_->ChangedRows(), 1);
  ASSERT_TRUE(db_->Rollback().ok());
  EXPECT_TRUE(db_->Rollback().ok());  // no transaction: nothing to do
  EXPECT_EQ(QueryText("SELECT group_concat(k) FROM t"), "1");
  // Nested BEGIN is a misuse SQLite reports.
  ASSERT_TRUE(db_->Begin().ok());
  EXPECT_FALSE(db_->Begin().ok());
  ASSERT_TRUE(db_->Rollback().ok());
}

TEST_F(SqliteDbTest, ErrorsMapToStatusCodes) {
  ASSERT_TRUE(db_->Exec("INSERT INTO t(k) VALUES(1)").ok());
  Status duplicate = db_->Exec("INSERT INTO t(k) VALUES(1)");
  EXPECT_TRUE(duplicate.Is(StatusCode::kAlreadyExists)) << duplicate.ToString();
  ASSERT_TRUE(db_->Exec("CREATE TABLE c(x NOT NULL)").ok());
  Status not_null = db_->Exec("INSERT INTO c VALUES(NULL)");
  EXPECT_TRUE(not_null.Is(StatusCode::kInvalidArgument)) << not_null.ToString();
  Status missing = db_->Exec("SELECT * FROM nowhere");
  EXPECT_TRUE(missing.Is(StatusCode::kInternal)) << missing.ToString();
  Result<Statement*> statement = db_->Prepare("SELECT ?1");
  ASSERT_TRUE(statement.ok());
  EXPECT_FALSE((*statement)->BindInt64(5, 1).ok());
}

TEST_F(SqliteDbTest, CheckpointEmptiesTheWal) {
  ASSERT_TRUE(db_->Exec("INSERT INTO t(k, b) VALUES(1, zeroblob(100000))").ok());
  std::string wal = dir_.PathOf("test.db-wal");
  Result<uint64_t> before = Env::Default()->FileSize(wal);
  ASSERT_TRUE(before.ok());
  EXPECT_GT(*before, 100000u);
  ASSERT_TRUE(db_->Checkpoint().ok());
  Result<uint64_t> after = Env::Default()->FileSize(wal);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*after, 0u);
  EXPECT_EQ(QueryText("SELECT length(b) FROM t"), "100000");
}

TEST_F(SqliteDbTest, CloseIsIdempotentAndFinal) {
  ASSERT_TRUE(db_->Close().ok());
  EXPECT_TRUE(db_->Close().ok());
  EXPECT_EQ(db_->handle(), nullptr);
  EXPECT_TRUE(db_->Exec("SELECT 1").Is(StatusCode::kFailedPrecondition));
  EXPECT_TRUE(db_->Prepare("SELECT 1").status().Is(StatusCode::kFailedPrecondition));
  EXPECT_TRUE(db_->Checkpoint().Is(StatusCode::kFailedPrecondition));
}

TEST_F(SqliteDbTest, NotADatabaseIsCorruption) {
  std::string path = dir_.PathOf("text.db");
  ASSERT_TRUE(Env::Default()->WriteFileAtomically(path, std::string(4096, 'x')).ok());
  for (bool read_only : {true, false}) {
    Result<std::unique_ptr<SqliteDb>> db = SqliteDb::Open(path, vfs_, read_only, 256);
    ASSERT_FALSE(db.ok());
    EXPECT_TRUE(db.status().Is(StatusCode::kCorruption)) << db.status().ToString();
    EXPECT_NE(db.status().message().find(path), std::string::npos);
  }
}

}  // namespace
}  // namespace cairn
