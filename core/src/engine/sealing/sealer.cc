// Sealing head records into period files (sealer.h).
#include "engine/sealing/sealer.h"

#include <algorithm>
#include <map>

#include "engine/sealing/chunk_rows.h"

namespace cairn {

namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;

}  // namespace

// What one period file receives, and which job entries that covers.
struct Sealer::PeriodBatch {
  size_t first_job = 0;
  std::vector<PeriodSeries> series;
  std::vector<ChunkRow> chunks;
  std::vector<SealOutcome::Range> covered;
};

Sealer::Sealer(PeriodFiles* files, Checkpointer* checkpointer, size_t max_chunk_records)
    : files_(files), checkpointer_(checkpointer), max_chunk_records_(max_chunk_records) {}

Result<SealOutcome> Sealer::Seal(const std::vector<SealJob>& jobs, std::optional<int64_t> deletion_now) {
  SealOutcome outcome;
  std::map<std::pair<std::string, int64_t>, PeriodBatch> batches;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const SealJob& job = jobs[j];
    const int64_t oldest_kept =
        deletion_now ? *deletion_now - job.retention_seconds * kNanosPerSecond : INT64_MIN;
    for (size_t begin = 0; begin < job.head.size();) {
      const int64_t start = PeriodStart(job.period, job.head.timestamp(begin));
      const int64_t next = NextPeriodStart(job.period, start);
      const size_t end = job.head.LowerBound(next);
      if (next <= oldest_kept) {
        // The whole period is past retention: its file is (or will be) gone.
        outcome.sealed.push_back({j, begin, end});
        begin = end;
        continue;
      }
      std::vector<ChunkRecord> records;
      std::vector<uint64_t> lsns;
      records.reserve(end - begin);
      lsns.reserve(end - begin);
      for (size_t i = begin; i < end; ++i) {
        records.push_back(job.head.Record(i, job.meta.fields));
        records.back().values.resize(job.meta.fields.size());
        lsns.push_back(job.head.lsn(i));
      }
      auto [it, created] = batches.try_emplace({job.table, start});
      PeriodBatch& batch = it->second;
      if (created) batch.first_job = j;
      if (batch.series.empty() || batch.series.back().series_id != job.meta.series_id) {
        batch.series.push_back(job.meta);
      }
      CAIRN_RETURN_IF_ERROR(EncodeSeriesChunks(job.meta.series_id, job.meta.fields, records, lsns,
                                               max_chunk_records_, &batch.chunks));
      batch.covered.push_back({j, begin, end});
      begin = end;
    }
  }

  for (auto& [key, batch] : batches) {
    const SealJob& job = jobs[batch.first_job];
    if (Status status = WriteBatch(job, key.second, batch); !status.ok()) {
      if (outcome.status.ok()) outcome.status = status.WithContext("seal");
      continue;
    }
    outcome.chunks_written += batch.chunks.size();
    outcome.written_periods.push_back({batch.first_job, key.second});
    outcome.sealed.insert(outcome.sealed.end(), batch.covered.begin(), batch.covered.end());
    uint64_t min_lsn = UINT64_MAX, max_lsn = 0;
    for (const ChunkRow& chunk : batch.chunks) {
      min_lsn = std::min(min_lsn, chunk.min_lsn);
      max_lsn = std::max(max_lsn, chunk.max_lsn);
    }
    checkpointer_->RecordSeal(job.table, job.period, key.second, min_lsn, max_lsn);
  }
  if (Status checkpointed = checkpointer_->CheckpointWals(); !checkpointed.ok() && outcome.status.ok()) {
    outcome.status = checkpointed;
  }
  return outcome;
}

Status Sealer::WriteBatch(const SealJob& job, int64_t start, PeriodBatch& batch) {
  CAIRN_ASSIGN_OR_RETURN(auto handle, files_->Get(job.table, job.period, start, PeriodAccess::kCreate));
  MutexLock file_lock(&handle->mutex);
  // The table's options travel with its files, so that a catalog rebuilt
  // from them (catalog_rebuild.cc) restores them.
  if (handle->table_options_stored != job.table_options) {
    CAIRN_RETURN_IF_ERROR(handle->file->StoreTableOptions(job.table_options));
    handle->table_options_stored = job.table_options;
  }
  return handle->file->WriteChunks(batch.series, batch.chunks);
}

}  // namespace cairn
