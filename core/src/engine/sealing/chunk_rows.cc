// Encoding and merging the chunk rows of one series (chunk_rows.h).
#include "engine/sealing/chunk_rows.h"

#include <algorithm>
#include <span>
#include <string>

namespace cairn {

Status EncodeSeriesChunks(int64_t series_id, const std::vector<ChunkField>& schema,
                          std::vector<ChunkRecord>& records, const std::vector<uint64_t>& lsns,
                          size_t max_records, std::vector<ChunkRow>* out) {
  // Wide series get shorter chunks: the codec bounds records x fields.
  const size_t cell_bound = kMaxChunkCells / std::max<size_t>(schema.size(), 1);
  max_records = std::clamp<size_t>(std::min(max_records, cell_bound), 1, kChunkRecordLimit);
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

}  // namespace cairn
