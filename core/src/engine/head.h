// Head: the records accepted and not yet sealed, held per series
// (Series::head, series.h, ascending and unique by timestamp), what they
// cost against the head's memory budget, and the latest-reading index
// (Series::latest).
//
// A record enters the head once its group commit is logged (Insert) and
// leaves it once a seal has committed it to its period file (RemoveSealed);
// a record overwritten meanwhile (same timestamp, another LSN) stays. The
// head is full for a series at seal_records entries, and over budget when
// all heads together take more than memory_budget_bytes; the maintenance
// round then seals the largest heads first (SealForBudget).
//
// Thread-safety: none. The engine calls every method under its state lock,
// exclusive for the non-const ones (and CacheLatest), shared for the rest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <vector>

#include "cairn/platform/env.h"

#include "engine/series.h"

namespace cairn {

class Head {
 public:
  // `env` (its monotonic clock stamps when a head became non-empty) must
  // outlive the head.
  Head(Env* env, size_t memory_budget_bytes, size_t seal_records);

  Head(const Head&) = delete;
  Head& operator=(const Head&) = delete;

  // Inserts `record` (logged with `lsn`) into `series`' head, replacing the
  // entry of the same timestamp if any; keeps the latest index and bumps
  // the series' generation (a latest value computed meanwhile is not
  // cached, CacheLatest).
  void Insert(Series& series, ChunkRecord record, uint64_t lsn);

  // Removes from `series`' head the entries a seal committed (`sealed`:
  // copies taken from the head before the seal, any order); an entry whose
  // LSN changed since (a newer version) stays. Raises the series'
  // sealed_max_timestamp, and restarts its head's age when entries remain.
  void RemoveSealed(Series& series, std::vector<const HeadEntry*> sealed);

  // Takes `series`' entries out of the totals (its table is dropped; the
  // series itself is destroyed by the caller).
  void Forget(const Series& series);

  // True when `series`' head holds seal_records entries or more.
  bool Full(const Series& series) const { return series.head.size() >= seal_records_; }
  // True when all heads together exceed the memory budget.
  bool OverBudget() const { return bytes_ > memory_budget_bytes_; }
  // The series to seal for the budget, among `heads` (every series whose
  // head is not empty): the largest heads first, until what is left is at
  // most half the budget. Empty when within budget.
  std::set<const Series*> SealForBudget(std::vector<const Series*> heads) const;

  size_t bytes() const { return bytes_; }
  size_t records() const { return records_; }

  // True when `series`' latest index answers a reader at `now_ns` (the
  // deletion clock): known, and not expired since. Series::latest is then
  // the latest visible record, empty when the series holds none. False:
  // the reader computes it from the head and the period files.
  static bool LatestAnswers(const Series& series, int64_t now_ns);
  // Stores `newest` (computed from a snapshot taken at `generation`) as
  // `series`' latest, unless the head changed since.
  static void CacheLatest(Series& series, uint64_t generation, const std::optional<ChunkRecord>& newest);

 private:
  Env* const env_;
  const size_t memory_budget_bytes_;
  const size_t seal_records_;
  size_t bytes_ = 0;    // HeadEntryBytes over every head
  size_t records_ = 0;  // entries in every head
};

}  // namespace cairn
