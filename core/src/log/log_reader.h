// Reading the write-ahead log back: replay at start-up, torn-tail truncation,
// and the operator's repair. Format and the torn-tail/corruption rules:
// log_format.md.
//
// Thread-safety: these functions are not safe to run concurrently with each
// other or with a LogWriter on the same directory (recovery runs them before
// the writer is opened).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/platform/env.h"
#include "cairn/platform/status.h"

namespace cairn {

struct LogReplayStats {
  // Intact records read (delivered or skipped as below from_lsn).
  uint64_t records = 0;
  // Payload bytes of those records.
  uint64_t payload_bytes = 0;
  // Bytes cut from the end of the last segment (or the size of a last segment
  // whose creation was torn and which was removed).
  uint64_t torn_tail_bytes = 0;
  // The LSN after the last intact record; the first LSN of the last segment
  // when it holds no record; 1 when the directory holds no segment. Pass it
  // to LogWriter::Open.
  uint64_t next_lsn = 1;
  // Paths of the segments read, in LSN order.
  std::vector<std::string> segments;
};

// Where replay found damage it must not cut silently.
struct LogCorruption {
  std::string segment;  // path of the segment file
  uint64_t offset = 0;  // byte offset in that file of the damaged record or header
  std::string reason;
};

// Calls `fn` for every intact record, in LSN order, whose LSN range
// [first_lsn, first_lsn + count) reaches from_lsn or beyond; records entirely
// below from_lsn are read and checksummed but not delivered. `payload` is
// valid only during the call. A non-OK status from `fn` stops the replay and
// is returned as is.
//
// A torn tail (a bad record in the last segment with no intact record after
// it, a zero-filled tail) is truncated through the Env, the truncation synced,
// and counted in stats->torn_tail_bytes. Any other damage (a bad record
// followed by an intact one, a bad record in an earlier segment, an LSN gap or
// overlap between records or segments, a damaged segment header) returns
// Corruption naming the segment file and byte offset, fills `corruption` if
// non-null, and modifies nothing; records before it have already been passed
// to `fn`. A segment of an unsupported format version returns
// FailedPrecondition. A missing `dir` is an empty log.
//
// `stats` (may be null) is reset first and describes what was read, also when
// an error is returned.
Status ReplayLog(
    Env* env, const std::string& dir, uint64_t from_lsn,
    const std::function<Status(uint64_t first_lsn, uint32_t count, std::string_view payload)>& fn,
    LogReplayStats* stats, LogCorruption* corruption = nullptr);

// For the operator's repair command: truncates the log right after its last
// intact record. Every segment after the one holding the first damage is
// removed; that segment is cut at the damaged record, rewritten as an empty
// segment when its header is damaged (so the next LSN stays known), or
// removed when it does not continue its predecessor. Changes are synced. Returns the bytes cut,
// including a torn tail; 0 when the log was intact. Records after the damage
// are lost. FailedPrecondition for a segment of an unsupported format version.
Result<uint64_t> RepairLog(Env* env, const std::string& dir);

}  // namespace cairn
