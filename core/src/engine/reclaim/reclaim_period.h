// The rewrite of one period file by the sync quota (reclaimer.h): its
// sealed chunks holding unconfirmed records, oldest (lowest LSN) first, are
// replaced in one SQLite transaction (PeriodFile::ReplaceChunks) by chunks
// without those records (drop) or with one aggregate per step in their
// place (downsample, quota_format.md). Confirmed records in those chunks
// stay as they are.
//
// Why downsampled records keep LSNs of the records they replace: the
// aggregate must be sent like any unsynced record, and taking one of the
// replaced records' LSNs (the highest of its step) keeps every LSN unique
// and the sync ledger's ranges meaningful without logging anything: the
// rewrite is atomic in its period file, so a crash leaves either the raw
// records or their aggregates, never both or neither.
#pragma once

#include <cstdint>
#include <string>

#include "engine/catalog/catalog.h"
#include "engine/reclaim/reclaimer.h"

namespace cairn {

// What one period file's rewrite did.
struct PeriodReclaimResult {
  uint64_t freed_bytes = 0;  // chunk bytes removed less chunk bytes added
  uint64_t dropped = 0;      // unconfirmed records removed
  uint64_t downsampled = 0;  // unconfirmed records replaced by aggregates
  uint64_t aggregates = 0;   // aggregate records written
};

// Rewrites the period file (`table`, `period`, `start`) so that about
// `wanted` bytes of unconfirmed records (by `confirmed`) are dropped, or,
// with `downsample`, replaced by aggregates of `step_seconds` steps (a step
// holding one record, or whose aggregate would not be smaller, stays raw).
// Creates the aggregate series through `store` before any chunk refers to
// them, and forgets the file's seal mark in `catalog` before the rewrite (a
// dropped record may have been the file's highest LSN). Nothing is changed
// when an error is returned after the seal mark; NotFound when the table or
// file is gone.
Result<PeriodReclaimResult> ReclaimInPeriod(ReclaimerStore& store, Catalog& catalog, const std::string& table,
                                            Period period, int64_t start, const LsnRangeSet& confirmed,
                                            uint64_t wanted, bool downsample, int64_t step_seconds);

}  // namespace cairn
