// The engine's side of the storage components: finding the period files of
// a table on open, the seal round (the Sealer writes, the heads are trimmed
// here), the checkpoint's floor, and dropping a period file. The
// maintenance round that drives them is in engine_maintenance.cc.
#include <algorithm>
#include <optional>
#include <set>

#include "engine/catalog/catalog_rebuild.h"
#include "engine/engine_impl.h"

namespace cairn {

namespace {

// Sets the sealed_max_timestamp of each series in `unresolved` that has
// chunks in `file`, and takes it out of `unresolved`.
Status ResolveSealedMaxima(PeriodFile& file, std::map<int64_t, Series*>* unresolved) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<PeriodSeries> present, file.ListSeries());
  for (const PeriodSeries& p : present) {
    auto u = unresolved->find(p.series_id);
    if (u == unresolved->end()) continue;
    CAIRN_ASSIGN_OR_RETURN(std::vector<ChunkRow> chunks,
                           file.ReadChunks(p.series_id, INT64_MIN, INT64_MAX, /*with_data=*/false));
    if (chunks.empty()) continue;
    int64_t max_end = INT64_MIN;
    for (const ChunkRow& c : chunks) max_end = std::max(max_end, c.end_ns);
    u->second->sealed_max_timestamp = max_end;
    unresolved->erase(u);
  }
  return Status::Ok();
}

}  // namespace

Status EngineImpl::LoadPeriodFiles(TableState& table) {
  const std::string dir = TableDir(table.info.name);
  CAIRN_RETURN_IF_ERROR(env_->CreateDirs(dir));
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> names, env_->ListDir(dir));
  std::set<std::string> present(names.begin(), names.end());
  for (const std::string& name : names) {
    // A WAL whose .db retention removed (DropPeriodFile) would be read as
    // the WAL of a new file created under the same name.
    if (name.size() > 7 && name.compare(name.size() - 7, 7, ".db-wal") == 0 &&
        !present.count(name.substr(0, name.size() - 4))) {
      CAIRN_RETURN_IF_ERROR(env_->RemoveFile(JoinPath(dir, name)));
      CAIRN_RETURN_IF_ERROR(env_->SyncDir(dir));
      continue;
    }
    if (name.size() < 4 || name.compare(name.size() - 3, 3, ".db") != 0) continue;
    auto start =
        ParsePeriodFileStem(table.info.options.period, std::string_view(name).substr(0, name.size() - 3));
    if (start.ok()) table.period_starts.insert(*start);
  }
  return Status::Ok();
}

Status EngineImpl::RecomputeSealedMaxima(TableState& table) {
  // Newest period first: the newest file holding a series' chunks holds its
  // largest sealed timestamp, so most series resolve in the first file.
  std::map<int64_t, Series*> unresolved;
  for (auto& [key, series] : table.series) unresolved.emplace(series->id, series.get());
  for (auto it = table.period_starts.rbegin(); it != table.period_starts.rend() && !unresolved.empty();
       ++it) {
    CAIRN_ASSIGN_OR_RETURN(
        auto handle, GetPeriodFile(table.info.name, table.info.options.period, *it, PeriodAccess::kRead));
    MutexLock file_lock(&handle->mutex);
    Status read = ResolveSealedMaxima(*handle->file, &unresolved);
    // A file whose header opened but whose rows are damaged is served as far
    // as it reads; queries skip the rest and say so.
    if (read.Is(StatusCode::kCorruption)) {
      NoteReadDamage(table.info.name,
                     SkippedDamage{handle->file->path(), "the whole file", read.message(), 0}, nullptr);
    } else {
      CAIRN_RETURN_IF_ERROR(read);
    }
  }
  return Status::Ok();
}

Status EngineImpl::SealAll() {
  return SealWhere([](const Series&) { return true; });
}

std::vector<SealJob> EngineImpl::CollectSealJobs(const std::function<bool(const Series&)>& due, size_t limit,
                                                std::set<const Series*>* taken,
                                                std::vector<Series*>* series_of_job, bool* complete) {
  std::vector<SealJob> jobs;
  size_t bytes = 0;
  *complete = true;
  for (auto& [name, table] : tables_) {
    const std::string options_text = EncodeTableOptions(table->info);
    for (auto& [key, series] : table->series) {
      if (series->head.empty() || taken->count(series.get()) != 0 || !due(*series)) continue;
      if (!jobs.empty() && bytes + series->head.bytes() > limit) {
        *complete = false;
        return jobs;
      }
      bytes += series->head.bytes();
      jobs.push_back(SealJob{name, table->info.options.period, table->info.options.retention_seconds,
                             options_text,
                             PeriodSeries{series->id, series->device_id, series->measure_name, series->shard,
                                          series->fields(), series->dimensions},
                             series->head});
      series_of_job->push_back(series.get());
      taken->insert(series.get());
    }
  }
  return jobs;
}

size_t EngineImpl::SealBatchBytes() const {
  // A quarter of the heads' budget: a stop seals the heads in four or more
  // transactions instead of one, for a peak a quarter above the budget
  // instead of twice it.
  constexpr size_t kMinBatchBytes = 1 << 20;
  return std::max(options_.head_memory_budget_bytes / 4, kMinBatchBytes);
}

Status EngineImpl::SealWhere(const std::function<bool(const Series&)>& due) {
  MutexLock seal_lock(&seal_mutex_);
  std::set<const Series*> taken;  // compared, never followed: a series may go meanwhile
  bool sealed_any = false;
  for (bool complete = false; !complete;) {
    std::vector<SealJob> jobs;
    std::vector<Series*> series;
    size_t copied_bytes = 0;
    Head* head = nullptr;  // its sealing count is atomic: released without the state lock
    {
      ReaderLock state(&state_mutex_);
      if (closed_) return Status::FailedPrecondition("engine is closed");
      jobs = CollectSealJobs(due, SealBatchBytes(), &taken, &series, &complete);
      for (const SealJob& job : jobs) copied_bytes += job.head.bytes();
      if (copied_bytes > seal_copies_peak_bytes_) seal_copies_peak_bytes_ = copied_bytes;  // under seal_mutex_
      head = &head_;
      head->AddSealing(copied_bytes);
    }
    // The jobs' copies count against the head budget until they are gone.
    struct SealingRelease {
      Head* head;
      size_t bytes;
      std::vector<SealJob>* jobs;
      ~SealingRelease() {
        jobs->clear();
        head->RemoveSealing(bytes);
      }
    } release{head, copied_bytes, &jobs};
    if (jobs.empty()) break;
    sealed_any = true;
    // Head records of periods past retention are dropped only by a clock
    // that may delete (clock_trust.h): never on an untrusted or stepped clock.
    CAIRN_ASSIGN_OR_RETURN(SealOutcome outcome, sealer_->Seal(jobs, clock_->DeletionNow()));
    ApplySealed(jobs, series, outcome);
    chunks_sealed_ += outcome.chunks_written;
    CAIRN_RETURN_IF_ERROR(outcome.status);
  }
  if (!sealed_any) {
    // A WAL an earlier round could not checkpoint is tried again.
    Status checkpointed = checkpointer_->CheckpointWals();
    CAIRN_RETURN_IF_ERROR(AdvanceCheckpoint());
    return checkpointed;
  }
  return AdvanceCheckpoint();
}

void EngineImpl::ApplySealed(const std::vector<SealJob>& jobs, const std::vector<Series*>& series_of_job,
                             const SealOutcome& outcome) {
  WriterLock state(&state_mutex_);
  for (const auto& [job, start] : outcome.written_periods) {
    // A table dropped during the seal is gone from tables_.
    if (auto it = tables_.find(jobs[job].table); it != tables_.end()) it->second->period_starts.insert(start);
  }
  // Sealed entries leave the head in one pass per series (erasing them one
  // by one would be quadratic in the head's size).
  std::map<Series*, std::vector<SealedEntry>> sealed_by_series;
  for (const SealOutcome::Range& range : outcome.sealed) {
    const SeriesHead& taken = jobs[range.job].head;
    for (size_t i = range.begin; i < range.end; ++i)
      sealed_by_series[series_of_job[range.job]].push_back({taken.timestamp(i), taken.lsn(i)});
  }
  for (auto& [series, sealed] : sealed_by_series) head_.RemoveSealed(*series, std::move(sealed));
}

uint64_t EngineImpl::UnsealedFloor() {
  ReaderLock state(&state_mutex_);
  uint64_t floor = next_lsn_;
  if (inflight_first_lsn_ != 0) floor = std::min(floor, inflight_first_lsn_);
  for (const auto& [name, table] : tables_) {
    for (const auto& [key, series] : table->series) {
      floor = std::min(floor, series->head.MinLsn());
    }
  }
  return floor;
}

Status EngineImpl::AdvanceCheckpoint() { return checkpointer_->Advance(UnsealedFloor()); }

Status EngineImpl::DropPeriodFile(const std::string& table, Period period, int64_t start) {
  // The .db goes first, and its unlink must be durable before the -wal's:
  // a power cut that undid the .db's unlink but kept the -wal's would bring
  // the file back without the commits its WAL held, in an older state. A
  // WAL left without its .db is only garbage (LoadPeriodFiles removes it).
  const std::string path = PeriodPath(table, period, start);
  const std::string dir = TableDir(table);
  if (env_->FileExists(path)) {
    CAIRN_RETURN_IF_ERROR(env_->RemoveFile(path));
  }
  CAIRN_RETURN_IF_ERROR(env_->SyncDir(dir).WithContext("dropping " + path));
  bool removed_more = false;
  for (const std::string& file : {path + "-wal", path + "-journal"}) {
    if (!env_->FileExists(file)) continue;
    CAIRN_RETURN_IF_ERROR(env_->RemoveFile(file));
    removed_more = true;
  }
  if (removed_more) CAIRN_RETURN_IF_ERROR(env_->SyncDir(dir));
  return Status::Ok();
}

}  // namespace cairn
