// IngestSink: where the ingest service stores the batches it accepts.
//
// A sink applies one verified envelope in one database transaction: its
// records under the identity and version rule of DESIGN §3 (the identity
// includes the series' dimensions), its series with their attributes, and a
// row naming the batch. Applying the same batch again
// changes nothing and counts its records as duplicates, so a gateway that
// re-sends a batch whose receipt it never saw does no harm.
//
// Two sinks share one schema (cloud/ingest/ingest_schema.md): PostgreSQL
// (postgres_sink.h) for the cloud and SQLite (below) for a quick start.
//
// Thread-safety: a sink is used by one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cairn/core/engine.h"
#include "cairn/platform/env.h"
#include "cairn/platform/status.h"
#include "cairn/sync/sync_envelope.h"

namespace cairn {

// What applying one batch did to its records. Every record of the batch is
// counted exactly once.
struct SinkCounts {
  uint64_t inserted = 0;    // a new identity
  // Records are ordered by (version, LSN), as their gateway orders them
  // (envelope_format.md §4).
  uint64_t replaced = 0;    // replaced a stored record of lower (version, LSN)
  uint64_t duplicates = 0;  // equal version and LSN to the stored (or batch) record: ignored
  uint64_t older = 0;       // lower (version, LSN) than the stored (or batch) record: ignored
  friend bool operator==(const SinkCounts&, const SinkCounts&) = default;
};

// One stored reading, as read back from a sink.
struct StoredReading {
  std::string table;
  // Fields sorted by name; attributes are those stored for its series
  // (table, device_id, measure_name, dimensions, shard), empty without one.
  RecordRow row;
};

// One stored series: its identity and its attributes as last sent.
struct StoredSeries {
  std::string table;
  std::string device_id;
  std::string measure_name;
  TagMap dimensions;
  int shard = 0;
  TagMap attributes;
  friend bool operator==(const StoredSeries&, const StoredSeries&) = default;
};

// The row a sink keeps per batch it applied.
struct StoredBatch {
  EnvelopeHeader header;
  uint64_t records = 0;                     // records in the envelope
  SinkCounts counts;                        // of the first delivery
  int64_t received_at_unix_nanos = 0;       // first delivery
  int64_t last_received_at_unix_nanos = 0;  // latest delivery
  uint64_t deliveries = 0;
};

class IngestSink {
 public:
  virtual ~IngestSink() = default;

  // Stores `batch` in one transaction: every record whose identity (table,
  // device_id, measure_name, dimensions, timestamp) is new, or whose version
  // is higher than the stored one; a row per series, whose attributes the
  // batch's replace when it carries any (latest wins); and the batch row (an existing one only counts the
  // delivery). Returns what happened to the records once the transaction committed; on an error nothing of
  // the batch is stored. Errors:
  //   InvalidArgument  the sink can never store this batch (a value the
  //                    database cannot hold); retrying will not help;
  //   anything else    transient (connection lost, serialization failure,
  //                    disk full): call Reconnect and try again.
  // `received_at_unix_nanos` is recorded in the batch row.
  virtual Result<SinkCounts> ApplyBatch(const DecodedEnvelope& batch, int64_t received_at_unix_nanos) = 0;

  // Re-establishes the database connection after a transient error. OK when
  // the sink is usable again.
  virtual Status Reconnect() = 0;

  // Everything stored, ordered by (table, device_id, measure_name,
  // dimensions, timestamp), dimensions by their stored text
  // (ingest_schema.md §1); for tests and tools.
  virtual Result<std::vector<StoredReading>> ReadReadings() = 0;
  // Every series, ordered by (table, device_id, measure_name, dimensions,
  // shard).
  virtual Result<std::vector<StoredSeries>> ReadSeries() = 0;
  // Every batch row, ordered by (gateway, table, lane, batch_sequence).
  virtual Result<std::vector<StoredBatch>> ReadBatches() = 0;

  // "postgresql" or "sqlite", for logs.
  virtual std::string_view kind() const = 0;
};

// Opens (creating if missing) the SQLite database at `path` with the ingest
// schema: WAL, synchronous=FULL (a batch is confirmed to the gateway only
// after its commit, so the commit must survive a power cut). Files go through
// `env`, which must outlive the sink. The connection holds the file
// exclusively: read it with this sink's Read* methods, or after the sink is
// closed. Busy if another sink of this process has it open.
Result<std::unique_ptr<IngestSink>> OpenSqliteSink(Env* env, const std::string& path);

}  // namespace cairn
