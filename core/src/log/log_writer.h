// LogWriter: appends group-commit records to the write-ahead log's segments.
//
// The log is a directory of segment files, each named after the first LSN it
// holds (format: log_format.md). One writer owns the directory while it is
// open; it never appends to a segment it did not create, so a crash's torn
// tail stays at the end of the segment it happened in, where ReplayLog cuts
// it.
//
// Failures. A failed write or fdatasync leaves the end of the active segment
// unknown: a failed write may have left part of a record behind, and a failed
// fdatasync may have dropped dirty pages while clearing their error, so a
// later fdatasync that succeeds proves nothing about them (PostgreSQL, 2018).
// The writer never retries such a sync. It *settles* instead: it cuts the
// active segment back to the length it last made durable, writes again, from
// its own memory, the records appended since that it keeps, and syncs; when
// the segment cannot be cut or synced, it starts a new segment whose header
// declares where the log validly ends, so that whatever the old one holds
// beyond that is never replayed. Until it has settled, every call that
// writes first tries to settle and fails, with the error that stands in the
// way, if it cannot: a full disk or a read-only remount refuses writes while
// it lasts, and writes resume by themselves once it is over.
//
// A record whose Append failed is not part of the log. Once the writer has
// settled it can never be replayed. If the process stops before the writer
// could settle (the device refused every write since), the next start
// replays it exactly when its bytes still read back intact, after writing
// them again so that they are on the disk (RewriteLogTail).
//
// Thread-safety: Append, ReleaseBelow, RemoveSegmentsBelow and Close are
// called by one thread at a time. Sync, Settle, StartNewSegment,
// SyncedThroughLsn, NextLsn, Failure and BytesOnDisk may be called from any
// thread, concurrently with those. Every call touching the active segment
// file holds one mutex, so a Sync running on a timer thread delays an Append
// by the duration of its fdatasync.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "cairn/platform/env.h"
#include "cairn/platform/mutex.h"
#include "cairn/platform/status.h"

namespace cairn {

struct LogWriterOptions {
  // A segment is full when the next record would take it past this size; the
  // writer then rolls to a new one. A larger record goes alone into a fresh
  // segment. Must be > 0.
  uint64_t segment_bytes = 64ull << 20;
  // ReleaseBelow starts a new segment once the active one holds at least
  // this many bytes and some of its records are released, so that the
  // released ones can go with the old segment soon after. Bounds what the
  // log keeps of records that are already checkpointed. Must be > 0.
  uint64_t release_roll_bytes = 4ull << 20;
  // The writer keeps in memory the records appended since its last sync, to
  // write them again if a sync fails. When they would exceed this many
  // bytes, Append syncs first. Must be > 0.
  uint64_t max_unsynced_bytes = 4ull << 20;
};

class LogWriter {
 public:
  // Starts a new segment in `dir` named after `next_lsn` (>= 1), creating
  // `dir` if needed, and syncs the segment and the directory. Its header
  // declares that the log's records before it end at `previous_end_lsn`
  // (<= next_lsn; the LSNs in between are left unused): pass
  // LogReplayStats::next_lsn. Run ReplayLog first: it cuts a torn tail left by
  // a crash, which would otherwise end up in the middle of the log once the
  // new segment exists, and it tells the caller where the log ends.
  // FailedPrecondition if `dir` already holds a segment at or beyond
  // `next_lsn` that contains records. When the segment cannot be created
  // because the disk is full (ResourceExhausted), the writer is returned
  // unsettled (Failure() says why) and creates it once space is back.
  // `env` must outlive the writer.
  static Result<std::unique_ptr<LogWriter>> Open(Env* env, const std::string& dir, uint64_t next_lsn,
                                                 uint64_t previous_end_lsn, const LogWriterOptions& options);

  // Open continuing the log without a gap (previous_end_lsn = next_lsn).
  static Result<std::unique_ptr<LogWriter>> Open(Env* env, const std::string& dir, uint64_t next_lsn,
                                                 const LogWriterOptions& options);

  // Destroying a writer that was not closed drops the file without syncing,
  // as a crash would.
  ~LogWriter();

  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;

  // Appends one record covering LSNs [first_lsn, first_lsn + count); with
  // `sync`, also makes it and everything before it durable before returning.
  // Without, the record reaches the OS when this returns and is durable after
  // Sync. InvalidArgument (nothing changes) when first_lsn is not NextLsn(),
  // count is 0, the range overflows, or the payload exceeds 64 MiB
  // (log_format::kMaxPayloadBytes). Rolls to a new segment first (syncing the
  // full one and the directory) when the record does not fit.
  //
  // On an unsettled writer, settles first. When writing or syncing fails,
  // the record is not part of the log: NextLsn() stays first_lsn, the writer
  // settles (see the file comment) and the write's error is returned. When
  // only the sync failed and settling wrote the record again and synced it,
  // the record is durable and OK is returned.
  Status Append(uint64_t first_lsn, uint32_t count, std::string_view payload, bool sync = false);

  // Makes every appended record durable (fdatasync of the active segment;
  // earlier segments were synced when they were rolled). Cheap when nothing
  // was appended since the last sync. On failure, settles: OK when the
  // records were written again and synced, the error otherwise (they stay in
  // memory and are written at the next settle).
  Status Sync();

  // Brings an unsettled writer back to a known state (see the file comment).
  // OK at once on a settled writer.
  Status Settle();

  // OK while the writer is settled; otherwise the failure that unsettled it.
  Status Failure() const;

  // Every LSN below this value is durable.
  uint64_t SyncedThroughLsn() const;

  // The first LSN the next Append must carry.
  uint64_t NextLsn() const;

  // Closes the active segment (after syncing it) and starts a new one at
  // NextLsn(), so that RemoveSegmentsBelow can release the old one once
  // everything in it is checkpointed. Does nothing when the active segment
  // holds no record.
  Status StartNewSegment();

  // Everything below `lsn` is kept elsewhere (checkpointed): starts a new
  // segment when the active one holds released records and either everything
  // or at least release_roll_bytes (so the log keeps about what is not yet
  // checkpointed plus a bounded slack), then removes the segments whose LSNs
  // are all below `lsn`. Does not roll an unsettled writer.
  Status ReleaseBelow(uint64_t lsn);

  // Removes every segment whose LSNs are all below `lsn`, oldest first, each
  // removal followed by a directory sync. Never removes the active segment.
  // Works on an unsettled writer (it does not touch the active segment).
  Status RemoveSegmentsBelow(uint64_t lsn);

  // Bytes of every segment in the directory, including unsynced appends.
  uint64_t BytesOnDisk() const;

  // Settles if needed, syncs and closes the active segment. Later Appends
  // fail with FailedPrecondition; a second Close returns OK. When the writer
  // cannot settle, returns why (the records it kept in memory are lost as in
  // a power cut; they were acknowledged only under a durability that allows
  // that).
  Status Close();

 private:
  LogWriter(Env* env, std::string dir, const LogWriterOptions& options, uint64_t next_lsn);

  uint64_t ActiveBytesLocked() const REQUIRES(mutex_) { return active_durable_bytes_ + unsynced_.size(); }
  // Syncs the active segment and starts the next one.
  Status RollLocked() REQUIRES(mutex_);
  // Makes the unsynced records durable; on failure settles (OK when that
  // wrote them again and synced them).
  Status SyncActiveLocked() REQUIRES(mutex_);
  // Creates the segment starting at next_lsn_ declaring `previous_end_lsn`
  // and makes it the active one; the old active segment (if any) must be
  // synced.
  Status StartSegmentLocked(uint64_t previous_end_lsn) REQUIRES(mutex_);
  // Records `failure` and tries to settle.
  Status FailLocked(const Status& failure) REQUIRES(mutex_);
  Status SettleLocked() REQUIRES(mutex_);
  // The two ways to settle: cut the active segment back and write again, or
  // leave it for a new segment that declares where the log ends.
  Status RewriteActiveLocked() REQUIRES(mutex_);
  Status AbandonActiveLocked() REQUIRES(mutex_);
  // Removes the partial segment a failed creation left, if any.
  Status RemoveStrayLocked() REQUIRES(mutex_);
  // Forgets the in-memory copy of synced records, releasing room a large
  // record needed.
  void ClearUnsyncedLocked() REQUIRES(mutex_);

  Env* const env_;
  const std::string dir_;
  const LogWriterOptions options_;

  mutable Mutex mutex_;
  std::unique_ptr<File> active_file_ GUARDED_BY(mutex_);  // null once closed, or while no segment could be created
  uint64_t active_first_lsn_ GUARDED_BY(mutex_) = 0;
  // Where the active segment's header says the log before it ends.
  uint64_t active_previous_end_lsn_ GUARDED_BY(mutex_) = 0;
  // Bytes at the start of the active segment known to be on disk: its header
  // and every record up to the last successful sync.
  uint64_t active_durable_bytes_ GUARDED_BY(mutex_) = 0;
  // Framed records appended after active_durable_bytes_, in order: what a
  // settle writes again.
  std::string unsynced_ GUARDED_BY(mutex_);
  uint64_t next_lsn_ GUARDED_BY(mutex_);
  uint64_t synced_through_lsn_ GUARDED_BY(mutex_);
  // Sizes of the segments before the active one, by first LSN.
  std::map<uint64_t, uint64_t> older_segment_bytes_ GUARDED_BY(mutex_);
  // The failure the writer has not settled yet; OK while it is settled.
  Status failure_ GUARDED_BY(mutex_);
  // A segment file whose creation failed half-way; removed when settling.
  std::string stray_segment_ GUARDED_BY(mutex_);
  bool closed_ GUARDED_BY(mutex_) = false;
};

}  // namespace cairn
