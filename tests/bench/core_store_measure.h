// Measuring one store for `cairn-bench core`: ingest of the main data set and
// the one-day series, then timed latest, range and aggregate queries. Runs in
// the child process of one store (BENCHMARK.md).
#pragma once

#include <cstdint>
#include <string>

#include "cairn/platform/status.h"
#include "cairn/text/json_value.h"

#include "bench_common.h"
#include "bench_store.h"

namespace cairn::bench {

// Readings of the main data set (the day series not included).
uint64_t MainReadings(const DataPlan& plan);

// Opens `store` in `directory`, ingests the main data set and the one-day
// series, times the queries and closes it. The result holds the timings and
// sizes of the report and, under "checks", the answers both stores must agree
// on. Fails with the first store error, or when two runs of the same query
// answer differently.
Result<JsonValue> MeasureStore(BenchStore* store, const DataPlan& plan, const std::string& directory);

// What a gateway with many sensors holds between seals: opens `store` in
// `directory`, writes `records_each` records (three fields, one a second)
// to each of `series` devices, and returns the process's resident memory
// then ("rss_mb") and at its peak ("rss_peak_mb"), with the counts. Closes
// the store. Run it in a fresh child: the peak is the process's.
Result<JsonValue> MeasureManySeries(BenchStore* store, const std::string& directory, uint32_t series,
                                    uint32_t records_each);

}  // namespace cairn::bench
