// How a write meets the record already stored at its identity (DESIGN §3):
// finding that record (EngineImpl::FindStored, defined in write_conflict.cc)
// and judging a write of the same version against it.
//
// Thread-safety: JudgeSameVersion is pure; FindStored runs under the
// engine's state lock like the rest of the write path.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cairn/core/engine.h"
#include "cairn/core/record.h"
#include "cairn/core/table.h"

namespace cairn {

// How a write of the same version as the stored record at its identity is
// handled (DESIGN §3). The same field set with the same values is a
// duplicate (ttl is not compared: a retry resolves it the same way).
// Otherwise, under reject, a conflict naming the first field that differs;
// under overwrite, the union of both field sets with the new values winning,
// which the caller logs in place of the write.
//
// Why the merged record, not the write, is logged: it then goes to the log
// with a new LSN like any write, and every later reader keeps one rule,
// "of equal versions the higher LSN wins": the head, replay, seals,
// compaction, reads across head, chunks and period files, and the sync feed
// (the cloud replaces a stored record only by a greater (version, LSN),
// envelope_format.md). None of them merges; each sees whole records.
struct SameVersionJudgement {
  WriteOutcome outcome = WriteOutcome::kStored;
  std::string reason;
  std::unique_ptr<Record> merged;
};

SameVersionJudgement JudgeSameVersion(const Record& r, const std::vector<Field>& stored, ConflictPolicy policy);

}  // namespace cairn
