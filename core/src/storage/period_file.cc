#include "storage/period_file.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <utility>

#include <sqlite3.h>

#include "storage/period_columns.h"
#include "storage/period_sql.h"

namespace cairn {
namespace {

using namespace period_columns;
using namespace period_sql;

// 'cair' in the header's application_id: tells a period file from any other
// SQLite file without reading a table.
constexpr int64_t kApplicationId = 0x63616972;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// The exclusive end of the period starting at `start`, saturated at INT64_MAX
// for the last period before the int64 nanosecond range ends (2262).
int64_t PeriodEnd(Period period, int64_t start) {
  constexpr int64_t kLongestPeriodNs = int64_t{31} * 86400 * 1'000'000'000;
  if (start > kInt64Max - kLongestPeriodNs) return kInt64Max;
  return NextPeriodStart(period, start);
}

Status BindChunk(Statement* insert, const ChunkRow& chunk, int64_t schema_id) {
  CAIRN_RETURN_IF_ERROR(insert->BindInt64(1, chunk.series_id));
  CAIRN_RETURN_IF_ERROR(insert->BindInt64(2, chunk.start_ns));
  CAIRN_RETURN_IF_ERROR(insert->BindInt64(3, chunk.seq));
  CAIRN_RETURN_IF_ERROR(insert->BindInt64(4, chunk.end_ns));
  CAIRN_RETURN_IF_ERROR(insert->BindInt64(5, chunk.count));
  CAIRN_RETURN_IF_ERROR(insert->BindInt64(6, ToStored(chunk.min_lsn)));
  CAIRN_RETURN_IF_ERROR(insert->BindInt64(7, ToStored(chunk.max_lsn)));
  CAIRN_RETURN_IF_ERROR(insert->BindInt64(8, ToStored(chunk.max_version)));
  CAIRN_RETURN_IF_ERROR(insert->BindInt64(9, chunk.min_ttl));
  CAIRN_RETURN_IF_ERROR(insert->BindInt64(10, schema_id));
  CAIRN_RETURN_IF_ERROR(insert->BindBlob(11, chunk.stats));
  CAIRN_RETURN_IF_ERROR(insert->BindBlob(12, chunk.data));
  return insert->BindBlob(13, EncodeLsns(chunk.lsns));
}

// Runs `body` inside BEGIN IMMEDIATE ... COMMIT, rolling back on any error.
template <typename Body>
Status InTransaction(SqliteDb& db, Body&& body) {
  CAIRN_RETURN_IF_ERROR(db.Begin());
  Status status = body();
  if (status.ok()) status = db.Commit();
  if (!status.ok() && db.InTransaction()) {
    Status rolled_back = db.Rollback();
    if (!rolled_back.ok()) {
      return status.WithContext("(rollback also failed: " + rolled_back.ToString() + ")");
    }
  }
  return status;
}

}  // namespace

// ---- opening ----------------------------------------------------------------

Result<std::unique_ptr<PeriodFile>> PeriodFile::OpenWritable(Env* env, const std::string& vfs_name,
                                                             const std::string& path,
                                                             const std::string& table, Period period,
                                                             int64_t period_start_ns, int cache_kib) {
  if (table.empty()) return Status::InvalidArgument(path + ": empty table name");
  if (PeriodStart(period, period_start_ns) != period_start_ns) {
    return Status::InvalidArgument(path + ": " + std::to_string(period_start_ns) + " is not the start of a " +
                                   std::string(PeriodName(period)));
  }
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db,
                         SqliteDb::Open(path, vfs_name, /*read_only=*/false, cache_kib, SqliteSynchronous::kFull,
                                        kEnginePageSize));
  std::unique_ptr<PeriodFile> file(new PeriodFile(std::move(db), path, /*read_only=*/false));
  CAIRN_RETURN_IF_ERROR(file->CreateSchemaIfMissing(env, table, period, period_start_ns));
  CAIRN_RETURN_IF_ERROR(file->LoadMeta());
  if (file->table_ != table || file->period_ != period || file->period_start_ns_ != period_start_ns) {
    return Status::Corruption(path + ": file holds table '" + file->table_ + "' " +
                              std::string(PeriodName(file->period_)) + " from " +
                              std::to_string(file->period_start_ns_) + ", expected table '" + table + "' " +
                              std::string(PeriodName(period)) + " from " + std::to_string(period_start_ns));
  }
  return file;
}

Result<std::unique_ptr<PeriodFile>> PeriodFile::OpenReadOnly(Env* env, const std::string& vfs_name,
                                                             const std::string& path, int cache_kib) {
  // Checked here so a missing file is NotFound whatever the VFS reports.
  if (!env->FileExists(path)) return Status::NotFound(path + ": no such period file");
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db,
                         SqliteDb::Open(path, vfs_name, /*read_only=*/true, cache_kib));
  std::unique_ptr<PeriodFile> file(new PeriodFile(std::move(db), path, /*read_only=*/true));
  CAIRN_RETURN_IF_ERROR(file->LoadMeta());
  return file;
}

Status PeriodFile::CreateSchemaIfMissing(Env* env, const std::string& table, Period period,
                                         int64_t period_start_ns) {
  // Any table at all means the file exists; LoadMeta then checks that it is
  // a period file (and not some other database to add tables to).
  CAIRN_ASSIGN_OR_RETURN(Statement * count_tables, db_->Prepare(kCountAllTables));
  {
    StatementResetter reset(count_tables);
    CAIRN_ASSIGN_OR_RETURN(bool row, count_tables->Step());
    if (row && count_tables->ColumnInt64(0) > 0) return Status::Ok();
  }
  // The whole schema and meta in one transaction: a crash leaves either no
  // period file content at all (created again on the next open) or all of it.
  Status created = InTransaction(*db_, [&]() -> Status {
    CAIRN_RETURN_IF_ERROR(db_->Exec("PRAGMA application_id=" + std::to_string(kApplicationId)));
    CAIRN_RETURN_IF_ERROR(db_->Exec(kCreateSchema));
    CAIRN_ASSIGN_OR_RETURN(Statement * insert, db_->Prepare(kInsertMeta));
    auto put_text = [&](const char* key, std::string_view value) -> Status {
      CAIRN_RETURN_IF_ERROR(insert->BindText(1, key));
      CAIRN_RETURN_IF_ERROR(insert->BindText(2, value));
      return insert->Run();
    };
    auto put_integer = [&](const char* key, int64_t value) -> Status {
      CAIRN_RETURN_IF_ERROR(insert->BindText(1, key));
      CAIRN_RETURN_IF_ERROR(insert->BindInt64(2, value));
      return insert->Run();
    };
    CAIRN_RETURN_IF_ERROR(put_integer("format_version", kFormatVersion));
    CAIRN_RETURN_IF_ERROR(put_text("table", table));
    CAIRN_RETURN_IF_ERROR(put_text("period", PeriodName(period)));
    CAIRN_RETURN_IF_ERROR(put_integer("period_start_ns", period_start_ns));
    CAIRN_RETURN_IF_ERROR(put_integer("period_end_ns", PeriodEnd(period, period_start_ns)));
    CAIRN_RETURN_IF_ERROR(put_integer("created_ns", env->NowUnixNanos()));
    return put_integer("compacted", 0);
  });
  CAIRN_RETURN_IF_ERROR(created);
  // Freed pages (chunks dropped by the sync quota) go back to the
  // filesystem without a whole-file VACUUM. The mode can only change
  // through a VACUUM once the file has its header (written by
  // journal_mode=WAL), which for a file this small costs one more commit.
  // A crash before it leaves a valid file that merely keeps its free pages.
  CAIRN_RETURN_IF_ERROR(db_->Exec("PRAGMA auto_vacuum=INCREMENTAL"));
  return db_->Exec("VACUUM");
}

Status PeriodFile::LoadMeta() {
  CAIRN_ASSIGN_OR_RETURN(Statement * count_tables, db_->Prepare(kCountTables));
  {
    StatementResetter reset(count_tables);
    CAIRN_ASSIGN_OR_RETURN(bool row, count_tables->Step());
    if (!row || count_tables->ColumnInt64(0) != 4) {
      return Status::Corruption(path_ +
                                ": not a cairn period file (tables meta, series, schemas, chunks missing)");
    }
  }
  std::map<std::string, std::string> meta;
  CAIRN_ASSIGN_OR_RETURN(Statement * select, db_->Prepare(kSelectMeta));
  for (;;) {
    CAIRN_ASSIGN_OR_RETURN(bool row, select->Step());
    if (!row) break;
    meta[select->ColumnText(0)] = select->ColumnText(1);
  }
  auto with_path = [&](const Status& status) { return status.WithContext(path_); };
  Result<int64_t> version = ParseStoredInteger(meta, "format_version");
  if (!version.ok()) return with_path(version.status());
  if (*version != kFormatVersion) {
    return Status::FailedPrecondition(path_ + ": period file format version " + std::to_string(*version) +
                                      " is not supported (this cairn reads version " +
                                      std::to_string(kFormatVersion) + ")");
  }
  auto table = meta.find("table");
  if (table == meta.end() || table->second.empty()) return Status::Corruption(path_ + ": meta has no table");
  table_ = table->second;
  auto period_name = meta.find("period");
  if (period_name == meta.end()) return Status::Corruption(path_ + ": meta has no period");
  Result<Period> period = ParsePeriod(period_name->second);
  if (!period.ok()) return Status::Corruption(path_ + ": meta: " + period.status().message());
  period_ = *period;
  Result<int64_t> start = ParseStoredInteger(meta, "period_start_ns");
  if (!start.ok()) return with_path(start.status());
  Result<int64_t> end = ParseStoredInteger(meta, "period_end_ns");
  if (!end.ok()) return with_path(end.status());
  if (PeriodStart(period_, *start) != *start || PeriodEnd(period_, *start) != *end) {
    return Status::Corruption(path_ + ": meta period bounds [" + std::to_string(*start) + ", " +
                              std::to_string(*end) + ") are not a " + std::string(PeriodName(period_)));
  }
  period_start_ns_ = *start;
  period_end_ns_ = *end;
  return Status::Ok();
}

PeriodFile::~PeriodFile() { (void)Close(); }

Status PeriodFile::Close() {
  if (db_ == nullptr) return Status::Ok();
  Status status = db_->Close();
  db_.reset();
  return status;
}

Status PeriodFile::CheckOpen() const {
  if (db_ == nullptr) return Status::FailedPrecondition(path_ + ": period file is closed");
  return Status::Ok();
}

Status PeriodFile::CheckWritable() const {
  CAIRN_RETURN_IF_ERROR(CheckOpen());
  if (read_only_) return Status::FailedPrecondition(path_ + ": period file is open read-only");
  return Status::Ok();
}

// ---- schemas ----------------------------------------------------------------

void PeriodFile::ForgetCachedSchemas() {
  fields_by_schema_id_.clear();
  schema_id_by_text_.clear();
}

Result<int64_t> PeriodFile::SchemaIdFor(const std::vector<ChunkField>& fields) {
  std::string text = EncodeFields(fields);
  auto cached = schema_id_by_text_.find(text);
  if (cached != schema_id_by_text_.end()) return cached->second;
  CAIRN_ASSIGN_OR_RETURN(Statement * select, db_->Prepare(kSelectSchemaByFields));
  CAIRN_RETURN_IF_ERROR(select->BindText(1, text));
  int64_t schema_id = 0;
  {
    StatementResetter reset(select);
    CAIRN_ASSIGN_OR_RETURN(bool row, select->Step());
    schema_id = row ? select->ColumnInt64(0) : -1;
  }
  if (schema_id < 0) {
    CAIRN_ASSIGN_OR_RETURN(Statement * insert, db_->Prepare(kInsertSchema));
    CAIRN_RETURN_IF_ERROR(insert->BindText(1, text));
    CAIRN_RETURN_IF_ERROR(insert->Run());
    schema_id = sqlite3_last_insert_rowid(db_->handle());
  }
  schema_id_by_text_[text] = schema_id;
  fields_by_schema_id_[schema_id] = fields;
  return schema_id;
}

Result<std::vector<ChunkField>> PeriodFile::FieldsForSchemaId(int64_t schema_id) {
  auto cached = fields_by_schema_id_.find(schema_id);
  if (cached != fields_by_schema_id_.end()) return cached->second;
  CAIRN_ASSIGN_OR_RETURN(Statement * select, db_->Prepare(kSelectSchemaById));
  CAIRN_RETURN_IF_ERROR(select->BindInt64(1, schema_id));
  StatementResetter reset(select);
  CAIRN_ASSIGN_OR_RETURN(bool row, select->Step());
  if (!row)
    return Status::Corruption(path_ + ": chunk refers to missing schema " + std::to_string(schema_id));
  std::string text = select->ColumnText(0);
  Result<std::vector<ChunkField>> fields = DecodeFields(text);
  if (!fields.ok()) return fields.status().WithContext(path_ + ": schema " + std::to_string(schema_id));
  fields_by_schema_id_[schema_id] = *fields;
  schema_id_by_text_[text] = schema_id;
  return fields;
}

Result<std::vector<ChunkField>> PeriodFile::SeriesFields(int64_t series_id) {
  CAIRN_ASSIGN_OR_RETURN(Statement * select, db_->Prepare(kSelectSeriesFields));
  CAIRN_RETURN_IF_ERROR(select->BindInt64(1, series_id));
  StatementResetter reset(select);
  CAIRN_ASSIGN_OR_RETURN(bool row, select->Step());
  if (!row) {
    return Status::InvalidArgument(path_ + ": chunk of series " + std::to_string(series_id) +
                                   ", which is neither in the write nor in the file");
  }
  Result<std::vector<ChunkField>> fields = DecodeFields(select->ColumnText(0));
  if (!fields.ok()) return fields.status().WithContext(path_ + ": series " + std::to_string(series_id));
  return fields;
}

// ---- writing ----------------------------------------------------------------

Status PeriodFile::ValidateChunk(const ChunkRow& chunk) const {
  std::string which = path_ + ": chunk of series " + std::to_string(chunk.series_id) + " starting at " +
                      std::to_string(chunk.start_ns);
  if (chunk.start_ns > chunk.end_ns) return Status::InvalidArgument(which + " ends before it starts");
  bool ends_inside = chunk.end_ns < period_end_ns_ || period_end_ns_ == kInt64Max;
  if (chunk.start_ns < period_start_ns_ || !ends_inside) {
    return Status::InvalidArgument(which + " is not within the period [" + std::to_string(period_start_ns_) +
                                   ", " + std::to_string(period_end_ns_) + ")");
  }
  if (chunk.count == 0) return Status::InvalidArgument(which + " has no records");
  if (chunk.min_lsn > chunk.max_lsn) return Status::InvalidArgument(which + " has min_lsn > max_lsn");
  if (chunk.lsns.size() != chunk.count) {
    return Status::InvalidArgument(which + " has " + std::to_string(chunk.lsns.size()) + " LSNs for " +
                                   std::to_string(chunk.count) + " records");
  }
  for (uint64_t lsn : chunk.lsns) {
    if (lsn < chunk.min_lsn || lsn > chunk.max_lsn) {
      return Status::InvalidArgument(which + " has LSN " + std::to_string(lsn) +
                                     " outside [min_lsn, max_lsn]");
    }
  }
  return Status::Ok();
}

Status PeriodFile::UpsertSeries(const PeriodSeries& series) {
  std::string which = path_ + ": series " + std::to_string(series.series_id);
  if (series.device_id.empty() || series.measure_name.empty()) {
    return Status::InvalidArgument(which + " has an empty device_id or measure_name");
  }
  CAIRN_ASSIGN_OR_RETURN(Statement * identity, db_->Prepare(kSelectSeriesIdentity));
  CAIRN_RETURN_IF_ERROR(identity->BindInt64(1, series.series_id));
  {
    StatementResetter reset(identity);
    CAIRN_ASSIGN_OR_RETURN(bool row, identity->Step());
    if (row && (identity->ColumnText(0) != series.device_id ||
                identity->ColumnText(1) != series.measure_name || identity->ColumnInt64(2) != series.shard)) {
      return Status::InvalidArgument(
          which + " is " + identity->ColumnText(0) + "/" + identity->ColumnText(1) + " shard " +
          std::to_string(identity->ColumnInt64(2)) + " in this file, not " + series.device_id + "/" +
          series.measure_name + " shard " + std::to_string(series.shard));
    }
  }
  CAIRN_ASSIGN_OR_RETURN(Statement * upsert, db_->Prepare(kUpsertSeries));
  CAIRN_RETURN_IF_ERROR(upsert->BindInt64(1, series.series_id));
  CAIRN_RETURN_IF_ERROR(upsert->BindText(2, series.device_id));
  CAIRN_RETURN_IF_ERROR(upsert->BindText(3, series.measure_name));
  CAIRN_RETURN_IF_ERROR(upsert->BindInt64(4, series.shard));
  CAIRN_RETURN_IF_ERROR(upsert->BindText(5, EncodeFields(series.fields)));
  CAIRN_RETURN_IF_ERROR(upsert->BindText(6, EncodeDimensions(series.dimensions)));
  return upsert->Run();
}

Status PeriodFile::InsertChunk(ChunkRow& chunk, const std::vector<ChunkField>& fields) {
  CAIRN_ASSIGN_OR_RETURN(int64_t schema_id, SchemaIdFor(fields));
  CAIRN_ASSIGN_OR_RETURN(Statement * next_seq, db_->Prepare(kNextSeq));
  CAIRN_RETURN_IF_ERROR(next_seq->BindInt64(1, chunk.series_id));
  CAIRN_RETURN_IF_ERROR(next_seq->BindInt64(2, chunk.start_ns));
  {
    StatementResetter reset(next_seq);
    CAIRN_ASSIGN_OR_RETURN(bool row, next_seq->Step());
    chunk.seq = row ? next_seq->ColumnInt64(0) : 0;
  }
  CAIRN_ASSIGN_OR_RETURN(Statement * insert, db_->Prepare(kInsertChunk));
  CAIRN_RETURN_IF_ERROR(BindChunk(insert, chunk, schema_id));
  CAIRN_RETURN_IF_ERROR(insert->Run());
  // Widening the span is also the existence check of the chunk's series.
  CAIRN_ASSIGN_OR_RETURN(Statement * widen, db_->Prepare(kWidenSeriesSpan));
  CAIRN_RETURN_IF_ERROR(widen->BindInt64(1, chunk.series_id));
  CAIRN_RETURN_IF_ERROR(widen->BindInt64(2, chunk.end_ns - chunk.start_ns));
  CAIRN_RETURN_IF_ERROR(widen->Run());
  if (db_->ChangedRows() != 1) {
    return Status::InvalidArgument(path_ + ": chunk of series " + std::to_string(chunk.series_id) +
                                   ", which is neither in the write nor in the file");
  }
  return Status::Ok();
}

Status PeriodFile::InsertSeriesAndChunks(const std::vector<PeriodSeries>& series,
                                         std::vector<ChunkRow>& chunks) {
  std::map<int64_t, const PeriodSeries*> series_by_id;
  for (const PeriodSeries& one : series) {
    series_by_id[one.series_id] = &one;
    CAIRN_RETURN_IF_ERROR(UpsertSeries(one));
  }
  for (ChunkRow& chunk : chunks) {
    std::vector<ChunkField> fields = chunk.fields;
    if (fields.empty()) {
      auto listed = series_by_id.find(chunk.series_id);
      if (listed != series_by_id.end()) {
        fields = listed->second->fields;
      } else {
        CAIRN_ASSIGN_OR_RETURN(fields, SeriesFields(chunk.series_id));
      }
    }
    CAIRN_RETURN_IF_ERROR(InsertChunk(chunk, fields));
  }
  return Status::Ok();
}

Status PeriodFile::WriteChunks(const std::vector<PeriodSeries>& series, std::vector<ChunkRow>& chunks) {
  CAIRN_RETURN_IF_ERROR(CheckWritable());
  if (series.empty() && chunks.empty()) return Status::Ok();
  for (const ChunkRow& chunk : chunks) CAIRN_RETURN_IF_ERROR(ValidateChunk(chunk));
  // Work on a copy so that the caller's rows change only once committed.
  std::vector<ChunkRow> written = chunks;
  Status status = InTransaction(*db_, [&]() { return InsertSeriesAndChunks(series, written); });
  if (!status.ok()) {
    // Schema rows inserted by the failed transaction are gone.
    ForgetCachedSchemas();
    return status;
  }
  for (size_t i = 0; i < chunks.size(); ++i) chunks[i].seq = written[i].seq;
  return Status::Ok();
}

Status PeriodFile::ReplaceChunks(const std::vector<ChunkKey>& removed,
                                 const std::vector<PeriodSeries>& series, std::vector<ChunkRow>& added) {
  CAIRN_RETURN_IF_ERROR(CheckWritable());
  for (const ChunkRow& chunk : added) CAIRN_RETURN_IF_ERROR(ValidateChunk(chunk));
  std::vector<ChunkRow> written = added;
  Status status = InTransaction(*db_, [&]() -> Status {
    CAIRN_ASSIGN_OR_RETURN(Statement * remove, db_->Prepare(kDeleteChunk));
    for (const ChunkKey& key : removed) {
      CAIRN_RETURN_IF_ERROR(remove->BindInt64(1, key.series_id));
      CAIRN_RETURN_IF_ERROR(remove->BindInt64(2, key.start_ns));
      CAIRN_RETURN_IF_ERROR(remove->BindInt64(3, key.seq));
      CAIRN_RETURN_IF_ERROR(remove->Run());
      if (db_->ChangedRows() != 1) {
        return Status::NotFound(path_ + ": no chunk of series " + std::to_string(key.series_id) + " at " +
                                std::to_string(key.start_ns) + " seq " + std::to_string(key.seq));
      }
    }
    CAIRN_RETURN_IF_ERROR(InsertSeriesAndChunks(series, written));
    CAIRN_ASSIGN_OR_RETURN(Statement * unused_schemas, db_->Prepare(kDeleteUnusedSchemas));
    return unused_schemas->Run();
  });
  ForgetCachedSchemas();
  CAIRN_RETURN_IF_ERROR(status);
  for (size_t i = 0; i < added.size(); ++i) added[i].seq = written[i].seq;
  // The pages go back at the checkpoint that follows the vacuum step; in a
  // file without incremental auto-vacuum the pragma does nothing.
  CAIRN_RETURN_IF_ERROR(db_->Exec("PRAGMA incremental_vacuum"));
  return db_->Checkpoint();
}

// ---- compaction ---------------------------------------------------------------

Status PeriodFile::CompactInTransaction(const MergeFunction& merge) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<PeriodSeries> all_series, ListSeries());
  for (const PeriodSeries& series : all_series) {
    CAIRN_ASSIGN_OR_RETURN(std::vector<ChunkRow> chunks, ReadAllChunks(series.series_id));
    if (chunks.empty()) continue;
    std::string which = path_ + ": compacting series " + std::to_string(series.series_id);
    Result<std::vector<ChunkRow>> merged = merge(series, std::move(chunks));
    if (!merged.ok()) return merged.status().WithContext(which);
    int64_t max_span = 0;
    for (const ChunkRow& chunk : *merged) {
      if (chunk.series_id != series.series_id) {
        return Status::InvalidArgument(which + ": merge returned a chunk of series " +
                                       std::to_string(chunk.series_id));
      }
      CAIRN_RETURN_IF_ERROR(ValidateChunk(chunk));
      max_span = std::max(max_span, chunk.end_ns - chunk.start_ns);
    }
    CAIRN_ASSIGN_OR_RETURN(Statement * remove, db_->Prepare(kDeleteSeriesChunks));
    CAIRN_RETURN_IF_ERROR(remove->BindInt64(1, series.series_id));
    CAIRN_RETURN_IF_ERROR(remove->Run());
    // The span shrinks to what the merged chunks need.
    CAIRN_ASSIGN_OR_RETURN(Statement * set_span, db_->Prepare(kSetSeriesSpan));
    CAIRN_RETURN_IF_ERROR(set_span->BindInt64(1, series.series_id));
    CAIRN_RETURN_IF_ERROR(set_span->BindInt64(2, 0));
    CAIRN_RETURN_IF_ERROR(set_span->Run());
    for (ChunkRow& chunk : *merged) {
      CAIRN_RETURN_IF_ERROR(InsertChunk(chunk, chunk.fields.empty() ? series.fields : chunk.fields));
    }
  }
  CAIRN_ASSIGN_OR_RETURN(Statement * unused_schemas, db_->Prepare(kDeleteUnusedSchemas));
  CAIRN_RETURN_IF_ERROR(unused_schemas->Run());
  CAIRN_ASSIGN_OR_RETURN(Statement * mark, db_->Prepare(kMarkCompacted));
  return mark->Run();
}

Status PeriodFile::Compact(const MergeFunction& merge) {
  CAIRN_RETURN_IF_ERROR(CheckWritable());
  Status status = InTransaction(*db_, [&]() { return CompactInTransaction(merge); });
  // Schema rows may have been deleted (committed) or inserted and rolled back.
  ForgetCachedSchemas();
  CAIRN_RETURN_IF_ERROR(status);
  // VACUUM rewrites the file through the WAL; checkpointing before keeps
  // the WAL from holding two copies, and after lets the file shrink.
  CAIRN_RETURN_IF_ERROR(db_->Checkpoint());
  CAIRN_RETURN_IF_ERROR(db_->Exec("VACUUM"));
  return db_->Checkpoint();
}

Status PeriodFile::CheckpointWal() {
  CAIRN_RETURN_IF_ERROR(CheckWritable());
  return db_->Checkpoint();
}

Result<std::string> PeriodFile::TableOptionsText() {
  CAIRN_RETURN_IF_ERROR(CheckOpen());
  CAIRN_ASSIGN_OR_RETURN(Statement * select,
                         db_->Prepare("SELECT value FROM meta WHERE key='table_options'"));
  StatementResetter reset(select);
  CAIRN_ASSIGN_OR_RETURN(bool row, select->Step());
  return row ? select->ColumnText(0) : std::string();
}

Status PeriodFile::StoreTableOptions(std::string_view text) {
  CAIRN_RETURN_IF_ERROR(CheckWritable());
  CAIRN_ASSIGN_OR_RETURN(Statement * upsert,
                         db_->Prepare("INSERT OR REPLACE INTO meta(key, value) VALUES('table_options', ?1)"));
  CAIRN_RETURN_IF_ERROR(upsert->BindText(1, text));
  return upsert->Run();
}

}  // namespace cairn
