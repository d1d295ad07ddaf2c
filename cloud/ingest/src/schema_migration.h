// The part of the schema version 1 to 2 migration (ingest_schema.md §5) that
// is the same SQL in PostgreSQL and SQLite. Each sink first creates
// cairn_readings_v2 and cairn_series_v2 in its own dialect and fills
// cairn_series_v2 with every version 1 series, its dimensions as canonical
// text; these statements then copy the readings, each taking the dimensions
// of its series (none: '{}'), and let the new tables take the old names.
#pragma once

namespace cairn::ingest {

inline constexpr char kMigrateVersion1Readings[] = R"sql(
INSERT INTO cairn_readings_v2 (table_name, device_id, measure_name, dimensions, timestamp_ns, shard,
                               partition_key, version, ttl, fields)
  SELECT r.table_name, r.device_id, r.measure_name, COALESCE(s.dimensions, '{}'), r.timestamp_ns, r.shard,
         r.partition_key, r.version, r.ttl, r.fields
  FROM cairn_readings AS r LEFT JOIN cairn_series_v2 AS s
    ON s.table_name = r.table_name AND s.device_id = r.device_id AND s.measure_name = r.measure_name
       AND s.shard = r.shard;
DROP TABLE cairn_readings;
DROP TABLE cairn_series;
ALTER TABLE cairn_readings_v2 RENAME TO cairn_readings;
ALTER TABLE cairn_series_v2 RENAME TO cairn_series;
)sql";

}  // namespace cairn::ingest
