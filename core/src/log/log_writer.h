// LogWriter: appends group-commit records to the write-ahead log's segments.
//
// The log is a directory of segment files, each named after the first LSN it
// holds (format: log_format.md). One writer owns the directory while it is
// open; it never appends to a segment it did not create, so a crash's torn
// tail stays at the end of the segment it happened in, where ReplayLog cuts
// it.
//
// Thread-safety: Append, RemoveSegmentsBelow and Close are called by one
// thread at a time (the engine's group commit serialises them). Sync,
// SyncedThroughLsn, NextLsn and BytesOnDisk may be called from any thread,
// concurrently with those. Every call touching the active segment file holds
// one mutex, so a Sync running on a timer thread delays an Append by the
// duration of its fdatasync.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "cairn/platform/env.h"
#include "cairn/platform/status.h"

namespace cairn {

struct LogWriterOptions {
  // A segment is full when the next record would take it past this size; the
  // writer then rolls to a new one. A larger record goes alone into a fresh
  // segment. Must be > 0.
  uint64_t segment_bytes = 64ull << 20;
};

class LogWriter {
 public:
  // Starts a new segment in `dir` named after `next_lsn` (>= 1), creating
  // `dir` if needed, and syncs the segment and the directory. Run ReplayLog
  // first: it cuts a torn tail left by a crash, which would otherwise end up
  // in the middle of the log once the new segment exists, and it tells the
  // caller the next LSN. FailedPrecondition if `dir` already holds a segment
  // at or beyond `next_lsn` that contains records. `env` must outlive the
  // writer.
  static Result<std::unique_ptr<LogWriter>> Open(Env* env, const std::string& dir, uint64_t next_lsn,
                                                 const LogWriterOptions& options);

  // Destroying a writer that was not closed drops the file without syncing,
  // as a crash would.
  ~LogWriter();

  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;

  // Appends one record covering LSNs [first_lsn, first_lsn + count). The
  // record reaches the OS when this returns and is durable after Sync.
  // InvalidArgument (the writer stays usable) when first_lsn is not NextLsn(),
  // count is 0, the range overflows, or the payload exceeds 64 MiB
  // (log_format::kMaxPayloadBytes). Rolls to a new segment first (syncing the
  // full one and the directory) when the record does not fit. A failed write
  // or sync poisons the writer: this and every later call except
  // RemoveSegmentsBelow returns that error. The way on is a restart of the
  // log: destroy the writer, ReplayLog (it cuts what a failed write left),
  // then Open a new writer.
  Status Append(uint64_t first_lsn, uint32_t count, std::string_view payload);

  // Makes every appended record durable (fdatasync of the active segment;
  // earlier segments were synced when they were rolled). Cheap when nothing
  // was appended since the last sync. A failure poisons the writer: a failed
  // fdatasync may have discarded dirty pages, so no later sync is trusted.
  Status Sync();

  // Every LSN below this value is durable.
  uint64_t SyncedThroughLsn() const;

  // The first LSN the next Append must carry.
  uint64_t NextLsn() const;

  // Closes the active segment (after syncing it) and starts a new one at
  // NextLsn(), so that RemoveSegmentsBelow can release the old one once
  // everything in it is checkpointed. Does nothing when the active segment
  // holds no record. Thread-safe.
  Status StartNewSegment();

  // Removes every segment whose LSNs are all below `lsn`, oldest first, each
  // removal followed by a directory sync. Never removes the active segment.
  // Works on a poisoned writer (it does not touch the active segment).
  Status RemoveSegmentsBelow(uint64_t lsn);

  // Bytes of every segment in the directory, including unsynced appends.
  uint64_t BytesOnDisk() const;

  // Syncs and closes the active segment. Later Appends fail with
  // FailedPrecondition; a second Close returns OK. On a poisoned writer,
  // returns the poisoning error.
  Status Close();

 private:
  LogWriter(Env* env, std::string dir, const LogWriterOptions& options, uint64_t next_lsn);

  // Creates, heads and syncs the segment starting at next_lsn_ and makes it
  // the active one. Requires mutex_ held.
  Status StartSegmentLocked();
  // Syncs the active segment and starts the next one. Requires mutex_ held.
  Status RollLocked();
  // Records `status` as the writer's permanent error and returns it.
  Status PoisonLocked(const Status& status);

  Env* const env_;
  const std::string dir_;
  const LogWriterOptions options_;

  mutable std::mutex mutex_;
  std::unique_ptr<File> active_file_;  // null once closed
  uint64_t active_first_lsn_ = 0;
  uint64_t active_bytes_ = 0;
  // Whether the active segment holds at least one record.
  bool active_has_records_ = false;
  uint64_t next_lsn_;
  uint64_t synced_through_lsn_;
  // Sizes of the segments before the active one, by first LSN.
  std::map<uint64_t, uint64_t> older_segment_bytes_;
  // The first failed write or sync; OK while the writer is healthy.
  Status poison_;
  bool closed_ = false;
  // Reused between appends to frame a record without a fresh allocation.
  std::string record_buffer_;
};

}  // namespace cairn
