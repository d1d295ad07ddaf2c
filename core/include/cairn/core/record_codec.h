// Record blocks: a list of records of any number of series, encoded compactly
// with the chunk codec, for moving records between machines (the sync
// envelope, transport/sync/src/envelope_format.md §4, specifies the bytes).
//
// A block groups the records per series (device_id, measure_name, shard,
// dimensions). Each series carries its identifiers, dimensions and attributes
// once, then its records as one or more chunks (core/src/chunk/chunk_format.md),
// so timestamps, versions, ttls and values get the chunk codec's column
// compression.
//
// What a round trip keeps: every record's series (dimensions included),
// timestamp, version, ttl and fields, bit for bit (doubles included, -0.0
// too), and each series' attributes as its last record in the input carries
// them (every record of a series gets those back). What it does not keep: the
// order of the input. Decoded records come grouped by series, series in the
// order of their first record in the input, each series' records by ascending
// timestamp, records with equal (series, timestamp) in input order; fields
// come sorted by name. Neither the version rule of DESIGN §3 nor a receiver
// depends on order, so the codec is free to pick the one that compresses.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/core/engine.h"
#include "cairn/core/record.h"
#include "cairn/platform/status.h"

namespace cairn {

// Bounds on what one block may hold. The encoder refuses a batch beyond them
// and the decoder stops as soon as a block exceeds them (ResourceExhausted
// both ways), so a block cannot make its reader allocate without limit even
// though a few bytes of chunk can stand for millions of cells.
struct RecordBlockLimits {
  size_t max_records = 100'000;
  // Decoded cells: over every chunk, records x max(schema fields, 1).
  size_t max_cells = size_t{1} << 21;
  // All string field values, decoded.
  size_t max_string_bytes = size_t{1} << 26;
};

// A decoded block.
struct RecordBlock {
  std::vector<RecordRow> records;
};

// Checks that `records` can be encoded, without encoding: every record
// passes ValidateRecord (identifiers, 1..128 fields with unique names, no NaN
// or infinity, UTF-8 strings of at most 4 KiB, ttl >= 0) and has shard >= 0;
// a field keeps one type within a series; a series has at most
// kMaxChunkFields (1024) distinct fields; dimension and attribute names and
// values follow the limits of record.h. InvalidArgument naming the first
// offending record (by index) otherwise; ResourceExhausted past `limits`.
Status ValidateRecordBlock(std::span<const RecordRow> records, const RecordBlockLimits& limits = {});

// Encodes `records` (any mix of series, any order, duplicates allowed). An
// empty `records` gives a valid empty block. Errors as ValidateRecordBlock.
Result<std::string> EncodeRecordBlock(std::span<const RecordRow> records, const RecordBlockLimits& limits = {});

// Decodes EncodeRecordBlock() output. Corruption, naming what is wrong, for
// any input that is not a valid block, including records that
// ValidateRecordBlock would refuse; ResourceExhausted as soon as the block
// exceeds `limits`. Never reads outside `bytes`.
Result<RecordBlock> DecodeRecordBlock(std::string_view bytes, const RecordBlockLimits& limits = {});

}  // namespace cairn
