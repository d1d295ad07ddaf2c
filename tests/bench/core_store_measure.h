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

}  // namespace cairn::bench
