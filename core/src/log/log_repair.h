// The operator's repair of a write-ahead log that replay refuses (damage in
// the middle, a gap no header declares). Rules: log_format.md, "Repair".
//
// Thread-safety: not safe to run concurrently with ReplayLog, another repair
// or a LogWriter on the same directory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cairn/platform/env.h"
#include "cairn/platform/status.h"

namespace cairn {

struct LogRepairOutcome {
  // LSNs [first_lsn, end_lsn) at or above from_lsn that the log held or
  // claimed before the repair and no longer does: their readings are lost
  // unless a copy exists elsewhere (a sync to the cloud).
  struct LostLsns {
    uint64_t first_lsn = 0;
    uint64_t end_lsn = 0;
  };
  std::vector<LostLsns> lost;
  // Segments removed because every LSN in them is below from_lsn (their
  // records were checkpointed).
  uint64_t segments_trimmed = 0;
  // Bytes cut from the end of the last segment: a write a crash interrupted.
  uint64_t torn_tail_bytes = 0;
  // LSNs of intact records after the first damage that the repair kept.
  uint64_t lsns_kept_after_damage = 0;
  // One line per mend: the file, the offset, what was wrong, what was done.
  std::vector<std::string> actions;

  uint64_t LostLsnCount() const;
};

// Mends the log in `dir` so that ReplayLog(from_lsn) accepts it, keeping
// every intact record it can:
//   - segments whose LSNs are all below from_lsn are removed first;
//   - a damaged stretch of a segment is cut out: the intact records after it
//     move to a new segment whose version 2 header declares where the log
//     before it ends, so only the damaged records' LSNs are lost;
//   - a segment with a damaged header is rewritten from its first intact
//     record on; a gap between segments is declared in the later one's
//     header.
// Damage whose every LSN lies below from_lsn is left alone (replay steps
// over it). Each change is crash-safe: new files are written beside, synced
// and renamed into place before anything is cut, so an interrupted repair
// leaves a log that replays or that a second repair finishes. Returns what
// was done and which LSNs were lost; an intact log comes back unchanged with
// an empty report. FailedPrecondition for a segment of an unsupported
// format version.
Result<LogRepairOutcome> RepairLog(Env* env, const std::string& dir, uint64_t from_lsn = 0);

}  // namespace cairn
