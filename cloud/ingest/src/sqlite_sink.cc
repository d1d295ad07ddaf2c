// The SQLite sink (ingest_schema.md). One connection, through an Env VFS like
// every SQLite file of cairn; each batch is one IMMEDIATE transaction in
// which the version rule is applied record by record with cached statements.
#include <utility>

#include "cairn/core/sqlite_database.h"
#include "cairn/ingest/ingest_sink.h"

#include "batch_plan.h"
#include "field_json.h"
#include "schema_migration.h"

namespace cairn {
namespace {

// The columns of the readings and series tables (ingest_schema.md §1), kept
// apart from their CREATE statements so that the migration of §5 can create
// the same tables under another name.
constexpr char kReadingsColumns[] = R"sql((
  table_name    TEXT    NOT NULL,
  device_id     TEXT    NOT NULL,
  measure_name  TEXT    NOT NULL,
  dimensions    TEXT    NOT NULL,
  timestamp_ns  INTEGER NOT NULL,
  shard         INTEGER NOT NULL,
  partition_key TEXT    NOT NULL,
  version       INTEGER NOT NULL,
  ttl           INTEGER NOT NULL,
  fields        TEXT    NOT NULL,
  lsn           INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (table_name, device_id, measure_name, dimensions, timestamp_ns)
) WITHOUT ROWID;
)sql";
constexpr char kSeriesColumns[] = R"sql((
  table_name    TEXT    NOT NULL,
  device_id     TEXT    NOT NULL,
  measure_name  TEXT    NOT NULL,
  dimensions    TEXT    NOT NULL,
  shard         INTEGER NOT NULL,
  partition_key TEXT    NOT NULL,
  attributes    TEXT    NOT NULL,
  PRIMARY KEY (table_name, device_id, measure_name, dimensions, shard)
) WITHOUT ROWID;
)sql";
constexpr char kBatchesTable[] = R"sql(
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

std::string Schema() {
  return std::string("CREATE TABLE IF NOT EXISTS cairn_readings ") + kReadingsColumns +
         "CREATE TABLE IF NOT EXISTS cairn_series " + kSeriesColumns + kBatchesTable;
}

// Schema version 1 (ingest_schema.md §5) to 2: a version 1 series' dimensions
// become its identity and its readings'; attributes start empty. The old
// sink wrote dimensions with the same canonical writer (TagsToJson), so the
// text is copied as it is.
std::string MigrationFromVersion1() {
  return std::string("CREATE TABLE cairn_readings_v2 ") + kReadingsColumns + "CREATE TABLE cairn_series_v2 " +
         kSeriesColumns + R"sql(
INSERT INTO cairn_series_v2 (table_name, device_id, measure_name, dimensions, shard, partition_key, attributes)
  SELECT table_name, device_id, measure_name, dimensions, shard, partition_key, '{}' FROM cairn_series;
)sql" + ingest::kMigrateVersion1Readings;
}

// SQLite integers are signed: unsigned 64-bit values (versions, sequences,
// LSNs) are stored as the signed integer with the same bits.
int64_t ToStored(uint64_t value) { return static_cast<int64_t>(value); }
uint64_t FromStored(int64_t value) { return static_cast<uint64_t>(value); }

class SqliteSink final : public IngestSink {
 public:
  SqliteSink(Env* env, std::string path) : env_(env), path_(std::move(path)) {}

  Status Open() {
    db_.reset();
    CAIRN_ASSIGN_OR_RETURN(db_,
                           OpenSqliteDatabase(env_, path_, /*cache_kib=*/8192, SqliteSynchronous::kFull));
    CAIRN_RETURN_IF_ERROR(db_->Begin());
    Status created = CreateOrMigrate();
    if (created.ok()) created = db_->Commit();
    if (!created.ok()) {
      (void)db_->Rollback();
      return created.WithContext("the ingest schema of " + path_);
    }
    return Status::Ok();
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
    CAIRN_ASSIGN_OR_RETURN(
        Statement * select,
        db_->Prepare("SELECT r.table_name, r.device_id, r.measure_name, r.shard, r.timestamp_ns, r.version, "
                     "r.ttl, r.fields, r.dimensions, s.attributes, r.lsn FROM cairn_readings AS r "
                     "LEFT JOIN cairn_series AS s ON s.table_name = r.table_name AND "
                     "s.device_id = r.device_id AND s.measure_name = r.measure_name AND "
                     "s.dimensions = r.dimensions AND s.shard = r.shard "
                     "ORDER BY r.table_name, r.device_id, r.measure_name, r.dimensions, r.timestamp_ns"));
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
      CAIRN_ASSIGN_OR_RETURN(reading.row.dimensions, ingest::TagsFromJson(select->ColumnText(8)));
      if (!select->ColumnIsNull(9)) {
        CAIRN_ASSIGN_OR_RETURN(reading.row.attributes, ingest::TagsFromJson(select->ColumnText(9)));
      }
      reading.row.lsn = FromStored(select->ColumnInt64(10));
      readings.push_back(std::move(reading));
    }
    return readings;
  }

  Result<std::vector<StoredSeries>> ReadSeries() override {
    if (db_ == nullptr) return Status::Unavailable("the SQLite sink " + path_ + " is not open");
    CAIRN_ASSIGN_OR_RETURN(
        Statement * select,
        db_->Prepare("SELECT table_name, device_id, measure_name, shard, dimensions, attributes "
                     "FROM cairn_series ORDER BY table_name, device_id, measure_name, dimensions, shard"));
    StatementResetter resetter(select);
    std::vector<StoredSeries> all;
    while (true) {
      CAIRN_ASSIGN_OR_RETURN(bool row, select->Step());
      if (!row) break;
      StoredSeries series;
      series.table = select->ColumnText(0);
      series.device_id = select->ColumnText(1);
      series.measure_name = select->ColumnText(2);
      series.shard = static_cast<int>(select->ColumnInt64(3));
      CAIRN_ASSIGN_OR_RETURN(series.dimensions, ingest::TagsFromJson(select->ColumnText(4)));
      CAIRN_ASSIGN_OR_RETURN(series.attributes, ingest::TagsFromJson(select->ColumnText(5)));
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
  // Creates the schema, first migrating a version 1 schema (its readings
  // table has no dimensions column) to the current one.
  Status CreateOrMigrate() {
    CAIRN_ASSIGN_OR_RETURN(
        Statement * probe,
        db_->Prepare("SELECT (SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND "
                     "name = 'cairn_readings'), (SELECT COUNT(*) FROM pragma_table_info('cairn_readings') "
                     "WHERE name = 'dimensions')"));
    bool version1 = false;
    {
      StatementResetter resetter(probe);
      CAIRN_ASSIGN_OR_RETURN(bool row, probe->Step());
      version1 = row && probe->ColumnInt64(0) == 1 && probe->ColumnInt64(1) == 0;
    }
    if (version1)
      CAIRN_RETURN_IF_ERROR(db_->Exec(MigrationFromVersion1()).WithContext("migrating version 1"));
    return db_->Exec(Schema());
  }

  Result<SinkCounts> ApplyInTransaction(const DecodedEnvelope& batch, int64_t received_at) {
    const ingest::BatchPlan plan = ingest::PlanBatch(batch.records);
    SinkCounts counts = plan.losers;
    CAIRN_RETURN_IF_ERROR(StoreReadings(batch, plan, &counts));
    CAIRN_RETURN_IF_ERROR(StoreSeries(batch));
    CAIRN_RETURN_IF_ERROR(RecordBatch(batch.header, batch.records.size(), counts, received_at));
    return counts;
  }

  // Stores the plan's winners where they beat what is stored (the version
  // rule), counting each outcome into `counts`.
  Status StoreReadings(const DecodedEnvelope& batch, const ingest::BatchPlan& plan, SinkCounts* counts) {
    const std::string& table = batch.header.table;
    CAIRN_ASSIGN_OR_RETURN(Statement * select,
                           db_->Prepare("SELECT version, lsn FROM cairn_readings WHERE table_name = ?1 AND "
                                        "device_id = ?2 AND measure_name = ?3 AND dimensions = ?4 AND "
                                        "timestamp_ns = ?5"));
    CAIRN_ASSIGN_OR_RETURN(
        Statement * upsert,
        db_->Prepare("INSERT OR REPLACE INTO cairn_readings (table_name, device_id, measure_name, "
                     "dimensions, timestamp_ns, shard, partition_key, version, ttl, fields, lsn) "
                     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"));
    for (size_t index : plan.winners) {
      const RecordRow& row = batch.records[index];
      const std::string dimensions = ingest::TagsToJson(row.dimensions);
      CAIRN_RETURN_IF_ERROR(select->BindText(1, table));
      CAIRN_RETURN_IF_ERROR(select->BindText(2, row.device_id));
      CAIRN_RETURN_IF_ERROR(select->BindText(3, row.measure_name));
      CAIRN_RETURN_IF_ERROR(select->BindText(4, dimensions));
      CAIRN_RETURN_IF_ERROR(select->BindInt64(5, row.timestamp));
      CAIRN_ASSIGN_OR_RETURN(bool found, select->Step());
      bool write = true;
      if (found) {
        // The gateway's order: version first, then LSN (a rewrite of the
        // same version merged under on_conflict overwrite has a later one).
        const std::pair stored(FromStored(select->ColumnInt64(0)), FromStored(select->ColumnInt64(1)));
        const std::pair incoming(row.version, row.lsn);
        select->Reset();
        if (stored == incoming) {
          ++counts->duplicates;
          write = false;
        } else if (stored > incoming) {
          ++counts->older;
          write = false;
        } else {
          ++counts->replaced;
        }
      } else {
        ++counts->inserted;
      }
      if (!write) continue;
      CAIRN_RETURN_IF_ERROR(upsert->BindText(1, table));
      CAIRN_RETURN_IF_ERROR(upsert->BindText(2, row.device_id));
      CAIRN_RETURN_IF_ERROR(upsert->BindText(3, row.measure_name));
      CAIRN_RETURN_IF_ERROR(upsert->BindText(4, dimensions));
      CAIRN_RETURN_IF_ERROR(upsert->BindInt64(5, row.timestamp));
      CAIRN_RETURN_IF_ERROR(upsert->BindInt64(6, row.shard));
      CAIRN_RETURN_IF_ERROR(upsert->BindText(7, PartitionKey(row.device_id, row.shard)));
      CAIRN_RETURN_IF_ERROR(upsert->BindInt64(8, ToStored(row.version)));
      CAIRN_RETURN_IF_ERROR(upsert->BindInt64(9, row.ttl));
      CAIRN_RETURN_IF_ERROR(upsert->BindText(10, ingest::FieldsToJson(row.fields)));
      CAIRN_RETURN_IF_ERROR(upsert->BindInt64(11, ToStored(row.lsn)));
      CAIRN_RETURN_IF_ERROR(upsert->Run());
    }
    return Status::Ok();
  }

  // Every series of the batch gets a row; attributes sent with the batch
  // replace the stored ones (latest wins), none leave them alone.
  Status StoreSeries(const DecodedEnvelope& batch) {
    const std::string& table = batch.header.table;
    CAIRN_ASSIGN_OR_RETURN(
        Statement * add_series,
        db_->Prepare("INSERT INTO cairn_series (table_name, device_id, measure_name, dimensions, shard, "
                     "partition_key, attributes) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) "
                     "ON CONFLICT (table_name, device_id, measure_name, dimensions, shard) DO UPDATE SET "
                     "attributes = excluded.attributes WHERE excluded.attributes <> '{}'"));
    for (const ingest::BatchSeries& series : ingest::SeriesOf(batch.records)) {
      CAIRN_RETURN_IF_ERROR(add_series->BindText(1, table));
      CAIRN_RETURN_IF_ERROR(add_series->BindText(2, series.row->device_id));
      CAIRN_RETURN_IF_ERROR(add_series->BindText(3, series.row->measure_name));
      CAIRN_RETURN_IF_ERROR(add_series->BindText(4, ingest::TagsToJson(series.row->dimensions)));
      CAIRN_RETURN_IF_ERROR(add_series->BindInt64(5, series.row->shard));
      CAIRN_RETURN_IF_ERROR(add_series->BindText(6, PartitionKey(series.row->device_id, series.row->shard)));
      CAIRN_RETURN_IF_ERROR(add_series->BindText(7, ingest::TagsToJson(*series.attributes)));
      CAIRN_RETURN_IF_ERROR(add_series->Run());
    }
    return Status::Ok();
  }

  // The batch's row: what it held and what storing it did; a redelivery
  // counts one more delivery.
  Status RecordBatch(const EnvelopeHeader& header, size_t records, const SinkCounts& counts, int64_t received_at) {
    CAIRN_ASSIGN_OR_RETURN(
        Statement * add_batch,
        db_->Prepare("INSERT INTO cairn_batches (gateway_id, table_name, lane, batch_sequence, first_lsn, "
                     "last_lsn, records, inserted, replaced, duplicates, older, received_at, "
                     "last_received_at, deliveries) "
                     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12, 1) "
                     "ON CONFLICT (gateway_id, table_name, lane, batch_sequence) DO UPDATE SET "
                     "last_received_at = excluded.last_received_at, deliveries = deliveries + 1"));
    CAIRN_RETURN_IF_ERROR(add_batch->BindText(1, header.gateway_id));
    CAIRN_RETURN_IF_ERROR(add_batch->BindText(2, header.table));
    CAIRN_RETURN_IF_ERROR(add_batch->BindText(3, SyncLaneName(header.lane)));
    CAIRN_RETURN_IF_ERROR(add_batch->BindInt64(4, ToStored(header.batch_sequence)));
    CAIRN_RETURN_IF_ERROR(add_batch->BindInt64(5, ToStored(header.first_lsn)));
    CAIRN_RETURN_IF_ERROR(add_batch->BindInt64(6, ToStored(header.last_lsn)));
    CAIRN_RETURN_IF_ERROR(add_batch->BindInt64(7, ToStored(records)));
    CAIRN_RETURN_IF_ERROR(add_batch->BindInt64(8, ToStored(counts.inserted)));
    CAIRN_RETURN_IF_ERROR(add_batch->BindInt64(9, ToStored(counts.replaced)));
    CAIRN_RETURN_IF_ERROR(add_batch->BindInt64(10, ToStored(counts.duplicates)));
    CAIRN_RETURN_IF_ERROR(add_batch->BindInt64(11, ToStored(counts.older)));
    CAIRN_RETURN_IF_ERROR(add_batch->BindInt64(12, received_at));
    return add_batch->Run();
  }

  Env* const env_;
  const std::string path_;
  std::unique_ptr<SqliteDb> db_;
};

}  // namespace

Result<std::unique_ptr<IngestSink>> OpenSqliteSink(Env* env, const std::string& path) {
  auto sink = std::make_unique<SqliteSink>(env, path);
  CAIRN_RETURN_IF_ERROR(sink->Open());
  return std::unique_ptr<IngestSink>(std::move(sink));
}

}  // namespace cairn
