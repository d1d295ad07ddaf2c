// Column codecs of the chunk format (chunk_format.md, "Columns"): the
// timestamp column, the presence of a field in each record, and the values of
// one field by type. chunk_codec.cc frames them into a chunk (header,
// sections, checksum); these functions see one column's body each.
//
// Private to the chunk component. Thread-safety: every function is pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chunk/chunk_codec.h"
#include "cairn/platform/status.h"

namespace cairn {

// Appends the timestamp column of `records` (at least one, ascending) to
// `body`: the first timestamp, then the deltas scaled by the largest power of
// ten dividing them all.
void EncodeTimestamps(std::span<const ChunkRecord> records, std::string* body);

// Appends the column of field `field` of `records`, whose values are of
// `type` or absent, to `body`: presence, then the present values.
void EncodeColumn(std::span<const ChunkRecord> records, size_t field, FieldType type, std::string* body);

// Buffers reused across the columns of one decode.
struct DecodeScratch {
  std::vector<int64_t> integers;
  std::vector<int64_t> decimal_integers;
  std::vector<double> doubles;
  std::vector<uint8_t> bits;
  std::vector<std::string_view> dictionary;
  size_t string_bytes = 0;  // decoded so far, across columns
};

// Decodes a timestamp column of `count` (at least one) records. Corruption
// when it is truncated, has trailing bytes, or its timestamps do not strictly
// ascend within the int64 range.
Status DecodeTimestamps(std::string_view body, size_t count, std::vector<int64_t>* timestamps);

// Decodes an integer sequence of exactly `count` values into `out`.
Status DecodeIntegerColumn(std::string_view body, size_t count, int64_t* out);

// Decodes the column of `column->field` for `count` records into
// column->present and column->values (monostate for absent records).
// `scratch` is reused across the columns of one chunk; its string budget
// bounds the decoded string bytes of the whole chunk (kMaxChunkStringBytes).
Status DecodeColumn(std::string_view body, size_t count, ChunkColumn* column, DecodeScratch* scratch);

// Like DecodeColumn, but into column->typed (and column->present), leaving
// column->values empty: what columnar reads copy from without a Value per
// cell.
Status DecodeColumnTyped(std::string_view body, size_t count, ChunkColumn* column, DecodeScratch* scratch);

}  // namespace cairn
