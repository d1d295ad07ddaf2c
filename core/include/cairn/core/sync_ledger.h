// The sync ledger (DESIGN §6): what of a table has reached the cloud, kept in
// the catalog beside the table, so that the store itself is the outbox.
//
// Every stored record has a log sequence number (LSN), unique across the
// data directory. A table's ledger holds the LSN ranges whose records the
// cloud has confirmed, the batches on their way, and the next batch sequence
// of each lane. A record is unsynced exactly when its LSN lies in no
// confirmed range; the sync sender reads those records back from the engine
// (Engine::ReadChanges) and sends them again until they are confirmed.
//
// The ledger is written by the sync sender at its own pace (confirmations
// are batched into one catalog commit every few seconds, which spares the SD
// card a sync per batch). A crash can therefore forget the last
// confirmations; their records are sent again and the ingest side drops
// them as duplicates (same identity and version). It can never remember a
// confirmation that did not happen.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/platform/status.h"

namespace cairn {

// The sync lanes. The numeric values are stored in the ledger, envelopes
// and receipts and must never be renumbered.
enum class SyncLane : uint8_t {
  kLive = 0,      // records as they are acknowledged
  kAlarm = 1,     // sparse-index matches, sent first
  kBackfill = 2,  // older unconfirmed records, oldest first
  kArchive = 3,   // records of periods past retention, sent before their file is dropped
};

inline constexpr SyncLane kAllSyncLanes[] = {SyncLane::kLive, SyncLane::kAlarm, SyncLane::kBackfill,
                                             SyncLane::kArchive};

// "live", "alarm", "backfill", "archive".
std::string_view SyncLaneName(SyncLane lane);
// The inverse of SyncLaneName; InvalidArgument for any other text.
Result<SyncLane> ParseSyncLane(std::string_view name);

// The LSNs first..last, both included; first <= last.
struct LsnRange {
  uint64_t first = 0;
  uint64_t last = 0;
  friend bool operator==(const LsnRange&, const LsnRange&) = default;
};

// A set of LSNs as disjoint, non-adjacent ranges in ascending order.
class LsnRangeSet {
 public:
  LsnRangeSet() = default;
  // Normalises `ranges` (any order, overlapping or adjacent allowed;
  // entries with first > last are ignored).
  explicit LsnRangeSet(std::vector<LsnRange> ranges);

  // Adds first..last (ignored when first > last), merging neighbours.
  void Add(uint64_t first, uint64_t last);
  bool Contains(uint64_t lsn) const;
  // True when every LSN of first..last is in the set.
  bool ContainsAll(uint64_t first, uint64_t last) const;
  // The highest LSN W such that every LSN of from..W is in the set, or
  // from - 1 when `from` itself is not (W = the watermark from `from` on).
  uint64_t ContiguousFrom(uint64_t from) const;
  // The ranges of 1..through not in the set, ascending.
  std::vector<LsnRange> Gaps(uint64_t through) const;

  const std::vector<LsnRange>& ranges() const { return ranges_; }
  bool empty() const { return ranges_.empty(); }
  friend bool operator==(const LsnRangeSet&, const LsnRangeSet&) = default;

 private:
  std::vector<LsnRange> ranges_;
};

// A batch sent and not yet confirmed.
struct SyncBatchState {
  SyncLane lane = SyncLane::kLive;
  uint64_t sequence = 0;
  // The LSNs the batch covers: when confirmed, first_lsn..last_lsn joins the
  // confirmed set (the batch holds every unsynced record of the table in it).
  uint64_t first_lsn = 0;
  uint64_t last_lsn = 0;
  uint64_t records = 0;
  uint64_t bytes = 0;              // the envelope's size
  int64_t first_sent_unix_ns = 0;  // wall clock of the first attempt
  uint32_t attempts = 0;
  std::string last_error;  // empty when none
  friend bool operator==(const SyncBatchState&, const SyncBatchState&) = default;
};

// One table's ledger.
struct SyncLedger {
  std::string table;
  LsnRangeSet confirmed;
  std::vector<SyncBatchState> in_flight;
  // Per lane, the sequence the next batch gets (1 when absent).
  std::map<SyncLane, uint64_t> next_sequence;
  friend bool operator==(const SyncLedger&, const SyncLedger&) = default;
};

}  // namespace cairn
