// The version rule of DESIGN §3 applied inside one batch, before the sink
// compares with what it stored: a batch may carry one identity several times
// (a rewrite with a higher version, a retried write), and one database
// statement must not touch a row twice.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <vector>

#include "cairn/core/engine.h"
#include "cairn/ingest/ingest_sink.h"

namespace cairn::ingest {

struct BatchPlan {
  // Indexes into the batch's records: one per identity (device_id,
  // measure_name, dimensions, timestamp), the record of the greatest
  // (version, LSN) (the first of them when several share both), ordered by
  // identity so that concurrent writers lock rows in one order.
  std::vector<size_t> winners;
  // The other records: `duplicates` equal the winner's version and LSN (a
  // record sent twice), `older` are below it. inserted and replaced stay 0.
  SinkCounts losers;
};

BatchPlan PlanBatch(const std::vector<RecordRow>& records);

// One series of a batch (device_id, measure_name, dimensions, shard).
struct BatchSeries {
  const RecordRow* row = nullptr;  // its first record, which names it
  // Those of its last record that carries any (the latest sent); empty
  // when none does, which leaves the stored ones alone.
  const TagMap* attributes = nullptr;
};

// The batch's series in the order of their first record.
std::vector<BatchSeries> SeriesOf(const std::vector<RecordRow>& records);

}  // namespace cairn::ingest
