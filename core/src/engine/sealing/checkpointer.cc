// The checkpoint and the period files' WAL checkpoints (checkpointer.h).
#include "engine/sealing/checkpointer.h"

#include <algorithm>

namespace cairn {

Checkpointer::Checkpointer(PeriodFiles* files, Catalog* catalog, LogWriter* log, uint64_t checkpoint_lsn)
    : files_(files), catalog_(catalog), log_(log), checkpoint_lsn_(checkpoint_lsn) {}

void Checkpointer::RecordSeal(const std::string& table, Period period, int64_t start, uint64_t min_lsn,
                              uint64_t max_lsn) {
  MutexLock lock(&mutex_);
  WalSeal& pending = wal_pending_[files_->PeriodPath(table, period, start)];
  pending.table = table;
  pending.period = period;
  pending.start = start;
  pending.min_lsn = std::min(pending.min_lsn, min_lsn);
  pending.max_lsn = std::max(pending.max_lsn, max_lsn);
}

Status Checkpointer::CheckpointWals() {
  MutexLock lock(&mutex_);
  Status first_error;
  for (auto it = wal_pending_.begin(); it != wal_pending_.end();) {
    const WalSeal& seal = it->second;
    auto handle = files_->Get(seal.table, seal.period, seal.start, PeriodAccess::kWrite);
    Status status = handle.status();
    if (status.ok()) {
      MutexLock file_lock(&(*handle)->mutex);
      status = (*handle)->file->CheckpointWal();
    }
    if (status.Is(StatusCode::kNotFound)) {
      // Retention dropped the file meanwhile: nothing is left to protect.
      it = wal_pending_.erase(it);
      continue;
    }
    if (!status.ok()) {
      // The log keeps the seal's records (Advance stops below them) until a
      // later round checkpoints the file.
      if (first_error.ok()) first_error = status.WithContext("checkpointing " + it->first);
      ++it;
      continue;
    }
    marks_pending_.push_back(PeriodSealMark{seal.table, seal.start, seal.max_lsn});
    it = wal_pending_.erase(it);
  }
  return first_error;
}

Status Checkpointer::Advance(uint64_t unsealed_floor) {
  MutexLock lock(&mutex_);
  uint64_t checkpoint = unsealed_floor;
  for (const auto& [path, seal] : wal_pending_) checkpoint = std::min(checkpoint, seal.min_lsn);
  if (checkpoint <= checkpoint_lsn_ && marks_pending_.empty()) return Status::Ok();
  checkpoint = std::max(checkpoint, checkpoint_lsn_.load());
  // Sealed chunks below this point are in their period files' main database
  // files, so the log below it is no longer needed to recover them. The seal
  // marks go in the same transaction: the coverage check on open compares
  // them with the files.
  CAIRN_RETURN_IF_ERROR(catalog_->SetCheckpoint(checkpoint, marks_pending_));
  marks_pending_.clear();
  checkpoint_lsn_ = std::max(checkpoint_lsn_.load(), checkpoint);
  // The log lets go of what is sealed, rolling its active segment when that
  // holds enough sealed records (LogWriter::ReleaseBelow).
  return log_->ReleaseBelow(checkpoint);
}

size_t Checkpointer::WalPendingCount() const {
  MutexLock lock(&mutex_);
  return wal_pending_.size();
}

size_t Checkpointer::MarksPendingCount() const {
  MutexLock lock(&mutex_);
  return marks_pending_.size();
}

}  // namespace cairn
