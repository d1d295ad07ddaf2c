// The compaction of closed period files (compactor.h).
#include "engine/sealing/compactor.h"

#include <utility>
#include <vector>

#include "engine/sealing/chunk_rows.h"

namespace cairn {

namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;

bool Expired(const ChunkRecord& r, int64_t now_ns) { return r.ttl != 0 && r.ttl <= now_ns / kNanosPerSecond; }

}  // namespace

Compactor::Compactor(PeriodFiles* files, Catalog* catalog) : files_(files), catalog_(catalog) {}

Status Compactor::CompactPeriod(const std::string& table, Period period, int64_t start, int64_t expiry_now_ns) {
  CAIRN_ASSIGN_OR_RETURN(auto handle, files_->Get(table, period, start, PeriodAccess::kWrite));
  MutexLock file_lock(&handle->mutex);
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
        for (const ChunkRow& chunk : chunks) CAIRN_RETURN_IF_ERROR(MergeChunkRecords(chunk, &schema, &merged));
        std::vector<ChunkRecord> records;
        std::vector<uint64_t> lsns;
        for (auto& [ts, entry] : merged) {
          if (Expired(entry.first, expiry_now_ns)) continue;
          entry.first.values.resize(schema.size());
          records.push_back(std::move(entry.first));
          lsns.push_back(entry.second);
        }
        std::vector<ChunkRow> out;
        if (records.empty()) return out;
        CAIRN_RETURN_IF_ERROR(
            EncodeSeriesChunks(series.series_id, schema, records, lsns, kChunkRecordLimit, &out));
        return out;
      });
}

}  // namespace cairn
