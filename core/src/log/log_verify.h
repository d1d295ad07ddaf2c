// Checking every record of a log directory without changing it, for
// `cairnd verify` (Engine::Verify). Format: log_format.md. Mending is
// log_repair.h's.
//
// Thread-safety: not safe to run concurrently with a LogWriter or a repair
// on the same directory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cairn/platform/env.h"
#include "cairn/platform/status.h"

namespace cairn {

struct SegmentCheck {
  std::string path;
  uint64_t records = 0;   // intact records
  uint64_t readings = 0;  // LSNs those records hold
  // Damage a replay from `from_lsn` would refuse, one line each (offset,
  // reason, the LSNs it hides).
  std::vector<std::string> problems;
  // LSNs at or above `from_lsn` the damage hides: readings only the log
  // holds. 0 with problems when the damage cannot be bounded (a damaged
  // header).
  uint64_t readings_affected = 0;
  bool readings_unknown = false;
  // Damage that costs nothing: a torn tail (a write cut short, never
  // acknowledged) or damaged records whose every LSN is below `from_lsn`
  // (sealed into period files). Told, not counted as damage.
  std::vector<std::string> notes;
};

// One SegmentCheck per segment of `dir` in LSN order; readings below
// `from_lsn` (the checkpoint) are sealed elsewhere. Reads only. A missing
// `dir` is an empty log.
Result<std::vector<SegmentCheck>> CheckLogSegments(Env* env, const std::string& dir, uint64_t from_lsn);

}  // namespace cairn
