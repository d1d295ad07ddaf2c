// The maintenance round (clock, seals, checkpoints, compaction, retention,
// sync quota, wear), the background threads that run it, statistics and
// closing.
#include <algorithm>
#include <optional>
#include <set>

#include "cairn/core/sqlite_database.h"
#include "engine/engine_impl.h"

namespace cairn {

namespace {

constexpr int64_t kNanosPerMilli = 1'000'000;

// Keeps the first error of a round: later steps still run.
void KeepFirstError(Status* round, const Status& step) {
  if (!step.ok() && round->ok()) *round = step;
}

// What the period duties need of a table, copied under the state lock.
struct TablePeriods {
  std::string name;
  Period period;
  int64_t retention_seconds;
  bool sync;
  std::set<int64_t> starts, compacted;
};

}  // namespace

Status EngineImpl::Maintain() {
  MaintainClock();
  // Period files are created, compacted and dropped by the deletion clock
  // (clock_trust.h), never by a raw wall clock that may read 1970 or have
  // jumped a year: while it is unknown, nothing is created ahead (seals
  // create the files their data needs, keyed by the data's timestamps),
  // compacted or dropped.
  const std::optional<int64_t> deletion_now = clock_->DeletionNow();
  const int64_t now_monotonic = env_->MonotonicNanos();
  // 1. Seal what is due: full heads, old heads, heads holding a closed
  //    period, and the largest heads while over the memory budget.
  CAIRN_ASSIGN_OR_RETURN(const std::set<const Series*> over_budget, HeadsOverBudget());
  const int64_t seal_age_ns = options_.seal_age_ms * kNanosPerMilli;
  Status status = SealWhere([&](const Series& s) {
    state_mutex_.AssertReaderHeld();  // SealWhere asks under the state lock
    return head_.Full(s) ||
           now_monotonic - s.head_since_monotonic_ns >= seal_age_ns || over_budget.count(&s) != 0;
  });
  // 2. Period files: the current and the next one exist before data needs
  //    them; closed periods are compacted once; periods past retention go.
  if (deletion_now) KeepFirstError(&status, TendPeriodFiles(*deletion_now));
  // 3. The sync quota, after retention freed what it could.
  KeepFirstError(&status, reclaimer_->Check());
  // 4. Flash wear, when a sample is due. A failed save of its totals is
  //    tried again at the next save and is no reason to fail the round.
  (void)flash_wear_->Sample();
  return status;
}

void EngineImpl::MaintainClock() {
  // The clock first: trust arriving stamps the hold before anything else.
  // Later rounds retry what could not be written (a full disk) and what a
  // writer held while trust was arriving.
  const bool trust_arrived = clock_->Poll();
  if (trust_arrived || (held_now_ > 0 && clock_->Trusted())) (void)ResolveHeld();
  (void)clock_->SaveIfDue(/*force=*/false);
  UpdateClockHealth();
}

Result<std::set<const Series*>> EngineImpl::HeadsOverBudget() {
  std::set<const Series*> over_budget;
  ReaderLock state(&state_mutex_);
  if (closed_) return Status::FailedPrecondition("engine is closed");
  if (head_.OverBudget()) {
    std::vector<const Series*> heads;
    for (const auto& [name, table] : tables_) {
      for (const auto& [key, series] : table->series) {
        if (!series->head.empty()) heads.push_back(series.get());
      }
    }
    over_budget = head_.SealForBudget(std::move(heads));
  }
  return over_budget;
}

Status EngineImpl::TendPeriodFiles(int64_t now) {
  std::vector<TablePeriods> tables;
  {
    ReaderLock state(&state_mutex_);
    for (const auto& [name, table] : tables_) {
      tables.push_back(TablePeriods{
          name, table->info.options.period, table->info.options.retention_seconds,
          table->info.options.sync, table->period_starts, table->compacted_periods});
    }
  }
  // The sync ledgers, read once per round and only when a file past
  // retention may have to wait for them.
  std::optional<std::map<std::string, LsnRangeSet>> confirmed;
  auto held_for_sync = [&](const TablePeriods& t, int64_t start) -> bool {
    if (!options_.retention_waits_for_sync || !t.sync) return false;
    if (!confirmed) {
      Result<std::vector<SyncLedger>> ledgers = catalog_->LoadSyncLedgers();
      if (!ledgers.ok()) return true;  // unknown: keep the file, retry next round
      confirmed.emplace();
      for (SyncLedger& ledger : *ledgers) (*confirmed)[ledger.table] = std::move(ledger.confirmed);
    }
    Result<bool> unsynced = PeriodHasUnsynced(t.name, t.period, start, (*confirmed)[t.name]);
    return !unsynced.ok() || *unsynced;
  };
  const int64_t seal_age_ns = options_.seal_age_ms * kNanosPerMilli;
  Status status;
  bool compacted_one = false;
  for (const TablePeriods& t : tables) {
    KeepFirstError(&status, CreatePeriodsAhead(t.name, t.period, t.starts, now));
    for (int64_t start : t.starts) {
      if (PastRetention(t.period, start, t.retention_seconds, now) && !held_for_sync(t, start)) {
        KeepFirstError(&status, DropExpiredPeriod(t.name, t.period, start));
        continue;
      }
      // One compaction per round keeps a round short; the period must be
      // closed for longer than heads may hold its records.
      const int64_t end = NextPeriodStart(t.period, start);
      if (!compacted_one && !t.compacted.count(start) && end + seal_age_ns <= now) {
        compacted_one = true;
        KeepFirstError(&status, CompactClosedPeriod(t.name, t.period, start));
      }
    }
  }
  return status;
}

Status EngineImpl::CreatePeriodsAhead(const std::string& table, Period period, const std::set<int64_t>& starts,
                                      int64_t now) {
  Status status;
  const int64_t current = PeriodStart(period, now);
  for (int64_t start : {current, NextPeriodStart(period, current)}) {
    if (starts.count(start)) continue;
    auto created = GetPeriodFile(table, period, start, PeriodAccess::kCreate);
    if (!created.ok()) {
      KeepFirstError(&status, created.status());
      continue;
    }
    WriterLock state(&state_mutex_);
    if (auto it = tables_.find(table); it != tables_.end()) it->second->period_starts.insert(start);
  }
  return status;
}

Status EngineImpl::DropExpiredPeriod(const std::string& table, Period period, int64_t start) {
  ForgetPeriodFiles(table, start);
  // On failure the period stays listed: the next round finishes the drop.
  CAIRN_RETURN_IF_ERROR(DropPeriodFile(table, period, start));
  const Status forgot = catalog_->ForgetSealMark(table, start);
  WriterLock state(&state_mutex_);
  if (auto it = tables_.find(table); it != tables_.end()) {
    it->second->period_starts.erase(start);
    it->second->compacted_periods.erase(start);
  }
  return forgot;
}

Status EngineImpl::CompactClosedPeriod(const std::string& table, Period period, int64_t start) {
  MutexLock seal_lock(&seal_mutex_);
  // Compaction drops expired records for good: by the deletion clock only.
  Status compacted = compactor_->CompactPeriod(table, period, start, clock_->ExpiryNow());
  if (!compacted.ok() && !compacted.Is(StatusCode::kCorruption)) return compacted;
  // A damaged file is left as it is (the compaction rolled back): retrying
  // it every round would keep the other periods waiting.
  if (!compacted.ok()) {
    NoteReadDamage(table,
                   SkippedDamage{PeriodPath(table, period, start), "a chunk the compaction read",
                                 compacted.message(), 0},
                   nullptr);
  }
  WriterLock state(&state_mutex_);
  if (auto it = tables_.find(table); it != tables_.end()) it->second->compacted_periods.insert(start);
  return Status::Ok();
}

void EngineImpl::MaintenanceLoop() {
  MutexLock lock(&background_mutex_);
  while (!stopping_) {
    background_cv_.WaitFor(&background_mutex_, std::chrono::milliseconds(options_.maintenance_interval_ms),
                           [&]() REQUIRES(background_mutex_) { return stopping_ || maintenance_requested_; });
    if (stopping_) break;
    maintenance_requested_ = false;
    background_mutex_.Unlock();
    // Errors are retried next round; the writes that depend on the log keep
    // their own error reporting.
    (void)Maintain();
    background_mutex_.Lock();
    ++maintenance_rounds_ended_;
    background_cv_.SignalAll();  // writers waiting for head room (WaitForHeadRoom)
  }
}

void EngineImpl::SyncLoop() {
  MutexLock lock(&background_mutex_);
  while (!stopping_) {
    const auto interval = std::chrono::milliseconds(std::max<int64_t>(1, options_.sync_interval_ms));
    background_cv_.WaitUntil(&background_mutex_, std::chrono::steady_clock::now() + interval);
    if (stopping_) break;
    background_mutex_.Unlock();
    (void)log_->Sync();
    background_mutex_.Lock();
  }
}

EngineStats EngineImpl::Stats() {
  EngineStats s;
  s.records_written = records_written_;
  s.records_duplicate = records_duplicate_;
  s.records_rejected = records_rejected_;
  s.records_conflict = records_conflict_;
  s.records_overwritten = records_overwritten_;
  s.records_invalid = records_invalid_;
  s.records_over_series_limit = records_over_series_limit_;
  s.chunks_sealed = chunks_sealed_;
  s.seal_copies_peak_bytes = seal_copies_peak_bytes_;
  s.chunks_decoded = chunks_decoded_;
  s.period_file_opens = period_files_.OpensSinceStart();
  s.memory_budget_bytes = options_.memory_budget_bytes;
  s.head_budget_bytes = options_.head_memory_budget_bytes;
  s.page_cache_budget_bytes = (2 * static_cast<uint64_t>(options_.writer_cache_kib) +
                               options_.max_open_period_files * static_cast<uint64_t>(options_.reader_cache_kib)) *
                              1024;
  s.sqlite_memory_bytes = SqliteMemoryUsed();
  std::vector<std::string> files;
  {
    ReaderLock state(&state_mutex_);
    s.last_lsn = next_lsn_ - 1;
    s.checkpoint_lsn = checkpointer_ ? checkpointer_->checkpoint_lsn() : 0;
    s.head_records = head_.records();
    s.head_bytes = head_.bytes();
    for (const auto& [name, table] : tables_) {
      s.series += table->series.size();
      for (const auto& [key, series] : table->series) s.series_bytes += SeriesBytes(*series);
      for (int64_t start : table->period_starts)
        files.push_back(PeriodPath(name, table->info.options.period, start));
    }
  }
  if (log_) s.log_bytes = log_->BytesOnDisk();
  for (const std::string& f : files) {
    for (const std::string& path : {f, f + "-wal"}) {
      if (auto size = env_->FileSize(path); size.ok()) s.period_file_bytes += *size;
    }
  }
  return s;
}

EngineHealth EngineImpl::Health() { return health_.Snapshot(); }

FlashWearStatus EngineImpl::FlashWear() { return flash_wear_->Report(); }

Status EngineImpl::Close() {
  {
    WriterLock state(&state_mutex_);
    if (closed_) return Status::Ok();
    closed_ = true;
  }
  {
    MutexLock lock(&background_mutex_);
    stopping_ = true;
  }
  background_cv_.SignalAll();
  if (maintenance_thread_.joinable()) maintenance_thread_.join();
  if (sync_thread_.joinable()) sync_thread_.join();
  // A group commit under way finishes before the log closes; later ones see
  // closed_ and fail.
  MutexLock commit(&commit_mutex_);
  MutexLock seal(&seal_mutex_);
  Status status;
  // The last trusted time is a lower bound the next start checks the clock
  // against; a failure to save it loses nothing acknowledged.
  if (clock_) (void)clock_->SaveIfDue(/*force=*/true);
  if (log_) status = log_->Close();
  if (Status closed = period_files_.CloseAll(); status.ok()) status = closed;
  if (catalog_) {
    Status closed = catalog_->Close();
    if (status.ok()) status = closed;
  }
  // The last sample counts the closing writes and saves the totals, so a
  // clean stop loses no counting; a start that failed (no first sample)
  // leaves no state file. Failing to save loses telemetry only.
  if (flash_wear_ && flash_wear_->HasSampled()) (void)flash_wear_->Sample(/*force=*/true);
  lock_.reset();
  return status;
}

}  // namespace cairn
