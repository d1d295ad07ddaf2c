// Catalog: the engine's small durable dictionary in <data_dir>/catalog.db —
// tables and their options, the series dictionary (ids, field schemas,
// dimensions), the log checkpoint and the sync ledger.
//
// Every change is one SQLite transaction with synchronous=FULL: the engine
// writes a new series here before any log record or chunk refers to its id,
// so ids never change meaning across a crash.
//
// Thread-safety: all methods are safe to call concurrently (one mutex).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cairn/core/sqlite_database.h"
#include "cairn/core/sync_ledger.h"
#include "cairn/core/table.h"
#include "cairn/platform/mutex.h"

#include "chunk/chunk_codec.h"
#include "engine/head/series.h"

namespace cairn {

struct CatalogSeries {
  int64_t series_id = 0;
  std::string table;
  std::string device_id;
  std::string measure_name;
  int shard = 0;
  std::vector<ChunkField> fields;
  TagMap dimensions;  // identity
  TagMap attributes;  // metadata, latest write wins
};

// The highest LSN sealed into a period file and checkpointed into its main
// database file (not only its -wal): on open, a file whose chunks end below
// its mark has lost sealed readings (the coverage check).
struct PeriodSealMark {
  std::string table;
  int64_t period_start = 0;
  uint64_t max_lsn = 0;
};

class Catalog {
 public:
  // Opens or creates the catalog at `path` through the registered Env VFS.
  static Result<std::unique_ptr<Catalog>> Open(const std::string& vfs_name, const std::string& path);

  Result<uint64_t> CheckpointLsn();
  Status SetCheckpointLsn(uint64_t lsn);
  // In one transaction: raises each file's seal mark to at least its
  // max_lsn, and the checkpoint LSN to at least `lsn`.
  Status SetCheckpoint(uint64_t lsn, const std::vector<PeriodSealMark>& marks);
  Result<std::vector<PeriodSealMark>> LoadSealMarks();
  // Forgets a period file's mark (retention dropped the file).
  Status ForgetSealMark(const std::string& table, int64_t period_start);

  Result<std::vector<TableInfo>> LoadTables();
  // Inserts or replaces a table's row.
  Status PutTable(const TableInfo& table);
  // Deletes the table and its series.
  Status DeleteTable(const std::string& name);

  Result<std::vector<CatalogSeries>> LoadSeries();
  // Inserts or replaces the given series in one transaction.
  Status PutSeries(const std::vector<CatalogSeries>& series);

  // Every table's sync ledger (cairn/core/sync_ledger.h).
  Result<std::vector<SyncLedger>> LoadSyncLedgers();
  // Replaces one table's ledger rows in one transaction.
  Status SaveSyncLedger(const SyncLedger& ledger);

  Status Close();

  // Compact binary encoding of a series' schema, shared with the period
  // files' `series` rows (format in period_format.md). Dimensions and
  // attributes use EncodeTagMap (series.h).
  static std::string EncodeFields(const std::vector<ChunkField>& fields);
  static Result<std::vector<ChunkField>> DecodeFields(std::string_view bytes);

 private:
  explicit Catalog(std::unique_ptr<SqliteDb> db) : db_(std::move(db)) {}
  Status InTransaction(const std::function<Status()>& body) REQUIRES(mutex_);
  Status DeleteSyncLedgerLocked(const std::string& table) REQUIRES(mutex_);

  Mutex mutex_;
  std::unique_ptr<SqliteDb> db_ GUARDED_BY(mutex_);
};

}  // namespace cairn
