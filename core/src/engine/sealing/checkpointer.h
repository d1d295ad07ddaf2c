// Checkpointer: moves the engine's checkpoint (catalog.db) forward as seals
// become safe, and lets the log release what lies below it.
//
// A seal commits chunks to a period file's -wal first. That is not yet safe
// ground for releasing the log: a damaged -wal loses its frames silently
// (SQLite reads a WAL up to its first bad frame). So a seal is remembered
// (RecordSeal) until its file's WAL is checkpointed into the main database
// file (CheckpointWals); only then does its seal mark wait for the next
// Advance, which stores the marks and the new checkpoint LSN in one catalog
// transaction. The coverage check on open compares those marks with the
// files (engine_open_checks.cc).
//
// Thread-safety: every method may be called from any thread; rounds are
// serialised by an internal mutex held across their I/O (the engine calls
// them from its seal round only, so that costs no waiting).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cairn/platform/mutex.h"
#include "engine/catalog/catalog.h"
#include "engine/sealing/period_files.h"
#include "log/log_writer.h"

namespace cairn {

class Checkpointer {
 public:
  // `files`, `catalog` and `log` must outlive this object. `checkpoint_lsn`
  // is the checkpoint catalog.db holds now.
  Checkpointer(PeriodFiles* files, Catalog* catalog, LogWriter* log, uint64_t checkpoint_lsn);
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // Remembers that records with LSNs in [min_lsn, max_lsn] were committed to
  // the -wal of `table`'s period file at `start`; the log keeps them until
  // that WAL is checkpointed.
  void RecordSeal(const std::string& table, Period period, int64_t start, uint64_t min_lsn, uint64_t max_lsn)
      EXCLUDES(mutex_);

  // Checkpoints the WAL of every file with a remembered seal into its main
  // file; each that succeeds turns into a seal mark for the next Advance. A
  // file that is gone (retention dropped it) is forgotten. Returns the first
  // error; the files that failed are tried again by the next call.
  Status CheckpointWals() EXCLUDES(mutex_);

  // Moves the checkpoint to `unsealed_floor` (the lowest LSN the engine
  // still holds only in the log: heads, a group being logged, or the next
  // LSN), but not past a seal still only in a WAL and never backwards;
  // stores the pending seal marks with it, then lets the log release what
  // lies below. Does nothing when there is neither progress nor a mark.
  Status Advance(uint64_t unsealed_floor) EXCLUDES(mutex_);

  // The checkpoint catalog.db holds.
  uint64_t checkpoint_lsn() const { return checkpoint_lsn_.load(); }

  // How many seals wait for their WAL's checkpoint, and how many marks for
  // the next Advance.
  size_t WalPendingCount() const EXCLUDES(mutex_);
  size_t MarksPendingCount() const EXCLUDES(mutex_);

 private:
  struct WalSeal {
    std::string table;
    Period period = Period::kDay;
    int64_t start = 0;
    uint64_t min_lsn = UINT64_MAX, max_lsn = 0;
  };

  PeriodFiles* const files_;
  Catalog* const catalog_;
  LogWriter* const log_;

  mutable Mutex mutex_;
  // Seals committed to a period file's WAL but not yet checkpointed into
  // its main file, by path.
  std::map<std::string, WalSeal> wal_pending_ GUARDED_BY(mutex_);
  // Seal marks to record with the next checkpoint.
  std::vector<PeriodSealMark> marks_pending_ GUARDED_BY(mutex_);
  // Written under mutex_; read by anyone (statistics).
  std::atomic<uint64_t> checkpoint_lsn_;
};

}  // namespace cairn
