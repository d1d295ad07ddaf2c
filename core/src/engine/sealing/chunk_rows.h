// Chunk rows of one series: encoding head records into them (seals, the
// compaction, the quota's downsampling) and merging them back (reads of
// stored records, the compaction).
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "cairn/platform/status.h"
#include "chunk/chunk_codec.h"
#include "storage/period_file.h"

namespace cairn {

// A chunk never holds more records than this, so one decode stays small.
inline constexpr size_t kChunkRecordLimit = 8192;

// Encodes `records` (ascending, unique timestamps) of one series, with
// lsns[i] the LSN of records[i], as chunk rows of at most `max_records`
// records (fewer for wide series: the codec bounds records x fields, and
// never more than kChunkRecordLimit), appended to `out`.
Status EncodeSeriesChunks(int64_t series_id, const std::vector<ChunkField>& schema,
                          std::vector<ChunkRecord>& records, const std::vector<uint64_t>& lsns,
                          size_t max_records, std::vector<ChunkRow>* out);

// A series' records by timestamp: the highest version seen and its LSN.
using NewestRecords = std::map<int64_t, std::pair<ChunkRecord, uint64_t>>;

// Decodes a chunk read with data into `newest`, where a record replaces one
// of the same timestamp only with a higher version (of equal versions, the
// higher LSN). Values are laid out along `schema`, which grows by the
// chunk's fields it lacks (records decoded earlier keep the shorter layout:
// resize before encoding). Corruption when the LSN list does not match the
// chunk.
Status MergeChunkRecords(const ChunkRow& chunk, std::vector<ChunkField>* schema, NewestRecords* newest);

}  // namespace cairn
