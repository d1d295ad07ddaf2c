// The chunk codec: the compressed, columnar, checksummed encoding of one
// series' records over a time range, and the statistics stored beside it.
// The byte format is specified in chunk_format.md in this directory.
//
// Private to core: the head encodes chunks when it seals, the period store
// writes the bytes, queries decode them (all columns, or only the ones an
// aggregate needs).
//
// Thread-safety: every function is pure; distinct threads may encode and
// decode concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/core/range_columns.h"
#include "cairn/core/record.h"
#include "cairn/platform/status.h"
#include "model/exact_sum.h"

namespace cairn {

// Limits of one chunk, enforced by the encoder (InvalidArgument) and the
// decoder (Corruption). The cell and string limits bound the memory a decoder
// allocates, which a tiny chunk of long runs could otherwise make huge; a
// sealer splits longer runs of records across several chunks.
inline constexpr size_t kMaxChunkRecords = size_t{1} << 20;
inline constexpr size_t kMaxChunkFields = 1024;
inline constexpr size_t kMaxChunkCells = size_t{1} << 22;        // records * max(fields, 1)
inline constexpr size_t kMaxChunkStringBytes = size_t{1} << 25;  // all string values, decoded

struct ChunkField {
  std::string name;
  FieldType type;
  friend bool operator==(const ChunkField&, const ChunkField&) = default;
};

// One record of one series, as the head holds it and the encoder takes it.
struct ChunkRecord {
  int64_t timestamp = 0;  // ns since epoch
  uint64_t version = 0;
  int64_t ttl = 0;            // absolute expiry, Unix seconds; 0 = none
  std::vector<Value> values;  // parallel to the schema; std::monostate = record lacks that field
  // Not encoded (the period file keeps LSNs beside the chunk): set by reads so
  // that of two records with equal versions the later arrival wins.
  uint64_t lsn = 0;
};

struct FieldStats {
  uint64_t count = 0;  // records carrying the field
  Value min, max;      // for kDouble, kInt64, kTimestamp fields (monostate otherwise or when count==0)
  // kDouble fields: the sum in double precision, in record order. kInt64
  // fields: integer_sum rounded once, or what statistics of format version
  // 1 stored (a double sum, inexact past 2^53) when integer_sum is empty.
  double sum = 0;
  Value first, last;   // value of the earliest / latest record carrying the field
  // kInt64 fields: the exact sum. Empty only when read from version 1
  // statistics; an exact answer then needs the chunk's records.
  std::optional<ExactSum> integer_sum;
};

struct ChunkStats {
  uint32_t count = 0;
  int64_t min_timestamp = 0, max_timestamp = 0;
  uint64_t max_version = 0;
  int64_t min_ttl = 0;  // smallest non-zero ttl, 0 if no record has one
  bool all_have_ttl = false;
  std::vector<FieldStats> fields;  // parallel to the schema
};

// Decoded columns. present[i] false => value absent for record i.
// `present` and `values` both have one entry per record; values[i] is
// std::monostate exactly where present[i] is 0.
struct ChunkColumn {
  ChunkField field;
  std::vector<uint8_t> present;
  std::vector<Value> values;
  // Filled instead of `values` by DecodeChunkTyped.
  ValueColumn typed;
};

// A decoded chunk: timestamps (strictly ascending), versions and ttls have
// one entry per record; columns follow the chunk's schema order (or the
// requested subset, see DecodeChunkFields).
struct DecodedChunk {
  std::vector<int64_t> timestamps;
  std::vector<uint64_t> versions;
  std::vector<int64_t> ttls;
  std::vector<ChunkColumn> columns;

  size_t size() const { return timestamps.size(); }
  // Record i with one value per column (monostate where absent).
  // Precondition: i < size().
  ChunkRecord RecordAt(size_t i) const;
  // The fields of `columns`, in order.
  std::vector<ChunkField> Schema() const;
};

// Encodes `records` (one series, sorted) under `schema` and returns the chunk
// bytes. When `stats_out` is non-null it receives ComputeChunkStats() of the
// same records.
// Returns InvalidArgument, never crashing, unless: records is non-empty and
// within the limits above, timestamps are strictly ascending, every record has
// schema.size() values, each value is monostate or of its field's type,
// doubles are finite, strings are at most kMaxStringValueBytes, and schema
// names are non-empty, at most kMaxFieldNameBytes and unique.
Result<std::string> EncodeChunk(const std::vector<ChunkField>& schema, std::span<const ChunkRecord> records,
                                ChunkStats* stats_out);

// Decodes a whole chunk. Returns Corruption, naming what is wrong, for any
// input that is not a valid chunk (checksum, truncation, bad counts, values
// out of range); never reads outside `bytes`.
Result<DecodedChunk> DecodeChunk(std::string_view bytes);

// Like DecodeChunk, but decodes only the columns whose names appear in
// `field_names`; the other columns are skipped unread (the checksum still
// covers them). Columns keep the chunk's schema order; requested names the
// chunk lacks are not an error and yield no column (an older chunk may
// predate a field). Timestamps, versions and ttls are always decoded.
Result<DecodedChunk> DecodeChunkFields(std::string_view bytes, const std::vector<std::string>& field_names);

// Like DecodeChunkFields (all columns when `field_names` is null), but each
// column's values land in ChunkColumn::typed, typed arrays with a slot per
// record, and ChunkColumn::values stays empty.
Result<DecodedChunk> DecodeChunkTyped(std::string_view bytes, const std::vector<std::string>* field_names);

// The schema stored in a chunk, without decoding any column. Checks the
// checksum; Corruption as for DecodeChunk.
Result<std::vector<ChunkField>> DecodeChunkSchema(std::string_view bytes);

// Serialises stats (chunk_format.md §5). The schema gives each field's type.
// Precondition: stats.fields.size() == schema.size() and each statistic value
// is monostate or of its field's type (as ComputeChunkStats produces);
// violations are encoded as absent values rather than crashing.
std::string EncodeChunkStats(const ChunkStats& stats, const std::vector<ChunkField>& schema);

// Parses EncodeChunkStats() output written for the same schema. Corruption on
// any malformed input, including a field count that differs from the schema.
Result<ChunkStats> DecodeChunkStats(std::string_view bytes, const std::vector<ChunkField>& schema);

// Statistics of `records` under `schema`. first/last follow timestamps (the
// earliest and latest record carrying the field). Values whose type does not
// match their field are ignored. An empty span gives count 0 and one empty
// FieldStats per field.
ChunkStats ComputeChunkStats(const std::vector<ChunkField>& schema, std::span<const ChunkRecord> records);

}  // namespace cairn
