// Period files, sealing, checkpoints and compaction (the maintenance
// round that drives them is in engine_maintenance.cc).
#include <algorithm>
#include <optional>

#include "engine/catalog_rebuild.h"
#include "engine/engine_impl.h"

namespace cairn {

namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;
// A chunk never holds more records than this, so one decode stays small.
constexpr size_t kMaxRecordsPerChunk = 8192;

bool Expired(const ChunkRecord& r, int64_t now_ns) { return r.ttl != 0 && r.ttl <= now_ns / kNanosPerSecond; }

// Closes a handle's file under its mutex. The lock must end before the
// handle is erased from the cache: erasing may destroy the mutex.
void CloseHandle(PeriodHandle& handle) {
  std::lock_guard file_lock(handle.mutex);
  (void)handle.file->Close();
}

}  // namespace

Status EncodeSeriesChunks(int64_t series_id, const std::vector<ChunkField>& schema,
                          std::vector<ChunkRecord>& records, const std::vector<uint64_t>& lsns,
                          size_t max_records, std::vector<ChunkRow>* out) {
  // Wide series get shorter chunks: the codec bounds records x fields.
  const size_t cell_bound = kMaxChunkCells / std::max<size_t>(schema.size(), 1);
  max_records = std::clamp<size_t>(std::min(max_records, cell_bound), 1, kMaxRecordsPerChunk);
  for (size_t begin = 0; begin < records.size(); begin += max_records) {
    const size_t end = std::min(records.size(), begin + max_records);
    std::span<const ChunkRecord> part(records.data() + begin, end - begin);
    ChunkStats stats;
    CAIRN_ASSIGN_OR_RETURN(std::string data, EncodeChunk(schema, part, &stats));
    ChunkRow row;
    row.series_id = series_id;
    row.start_ns = part.front().timestamp;
    row.end_ns = part.back().timestamp;
    row.count = static_cast<uint32_t>(part.size());
    row.min_lsn = *std::min_element(lsns.begin() + begin, lsns.begin() + end);
    row.max_lsn = *std::max_element(lsns.begin() + begin, lsns.begin() + end);
    row.lsns.assign(lsns.begin() + begin, lsns.begin() + end);
    row.max_version = stats.max_version;
    row.min_ttl = stats.min_ttl;
    row.fields = schema;
    row.stats = EncodeChunkStats(stats, schema);
    row.data = std::move(data);
    out->push_back(std::move(row));
  }
  return Status::Ok();
}

Status MergeChunkRecords(const ChunkRow& chunk, std::vector<ChunkField>* schema, NewestRecords* newest) {
  CAIRN_ASSIGN_OR_RETURN(DecodedChunk decoded, DecodeChunk(chunk.data));
  std::vector<size_t> column_to_schema;
  for (const ChunkColumn& column : decoded.columns) {
    auto it = std::find_if(schema->begin(), schema->end(),
                           [&](const ChunkField& f) { return f.name == column.field.name; });
    if (it == schema->end()) {
      schema->push_back(column.field);
      it = schema->end() - 1;
    }
    column_to_schema.push_back(static_cast<size_t>(it - schema->begin()));
  }
  if (chunk.lsns.size() != decoded.size()) {
    return Status::Corruption("chunk at " + std::to_string(chunk.start_ns) + " holds " +
                              std::to_string(decoded.size()) + " records but " +
                              std::to_string(chunk.lsns.size()) + " LSNs");
  }
  for (size_t i = 0; i < decoded.size(); ++i) {
    ChunkRecord r;
    r.timestamp = decoded.timestamps[i];
    r.version = decoded.versions[i];
    r.ttl = decoded.ttls[i];
    r.values.resize(schema->size());
    for (size_t c = 0; c < decoded.columns.size(); ++c) {
      if (decoded.columns[c].present[i]) r.values[column_to_schema[c]] = decoded.columns[c].values[i];
    }
    auto [it, inserted] = newest->try_emplace(r.timestamp, r, chunk.lsns[i]);
    // Of equal versions the later LSN wins (on_conflict overwrite).
    if (!inserted && std::pair(r.version, chunk.lsns[i]) > std::pair(it->second.first.version, it->second.second))
      it->second = {std::move(r), chunk.lsns[i]};
  }
  return Status::Ok();
}

std::string EngineImpl::TableDir(const std::string& table) const { return JoinPath(data_dir_, table); }

std::string EngineImpl::PeriodPath(const std::string& table, Period period, int64_t start) const {
  return JoinPath(TableDir(table), PeriodFileStem(period, start) + ".db");
}

Result<std::shared_ptr<PeriodHandle>> EngineImpl::GetPeriodFile(const std::string& table, Period period,
                                                                int64_t start, PeriodAccess access) {
  const std::string path = PeriodPath(table, period, start);
  // The current and the next period take the writes and get the writer's
  // large cache; older ones are read-mostly and get the small one.
  const int64_t now = env_->NowUnixNanos();
  const int64_t current = PeriodStart(period, now);
  const bool hot = start == current || start == NextPeriodStart(period, current);
  const bool writable = access != PeriodAccess::kRead || hot;
  const int cache_kib = hot ? options_.writer_cache_kib : options_.reader_cache_kib;
  std::shared_ptr<PeriodHandle> handle;
  {
    std::lock_guard lock(period_cache_mutex_);
    for (auto it = period_cache_.begin(); it != period_cache_.end(); ++it) {
      if (it->first == path) {
        period_cache_.splice(period_cache_.begin(), period_cache_, it);
        handle = period_cache_.front().second;
        break;
      }
    }
    if (!handle) {
      const bool exists = env_->FileExists(path);
      if (!exists && access != PeriodAccess::kCreate) return Status::NotFound(path + " does not exist");
      handle = std::make_shared<PeriodHandle>();
      if (writable) {
        auto opened = PeriodFile::OpenWritable(env_, vfs_name_, path, table, period, start, cache_kib);
        if (!opened.ok() && !exists) {
          // A file this call created but could not finish (a full disk)
          // holds nothing, and would stop the next start that cannot finish
          // it either.
          for (const std::string& file : {path, path + "-wal", path + "-journal"}) {
            if (env_->FileExists(file)) (void)env_->RemoveFile(file);
          }
        }
        CAIRN_ASSIGN_OR_RETURN(handle->file, std::move(opened));
        if (!exists) CAIRN_RETURN_IF_ERROR(env_->SyncDir(TableDir(table)));
      } else {
        auto read_only = PeriodFile::OpenReadOnly(env_, vfs_name_, path, cache_kib);
        if (read_only.ok()) {
          handle->file = std::move(read_only).value();
        } else {
          // A crash between creating a period file and committing its schema
          // leaves a file only the writer knows how to finish.
          CAIRN_ASSIGN_OR_RETURN(
              handle->file, PeriodFile::OpenWritable(env_, vfs_name_, path, table, period, start, cache_kib));
        }
      }
      period_cache_.emplace_front(path, handle);
      // Close the least recently used handles that nobody is using.
      for (auto it = period_cache_.end();
           period_cache_.size() > options_.max_open_period_files && it != period_cache_.begin();) {
        --it;
        if (it->second.use_count() == 1) {
          CloseHandle(*it->second);
          it = period_cache_.erase(it);
        }
      }
      return handle;
    }
  }
  if (writable) {
    // Exactly one connection per file: the read-only one closes before the
    // writer opens.
    std::lock_guard file_lock(handle->mutex);
    if (handle->file->read_only()) {
      CAIRN_RETURN_IF_ERROR(handle->file->Close());
      CAIRN_ASSIGN_OR_RETURN(
          handle->file, PeriodFile::OpenWritable(env_, vfs_name_, path, table, period, start, cache_kib));
    }
  }
  return handle;
}

void EngineImpl::ForgetPeriodFiles(const std::string& table, int64_t start_or_all) {
  const std::string prefix = TableDir(table) + "/";
  std::lock_guard lock(period_cache_mutex_);
  for (auto it = period_cache_.begin(); it != period_cache_.end();) {
    const bool in_table = it->first.compare(0, prefix.size(), prefix) == 0;
    const bool match =
        in_table && (start_or_all == INT64_MIN || it->second->file->period_start_ns() == start_or_all);
    if (match) {
      CloseHandle(*it->second);
      it = period_cache_.erase(it);
    } else {
      ++it;
    }
  }
}

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
    std::lock_guard file_lock(handle->mutex);
    Status read = [&]() -> Status {
      CAIRN_ASSIGN_OR_RETURN(std::vector<PeriodSeries> present, handle->file->ListSeries());
      for (const PeriodSeries& p : present) {
        auto u = unresolved.find(p.series_id);
        if (u == unresolved.end()) continue;
        CAIRN_ASSIGN_OR_RETURN(
            std::vector<ChunkRow> chunks,
            handle->file->ReadChunks(p.series_id, INT64_MIN, INT64_MAX, /*with_data=*/false));
        if (chunks.empty()) continue;
        int64_t max_end = INT64_MIN;
        for (const ChunkRow& c : chunks) max_end = std::max(max_end, c.end_ns);
        u->second->sealed_max_timestamp = max_end;
        unresolved.erase(u);
      }
      return Status::Ok();
    }();
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

Status EngineImpl::SealWhere(const std::function<bool(const Series&)>& due) {
  std::lock_guard seal_lock(seal_mutex_);
  struct Job {
    TableState* table;
    Series* series;
    PeriodSeries meta;
    std::vector<HeadEntry> entries;
  };
  std::vector<Job> jobs;
  {
    std::shared_lock state(state_mutex_);
    if (closed_) return Status::FailedPrecondition("engine is closed");
    for (auto& [name, table] : tables_) {
      for (auto& [key, series] : table->series) {
        if (series->head.empty() || !due(*series)) continue;
        Job job{table.get(), series.get(),
                PeriodSeries{series->id, series->device_id, series->measure_name, series->shard,
                             series->fields, series->dimensions},
                series->head};
        jobs.push_back(std::move(job));
      }
    }
  }
  if (jobs.empty()) {
    // A WAL an earlier round could not checkpoint is tried again.
    Status checkpointed = CheckpointSealedWals();
    CAIRN_RETURN_IF_ERROR(AdvanceCheckpoint());
    return checkpointed;
  }

  // Head records of periods past retention are dropped only by a clock that
  // may delete (clock_trust.h): never on an untrusted or stepped clock.
  const std::optional<int64_t> deletion_now = clock_->DeletionNow();
  // What each period file receives, and which head entries that covers.
  struct PeriodBatch {
    TableState* table;
    int64_t start;
    std::vector<PeriodSeries> series;
    std::vector<ChunkRow> chunks;
    std::vector<std::pair<Job*, std::pair<size_t, size_t>>> covered;  // job, [begin, end) of its entries
  };
  std::map<std::pair<std::string, int64_t>, PeriodBatch> batches;
  std::vector<std::pair<Job*, std::pair<size_t, size_t>>> past_retention;
  for (Job& job : jobs) {
    const Period period = job.table->info.options.period;
    const int64_t oldest_kept =
        deletion_now ? *deletion_now - job.table->info.options.retention_seconds * kNanosPerSecond : INT64_MIN;
    for (size_t begin = 0; begin < job.entries.size();) {
      const int64_t start = PeriodStart(period, job.entries[begin].record.timestamp);
      const int64_t next = NextPeriodStart(period, start);
      size_t end = begin;
      while (end < job.entries.size() && job.entries[end].record.timestamp < next) ++end;
      if (next <= oldest_kept) {
        // The whole period is past retention: its file is (or will be) gone.
        past_retention.push_back({&job, {begin, end}});
        begin = end;
        continue;
      }
      std::vector<ChunkRecord> records;
      std::vector<uint64_t> lsns;
      records.reserve(end - begin);
      lsns.reserve(end - begin);
      for (size_t i = begin; i < end; ++i) {
        ChunkRecord r = job.entries[i].record;
        r.values.resize(job.meta.fields.size());
        records.push_back(std::move(r));
        lsns.push_back(job.entries[i].lsn);
      }
      PeriodBatch& batch = batches[{job.table->info.name, start}];
      batch.table = job.table;
      batch.start = start;
      if (batch.series.empty() || batch.series.back().series_id != job.meta.series_id) {
        batch.series.push_back(job.meta);
      }
      CAIRN_RETURN_IF_ERROR(EncodeSeriesChunks(job.meta.series_id, job.meta.fields, records, lsns,
                                               options_.seal_records, &batch.chunks));
      batch.covered.push_back({&job, {begin, end}});
      begin = end;
    }
  }

  Status first_error;
  std::vector<std::pair<Job*, std::pair<size_t, size_t>>> committed = past_retention;
  std::vector<std::pair<TableState*, int64_t>> new_periods;
  uint64_t chunks_written = 0;
  for (auto& [key, batch] : batches) {
    auto handle =
        GetPeriodFile(key.first, batch.table->info.options.period, batch.start, PeriodAccess::kCreate);
    Status status = handle.status();
    if (status.ok()) {
      std::lock_guard file_lock((*handle)->mutex);
      // The table's options travel with its files, so that a catalog
      // rebuilt from them (catalog_rebuild.cc) restores them.
      const std::string options_text = EncodeTableOptions(batch.table->info);
      if ((*handle)->table_options_stored != options_text) {
        status = (*handle)->file->StoreTableOptions(options_text);
        if (status.ok()) (*handle)->table_options_stored = options_text;
      }
      if (status.ok()) status = (*handle)->file->WriteChunks(batch.series, batch.chunks);
    }
    if (!status.ok()) {
      if (first_error.ok()) first_error = status.WithContext("seal");
      continue;
    }
    chunks_written += batch.chunks.size();
    new_periods.push_back({batch.table, batch.start});
    committed.insert(committed.end(), batch.covered.begin(), batch.covered.end());
    WalSeal& pending = wal_pending_[PeriodPath(key.first, batch.table->info.options.period, batch.start)];
    pending.table = key.first;
    pending.period = batch.table->info.options.period;
    pending.start = batch.start;
    for (const ChunkRow& chunk : batch.chunks) {
      pending.min_lsn = std::min(pending.min_lsn, chunk.min_lsn);
      pending.max_lsn = std::max(pending.max_lsn, chunk.max_lsn);
    }
  }
  if (Status checkpointed = CheckpointSealedWals(); !checkpointed.ok() && first_error.ok()) {
    first_error = checkpointed;
  }

  {
    std::unique_lock state(state_mutex_);
    for (auto& [table, start] : new_periods) table->period_starts.insert(start);
    // Sealed entries leave the head in one pass per series (erasing them one
    // by one would be quadratic in the head's size).
    std::map<Series*, std::vector<const HeadEntry*>> sealed_by_series;
    for (auto& [job, range] : committed) {
      for (size_t i = range.first; i < range.second; ++i)
        sealed_by_series[job->series].push_back(&job->entries[i]);
    }
    for (auto& [series, sealed] : sealed_by_series) head_.RemoveSealed(*series, std::move(sealed));
  }
  chunks_sealed_ += chunks_written;
  CAIRN_RETURN_IF_ERROR(first_error);
  return AdvanceCheckpoint();
}

Status EngineImpl::CheckpointSealedWals() {
  Status first_error;
  for (auto it = wal_pending_.begin(); it != wal_pending_.end();) {
    const WalSeal& seal = it->second;
    auto handle = GetPeriodFile(seal.table, seal.period, seal.start, PeriodAccess::kWrite);
    Status status = handle.status();
    if (status.ok()) {
      std::lock_guard file_lock((*handle)->mutex);
      status = (*handle)->file->CheckpointWal();
    }
    if (status.Is(StatusCode::kNotFound)) {
      // Retention dropped the file meanwhile: nothing is left to protect.
      it = wal_pending_.erase(it);
      continue;
    }
    if (!status.ok()) {
      // The log keeps the seal's records (AdvanceCheckpoint stops below
      // them) until a later round checkpoints the file.
      if (first_error.ok()) first_error = status.WithContext("checkpointing " + it->first);
      ++it;
      continue;
    }
    marks_pending_.push_back(PeriodSealMark{seal.table, seal.start, seal.max_lsn});
    it = wal_pending_.erase(it);
  }
  return first_error;
}

Status EngineImpl::AdvanceCheckpoint() {
  uint64_t checkpoint;
  {
    std::shared_lock state(state_mutex_);
    checkpoint = next_lsn_;
    // A seal still only in a period file's WAL is not safe yet: a damaged
    // -wal loses it silently (SQLite reads a WAL up to its first bad frame).
    for (const auto& [path, seal] : wal_pending_) checkpoint = std::min(checkpoint, seal.min_lsn);
    if (inflight_first_lsn_ != 0) checkpoint = std::min(checkpoint, inflight_first_lsn_);
    for (const auto& [name, table] : tables_) {
      for (const auto& [key, series] : table->series) {
        for (const HeadEntry& e : series->head) checkpoint = std::min(checkpoint, e.lsn);
      }
    }
    if (checkpoint <= checkpoint_lsn_ && marks_pending_.empty()) return Status::Ok();
    checkpoint = std::max(checkpoint, checkpoint_lsn_);
  }
  // Sealed chunks below this point are in their period files' main database
  // files (CheckpointSealedWals), so the log below the checkpoint is no
  // longer needed to recover them. The seal marks go in the same
  // transaction: the coverage check on open compares them with the files.
  CAIRN_RETURN_IF_ERROR(catalog_->SetCheckpoint(checkpoint, marks_pending_));
  marks_pending_.clear();
  {
    std::unique_lock state(state_mutex_);
    checkpoint_lsn_ = std::max(checkpoint_lsn_, checkpoint);
  }
  // The log lets go of what is sealed, rolling its active segment when that
  // holds enough sealed records (LogWriter::ReleaseBelow).
  return log_->ReleaseBelow(checkpoint);
}

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

Status EngineImpl::CompactPeriod(const std::string& table, Period period, int64_t start) {
  CAIRN_ASSIGN_OR_RETURN(auto handle, GetPeriodFile(table, period, start, PeriodAccess::kWrite));
  // Compaction drops expired records for good: by the deletion clock only.
  const int64_t now = clock_->ExpiryNow();
  std::lock_guard file_lock(handle->mutex);
  CAIRN_ASSIGN_OR_RETURN(bool compacted, handle->file->IsCompacted());
  if (compacted) return Status::Ok();
  // Compaction drops expired readings, which may hold the file's highest
  // LSN: its seal mark (the coverage check on open) no longer applies.
  CAIRN_RETURN_IF_ERROR(catalog_->ForgetSealMark(table, start));
  return handle->file->Compact(
      [&](const PeriodSeries& series, std::vector<ChunkRow>&& chunks) -> Result<std::vector<ChunkRow>> {
        // Merge every chunk of the series: the highest version of each
        // timestamp wins, expired records are dropped for good.
        std::vector<ChunkField> schema;
        NewestRecords merged;
        for (const ChunkRow& chunk : chunks)
          CAIRN_RETURN_IF_ERROR(MergeChunkRecords(chunk, &schema, &merged));
        std::vector<ChunkRecord> records;
        std::vector<uint64_t> lsns;
        for (auto& [ts, entry] : merged) {
          if (Expired(entry.first, now)) continue;
          entry.first.values.resize(schema.size());
          records.push_back(std::move(entry.first));
          lsns.push_back(entry.second);
        }
        std::vector<ChunkRow> out;
        if (records.empty()) return out;
        CAIRN_RETURN_IF_ERROR(
            EncodeSeriesChunks(series.series_id, schema, records, lsns, kMaxRecordsPerChunk, &out));
        return out;
      });
}

}  // namespace cairn
