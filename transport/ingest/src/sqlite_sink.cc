// The SQLite sink (ingest_schema.md). One connection, through an Env VFS like
// every SQLite file of cairn; each batch is one IMMEDIATE transaction in
// which the version rule is applied record by record with cached statements.
#include <cstdio>
#include <set>
#include <tuple>
#include <utility>

#include "cairn/ingest/ingest_sink.h"

#include "batch_plan.h"
#include "field_json.h"
#include "storage/env_vfs.h"
#include "storage/sqlite_db.h"

namespace cairn {
namespace {

constexpr char kSchema[] = R"sql(
CREATE TABLE IF NOT EXISTS cairn_readings (
  table_name    TEXT    NOT NULL,
  device_id     TEXT    NOT NULL,
  measure_name  TEXT    NOT NULL,
  timestamp_ns  INTEGER NOT NULL,
  shard         INTEGER NOT NULL,
  partition_key TEXT    NOT NULL,
  version       INTEGER NOT NULL,
  ttl           INTEGER NOT NULL,
  fields        TEXT    NOT NULL,
  lsn           INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (table_name, device_id, measure_name, timestamp_ns)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS cairn_series (
  table_name    TEXT    NOT NULL,
  device_id     TEXT    NOT NULL,
  measure_name  TEXT    NOT NULL,
  shard         INTEGER NOT NULL,
  partition_key TEXT    NOT NULL,
  dimensions    TEXT    NOT NULL,
  PRIMARY KEY (table_name, device_id, measure_name, shard)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS cairn_batches (
  gateway_id       TEXT    NOT NULL,
  table_name       TEXT    NOT NULL,
  lane             TEXT    NOT NULL,
  batch_sequence   INTEGER NOT NULL,
  first_lsn        INTEGER NOT NULL,
  last_lsn         INTEGER NOT NULL,
  records          INTEGER NOT NULL,
  inserted         INTEGER NOT NULL,
  replaced         INTEGER NOT NULL,
  duplicates       INTEGER NOT NULL,
  older            INTEGER NOT NULL,
  received_at      INTEGER NOT NULL,
  last_received_at INTEGER NOT NULL,
  deliveries       INTEGER NOT NULL,
  PRIMARY KEY (gateway_id, table_name, lane, batch_sequence)
) WITHOUT ROWID;
)sql";

// SQLite integers are signed: unsigned 64-bit values (versions, sequences,
// LSNs) are stored as the signed integer with the same bits.
int64_t ToStored(uint64_t value) { return static_cast<int64_t>(value); }
uint64_t FromStored(int64_t value) { return static_cast<uint64_t>(value); }

std::string VfsNameFor(Env* env) {
  char name[48];
  std::snprintf(name, sizeof name, "cairn-env-%p", static_cast<void*>(env));
  return name;
}

class SqliteSink final : public IngestSink {
 public:
  SqliteSink(std::string path, std::string vfs_name)
      : path_(std::move(path)), vfs_name_(std::move(vfs_name)) {}

  Status Open() {
    db_.reset();
    CAIRN_ASSIGN_OR_RETURN(db_, SqliteDb::Open(path_, vfs_name_, /*read_only=*/false, /*cache_kib=*/8192,
                                               SqliteSynchronous::kFull));
    CAIRN_RETURN_IF_ERROR(db_->Exec(kSchema));
    // Files written before readings carried their gateway's LSN lack the
    // column; 0 is what their records had.
    CAIRN_ASSIGN_OR_RETURN(Statement * columns,
                           db_->Prepare("SELECT COUNT(*) FROM pragma_table_info('cairn_readings') "
                                        "WHERE name = 'lsn'"));
    StatementResetter reset(columns);
    CAIRN_ASSIGN_OR_RETURN(bool row, columns->Step());
    if (row && columns->ColumnInt64(0) > 0) return Status::Ok();
    return db_->Exec("ALTER TABLE cairn_readings ADD COLUMN lsn INTEGER NOT NULL DEFAULT 0");
  }

  Result<SinkCounts> ApplyBatch(const DecodedEnvelope& batch, int64_t received_at) override {
    if (db_ == nullptr) return Status::Unavailable("the SQLite sink " + path_ + " is not open");
    CAIRN_RETURN_IF_ERROR(db_->Begin());
    Result<SinkCounts> counts = ApplyInTransaction(batch, received_at);
    if (!counts.ok()) {
      (void)db_->Rollback();
      return counts.status();
    }
    if (Status committed = db_->Commit(); !committed.ok()) {
      (void)db_->Rollback();
      return committed;
    }
    return counts;
  }

  Status Reconnect() override {
    if (db_ != nullptr) (void)db_->Close();
    return Open();
  }

  Result<std::vector<StoredReading>> ReadReadings() override {
    if (db_ == nullptr) return Status::Unavailable("the SQLite sink " + path_ + " is not open");
    CAIRN_ASSIGN_OR_RETURN(Statement * select,
                           db_->Prepare("SELECT table_name, device_id, measure_name, shard, timestamp_ns, "
                                        "version, ttl, fields, lsn FROM cairn_readings "
                                        "ORDER BY table_name, device_id, measure_name, timestamp_ns"));
    StatementResetter resetter(select);
    std::vector<StoredReading> readings;
    while (true) {
      CAIRN_ASSIGN_OR_RETURN(bool row, select->Step());
      if (!row) break;
      StoredReading reading;
      reading.table = select->ColumnText(0);
      reading.row.device_id = select->ColumnText(1);
      reading.row.measure_name = select->ColumnText(2);
      reading.row.shard = static_cast<int>(select->ColumnInt64(3));
      reading.row.timestamp = select->ColumnInt64(4);
      reading.row.version = FromStored(select->ColumnInt64(5));
      reading.row.ttl = select->ColumnInt64(6);
      CAIRN_ASSIGN_OR_RETURN(reading.row.fields, ingest::FieldsFromJson(select->ColumnText(7)));
      reading.row.lsn = FromStored(select->ColumnInt64(8));
      readings.push_back(std::move(reading));
    }
    return readings;
  }

  Result<std::vector<StoredSeries>> ReadSeries() override {
    if (db_ == nullptr) return Status::Unavailable("the SQLite sink " + path_ + " is not open");
    CAIRN_ASSIGN_OR_RETURN(
        Statement * select,
        db_->Prepare("SELECT table_name, device_id, measure_name, shard, dimensions "
                     "FROM cairn_series ORDER BY table_name, device_id, measure_name, shard"));
    StatementResetter resetter(select);
    std::vector<StoredSeries> all;
    while (true) {
      CAIRN_ASSIGN_OR_RETURN(bool row, select->Step());
      if (!row) break;
      StoredSeries series;
      series.table = select->ColumnText(0);
      series.series.device_id = select->ColumnText(1);
      series.series.measure_name = select->ColumnText(2);
      series.series.shard = static_cast<int>(select->ColumnInt64(3));
      CAIRN_ASSIGN_OR_RETURN(series.series.dimensions, ingest::DimensionsFromJson(select->ColumnText(4)));
      all.push_back(std::move(series));
    }
    return all;
  }

  Result<std::vector<StoredBatch>> ReadBatches() override {
    if (db_ == nullptr) return Status::Unavailable("the SQLite sink " + path_ + " is not open");
    CAIRN_ASSIGN_OR_RETURN(
        Statement * select,
        db_->Prepare("SELECT gateway_id, table_name, lane, batch_sequence, first_lsn, last_lsn, records, "
                     "inserted, replaced, duplicates, older, received_at, last_received_at, deliveries "
                     "FROM cairn_batches ORDER BY gateway_id, table_name, lane, batch_sequence"));
    StatementResetter resetter(select);
    std::vector<StoredBatch> batches;
    while (true) {
      CAIRN_ASSIGN_OR_RETURN(bool row, select->Step());
      if (!row) break;
      StoredBatch batch;
      batch.header.gateway_id = select->ColumnText(0);
      batch.header.table = select->ColumnText(1);
      Result<SyncLane> lane = ParseSyncLane(select->ColumnText(2));
      if (!lane.ok())
        return Status::Corruption("cairn_batches holds an unknown lane: " + select->ColumnText(2));
      batch.header.lane = *lane;
      batch.header.batch_sequence = FromStored(select->ColumnInt64(3));
      batch.header.first_lsn = FromStored(select->ColumnInt64(4));
      batch.header.last_lsn = FromStored(select->ColumnInt64(5));
      batch.records = FromStored(select->ColumnInt64(6));
      batch.counts.inserted = FromStored(select->ColumnInt64(7));
      batch.counts.replaced = FromStored(select->ColumnInt64(8));
      batch.counts.duplicates = FromStored(select->ColumnInt64(9));
      batch.counts.older = FromStored(select->ColumnInt64(10));
      batch.received_at_unix_nanos = select->ColumnInt64(11);
      batch.last_received_at_unix_nanos = select->ColumnInt64(12);
      batch.deliveries = FromStored(select->ColumnInt64(13));
      batches.push_back(std::move(batch));
    }
    return batches;
  }

  std::string_view kind() const override { return "sqlite"; }

 private:
  Result<SinkCounts> ApplyInTransaction(const DecodedEnvelope& batch, int64_t received_at) {
    const std::string& table = batch.header.table;
    const ingest::BatchPlan plan = ingest::PlanBatch(batch.records);
    SinkCounts counts = plan.losers;

    CAIRN_ASSIGN_OR_RETURN(Statement * select,
                           db_->Prepare("SELECT version, lsn FROM cairn_readings WHERE table_name = ?1 AND "
                                        "device_id = ?2 AND measure_name = ?3 AND timestamp_ns = ?4"));
    CAIRN_ASSIGN_OR_RETURN(
        Statement * upsert,
        db_->Prepare("INSERT OR REPLACE INTO cairn_readings (table_name, device_id, measure_name, "
                     "timestamp_ns, shard, partition_key, version, ttl, fields, lsn) "
                     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"));
    for (size_t index : plan.winners) {
      const RecordRow& row = batch.records[index];
      CAIRN_RETURN_IF_ERROR(select->BindText(1, table));
      CAIRN_RETURN_IF_ERROR(select->BindText(2, row.device_id));
      CAIRN_RETURN_IF_ERROR(select->BindText(3, row.measure_name));
      CAIRN_RETURN_IF_ERROR(select->BindInt64(4, row.timestamp));
      CAIRN_ASSIGN_OR_RETURN(bool found, select->Step());
      bool write = true;
      if (found) {
        // The gateway's order: version first, then LSN (a rewrite of the
        // same version merged under on_conflict overwrite has a later one).
        const std::pair stored(FromStored(select->ColumnInt64(0)), FromStored(select->ColumnInt64(1)));
        const std::pair incoming(row.version, row.lsn);
        select->Reset();
        if (stored == incoming) {
          ++counts.duplicates;
          write = false;
        } else if (stored > incoming) {
          ++counts.older;
          write = false;
        } else {
          ++counts.replaced;
        }
      } else {
        ++counts.inserted;
      }
      if (!write) continue;
      CAIRN_RETURN_IF_ERROR(upsert->BindText(1, table));
      CAIRN_RETURN_IF_ERROR(upsert->BindText(2, row.device_id));
      CAIRN_RETURN_IF_ERROR(upsert->BindText(3, row.measure_name));
      CAIRN_RETURN_IF_ERROR(upsert->BindInt64(4, row.timestamp));
      CAIRN_RETURN_IF_ERROR(upsert->BindInt64(5, row.shard));
      CAIRN_RETURN_IF_ERROR(upsert->BindText(6, PartitionKey(row.device_id, row.shard)));
      CAIRN_RETURN_IF_ERROR(upsert->BindInt64(7, ToStored(row.version)));
      CAIRN_RETURN_IF_ERROR(upsert->BindInt64(8, row.ttl));
      CAIRN_RETURN_IF_ERROR(upsert->BindText(9, ingest::FieldsToJson(row.fields)));
      CAIRN_RETURN_IF_ERROR(upsert->BindInt64(10, ToStored(row.lsn)));
      CAIRN_RETURN_IF_ERROR(upsert->Run());
    }

    // Every series of the batch gets a row; dimensions sent with the batch
    // replace the stored ones (latest wins), absent ones leave them alone.
    CAIRN_ASSIGN_OR_RETURN(Statement * add_series,
                           db_->Prepare("INSERT OR IGNORE INTO cairn_series (table_name, device_id, "
                                        "measure_name, shard, partition_key, dimensions) "
                                        "VALUES (?1, ?2, ?3, ?4, ?5, '{}')"));
    std::set<std::tuple<std::string_view, std::string_view, int>> seen;
    for (const RecordRow& row : batch.records) {
      if (!seen.emplace(row.device_id, row.measure_name, row.shard).second) continue;
      CAIRN_RETURN_IF_ERROR(add_series->BindText(1, table));
      CAIRN_RETURN_IF_ERROR(add_series->BindText(2, row.device_id));
      CAIRN_RETURN_IF_ERROR(add_series->BindText(3, row.measure_name));
      CAIRN_RETURN_IF_ERROR(add_series->BindInt64(4, row.shard));
      CAIRN_RETURN_IF_ERROR(add_series->BindText(5, PartitionKey(row.device_id, row.shard)));
      CAIRN_RETURN_IF_ERROR(add_series->Run());
    }
    CAIRN_ASSIGN_OR_RETURN(Statement * set_dimensions,
                           db_->Prepare("UPDATE cairn_series SET dimensions = ?5 WHERE table_name = ?1 AND "
                                        "device_id = ?2 AND measure_name = ?3 AND shard = ?4"));
    for (const SeriesDimensions& series : batch.dimensions) {
      if (series.dimensions.empty()) continue;
      CAIRN_RETURN_IF_ERROR(set_dimensions->BindText(1, table));
      CAIRN_RETURN_IF_ERROR(set_dimensions->BindText(2, series.device_id));
      CAIRN_RETURN_IF_ERROR(set_dimensions->BindText(3, series.measure_name));
      CAIRN_RETURN_IF_ERROR(set_dimensions->BindInt64(4, series.shard));
      CAIRN_RETURN_IF_ERROR(set_dimensions->BindText(5, ingest::DimensionsToJson(series.dimensions)));
      CAIRN_RETURN_IF_ERROR(set_dimensions->Run());
    }

    CAIRN_ASSIGN_OR_RETURN(
        Statement * add_batch,
        db_->Prepare("INSERT INTO cairn_batches (gateway_id, table_name, lane, batch_sequence, first_lsn, "
                     "last_lsn, records, inserted, replaced, duplicates, older, received_at, "
                     "last_received_at, deliveries) "
                     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12, 1) "
                     "ON CONFLICT (gateway_id, table_name, lane, batch_sequence) DO UPDATE SET "
                     "last_received_at = excluded.last_received_at, deliveries = deliveries + 1"));
    const EnvelopeHeader& header = batch.header;
    CAIRN_RETURN_IF_ERROR(add_batch->BindText(1, header.gateway_id));
    CAIRN_RETURN_IF_ERROR(add_batch->BindText(2, header.table));
    CAIRN_RETURN_IF_ERROR(add_batch->BindText(3, SyncLaneName(header.lane)));
    CAIRN_RETURN_IF_ERROR(add_batch->BindInt64(4, ToStored(header.batch_sequence)));
    CAIRN_RETURN_IF_ERROR(add_batch->BindInt64(5, ToStored(header.first_lsn)));
    CAIRN_RETURN_IF_ERROR(add_batch->BindInt64(6, ToStored(header.last_lsn)));
    CAIRN_RETURN_IF_ERROR(add_batch->BindInt64(7, ToStored(batch.records.size())));
    CAIRN_RETURN_IF_ERROR(add_batch->BindInt64(8, ToStored(counts.inserted)));
    CAIRN_RETURN_IF_ERROR(add_batch->BindInt64(9, ToStored(counts.replaced)));
    CAIRN_RETURN_IF_ERROR(add_batch->BindInt64(10, ToStored(counts.duplicates)));
    CAIRN_RETURN_IF_ERROR(add_batch->BindInt64(11, ToStored(counts.older)));
    CAIRN_RETURN_IF_ERROR(add_batch->BindInt64(12, received_at));
    CAIRN_RETURN_IF_ERROR(add_batch->Run());
    return counts;
  }

  const std::string path_;
  const std::string vfs_name_;
  std::unique_ptr<SqliteDb> db_;
};

}  // namespace

Result<std::unique_ptr<IngestSink>> OpenSqliteSink(Env* env, const std::string& path) {
  const std::string vfs_name = VfsNameFor(env);
  CAIRN_RETURN_IF_ERROR(RegisterEnvVfs(env, vfs_name));
  auto sink = std::make_unique<SqliteSink>(path, vfs_name);
  CAIRN_RETURN_IF_ERROR(sink->Open());
  return std::unique_ptr<IngestSink>(std::move(sink));
}

}  // namespace cairn
