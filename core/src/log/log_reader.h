// Reading the write-ahead log back at start-up: replay, torn-tail
// truncation, and stepping over damage among records already checkpointed.
// Format and the torn-tail/corruption rules: log_format.md. Repair of
// damage that replay must not step over: log_repair.h.
//
// Thread-safety: these functions are not safe to run concurrently with each
// other or with a LogWriter on the same directory (recovery runs them before
// the writer is opened).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
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
  // Bytes of damaged records stepped over because every LSN they could hold
  // is below from_lsn (already checkpointed elsewhere).
  uint64_t damaged_bytes_skipped = 0;
  // Bytes after the end that a segment's successor declares: what a writer
  // abandoned when it recovered from a failed write, or a repair left behind.
  uint64_t abandoned_bytes = 0;
  // LSNs that version 2 headers declare unused (never given to a record, or
  // given up by a repair).
  uint64_t unused_lsns = 0;
  // The LSN from which the log claims to hold every record: the end of the
  // log before its first segment as that segment's header declares it (or
  // its first LSN). A checkpoint below it means segments are missing. 0 when
  // the directory holds no segment.
  uint64_t start_lsn = 0;
  // The LSN after the last intact record; the first LSN of the last segment
  // when it holds no record; 1 when the directory holds no segment. Pass it
  // to LogWriter::Open as the previous end.
  uint64_t next_lsn = 1;
  // Paths of the segments read, in LSN order (segments whose LSNs are all
  // below from_lsn are not read).
  std::vector<std::string> segments;
};

// Where replay found damage it must not cut or step over silently.
struct LogCorruption {
  std::string segment;  // path of the segment file
  uint64_t offset = 0;  // byte offset in that file of the damaged record or header
  std::string reason;
};

// Calls `fn` for every intact record, in LSN order, whose LSN range
// [first_lsn, first_lsn + count) reaches from_lsn or beyond; records entirely
// below from_lsn are not delivered, and segments whose LSNs are all below
// from_lsn are not read. `payload` is valid only during the call. A non-OK
// status from `fn` stops the replay and is returned as is.
//
// A torn tail (a bad record in the last segment with no intact record after
// it, a zero-filled tail) is truncated through the Env, the truncation synced,
// and counted in stats->torn_tail_bytes. Damage whose every LSN lies below
// from_lsn (the next intact record, or the next segment, starts at or below
// it) is stepped over and counted in stats->damaged_bytes_skipped. Any other
// damage (a bad record followed by an intact one, a bad record in an earlier
// segment, an LSN gap or overlap that no header declares, a damaged segment
// header) returns Corruption naming the segment file and byte offset, fills
// `corruption` if non-null, and modifies nothing; records before it have
// already been passed to `fn`. A segment of an unsupported format version
// returns FailedPrecondition. A missing `dir` is an empty log.
//
// `stats` (may be null) is reset first and describes what was read, also when
// an error is returned.
Status ReplayLog(
    Env* env, const std::string& dir, uint64_t from_lsn,
    const std::function<Status(uint64_t first_lsn, uint32_t count, std::string_view payload)>& fn,
    LogReplayStats* stats, LogCorruption* corruption = nullptr);

// Writes the records of the last segment (and of any segment after the last
// one with a valid header) again over themselves and syncs them. A failed
// fdatasync leaves its pages clean in the page cache without having written
// them: replay would read records the disk does not hold, and a sync alone
// would not write them (log_format.md, "Start-up"). Run before ReplayLog
// when the log is opened. Segments holding only a header are skipped. A
// missing `dir` is fine.
Status RewriteLogTail(Env* env, const std::string& dir);

// The first LSN the oldest segment of `dir` may hold (its name), or nullopt
// for an empty or missing log. The log holds nothing below it.
Result<std::optional<uint64_t>> LogFirstSegmentLsn(Env* env, const std::string& dir);

}  // namespace cairn
