#include "cairn/core/sqlite_database.h"

#include <utility>

#include <sqlite3.h>

#include "storage/env_vfs.h"

namespace cairn {
namespace {

// The WAL is truncated back to this size after a checkpoint that found it
// larger (VACUUM and big seals grow it to the size of what they wrote).
constexpr int64_t kJournalSizeLimitBytes = 4 << 20;

StatusCode CodeForSqlite(int rc) {
  switch (rc & 0xff) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_FORMAT:
      return StatusCode::kCorruption;
    case SQLITE_FULL:
    case SQLITE_NOMEM:
    case SQLITE_TOOBIG:
      return StatusCode::kResourceExhausted;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return StatusCode::kBusy;
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return StatusCode::kPermissionDenied;
    case SQLITE_CONSTRAINT:
      if (rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT_UNIQUE) {
        return StatusCode::kAlreadyExists;
      }
      return StatusCode::kInvalidArgument;
    case SQLITE_MISMATCH:
      return StatusCode::kInvalidArgument;
    case SQLITE_NOTFOUND:
      return StatusCode::kNotFound;
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_NOLFS:
    case SQLITE_PROTOCOL:
      return StatusCode::kIOError;
    default:
      // SQLITE_ERROR (bad SQL, missing table), MISUSE, RANGE, SCHEMA, ABORT:
      // cairn issued something it should not have.
      return StatusCode::kInternal;
  }
}

// Builds the Status for SQLite code `rc`. When the code stems from the VFS
// (I/O, open, full disk) and the Env reported why, the Env's error class wins
// (NotFound for a missing file, ResourceExhausted for a full disk ...) and its
// message is appended.
Status SqliteError(sqlite3* db, int rc, const std::string& path, std::string_view doing) {
  if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE) return Status::Ok();
  std::string message = path;
  message += ": ";
  message += doing;
  message += ": ";
  message += db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  StatusCode code = CodeForSqlite(rc);
  int primary = rc & 0xff;
  Status env_error = EnvVfsLastError();
  if (!env_error.ok() && (primary == SQLITE_IOERR || primary == SQLITE_CANTOPEN || primary == SQLITE_FULL)) {
    code = env_error.code();
    message += " (";
    message += env_error.ToString();
    message += ")";
  }
  return Status(code, std::move(message));
}

}  // namespace

// ---- Statement -------------------------------------------------------------

Statement::~Statement() { sqlite3_finalize(statement_); }

Status Statement::BindResult(int rc, int index) {
  if (rc == SQLITE_OK) return Status::Ok();
  return db_->ErrorStatus(rc, "bind parameter " + std::to_string(index) + " of '" + sql_ + "'");
}

Status Statement::BindInt64(int index, int64_t value) {
  return BindResult(sqlite3_bind_int64(statement_, index, value), index);
}

Status Statement::BindDouble(int index, double value) {
  return BindResult(sqlite3_bind_double(statement_, index, value), index);
}

Status Statement::BindText(int index, std::string_view value) {
  // A null pointer would bind SQL NULL; an empty view may carry one.
  const char* data = value.empty() ? "" : value.data();
  return BindResult(sqlite3_bind_text64(statement_, index, data, value.size(), SQLITE_TRANSIENT, SQLITE_UTF8),
                    index);
}

Status Statement::BindBlob(int index, std::string_view value) {
  if (value.empty()) return BindResult(sqlite3_bind_zeroblob(statement_, index, 0), index);
  return BindResult(sqlite3_bind_blob64(statement_, index, value.data(), value.size(), SQLITE_TRANSIENT),
                    index);
}

Status Statement::BindNull(int index) { return BindResult(sqlite3_bind_null(statement_, index), index); }

Result<bool> Statement::Step() {
  ClearEnvVfsLastError();
  int rc = sqlite3_step(statement_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) {
    sqlite3_reset(statement_);
    return false;
  }
  Status error = db_->ErrorStatus(rc, "run '" + sql_ + "'");
  sqlite3_reset(statement_);
  return error;
}

Status Statement::Run() {
  for (;;) {
    CAIRN_ASSIGN_OR_RETURN(bool row, Step());
    if (!row) return Status::Ok();
  }
}

int64_t Statement::ColumnInt64(int column) const { return sqlite3_column_int64(statement_, column); }

double Statement::ColumnDouble(int column) const { return sqlite3_column_double(statement_, column); }

std::string Statement::ColumnText(int column) const {
  const unsigned char* text = sqlite3_column_text(statement_, column);
  int size = sqlite3_column_bytes(statement_, column);
  if (text == nullptr || size <= 0) return std::string();
  return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(size));
}

std::string Statement::ColumnBlob(int column) const {
  // Blob first, then its size: the documented order that avoids a conversion.
  const void* blob = sqlite3_column_blob(statement_, column);
  int size = sqlite3_column_bytes(statement_, column);
  if (blob == nullptr || size <= 0) return std::string();
  return std::string(static_cast<const char*>(blob), static_cast<size_t>(size));
}

bool Statement::ColumnIsNull(int column) const {
  return sqlite3_column_type(statement_, column) == SQLITE_NULL;
}

void Statement::Reset() { sqlite3_reset(statement_); }

// ---- SqliteDb --------------------------------------------------------------

Result<std::unique_ptr<SqliteDb>> SqliteDb::Open(const std::string& path, const std::string& vfs_name,
                                                 bool read_only, int cache_kib,
                                                 SqliteSynchronous synchronous, int new_file_page_size) {
  if (cache_kib < 0) return Status::InvalidArgument(path + ": negative page cache size");
  if (new_file_page_size != 0 && (new_file_page_size < 512 || new_file_page_size > 65536 ||
                                  (new_file_page_size & (new_file_page_size - 1)) != 0)) {
    return Status::InvalidArgument(path + ": page size " + std::to_string(new_file_page_size) +
                                   " is not a power of two from 512 to 65536");
  }
  if (sqlite3_vfs_find(vfs_name.c_str()) == nullptr) {
    return Status::InvalidArgument(path + ": no SQLite VFS named '" + vfs_name + "' is registered");
  }
  ClearEnvVfsLastError();
  // NOMUTEX: the connection is never shared between threads at once (see the
  // header), so SQLite's per-connection mutex would only cost time.
  int flags =
      (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX;
  sqlite3* handle = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &handle, flags, vfs_name.c_str());
  if (rc != SQLITE_OK) {
    if (handle != nullptr) sqlite3_extended_result_codes(handle, 1);
    Status error = SqliteError(handle, rc, path, "open");
    sqlite3_close_v2(handle);
    return error;
  }
  std::unique_ptr<SqliteDb> db(new SqliteDb(handle, path, read_only));
  sqlite3_extended_result_codes(handle, 1);
  if (read_only) {
    // Belt and braces: the VFS already opens a reader's WAL read-only.
    sqlite3_db_config(handle, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  }
  CAIRN_RETURN_IF_ERROR(db->ApplyPragmas(cache_kib, synchronous, new_file_page_size));
  return db;
}

Status SqliteDb::ApplyPragmas(int cache_kib, SqliteSynchronous synchronous, int new_file_page_size) {
  // Must precede anything that reads the file: WAL without shared memory is
  // allowed only in exclusive locking mode.
  CAIRN_RETURN_IF_ERROR(Exec("PRAGMA locking_mode=EXCLUSIVE"));
  if (!read_only_) {
    // Before journal_mode=WAL, which writes a new file's header: the page
    // size of a file that has one (or is in WAL mode) cannot change, and
    // SQLite ignores the pragma for it.
    if (new_file_page_size != 0) CAIRN_RETURN_IF_ERROR(Exec("PRAGMA page_size=" + std::to_string(new_file_page_size)));
    CAIRN_ASSIGN_OR_RETURN(std::string mode, QueryText("PRAGMA journal_mode=WAL"));
    if (mode != "wal") {
      return Status::FailedPrecondition(path_ + ": could not switch to WAL journal mode (got '" + mode +
                                        "')");
    }
    CAIRN_RETURN_IF_ERROR(Exec(synchronous == SqliteSynchronous::kFull ? "PRAGMA synchronous=FULL"
                                                                       : "PRAGMA synchronous=NORMAL"));
    CAIRN_RETURN_IF_ERROR(Exec("PRAGMA journal_size_limit=" + std::to_string(kJournalSizeLimitBytes)));
  }
  CAIRN_RETURN_IF_ERROR(Exec("PRAGMA cache_size=-" + std::to_string(cache_kib)));
  CAIRN_RETURN_IF_ERROR(Exec("PRAGMA foreign_keys=OFF"));
  CAIRN_RETURN_IF_ERROR(Exec("PRAGMA temp_store=MEMORY"));
  // Reads the header now, so that a file that is not a database, is
  // corrupt, or is held by another connection fails Open rather than the
  // first query. In exclusive mode the lock taken here is kept.
  CAIRN_ASSIGN_OR_RETURN(std::string schema_version, QueryText("PRAGMA schema_version"));
  (void)schema_version;
  return Status::Ok();
}

SqliteDb::~SqliteDb() { (void)Close(); }

Status SqliteDb::ErrorStatus(int rc, std::string_view doing) const {
  return SqliteError(db_, rc, path_, doing);
}

Status SqliteDb::Exec(std::string_view sql) {
  if (db_ == nullptr) return Status::FailedPrecondition(path_ + ": connection is closed");
  ClearEnvVfsLastError();
  std::string text(sql);
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, nullptr);
  return ErrorStatus(rc, "execute '" + text + "'");
}

Result<std::string> SqliteDb::QueryText(const std::string& sql) {
  ClearEnvVfsLastError();
  sqlite3_stmt* statement = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size()), &statement, nullptr);
  if (rc != SQLITE_OK) return ErrorStatus(rc, "prepare '" + sql + "'");
  std::string text;
  bool first_row = true;
  // Step to the end: a statement that writes (PRAGMA journal_mode=WAL on a
  // new file writes its header) commits on its last step, and that commit's
  // error must not be lost with an unfinished statement.
  while ((rc = sqlite3_step(statement)) == SQLITE_ROW) {
    if (first_row) {
      const unsigned char* value = sqlite3_column_text(statement, 0);
      if (value != nullptr) text = reinterpret_cast<const char*>(value);
      first_row = false;
    }
  }
  if (rc == SQLITE_DONE) rc = SQLITE_OK;
  Status status = ErrorStatus(rc, "run '" + sql + "'");
  const int finalized = sqlite3_finalize(statement);
  if (status.ok() && finalized != SQLITE_OK) status = ErrorStatus(finalized, "finish '" + sql + "'");
  if (!status.ok()) return status;
  return text;
}

Result<Statement*> SqliteDb::Prepare(const std::string& sql) {
  if (db_ == nullptr) return Status::FailedPrecondition(path_ + ": connection is closed");
  auto it = statements_.find(sql);
  if (it != statements_.end()) {
    sqlite3_reset(it->second->statement_);
    sqlite3_clear_bindings(it->second->statement_);
    return it->second.get();
  }
  ClearEnvVfsLastError();
  sqlite3_stmt* statement = nullptr;
  const char* tail = nullptr;
  int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT,
                              &statement, &tail);
  if (rc != SQLITE_OK) return ErrorStatus(rc, "prepare '" + sql + "'");
  if (statement == nullptr) return Status::InvalidArgument(path_ + ": empty SQL statement");
  for (; tail != nullptr && *tail != '\0'; ++tail) {
    if (*tail != ' ' && *tail != '\n' && *tail != '\t' && *tail != '\r' && *tail != ';') {
      sqlite3_finalize(statement);
      return Status::InvalidArgument(path_ + ": Prepare takes one statement, got '" + sql + "'");
    }
  }
  auto owned = std::unique_ptr<Statement>(new Statement(this, statement, sql));
  Statement* result = owned.get();
  statements_.emplace(sql, std::move(owned));
  return result;
}

Status SqliteDb::Begin() { return Exec("BEGIN IMMEDIATE"); }

Status SqliteDb::Commit() { return Exec("COMMIT"); }

Status SqliteDb::Rollback() {
  if (!InTransaction()) return Status::Ok();
  ResetAllStatements();
  return Exec("ROLLBACK");
}

bool SqliteDb::InTransaction() const { return db_ != nullptr && sqlite3_get_autocommit(db_) == 0; }

int64_t SqliteDb::ChangedRows() const { return db_ == nullptr ? 0 : sqlite3_changes(db_); }

void SqliteDb::ResetAllStatements() {
  for (auto& [sql, statement] : statements_) statement->Reset();
}

Status SqliteDb::Checkpoint() {
  if (db_ == nullptr) return Status::FailedPrecondition(path_ + ": connection is closed");
  if (read_only_) return Status::FailedPrecondition(path_ + ": a read-only handle never checkpoints");
  ResetAllStatements();
  ClearEnvVfsLastError();
  int rc = sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr);
  return ErrorStatus(rc, "checkpoint");
}

Status SqliteDb::Close() {
  if (db_ == nullptr) return Status::Ok();
  Status status;
  if (!read_only_) status = Checkpoint();
  statements_.clear();
  ClearEnvVfsLastError();
  int rc = sqlite3_close_v2(db_);
  if (status.ok()) status = SqliteError(nullptr, rc, path_, "close");
  db_ = nullptr;
  return status;
}

Result<std::unique_ptr<SqliteDb>> OpenSqliteDatabase(Env* env, const std::string& path, int cache_kib,
                                                     SqliteSynchronous synchronous) {
  const std::string vfs_name = VfsNameFor(env);
  CAIRN_RETURN_IF_ERROR(RegisterEnvVfs(env, vfs_name));
  return SqliteDb::Open(path, vfs_name, /*read_only=*/false, cache_kib, synchronous);
}

uint64_t SqliteMemoryUsed() { return static_cast<uint64_t>(sqlite3_memory_used()); }

}  // namespace cairn
