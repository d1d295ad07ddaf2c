#include "engine/catalog/catalog.h"

#include <algorithm>

#include "chunk/coding.h"

namespace cairn {

using chunk_coding::ByteReader;
using chunk_coding::PutLengthPrefixed;
using chunk_coding::PutVarint;

namespace {

// 2: series are identified by (table, device, measure, dimensions) and carry
// attributes; tables carry their attribute names. A version 1 catalog is
// migrated on open (MigrateFromVersion1).
constexpr int64_t kCatalogFormatVersion = 2;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS tables(
  name TEXT PRIMARY KEY,
  period TEXT NOT NULL,
  retention_seconds INTEGER NOT NULL,
  default_ttl_seconds INTEGER NOT NULL,
  sync INTEGER NOT NULL,
  shards INTEGER NOT NULL,
  shard_by TEXT NOT NULL,
  created_ns INTEGER NOT NULL,
  max_series INTEGER NOT NULL DEFAULT 0,
  attributes BLOB NOT NULL DEFAULT x'00',
  on_conflict TEXT NOT NULL DEFAULT 'reject');
CREATE TABLE IF NOT EXISTS series(
  series_id INTEGER PRIMARY KEY,
  table_name TEXT NOT NULL,
  device_id TEXT NOT NULL,
  measure_name TEXT NOT NULL,
  shard INTEGER NOT NULL,
  fields BLOB NOT NULL,
  dimensions BLOB NOT NULL,
  attributes BLOB NOT NULL DEFAULT x'00',
  UNIQUE(table_name, device_id, measure_name, dimensions));
CREATE TABLE IF NOT EXISTS sync_confirmed(
  table_name TEXT NOT NULL,
  first_lsn INTEGER NOT NULL,
  last_lsn INTEGER NOT NULL,
  PRIMARY KEY(table_name, first_lsn));
CREATE TABLE IF NOT EXISTS sync_batches(
  table_name TEXT NOT NULL,
  lane INTEGER NOT NULL,
  sequence INTEGER NOT NULL,
  first_lsn INTEGER NOT NULL,
  last_lsn INTEGER NOT NULL,
  records INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  first_sent_ns INTEGER NOT NULL,
  attempts INTEGER NOT NULL,
  last_error TEXT NOT NULL,
  PRIMARY KEY(table_name, lane, sequence));
CREATE TABLE IF NOT EXISTS sync_sequences(
  table_name TEXT NOT NULL,
  lane INTEGER NOT NULL,
  next_sequence INTEGER NOT NULL,
  PRIMARY KEY(table_name, lane));
CREATE TABLE IF NOT EXISTS period_sealed(
  table_name TEXT NOT NULL,
  period_start INTEGER NOT NULL,
  max_lsn INTEGER NOT NULL,
  PRIMARY KEY(table_name, period_start));
INSERT OR IGNORE INTO meta(key, value) VALUES('format_version', 2);
INSERT OR IGNORE INTO meta(key, value) VALUES('checkpoint_lsn', 1);
)sql";


// Catalogs written before tables had max_series or on_conflict lack their
// columns; the defaults (0: the engine's default; reject) are what their
// tables had.
Status AddTableColumn(SqliteDb* db, const std::string& name, const std::string& declaration) {
  CAIRN_ASSIGN_OR_RETURN(
      Statement * columns,
      db->Prepare("SELECT COUNT(*) FROM pragma_table_info('tables') WHERE name='" + name + "'"));
  StatementResetter reset(columns);
  CAIRN_ASSIGN_OR_RETURN(bool row, columns->Step());
  if (row && columns->ColumnInt64(0) > 0) return Status::Ok();
  return db->Exec("ALTER TABLE tables ADD COLUMN " + name + " " + declaration);
}

// The catalog's format_version, 0 when the row is missing.
Result<int64_t> FormatVersion(SqliteDb* db) {
  CAIRN_ASSIGN_OR_RETURN(Statement * s, db->Prepare("SELECT value FROM meta WHERE key='format_version'"));
  StatementResetter reset(s);
  CAIRN_ASSIGN_OR_RETURN(bool row, s->Step());
  return row ? s->ColumnInt64(0) : 0;
}

// Version 1 keyed series by (table, device, measure, shard) and kept the
// other tags as metadata, latest write wins. Each such series becomes the
// series whose dimensions are the tags it last stored: a client that goes
// on writing the same tags keeps writing into it, and no reading moves.
// Tables get no attributes (every tag was one series' metadata; a table
// that wants some declares them). One transaction: a crash leaves version 1.
Status MigrateFromVersion1(SqliteDb* db) {
  CAIRN_RETURN_IF_ERROR(db->Begin());
  Status status = db->Exec(R"sql(
CREATE TABLE series_v2(
  series_id INTEGER PRIMARY KEY,
  table_name TEXT NOT NULL,
  device_id TEXT NOT NULL,
  measure_name TEXT NOT NULL,
  shard INTEGER NOT NULL,
  fields BLOB NOT NULL,
  dimensions BLOB NOT NULL,
  attributes BLOB NOT NULL DEFAULT x'00',
  UNIQUE(table_name, device_id, measure_name, dimensions));
INSERT INTO series_v2(series_id, table_name, device_id, measure_name, shard, fields, dimensions)
  SELECT series_id, table_name, device_id, measure_name, shard, fields, dimensions FROM series;
DROP TABLE series;
ALTER TABLE series_v2 RENAME TO series;
ALTER TABLE tables ADD COLUMN attributes BLOB NOT NULL DEFAULT x'00';
UPDATE meta SET value=2 WHERE key='format_version';
)sql");
  if (!status.ok()) {
    (void)db->Rollback();
    return status;
  }
  return db->Commit();
}

std::string EncodeNames(const std::set<std::string>& names) {
  TagMap as_tags;
  for (const std::string& name : names) as_tags.emplace_hint(as_tags.end(), name, "");
  return EncodeTagMap(as_tags);
}

Result<std::set<std::string>> DecodeNames(std::string_view bytes) {
  CAIRN_ASSIGN_OR_RETURN(TagMap as_tags, DecodeTagMap(bytes));
  std::set<std::string> names;
  for (auto& [name, unused] : as_tags) names.insert(name);
  return names;
}

}  // namespace

Result<std::unique_ptr<Catalog>> Catalog::Open(const std::string& vfs_name, const std::string& path) {
  CAIRN_ASSIGN_OR_RETURN(auto db, SqliteDb::Open(path, vfs_name, /*read_only=*/false, /*cache_kib=*/256,
                                                 SqliteSynchronous::kFull, kEnginePageSize));
  CAIRN_RETURN_IF_ERROR(db->Exec(kSchema));
  CAIRN_RETURN_IF_ERROR(AddTableColumn(db.get(), "max_series", "INTEGER NOT NULL DEFAULT 0"));
  CAIRN_RETURN_IF_ERROR(AddTableColumn(db.get(), "on_conflict", "TEXT NOT NULL DEFAULT 'reject'"));
  CAIRN_ASSIGN_OR_RETURN(int64_t version, FormatVersion(db.get()));
  if (version == 1) {
    CAIRN_RETURN_IF_ERROR(MigrateFromVersion1(db.get()));
    CAIRN_ASSIGN_OR_RETURN(version, FormatVersion(db.get()));
  }
  if (version != kCatalogFormatVersion) {
    // Not damage: a newer cairn's catalog must not be taken for unreadable
    // (the engine rebuilds an unreadable one).
    return Status::FailedPrecondition(path + ": unsupported catalog format version");
  }
  return std::unique_ptr<Catalog>(new Catalog(std::move(db)));
}

Status Catalog::InTransaction(const std::function<Status()>& body) {
  CAIRN_RETURN_IF_ERROR(db_->Begin());
  Status status = body();
  if (!status.ok()) {
    (void)db_->Rollback();
    return status;
  }
  return db_->Commit();
}

Result<uint64_t> Catalog::CheckpointLsn() {
  MutexLock lock(&mutex_);
  CAIRN_ASSIGN_OR_RETURN(Statement * s, db_->Prepare("SELECT value FROM meta WHERE key='checkpoint_lsn'"));
  StatementResetter reset(s);
  CAIRN_ASSIGN_OR_RETURN(bool row, s->Step());
  if (!row) return Status::Corruption(db_->path() + ": checkpoint_lsn missing");
  return static_cast<uint64_t>(s->ColumnInt64(0));
}

Status Catalog::SetCheckpointLsn(uint64_t lsn) {
  MutexLock lock(&mutex_);
  CAIRN_ASSIGN_OR_RETURN(Statement * s, db_->Prepare("UPDATE meta SET value=? WHERE key='checkpoint_lsn'"));
  CAIRN_RETURN_IF_ERROR(s->BindInt64(1, static_cast<int64_t>(lsn)));
  return s->Run();
}

Status Catalog::SetCheckpoint(uint64_t lsn, const std::vector<PeriodSealMark>& marks) {
  MutexLock lock(&mutex_);
  return InTransaction([&]() REQUIRES(mutex_) -> Status {
    CAIRN_ASSIGN_OR_RETURN(Statement * mark,
                           db_->Prepare("INSERT INTO period_sealed(table_name, period_start, max_lsn) "
                                        "VALUES(?1, ?2, ?3) ON CONFLICT(table_name, period_start) "
                                        "DO UPDATE SET max_lsn=max(max_lsn, excluded.max_lsn)"));
    for (const PeriodSealMark& m : marks) {
      CAIRN_RETURN_IF_ERROR(mark->BindText(1, m.table));
      CAIRN_RETURN_IF_ERROR(mark->BindInt64(2, m.period_start));
      CAIRN_RETURN_IF_ERROR(mark->BindInt64(3, static_cast<int64_t>(m.max_lsn)));
      CAIRN_RETURN_IF_ERROR(mark->Run());
    }
    CAIRN_ASSIGN_OR_RETURN(Statement * s,
                           db_->Prepare("UPDATE meta SET value=max(value, ?) WHERE key='checkpoint_lsn'"));
    CAIRN_RETURN_IF_ERROR(s->BindInt64(1, static_cast<int64_t>(lsn)));
    return s->Run();
  });
}

Result<std::vector<PeriodSealMark>> Catalog::LoadSealMarks() {
  MutexLock lock(&mutex_);
  CAIRN_ASSIGN_OR_RETURN(Statement * s,
                         db_->Prepare("SELECT table_name, period_start, max_lsn FROM period_sealed "
                                      "ORDER BY table_name, period_start"));
  StatementResetter reset(s);
  std::vector<PeriodSealMark> marks;
  for (;;) {
    CAIRN_ASSIGN_OR_RETURN(bool row, s->Step());
    if (!row) break;
    marks.push_back({s->ColumnText(0), s->ColumnInt64(1), static_cast<uint64_t>(s->ColumnInt64(2))});
  }
  return marks;
}

Status Catalog::ForgetSealMark(const std::string& table, int64_t period_start) {
  MutexLock lock(&mutex_);
  CAIRN_ASSIGN_OR_RETURN(Statement * s,
                         db_->Prepare("DELETE FROM period_sealed WHERE table_name=?1 AND period_start=?2"));
  CAIRN_RETURN_IF_ERROR(s->BindText(1, table));
  CAIRN_RETURN_IF_ERROR(s->BindInt64(2, period_start));
  return s->Run();
}

Result<std::vector<TableInfo>> Catalog::LoadTables() {
  MutexLock lock(&mutex_);
  CAIRN_ASSIGN_OR_RETURN(
      Statement * s,
      db_->Prepare(
          "SELECT name, period, retention_seconds, default_ttl_seconds, sync, shards, shard_by, created_ns, "
          "max_series, attributes, on_conflict FROM tables ORDER BY name"));
  StatementResetter reset(s);
  std::vector<TableInfo> tables;
  while (true) {
    CAIRN_ASSIGN_OR_RETURN(bool row, s->Step());
    if (!row) break;
    TableInfo t;
    t.name = s->ColumnText(0);
    CAIRN_ASSIGN_OR_RETURN(t.options.period, ParsePeriod(s->ColumnText(1)));
    t.options.retention_seconds = s->ColumnInt64(2);
    t.options.default_ttl_seconds = s->ColumnInt64(3);
    t.options.sync = s->ColumnInt64(4) != 0;
    t.options.shards = static_cast<int>(s->ColumnInt64(5));
    t.options.shard_by = s->ColumnText(6);
    t.created_unix_nanos = s->ColumnInt64(7);
    t.options.max_series = static_cast<uint64_t>(std::max<int64_t>(s->ColumnInt64(8), 0));
    CAIRN_ASSIGN_OR_RETURN(t.options.attributes, DecodeNames(s->ColumnBlob(9)));
    CAIRN_ASSIGN_OR_RETURN(t.options.on_conflict, ParseConflictPolicy(s->ColumnText(10)));
    tables.push_back(std::move(t));
  }
  return tables;
}

Status Catalog::PutTable(const TableInfo& t) {
  MutexLock lock(&mutex_);
  CAIRN_ASSIGN_OR_RETURN(
      Statement * s,
      db_->Prepare(
          "INSERT OR REPLACE INTO tables(name, period, retention_seconds, default_ttl_seconds, sync, shards, "
          "shard_by, created_ns, max_series, attributes, on_conflict) VALUES(?,?,?,?,?,?,?,?,?,?,?)"));
  CAIRN_RETURN_IF_ERROR(s->BindText(1, t.name));
  CAIRN_RETURN_IF_ERROR(s->BindText(2, PeriodName(t.options.period)));
  CAIRN_RETURN_IF_ERROR(s->BindInt64(3, t.options.retention_seconds));
  CAIRN_RETURN_IF_ERROR(s->BindInt64(4, t.options.default_ttl_seconds));
  CAIRN_RETURN_IF_ERROR(s->BindInt64(5, t.options.sync ? 1 : 0));
  CAIRN_RETURN_IF_ERROR(s->BindInt64(6, t.options.shards));
  CAIRN_RETURN_IF_ERROR(s->BindText(7, t.options.shard_by));
  CAIRN_RETURN_IF_ERROR(s->BindInt64(8, t.created_unix_nanos));
  CAIRN_RETURN_IF_ERROR(s->BindInt64(9, static_cast<int64_t>(t.options.max_series)));
  CAIRN_RETURN_IF_ERROR(s->BindBlob(10, EncodeNames(t.options.attributes)));
  CAIRN_RETURN_IF_ERROR(s->BindText(11, ConflictPolicyName(t.options.on_conflict)));
  return s->Run();
}

Status Catalog::DeleteTable(const std::string& name) {
  MutexLock lock(&mutex_);
  return InTransaction([&]() REQUIRES(mutex_) -> Status {
    CAIRN_ASSIGN_OR_RETURN(Statement * series, db_->Prepare("DELETE FROM series WHERE table_name=?"));
    CAIRN_RETURN_IF_ERROR(series->BindText(1, name));
    CAIRN_RETURN_IF_ERROR(series->Run());
    CAIRN_RETURN_IF_ERROR(DeleteSyncLedgerLocked(name));
    CAIRN_ASSIGN_OR_RETURN(Statement * marks, db_->Prepare("DELETE FROM period_sealed WHERE table_name=?"));
    CAIRN_RETURN_IF_ERROR(marks->BindText(1, name));
    CAIRN_RETURN_IF_ERROR(marks->Run());
    CAIRN_ASSIGN_OR_RETURN(Statement * table, db_->Prepare("DELETE FROM tables WHERE name=?"));
    CAIRN_RETURN_IF_ERROR(table->BindText(1, name));
    return table->Run();
  });
}

Status Catalog::DeleteSyncLedgerLocked(const std::string& table) {
  for (const char* sql :
       {"DELETE FROM sync_confirmed WHERE table_name=?", "DELETE FROM sync_batches WHERE table_name=?",
        "DELETE FROM sync_sequences WHERE table_name=?"}) {
    CAIRN_ASSIGN_OR_RETURN(Statement * s, db_->Prepare(sql));
    CAIRN_RETURN_IF_ERROR(s->BindText(1, table));
    CAIRN_RETURN_IF_ERROR(s->Run());
  }
  return Status::Ok();
}

Result<std::vector<SyncLedger>> Catalog::LoadSyncLedgers() {
  MutexLock lock(&mutex_);
  std::map<std::string, SyncLedger> ledgers;
  std::map<std::string, std::vector<LsnRange>> confirmed;
  auto lane_of = [&](int64_t value) REQUIRES(mutex_) -> Result<SyncLane> {
    for (SyncLane lane : kAllSyncLanes) {
      if (static_cast<int64_t>(lane) == value) return lane;
    }
    return Status::Corruption(db_->path() + ": sync ledger names lane " + std::to_string(value));
  };
  {
    CAIRN_ASSIGN_OR_RETURN(Statement * s,
                           db_->Prepare("SELECT table_name, first_lsn, last_lsn FROM sync_confirmed"));
    StatementResetter reset(s);
    for (;;) {
      CAIRN_ASSIGN_OR_RETURN(bool row, s->Step());
      if (!row) break;
      const std::string table = s->ColumnText(0);
      ledgers[table].table = table;
      confirmed[table].push_back(
          {static_cast<uint64_t>(s->ColumnInt64(1)), static_cast<uint64_t>(s->ColumnInt64(2))});
    }
  }
  {
    CAIRN_ASSIGN_OR_RETURN(
        Statement * s, db_->Prepare("SELECT table_name, lane, sequence, first_lsn, last_lsn, records, bytes, "
                                    "first_sent_ns, attempts, last_error FROM sync_batches "
                                    "ORDER BY table_name, lane, sequence"));
    StatementResetter reset(s);
    for (;;) {
      CAIRN_ASSIGN_OR_RETURN(bool row, s->Step());
      if (!row) break;
      const std::string table = s->ColumnText(0);
      SyncBatchState batch;
      CAIRN_ASSIGN_OR_RETURN(batch.lane, lane_of(s->ColumnInt64(1)));
      batch.sequence = static_cast<uint64_t>(s->ColumnInt64(2));
      batch.first_lsn = static_cast<uint64_t>(s->ColumnInt64(3));
      batch.last_lsn = static_cast<uint64_t>(s->ColumnInt64(4));
      batch.records = static_cast<uint64_t>(s->ColumnInt64(5));
      batch.bytes = static_cast<uint64_t>(s->ColumnInt64(6));
      batch.first_sent_unix_ns = s->ColumnInt64(7);
      batch.attempts = static_cast<uint32_t>(s->ColumnInt64(8));
      batch.last_error = s->ColumnText(9);
      ledgers[table].table = table;
      ledgers[table].in_flight.push_back(std::move(batch));
    }
  }
  {
    CAIRN_ASSIGN_OR_RETURN(Statement * s,
                           db_->Prepare("SELECT table_name, lane, next_sequence FROM sync_sequences"));
    StatementResetter reset(s);
    for (;;) {
      CAIRN_ASSIGN_OR_RETURN(bool row, s->Step());
      if (!row) break;
      const std::string table = s->ColumnText(0);
      CAIRN_ASSIGN_OR_RETURN(SyncLane lane, lane_of(s->ColumnInt64(1)));
      ledgers[table].table = table;
      ledgers[table].next_sequence[lane] = static_cast<uint64_t>(s->ColumnInt64(2));
    }
  }
  std::vector<SyncLedger> all;
  for (auto& [table, ledger] : ledgers) {
    ledger.confirmed = LsnRangeSet(std::move(confirmed[table]));
    all.push_back(std::move(ledger));
  }
  return all;
}

Status Catalog::SaveSyncLedger(const SyncLedger& ledger) {
  MutexLock lock(&mutex_);
  return InTransaction([&]() REQUIRES(mutex_) -> Status {
    CAIRN_RETURN_IF_ERROR(DeleteSyncLedgerLocked(ledger.table));
    CAIRN_ASSIGN_OR_RETURN(
        Statement * range,
        db_->Prepare("INSERT INTO sync_confirmed(table_name, first_lsn, last_lsn) VALUES(?,?,?)"));
    for (const LsnRange& r : ledger.confirmed.ranges()) {
      CAIRN_RETURN_IF_ERROR(range->BindText(1, ledger.table));
      CAIRN_RETURN_IF_ERROR(range->BindInt64(2, static_cast<int64_t>(r.first)));
      CAIRN_RETURN_IF_ERROR(range->BindInt64(3, static_cast<int64_t>(r.last)));
      CAIRN_RETURN_IF_ERROR(range->Run());
    }
    CAIRN_ASSIGN_OR_RETURN(
        Statement * batch,
        db_->Prepare(
            "INSERT OR REPLACE INTO sync_batches(table_name, lane, sequence, first_lsn, last_lsn, records, "
            "bytes, first_sent_ns, attempts, last_error) VALUES(?,?,?,?,?,?,?,?,?,?)"));
    for (const SyncBatchState& b : ledger.in_flight) {
      CAIRN_RETURN_IF_ERROR(batch->BindText(1, ledger.table));
      CAIRN_RETURN_IF_ERROR(batch->BindInt64(2, static_cast<int64_t>(b.lane)));
      CAIRN_RETURN_IF_ERROR(batch->BindInt64(3, static_cast<int64_t>(b.sequence)));
      CAIRN_RETURN_IF_ERROR(batch->BindInt64(4, static_cast<int64_t>(b.first_lsn)));
      CAIRN_RETURN_IF_ERROR(batch->BindInt64(5, static_cast<int64_t>(b.last_lsn)));
      CAIRN_RETURN_IF_ERROR(batch->BindInt64(6, static_cast<int64_t>(b.records)));
      CAIRN_RETURN_IF_ERROR(batch->BindInt64(7, static_cast<int64_t>(b.bytes)));
      CAIRN_RETURN_IF_ERROR(batch->BindInt64(8, b.first_sent_unix_ns));
      CAIRN_RETURN_IF_ERROR(batch->BindInt64(9, b.attempts));
      CAIRN_RETURN_IF_ERROR(batch->BindText(10, b.last_error));
      CAIRN_RETURN_IF_ERROR(batch->Run());
    }
    CAIRN_ASSIGN_OR_RETURN(
        Statement * sequence,
        db_->Prepare("INSERT INTO sync_sequences(table_name, lane, next_sequence) VALUES(?,?,?)"));
    for (const auto& [lane, next] : ledger.next_sequence) {
      CAIRN_RETURN_IF_ERROR(sequence->BindText(1, ledger.table));
      CAIRN_RETURN_IF_ERROR(sequence->BindInt64(2, static_cast<int64_t>(lane)));
      CAIRN_RETURN_IF_ERROR(sequence->BindInt64(3, static_cast<int64_t>(next)));
      CAIRN_RETURN_IF_ERROR(sequence->Run());
    }
    return Status::Ok();
  });
}

Result<std::vector<CatalogSeries>> Catalog::LoadSeries() {
  MutexLock lock(&mutex_);
  CAIRN_ASSIGN_OR_RETURN(
      Statement * s,
      db_->Prepare(
          "SELECT series_id, table_name, device_id, measure_name, shard, fields, dimensions, attributes "
          "FROM series "
          "ORDER BY series_id"));
  StatementResetter reset(s);
  std::vector<CatalogSeries> all;
  while (true) {
    CAIRN_ASSIGN_OR_RETURN(bool row, s->Step());
    if (!row) break;
    CatalogSeries c;
    c.series_id = s->ColumnInt64(0);
    c.table = s->ColumnText(1);
    c.device_id = s->ColumnText(2);
    c.measure_name = s->ColumnText(3);
    c.shard = static_cast<int>(s->ColumnInt64(4));
    CAIRN_ASSIGN_OR_RETURN(c.fields, DecodeFields(s->ColumnBlob(5)));
    CAIRN_ASSIGN_OR_RETURN(c.dimensions, DecodeTagMap(s->ColumnBlob(6)));
    CAIRN_ASSIGN_OR_RETURN(c.attributes, DecodeTagMap(s->ColumnBlob(7)));
    all.push_back(std::move(c));
  }
  return all;
}

Status Catalog::PutSeries(const std::vector<CatalogSeries>& series) {
  if (series.empty()) return Status::Ok();
  MutexLock lock(&mutex_);
  return InTransaction([&]() REQUIRES(mutex_) -> Status {
    CAIRN_ASSIGN_OR_RETURN(
        Statement * s,
        db_->Prepare(
            "INSERT OR REPLACE INTO series(series_id, table_name, device_id, measure_name, shard, fields, "
            "dimensions, attributes) VALUES(?,?,?,?,?,?,?,?)"));
    for (const CatalogSeries& c : series) {
      CAIRN_RETURN_IF_ERROR(s->BindInt64(1, c.series_id));
      CAIRN_RETURN_IF_ERROR(s->BindText(2, c.table));
      CAIRN_RETURN_IF_ERROR(s->BindText(3, c.device_id));
      CAIRN_RETURN_IF_ERROR(s->BindText(4, c.measure_name));
      CAIRN_RETURN_IF_ERROR(s->BindInt64(5, c.shard));
      CAIRN_RETURN_IF_ERROR(s->BindBlob(6, EncodeFields(c.fields)));
      CAIRN_RETURN_IF_ERROR(s->BindBlob(7, EncodeTagMap(c.dimensions)));
      CAIRN_RETURN_IF_ERROR(s->BindBlob(8, EncodeTagMap(c.attributes)));
      CAIRN_RETURN_IF_ERROR(s->Run());
    }
    return Status::Ok();
  });
}

Status Catalog::Close() {
  MutexLock lock(&mutex_);
  if (!db_) return Status::Ok();
  Status status = db_->Close();
  db_.reset();
  return status;
}

std::string Catalog::EncodeFields(const std::vector<ChunkField>& fields) {
  std::string out;
  PutVarint(&out, fields.size());
  for (const ChunkField& f : fields) {
    PutLengthPrefixed(&out, f.name);
    out.push_back(static_cast<char>(f.type));
  }
  return out;
}

Result<std::vector<ChunkField>> Catalog::DecodeFields(std::string_view bytes) {
  ByteReader reader(bytes);
  uint64_t count;
  if (!reader.ReadVarint(&count) || count > reader.remaining())
    return Status::Corruption("bad series field list");
  std::vector<ChunkField> fields(static_cast<size_t>(count));
  for (ChunkField& f : fields) {
    uint8_t type;
    if (!reader.ReadLengthPrefixed(&f.name) || !reader.ReadByte(&type) || type < 1 || type > 5) {
      return Status::Corruption("bad series field list");
    }
    f.type = static_cast<FieldType>(type);
  }
  if (!reader.empty()) return Status::Corruption("bad series field list: trailing bytes");
  return fields;
}

}  // namespace cairn
