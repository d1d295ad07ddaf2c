// The PostgreSQL sink (ingest_schema.md). One libpq connection; each batch
// is one transaction of multi-row upserts whose values are bound as
// parameters (PQexecParams), so no value is ever spliced into SQL text.
#include "cairn/ingest/postgres_sink.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include <libpq-fe.h>

#include "batch_plan.h"
#include "field_json.h"
#include "schema_migration.h"

namespace cairn {
namespace {

// The session setting keeps "relation already exists, skipping" notices out
// of the service's log.
constexpr char kSchema[] = R"sql(
SET client_min_messages = warning;
CREATE TABLE IF NOT EXISTS cairn_readings (
  table_name    text           NOT NULL,
  device_id     text           NOT NULL,
  measure_name  text           NOT NULL,
  dimensions    text           NOT NULL,
  timestamp_ns  bigint         NOT NULL,
  shard         integer        NOT NULL,
  partition_key text           NOT NULL,
  version       numeric(20, 0) NOT NULL,
  ttl           bigint         NOT NULL,
  fields        jsonb          NOT NULL,
  lsn           numeric(20, 0) NOT NULL DEFAULT 0,
  PRIMARY KEY (table_name, device_id, measure_name, dimensions, timestamp_ns)
);
-- Tables created before readings carried their gateway's LSN lack it.
ALTER TABLE cairn_readings ADD COLUMN IF NOT EXISTS lsn numeric(20, 0) NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS cairn_series (
  table_name    text    NOT NULL,
  device_id     text    NOT NULL,
  measure_name  text    NOT NULL,
  dimensions    text    NOT NULL,
  shard         integer NOT NULL,
  partition_key text    NOT NULL,
  attributes    jsonb   NOT NULL,
  PRIMARY KEY (table_name, device_id, measure_name, dimensions, shard)
);
CREATE TABLE IF NOT EXISTS cairn_batches (
  gateway_id       text           NOT NULL,
  table_name       text           NOT NULL,
  lane             text           NOT NULL,
  batch_sequence   numeric(20, 0) NOT NULL,
  first_lsn        numeric(20, 0) NOT NULL,
  last_lsn         numeric(20, 0) NOT NULL,
  records          bigint         NOT NULL,
  inserted         bigint         NOT NULL,
  replaced         bigint         NOT NULL,
  duplicates       bigint         NOT NULL,
  older            bigint         NOT NULL,
  received_at      bigint         NOT NULL,
  last_received_at bigint         NOT NULL,
  deliveries       bigint         NOT NULL,
  PRIMARY KEY (gateway_id, table_name, lane, batch_sequence)
);
)sql";

// Whether cairn_readings exists, and whether it has the dimensions column
// (schema version 2): one without it is version 1 (ingest_schema.md §5).
constexpr char kSchemaProbe[] =
    "SELECT EXISTS (SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() AND "
    "table_name = 'cairn_readings'), EXISTS (SELECT 1 FROM information_schema.columns WHERE "
    "table_schema = current_schema() AND table_name = 'cairn_readings' AND column_name = 'dimensions')";

// Version 1 to 2: a series' dimensions (jsonb, metadata until then) become
// the canonical text that keys series and readings (TagsToJson's: members
// sorted bytewise, no whitespace; to_json escapes a name or value as
// TagsToJson does, since neither holds control characters), and the
// identity of the series' readings; attributes start empty. The new tables
// are built beside the old ones, then take their names and primary keys
// (constraint names included), so the result is what kSchema creates.
std::string MigrationFromVersion1() {
  return R"sql(
CREATE TABLE cairn_readings_v2 (
  table_name    text           NOT NULL,
  device_id     text           NOT NULL,
  measure_name  text           NOT NULL,
  dimensions    text           NOT NULL,
  timestamp_ns  bigint         NOT NULL,
  shard         integer        NOT NULL,
  partition_key text           NOT NULL,
  version       numeric(20, 0) NOT NULL,
  ttl           bigint         NOT NULL,
  fields        jsonb          NOT NULL,
  lsn           numeric(20, 0) NOT NULL DEFAULT 0
);
CREATE TABLE cairn_series_v2 (
  table_name    text    NOT NULL,
  device_id     text    NOT NULL,
  measure_name  text    NOT NULL,
  dimensions    text    NOT NULL,
  shard         integer NOT NULL,
  partition_key text    NOT NULL,
  attributes    jsonb   NOT NULL
);
INSERT INTO cairn_series_v2 (table_name, device_id, measure_name, dimensions, shard, partition_key, attributes)
  SELECT s.table_name, s.device_id, s.measure_name,
         (SELECT '{' || COALESCE(string_agg(to_json(d.key)::text || ':' || to_json(d.value)::text, ','
                                            ORDER BY d.key COLLATE "C"), '') || '}'
          FROM jsonb_each_text(s.dimensions) AS d),
         s.shard, s.partition_key, '{}'::jsonb
  FROM cairn_series AS s;
)sql" + std::string(ingest::kMigrateVersion1Readings) + R"sql(
ALTER TABLE cairn_readings ADD CONSTRAINT cairn_readings_pkey
  PRIMARY KEY (table_name, device_id, measure_name, dimensions, timestamp_ns);
ALTER TABLE cairn_series ADD CONSTRAINT cairn_series_pkey
  PRIMARY KEY (table_name, device_id, measure_name, dimensions, shard);
)sql";
}

// Rows per multi-row statement: 500 rows of 9 parameters stay far below
// PostgreSQL's 65535 parameters per statement.
constexpr size_t kRowsPerStatement = 500;

using Row = std::vector<std::string>;

struct ResultDeleter {
  void operator()(PGresult* result) const { PQclear(result); }
};
using PgResult = std::unique_ptr<PGresult, ResultDeleter>;

struct ConnectionDeleter {
  void operator()(PGconn* connection) const { PQfinish(connection); }
};
using PgConnection = std::unique_ptr<PGconn, ConnectionDeleter>;

std::string Trimmed(const char* message) {
  std::string text = message == nullptr ? "" : message;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

template <typename T>
Result<T> ParseNumber(const char* text, std::string_view what) {
  const std::string_view view = text == nullptr ? "" : text;
  T value{};
  const std::from_chars_result read = std::from_chars(view.data(), view.data() + view.size(), value);
  if (read.ec != std::errc() || read.ptr != view.data() + view.size()) {
    return Status::Corruption("PostgreSQL returned a bad " + std::string(what) + ": '" + std::string(view) +
                              "'");
  }
  return value;
}

// One row of a query result, its columns read by number.
class PgRow {
 public:
  PgRow(const PGresult* result, int row) : result_(result), row_(row) {}

  const char* Text(int column) const { return PQgetvalue(result_, row_, column); }
  bool IsNull(int column) const { return PQgetisnull(result_, row_, column) != 0; }
  // The column as a T; Corruption naming `what` when it is not one.
  template <typename T>
  Result<T> Number(int column, std::string_view what) const {
    return ParseNumber<T>(Text(column), what);
  }

 private:
  const PGresult* const result_;
  const int row_;
};

// "(<leading>$3, $4::bigint, ...)" for one row of `casts.size()` parameters
// numbered from *next + 1 on; an empty cast leaves a parameter untyped
// (text). `leading` holds placeholders shared by every row, such as "$1, ".
void AppendRowPlaceholders(std::string* sql, std::string_view leading,
                           const std::vector<std::string_view>& casts, int* next) {
  sql->push_back('(');
  sql->append(leading);
  for (size_t i = 0; i < casts.size(); ++i) {
    if (i > 0) sql->append(", ");
    sql->push_back('$');
    sql->append(std::to_string(++*next));
    if (!casts[i].empty()) {
      sql->append("::");
      sql->append(casts[i]);
    }
  }
  sql->push_back(')');
}

class PostgresSink final : public IngestSink {
 public:
  explicit PostgresSink(std::string conninfo) : conninfo_(std::move(conninfo)) {}

  Status Connect() {
    connection_.reset(PQconnectdb(conninfo_.c_str()));
    if (connection_ == nullptr) return Status::ResourceExhausted("libpq could not allocate a connection");
    if (PQstatus(connection_.get()) != CONNECTION_OK) {
      const std::string message = Trimmed(PQerrorMessage(connection_.get()));
      connection_.reset();
      if (message.find("invalid connection option") != std::string::npos ||
          message.find("missing \"=\"") != std::string::npos ||
          message.find("invalid URI") != std::string::npos) {
        return Status::InvalidArgument("PostgreSQL connection string: " + message);
      }
      return Status::Unavailable("cannot connect to PostgreSQL: " + message);
    }
    if (PQsetClientEncoding(connection_.get(), "UTF8") != 0) {
      return Status::Unavailable("PostgreSQL refused client encoding UTF8: " +
                                 Trimmed(PQerrorMessage(connection_.get())));
    }
    Status created = CreateSchema();
    if (!created.ok()) {
      connection_.reset();
      return Status::Unavailable("cannot create the ingest schema in PostgreSQL: " + created.message());
    }
    return Status::Ok();
  }

  Result<SinkCounts> ApplyBatch(const DecodedEnvelope& batch, int64_t received_at) override {
    if (connection_ == nullptr) return Status::Unavailable("not connected to PostgreSQL");
    CAIRN_RETURN_IF_ERROR(Execute("BEGIN", {}).status());
    Result<SinkCounts> counts = ApplyInTransaction(batch, received_at);
    if (!counts.ok()) {
      // Also ends the aborted transaction; on a lost connection it fails,
      // and Reconnect starts afresh.
      (void)Execute("ROLLBACK", {});
      return counts.status();
    }
    if (Status committed = Execute("COMMIT", {}).status(); !committed.ok()) {
      (void)Execute("ROLLBACK", {});
      return committed;
    }
    return counts;
  }

  Status Reconnect() override { return Connect(); }

  Result<std::vector<StoredReading>> ReadReadings() override {
    return ReadAll<StoredReading>(
        "SELECT r.table_name, r.device_id, r.measure_name, r.shard, r.timestamp_ns, r.version::text, "
        "r.ttl, "
        "r.fields::text, r.dimensions, s.attributes::text, r.lsn::text FROM cairn_readings AS r "
        "LEFT JOIN cairn_series AS s ON s.table_name = r.table_name AND s.device_id = r.device_id AND "
        "s.measure_name = r.measure_name AND s.dimensions = r.dimensions AND s.shard = r.shard "
        "ORDER BY r.table_name COLLATE \"C\", r.device_id COLLATE \"C\", r.measure_name COLLATE \"C\", "
        "r.dimensions COLLATE \"C\", r.timestamp_ns",
        [](const PgRow& row, StoredReading* reading) -> Status {
          reading->table = row.Text(0);
          reading->row.device_id = row.Text(1);
          reading->row.measure_name = row.Text(2);
          CAIRN_ASSIGN_OR_RETURN(reading->row.shard, row.Number<int>(3, "shard"));
          CAIRN_ASSIGN_OR_RETURN(reading->row.timestamp, row.Number<int64_t>(4, "timestamp"));
          CAIRN_ASSIGN_OR_RETURN(reading->row.version, row.Number<uint64_t>(5, "version"));
          CAIRN_ASSIGN_OR_RETURN(reading->row.ttl, row.Number<int64_t>(6, "ttl"));
          CAIRN_ASSIGN_OR_RETURN(reading->row.fields, ingest::FieldsFromJson(row.Text(7)));
          CAIRN_ASSIGN_OR_RETURN(reading->row.dimensions, ingest::TagsFromJson(row.Text(8)));
          if (!row.IsNull(9)) {
            CAIRN_ASSIGN_OR_RETURN(reading->row.attributes, ingest::TagsFromJson(row.Text(9)));
          }
          CAIRN_ASSIGN_OR_RETURN(reading->row.lsn, row.Number<uint64_t>(10, "lsn"));
          return Status::Ok();
        });
  }

  Result<std::vector<StoredSeries>> ReadSeries() override {
    return ReadAll<StoredSeries>(
        "SELECT table_name, device_id, measure_name, shard, dimensions, attributes::text FROM "
        "cairn_series "
        "ORDER BY table_name COLLATE \"C\", device_id COLLATE \"C\", measure_name COLLATE \"C\", "
        "dimensions COLLATE \"C\", shard",
        [](const PgRow& row, StoredSeries* series) -> Status {
          series->table = row.Text(0);
          series->device_id = row.Text(1);
          series->measure_name = row.Text(2);
          CAIRN_ASSIGN_OR_RETURN(series->shard, row.Number<int>(3, "shard"));
          CAIRN_ASSIGN_OR_RETURN(series->dimensions, ingest::TagsFromJson(row.Text(4)));
          CAIRN_ASSIGN_OR_RETURN(series->attributes, ingest::TagsFromJson(row.Text(5)));
          return Status::Ok();
        });
  }

  Result<std::vector<StoredBatch>> ReadBatches() override {
    return ReadAll<StoredBatch>(
        "SELECT gateway_id, table_name, lane, batch_sequence::text, first_lsn::text, last_lsn::text, "
        "records, inserted, replaced, duplicates, older, received_at, last_received_at, deliveries "
        "FROM cairn_batches ORDER BY gateway_id COLLATE \"C\", table_name COLLATE \"C\", "
        "lane COLLATE \"C\", batch_sequence",
        [](const PgRow& row, StoredBatch* batch) -> Status {
          EnvelopeHeader& header = batch->header;
          header.gateway_id = row.Text(0);
          header.table = row.Text(1);
          Result<SyncLane> lane = ParseSyncLane(row.Text(2));
          if (!lane.ok())
            return Status::Corruption(std::string("cairn_batches holds an unknown lane: ") + row.Text(2));
          header.lane = *lane;
          CAIRN_ASSIGN_OR_RETURN(header.batch_sequence, row.Number<uint64_t>(3, "batch_sequence"));
          CAIRN_ASSIGN_OR_RETURN(header.first_lsn, row.Number<uint64_t>(4, "first_lsn"));
          CAIRN_ASSIGN_OR_RETURN(header.last_lsn, row.Number<uint64_t>(5, "last_lsn"));
          CAIRN_ASSIGN_OR_RETURN(batch->records, row.Number<uint64_t>(6, "records"));
          CAIRN_ASSIGN_OR_RETURN(batch->counts.inserted, row.Number<uint64_t>(7, "inserted"));
          CAIRN_ASSIGN_OR_RETURN(batch->counts.replaced, row.Number<uint64_t>(8, "replaced"));
          CAIRN_ASSIGN_OR_RETURN(batch->counts.duplicates, row.Number<uint64_t>(9, "duplicates"));
          CAIRN_ASSIGN_OR_RETURN(batch->counts.older, row.Number<uint64_t>(10, "older"));
          CAIRN_ASSIGN_OR_RETURN(batch->received_at_unix_nanos, row.Number<int64_t>(11, "received_at"));
          CAIRN_ASSIGN_OR_RETURN(batch->last_received_at_unix_nanos,
                                 row.Number<int64_t>(12, "last_received_at"));
          CAIRN_ASSIGN_OR_RETURN(batch->deliveries, row.Number<uint64_t>(13, "deliveries"));
          return Status::Ok();
        });
  }

  std::string_view kind() const override { return "postgresql"; }

 private:
  // Runs the query `sql` (no parameters) and turns each row into a T with
  // `read_row` (const PgRow&, T*) -> Status; the first error ends the read.
  template <typename T, typename ReadRow>
  Result<std::vector<T>> ReadAll(const std::string& sql, ReadRow read_row) {
    CAIRN_ASSIGN_OR_RETURN(PgResult result, Execute(sql, {}));
    const int rows = PQntuples(result.get());
    std::vector<T> all;
    all.reserve(static_cast<size_t>(rows));
    for (int i = 0; i < rows; ++i) {
      T value;
      CAIRN_RETURN_IF_ERROR(read_row(PgRow(result.get(), i), &value));
      all.push_back(std::move(value));
    }
    return all;
  }

  // Creates the schema, migrating a version 1 schema first, in one
  // transaction under an advisory lock: services starting together neither
  // migrate twice nor race each other's CREATE TABLE.
  Status CreateSchema() {
    CAIRN_RETURN_IF_ERROR(Execute("BEGIN", {}).status());
    Status status = Execute("SELECT pg_advisory_xact_lock(427087358574)", {}).status();  // "cairn"
    bool version1 = false;
    if (status.ok()) {
      Result<PgResult> probe = Execute(kSchemaProbe, {});
      status = probe.status();
      if (status.ok()) {
        version1 = std::string_view(PQgetvalue(probe->get(), 0, 0)) == "t" &&
                   std::string_view(PQgetvalue(probe->get(), 0, 1)) == "f";
      }
    }
    if (status.ok() && version1)
      status = RunScript(MigrationFromVersion1().c_str()).WithContext("migrating version 1");
    if (status.ok()) status = RunScript(kSchema);
    if (status.ok()) status = Execute("COMMIT", {}).status();
    if (!status.ok()) (void)Execute("ROLLBACK", {});
    return status;
  }

  // Several statements: the simple query protocol (PQexec) takes them at
  // once, PQexecParams does not.
  Status RunScript(const char* sql) {
    PgResult result(PQexec(connection_.get(), sql));
    if (result != nullptr && PQresultStatus(result.get()) == PGRES_COMMAND_OK) return Status::Ok();
    return Status::Unavailable(
        Trimmed(result != nullptr ? PQresultErrorMessage(result.get()) : PQerrorMessage(connection_.get())));
  }

  // Runs `sql` with text parameters. Errors: InvalidArgument when PostgreSQL
  // refuses the data itself (SQLSTATE classes 22 data exception, 23
  // integrity constraint, 54 program limit: retrying cannot help);
  // Unavailable for everything else (lost connection, serialization
  // failure, deadlock, server shutting down, a schema dropped under us,
  // which Reconnect recreates).
  Result<PgResult> Execute(const std::string& sql, const std::vector<std::string>& params) {
    if (connection_ == nullptr) return Status::Unavailable("not connected to PostgreSQL");
    std::vector<const char*> values;
    std::vector<int> lengths;
    values.reserve(params.size());
    lengths.reserve(params.size());
    for (const std::string& param : params) {
      values.push_back(param.c_str());
      lengths.push_back(static_cast<int>(param.size()));
    }
    PgResult result(PQexecParams(connection_.get(), sql.c_str(), static_cast<int>(params.size()),
                                 /*paramTypes=*/nullptr, values.data(), lengths.data(),
                                 /*paramFormats=*/nullptr, /*resultFormat=*/0));
    const ExecStatusType status = result == nullptr ? PGRES_FATAL_ERROR : PQresultStatus(result.get());
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return result;
    std::string message =
        Trimmed(result != nullptr ? PQresultErrorMessage(result.get()) : PQerrorMessage(connection_.get()));
    if (message.empty()) message = Trimmed(PQerrorMessage(connection_.get()));
    const char* state = result != nullptr ? PQresultErrorField(result.get(), PG_DIAG_SQLSTATE) : nullptr;
    const std::string sqlstate = state == nullptr ? "" : state;
    const std::string detail =
        "PostgreSQL" + (sqlstate.empty() ? "" : " (SQLSTATE " + sqlstate + ")") + ": " + message;
    if (PQstatus(connection_.get()) != CONNECTION_OK) return Status::Unavailable(detail);
    const std::string sql_class = sqlstate.substr(0, 2);
    if (sql_class == "22" || sql_class == "23" || sql_class == "54") return Status::InvalidArgument(detail);
    return Status::Unavailable(detail);
  }

  Result<SinkCounts> ApplyInTransaction(const DecodedEnvelope& batch, int64_t received_at) {
    const std::string& table = batch.header.table;
    const ingest::BatchPlan plan = ingest::PlanBatch(batch.records);
    SinkCounts counts = plan.losers;

    for (size_t start = 0; start < plan.winners.size(); start += kRowsPerStatement) {
      const size_t end = std::min(plan.winners.size(), start + kRowsPerStatement);
      CAIRN_RETURN_IF_ERROR(UpsertReadings(table, batch.records, plan.winners, start, end, &counts));
    }
    CAIRN_RETURN_IF_ERROR(UpsertSeries(batch));

    const EnvelopeHeader& header = batch.header;
    CAIRN_RETURN_IF_ERROR(
        Execute(
            "INSERT INTO cairn_batches (gateway_id, table_name, lane, batch_sequence, first_lsn, last_lsn, "
            "records, inserted, replaced, duplicates, older, received_at, last_received_at, deliveries) "
            "VALUES ($1, $2, $3, $4::numeric, $5::numeric, $6::numeric, $7::bigint, $8::bigint, $9::bigint, "
            "$10::bigint, $11::bigint, $12::bigint, $12::bigint, 1) "
            "ON CONFLICT (gateway_id, table_name, lane, batch_sequence) DO UPDATE SET "
            "last_received_at = EXCLUDED.last_received_at, deliveries = cairn_batches.deliveries + 1",
            {header.gateway_id, header.table, std::string(SyncLaneName(header.lane)),
             std::to_string(header.batch_sequence), std::to_string(header.first_lsn),
             std::to_string(header.last_lsn), std::to_string(batch.records.size()),
             std::to_string(counts.inserted), std::to_string(counts.replaced),
             std::to_string(counts.duplicates), std::to_string(counts.older), std::to_string(received_at)})
            .status());
    return counts;
  }

  // Upserts winners [start, end): a row is written when its identity is new
  // or its stored (version, LSN) is lower, the gateway's order. Rows left
  // alone stay locked by the upsert until the transaction ends, so the
  // versions read back for them afterwards are the ones it compared with.
  Status UpsertReadings(const std::string& table, const std::vector<RecordRow>& records,
                        const std::vector<size_t>& winners, size_t start, size_t end, SinkCounts* counts) {
    using Identity = std::tuple<std::string, std::string, std::string, int64_t>;
    std::map<Identity, size_t> pending;  // identity -> record index, until accounted for
    std::string sql =
        "INSERT INTO cairn_readings AS stored (table_name, device_id, measure_name, dimensions, "
        "timestamp_ns, shard, partition_key, version, ttl, fields, lsn) VALUES ";
    std::vector<std::string> params{table};
    int next = 1;
    const std::vector<std::string_view> casts{"", "",        "",       "bigint", "integer",
                                              "", "numeric", "bigint", "jsonb",  "numeric"};
    for (size_t i = start; i < end; ++i) {
      const RecordRow& row = records[winners[i]];
      std::string dimensions = ingest::TagsToJson(row.dimensions);
      pending.emplace(Identity{row.device_id, row.measure_name, dimensions, row.timestamp}, winners[i]);
      if (i > start) sql += ", ";
      AppendRowPlaceholders(&sql, "$1, ", casts, &next);
      params.push_back(row.device_id);
      params.push_back(row.measure_name);
      params.push_back(std::move(dimensions));
      params.push_back(std::to_string(row.timestamp));
      params.push_back(std::to_string(row.shard));
      params.push_back(PartitionKey(row.device_id, row.shard));
      params.push_back(std::to_string(row.version));
      params.push_back(std::to_string(row.ttl));
      params.push_back(ingest::FieldsToJson(row.fields));
      params.push_back(std::to_string(row.lsn));
    }
    sql +=
        " ON CONFLICT (table_name, device_id, measure_name, dimensions, timestamp_ns) DO UPDATE SET "
        "shard = EXCLUDED.shard, partition_key = EXCLUDED.partition_key, version = EXCLUDED.version, "
        "ttl = EXCLUDED.ttl, fields = EXCLUDED.fields, lsn = EXCLUDED.lsn "
        "WHERE (stored.version, stored.lsn) < (EXCLUDED.version, EXCLUDED.lsn) "
        "RETURNING device_id, measure_name, dimensions, timestamp_ns, (xmax = 0) AS inserted";
    CAIRN_ASSIGN_OR_RETURN(PgResult written, Execute(sql, params));
    for (int i = 0; i < PQntuples(written.get()); ++i) {
      CAIRN_ASSIGN_OR_RETURN(int64_t timestamp,
                             ParseNumber<int64_t>(PQgetvalue(written.get(), i, 3), "timestamp"));
      pending.erase(Identity{PQgetvalue(written.get(), i, 0), PQgetvalue(written.get(), i, 1),
                             PQgetvalue(written.get(), i, 2), timestamp});
      if (std::string_view(PQgetvalue(written.get(), i, 4)) == "t") {
        ++counts->inserted;
      } else {
        ++counts->replaced;
      }
    }
    if (pending.empty()) return Status::Ok();

    // The rows left alone: a duplicate when the stored version and LSN are
    // ours, older when they are greater.
    std::string select =
        "SELECT device_id, measure_name, dimensions, timestamp_ns, version::text, lsn::text FROM cairn_readings "
        "WHERE table_name = $1 AND (device_id, measure_name, dimensions, timestamp_ns) IN (VALUES ";
    std::vector<std::string> select_params{table};
    int select_next = 1;
    const std::vector<std::string_view> key_casts{"", "", "", "bigint"};
    bool first = true;
    for (const auto& [identity, index] : pending) {
      if (!first) select += ", ";
      first = false;
      AppendRowPlaceholders(&select, "", key_casts, &select_next);
      select_params.push_back(std::get<0>(identity));
      select_params.push_back(std::get<1>(identity));
      select_params.push_back(std::get<2>(identity));
      select_params.push_back(std::to_string(std::get<3>(identity)));
    }
    select += ")";
    CAIRN_ASSIGN_OR_RETURN(PgResult stored, Execute(select, select_params));
    for (int i = 0; i < PQntuples(stored.get()); ++i) {
      CAIRN_ASSIGN_OR_RETURN(int64_t timestamp,
                             ParseNumber<int64_t>(PQgetvalue(stored.get(), i, 3), "timestamp"));
      CAIRN_ASSIGN_OR_RETURN(uint64_t version,
                             ParseNumber<uint64_t>(PQgetvalue(stored.get(), i, 4), "version"));
      CAIRN_ASSIGN_OR_RETURN(uint64_t lsn, ParseNumber<uint64_t>(PQgetvalue(stored.get(), i, 5), "lsn"));
      const auto found = pending.find(Identity{PQgetvalue(stored.get(), i, 0), PQgetvalue(stored.get(), i, 1),
                                               PQgetvalue(stored.get(), i, 2), timestamp});
      if (found == pending.end()) continue;
      const RecordRow& incoming = records[found->second];
      if (version == incoming.version && lsn == incoming.lsn) {
        ++counts->duplicates;
      } else {
        ++counts->older;
      }
      pending.erase(found);
    }
    if (!pending.empty()) {
      return Status::Internal("PostgreSQL neither wrote nor kept " + std::to_string(pending.size()) +
                              " readings of the batch");
    }
    return Status::Ok();
  }

  // Every series of the batch gets a row; attributes sent with the batch
  // replace the stored ones (latest wins), none leave them alone. Rows go in
  // statements of kRowsPerStatement; SeriesOf names each series once, so no
  // statement touches a row twice.
  Status UpsertSeries(const DecodedEnvelope& batch) {
    const std::vector<ingest::BatchSeries> series = ingest::SeriesOf(batch.records);
    const std::vector<std::string_view> casts{"", "", "", "", "integer", "", "jsonb"};
    for (size_t start = 0; start < series.size(); start += kRowsPerStatement) {
      const size_t end = std::min(series.size(), start + kRowsPerStatement);
      std::string sql =
          "INSERT INTO cairn_series (table_name, device_id, measure_name, dimensions, shard, partition_key, "
          "attributes) VALUES ";
      std::vector<std::string> params;
      int next = 0;
      for (size_t i = start; i < end; ++i) {
        const RecordRow& row = *series[i].row;
        if (i > start) sql += ", ";
        AppendRowPlaceholders(&sql, "", casts, &next);
        params.insert(params.end(),
                      {batch.header.table, row.device_id, row.measure_name,
                       ingest::TagsToJson(row.dimensions), std::to_string(row.shard),
                       PartitionKey(row.device_id, row.shard), ingest::TagsToJson(*series[i].attributes)});
      }
      sql +=
          " ON CONFLICT (table_name, device_id, measure_name, dimensions, shard) DO UPDATE SET "
          "attributes = EXCLUDED.attributes WHERE EXCLUDED.attributes <> '{}'::jsonb";
      CAIRN_RETURN_IF_ERROR(Execute(sql, params).status());
    }
    return Status::Ok();
  }

  const std::string conninfo_;
  PgConnection connection_;
};

}  // namespace

Result<std::unique_ptr<IngestSink>> OpenPostgresSink(const std::string& conninfo) {
  auto sink = std::make_unique<PostgresSink>(conninfo);
  CAIRN_RETURN_IF_ERROR(sink->Connect());
  return std::unique_ptr<IngestSink>(std::move(sink));
}

}  // namespace cairn
