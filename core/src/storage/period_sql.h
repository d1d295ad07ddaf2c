// The SQL of a period file (period_format.md §2): its schema and every
// statement PeriodFile prepares, in one place beside the format they follow.
#pragma once

namespace cairn::period_sql {

// Chunks keep their bytes in an ordinary rowid table rather than a WITHOUT
// ROWID one: a WITHOUT ROWID row is stored in an index b-tree, whose rows
// spill to overflow pages past about a quarter of a page, so kilobyte-sized
// chunks would waste most of an overflow page each. A rowid row stays on its
// leaf page up to nearly a whole page. The unique index gives each chunk its
// identity (series_id, start_ns, seq) and serves the time-range lookups.
constexpr const char* kCreateSchema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;
CREATE TABLE series(
  series_id INTEGER PRIMARY KEY,
  device_id TEXT NOT NULL,
  measure_name TEXT NOT NULL,
  shard INTEGER NOT NULL,
  fields TEXT NOT NULL,
  dimensions TEXT NOT NULL,
  max_span_ns INTEGER NOT NULL DEFAULT 0);
CREATE TABLE schemas(
  schema_id INTEGER PRIMARY KEY,
  fields TEXT NOT NULL UNIQUE);
CREATE TABLE chunks(
  chunk_id INTEGER PRIMARY KEY,
  series_id INTEGER NOT NULL,
  start_ns INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  count INTEGER NOT NULL,
  min_lsn INTEGER NOT NULL,
  max_lsn INTEGER NOT NULL,
  max_version INTEGER NOT NULL,
  min_ttl INTEGER NOT NULL,
  schema_id INTEGER NOT NULL,
  stats BLOB NOT NULL,
  lsns BLOB NOT NULL,
  data BLOB NOT NULL);
CREATE UNIQUE INDEX chunks_by_series_start ON chunks(series_id, start_ns, seq);
CREATE INDEX chunks_by_min_lsn ON chunks(min_lsn);
CREATE INDEX chunks_by_max_lsn ON chunks(max_lsn, min_lsn);
)sql";

constexpr const char* kInsertMeta = "INSERT INTO meta(key, value) VALUES(?1, ?2)";
constexpr const char* kSelectMeta = "SELECT key, value FROM meta";
constexpr const char* kCountTables =
    "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN ('meta', 'series', 'schemas', "
    "'chunks')";
constexpr const char* kCountAllTables = "SELECT count(*) FROM sqlite_schema WHERE type = 'table'";
constexpr const char* kSelectCompacted = "SELECT value FROM meta WHERE key = 'compacted'";
constexpr const char* kMarkCompacted = "UPDATE meta SET value = 1 WHERE key = 'compacted'";

constexpr const char* kSelectSeriesIdentity =
    "SELECT device_id, measure_name, shard FROM series WHERE series_id = ?1";
constexpr const char* kUpsertSeries =
    "INSERT INTO series(series_id, device_id, measure_name, shard, fields, dimensions) "
    "VALUES(?1, ?2, ?3, ?4, ?5, ?6) "
    "ON CONFLICT(series_id) DO UPDATE SET fields = excluded.fields, dimensions = excluded.dimensions";
constexpr const char* kSelectSeriesFields = "SELECT fields FROM series WHERE series_id = ?1";
constexpr const char* kSelectSeriesSpan = "SELECT max_span_ns FROM series WHERE series_id = ?1";
constexpr const char* kWidenSeriesSpan =
    "UPDATE series SET max_span_ns = max(max_span_ns, ?2) WHERE series_id = ?1";
constexpr const char* kSetSeriesSpan = "UPDATE series SET max_span_ns = ?2 WHERE series_id = ?1";
constexpr const char* kListSeries =
    "SELECT series_id, device_id, measure_name, shard, fields, dimensions FROM series ORDER BY series_id";

constexpr const char* kSelectSchemaByFields = "SELECT schema_id FROM schemas WHERE fields = ?1";
constexpr const char* kSelectSchemaById = "SELECT fields FROM schemas WHERE schema_id = ?1";
constexpr const char* kInsertSchema = "INSERT INTO schemas(fields) VALUES(?1)";
constexpr const char* kDeleteUnusedSchemas =
    "DELETE FROM schemas WHERE schema_id NOT IN (SELECT schema_id FROM chunks)";

constexpr const char* kNextSeq =
    "SELECT coalesce(max(seq) + 1, 0) FROM chunks WHERE series_id = ?1 AND start_ns = ?2";
constexpr const char* kInsertChunk =
    "INSERT INTO chunks(series_id, start_ns, seq, end_ns, count, min_lsn, max_lsn, max_version, min_ttl, "
    "schema_id, stats, data, lsns) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)";
constexpr const char* kDeleteSeriesChunks = "DELETE FROM chunks WHERE series_id = ?1";
constexpr const char* kDeleteChunk = "DELETE FROM chunks WHERE series_id = ?1 AND start_ns = ?2 AND seq = ?3";

// Overlap of [start_ns, end_ns] with [from, to): start_ns < to and
// end_ns >= from. No chunk of the series is longer than its max_span_ns, so
// start_ns >= from - max_span_ns bounds the index scan from below too.
// Columns in the order ReadChunkRows expects; `data` last, when wanted.
constexpr const char* kSelectOverlappingWithData =
    "SELECT series_id, start_ns, seq, end_ns, count, min_lsn, max_lsn, max_version, min_ttl, "
    "schema_id, stats, lsns, data FROM chunks "
    "WHERE series_id = ?1 AND start_ns >= ?2 AND start_ns < ?3 AND end_ns >= ?4 ORDER BY start_ns, seq";
constexpr const char* kSelectOverlappingWithoutData =
    "SELECT series_id, start_ns, seq, end_ns, count, min_lsn, max_lsn, max_version, min_ttl, "
    "schema_id, stats, lsns FROM chunks "
    "WHERE series_id = ?1 AND start_ns >= ?2 AND start_ns < ?3 AND end_ns >= ?4 ORDER BY start_ns, seq";
constexpr const char* kListOverlapping =
    "SELECT series_id, start_ns, seq, end_ns, count, min_lsn, max_lsn, max_version, min_ttl FROM chunks "
    "WHERE series_id = ?1 AND start_ns >= ?2 AND start_ns < ?3 AND end_ns >= ?4 ORDER BY start_ns, seq";
constexpr const char* kSelectChunkBody =
    "SELECT data, lsns FROM chunks WHERE series_id = ?1 AND start_ns = ?2 AND seq = ?3";
constexpr const char* kSelectAllOfSeries =
    "SELECT series_id, start_ns, seq, end_ns, count, min_lsn, max_lsn, max_version, min_ttl, "
    "schema_id, stats, lsns, data FROM chunks WHERE series_id = ?1 ORDER BY start_ns, seq";

// Chunks holding LSNs in (?1, ?2]: those that begin inside the range (by
// chunks_by_min_lsn, ascending, at most ?3) and those that began at or before
// ?1 and reach past it (by the covering chunks_by_max_lsn). The union is
// ordered by min_lsn.
constexpr const char* kSelectByLsnWithData =
    "SELECT series_id, start_ns, seq, end_ns, count, min_lsn, max_lsn, max_version, min_ttl, "
    "schema_id, stats, lsns, length(data), data FROM chunks WHERE chunk_id IN ("
    "SELECT chunk_id FROM chunks WHERE max_lsn > ?1 AND min_lsn <= ?1 "
    "UNION ALL SELECT * FROM (SELECT chunk_id FROM chunks WHERE min_lsn > ?1 AND min_lsn <= ?2 "
    "ORDER BY min_lsn LIMIT ?3)) ORDER BY min_lsn";
constexpr const char* kSelectByLsnWithoutData =
    "SELECT series_id, start_ns, seq, end_ns, count, min_lsn, max_lsn, max_version, min_ttl, "
    "schema_id, stats, lsns, length(data) FROM chunks WHERE chunk_id IN ("
    "SELECT chunk_id FROM chunks WHERE max_lsn > ?1 AND min_lsn <= ?1 "
    "UNION ALL SELECT * FROM (SELECT chunk_id FROM chunks WHERE min_lsn > ?1 AND min_lsn <= ?2 "
    "ORDER BY min_lsn LIMIT ?3)) ORDER BY min_lsn";
constexpr const char* kSelectMaxLsn = "SELECT max(max_lsn) FROM chunks";

}  // namespace cairn::period_sql
