// A small wrapper over one SQLite connection: cairn's pragmas, cached
// prepared statements, transactions, and SQLite errors turned into Status.
// The engine keeps its catalog and period files with it; other layers (the
// ingest service's SQLite sink) open their own databases with
// OpenSqliteDatabase below.
//
// Every connection goes through an Env VFS, so SQLite touches files only
// through the Env, and follows the SQLite rules of DESIGN §4: exclusive
// locking mode, WAL, exactly one connection per file, readers never
// checkpoint.
//
// Thread-safety: none. A SqliteDb and its Statements belong to one thread at a
// time; the engine serialises access to each connection with its own mutex.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "cairn/platform/env.h"
#include "cairn/platform/status.h"

// SQLite's handles, for SqliteDb::handle(); include <sqlite3.h> to use them.
struct sqlite3;
struct sqlite3_stmt;

namespace cairn {

// The page size of the files cairn's engine creates (period files and the
// catalog; storage/period_format.md says why). Most of their rows are
// either small (catalog, indexes) or chunks of one to four kilobytes whose
// tail fills overflow pages: a page left half empty costs half a page per
// chunk, 30 % of a period file at SQLite's 4 KiB default.
inline constexpr int kEnginePageSize = 1024;

// How hard a connection's commits are pushed to stable storage (WAL mode).
enum class SqliteSynchronous : uint8_t {
  // The WAL is synced only at checkpoints: a power cut may lose the latest
  // commits, never consistency. For files that can be rebuilt.
  kNormal,
  // The WAL is synced at every commit: a commit that returned OK survives a
  // power cut. For files whose commits let other data go (a period file's
  // seal lets the log be trimmed; the catalog's sync ledger records what the
  // cloud confirmed).
  kFull,
};

class SqliteDb;

// A prepared statement owned by its SqliteDb's cache. Obtained from
// SqliteDb::Prepare with its bindings cleared and ready to step. Step resets
// it when it reports the end of the rows or an error; a caller that stops
// reading rows early calls Reset (StatementResetter does it on scope exit),
// so that no statement keeps a read transaction open.
//
// Column and bind indexes follow SQLite: binds from 1, columns from 0.
class Statement {
 public:
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  Status BindInt64(int index, int64_t value);
  Status BindDouble(int index, double value);
  // The bytes are copied (SQLITE_TRANSIENT): callers may free them at once.
  Status BindText(int index, std::string_view value);
  Status BindBlob(int index, std::string_view value);
  Status BindNull(int index);

  // Advances to the next row: true if a row is available, false at the end
  // (the statement is then reset). Errors reset the statement too.
  Result<bool> Step();

  // Runs a statement that returns no rows to completion.
  Status Run();

  // Column accessors for the current row (valid after Step returned true).
  int64_t ColumnInt64(int column) const;
  double ColumnDouble(int column) const;
  std::string ColumnText(int column) const;
  std::string ColumnBlob(int column) const;
  bool ColumnIsNull(int column) const;

  // Ends the current execution; bindings are kept.
  void Reset();

  const std::string& sql() const { return sql_; }

 private:
  friend class SqliteDb;
  Statement(SqliteDb* db, sqlite3_stmt* statement, std::string sql)
      : db_(db), statement_(statement), sql_(std::move(sql)) {}
  Status BindResult(int rc, int index);

  SqliteDb* db_;
  sqlite3_stmt* statement_;
  std::string sql_;
};

// Resets a statement when it goes out of scope.
class StatementResetter {
 public:
  explicit StatementResetter(Statement* statement) : statement_(statement) {}
  ~StatementResetter() { statement_->Reset(); }
  StatementResetter(const StatementResetter&) = delete;
  StatementResetter& operator=(const StatementResetter&) = delete;

 private:
  Statement* statement_;
};

class SqliteDb {
 public:
  // Opens the database at `path` through the registered Env VFS `vfs_name`
  // (core's storage/env_vfs.h; other layers use OpenSqliteDatabase) and applies cairn's pragmas:
  //   locking_mode=EXCLUSIVE  (required for WAL without shared memory),
  //   journal_mode=WAL        (read-write only; a reader takes the file's mode),
  //   synchronous             (`synchronous`; see SqliteSynchronous),
  //   journal_size_limit      (4 MiB: a WAL grown by a big transaction shrinks
  //                            back at the next checkpoint),
  //   cache_size=-cache_kib, foreign_keys=OFF, temp_store=MEMORY,
  //   page_size=new_file_page_size (a power of two from 512 to 65536; 0:
  //                            SQLite's default) when this open creates the
  //                            file; an existing file keeps its own.
  // read_only: opened with SQLITE_OPEN_READONLY (NotFound if the file is
  // missing); such a handle can neither write nor checkpoint. Otherwise the
  // file is created if missing.
  // Busy if another connection of this process has the file open.
  static Result<std::unique_ptr<SqliteDb>> Open(const std::string& path, const std::string& vfs_name,
                                                bool read_only, int cache_kib,
                                                SqliteSynchronous synchronous = SqliteSynchronous::kFull,
                                                int new_file_page_size = 0);

  // Closes the connection, ignoring errors (see Close).
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  // Runs one or more SQL statements that return no rows (schema, pragmas).
  Status Exec(std::string_view sql);

  // Returns the cached statement for `sql`, preparing it on first use. The
  // pointer stays valid until the connection is closed.
  Result<Statement*> Prepare(const std::string& sql);

  // BEGIN IMMEDIATE / COMMIT / ROLLBACK. Rollback of no transaction is OK.
  Status Begin();
  Status Commit();
  Status Rollback();
  bool InTransaction() const;

  // Rows changed by the most recent INSERT, UPDATE or DELETE.
  int64_t ChangedRows() const;

  // Copies the WAL into the database file and truncates the WAL to zero
  // bytes. FailedPrecondition on a read-only handle.
  Status Checkpoint();

  // Finalizes cached statements and closes the connection; a read-write
  // connection in WAL mode checkpoints and deletes its WAL as it closes.
  // Idempotent. Returns the close error if SQLite reported one.
  Status Close();

  const std::string& path() const { return path_; }
  bool read_only() const { return read_only_; }
  // The raw handle, for calls this wrapper does not cover. Null after Close.
  sqlite3* handle() const { return db_; }

  // Turns SQLite result code `rc` of this connection into a Status naming the
  // file, what was being done and SQLite's message; OK for SQLITE_OK,
  // SQLITE_ROW and SQLITE_DONE.
  Status ErrorStatus(int rc, std::string_view doing) const;

 private:
  SqliteDb(sqlite3* db, std::string path, bool read_only)
      : db_(db), path_(std::move(path)), read_only_(read_only) {}
  Status ApplyPragmas(int cache_kib, SqliteSynchronous synchronous, int new_file_page_size);
  Result<std::string> QueryText(const std::string& sql);
  void ResetAllStatements();

  sqlite3* db_;
  std::string path_;
  bool read_only_;
  std::unordered_map<std::string, std::unique_ptr<Statement>> statements_;
};

// Opens (creating it if missing) the read-write database at `path`, whose
// every file operation goes through `env`, with cairn's pragmas as
// SqliteDb::Open describes and the given cache size and synchronous mode.
// `env` must outlive the returned connection and every other connection
// opened over it; any number of databases may be opened over one Env, at
// most one connection per file (Busy for a second one while the first is
// open). Errors as SqliteDb::Open, or those of setting up the Env's VFS.
Result<std::unique_ptr<SqliteDb>> OpenSqliteDatabase(
    Env* env, const std::string& path, int cache_kib,
    SqliteSynchronous synchronous = SqliteSynchronous::kFull);

// Bytes SQLite has allocated in this process now (every connection's page
// cache, schema and statements): sqlite3_memory_used.
uint64_t SqliteMemoryUsed();

}  // namespace cairn
