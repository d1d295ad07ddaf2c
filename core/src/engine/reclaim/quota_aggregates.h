// The aggregate record that replaces one step of a series' readings when
// the sync quota downsamples (engine_quota.cc; fields and rules in
// quota_format.md).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "chunk/chunk_codec.h"

namespace cairn {

// The aggregate fields of one raw field, in order (quota_format.md).
std::vector<ChunkField> AggregateFieldsOf(const ChunkField& raw);

// Fills the field values of `aggregate` (one value per field of the
// aggregate series, whose positions `target_index` gives by name) from the
// step's raw readings `members` (values parallel to `raw_schema`, each with
// its LSN) merged with the step's earlier aggregate `old` (null when none).
// Returns false, leaving `aggregate` unusable, when an int64 field's exact
// sum cannot be kept: it leaves int64, or `old` has no `f.sum` (written
// before sums were kept, its average already rounded). Such a step stays raw.
bool FillStepAggregate(const std::vector<ChunkField>& raw_schema,
                       const std::unordered_map<std::string, size_t>& target_index, const ChunkRecord* old,
                       const std::vector<std::pair<ChunkRecord, uint64_t>>& members, ChunkRecord* aggregate);

}  // namespace cairn
