// One series' share of a columnar range read (engine_range_columns.cc):
// what the read asks of each series, and the series' visible rows in the
// query's order as typed columns.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cairn/core/engine.h"
#include "cairn/core/range_columns.h"
#include "chunk/chunk_codec.h"

namespace cairn {

// The part of a RangeQuery one series is read for.
struct SeriesScan {
  int64_t from = INT64_MIN, to = INT64_MAX;  // [from, to), ns
  Order order = Order::kAscending;
  size_t limit = 0;      // stop once this many rows are collected; 0 = all
  int64_t now_ns = 0;    // expiry clock
  std::vector<std::string> fields;  // RangeQuery::fields: empty = all
};

// Visible rows of one series, in the scan's order. `fields` is parallel to
// the series' field list (name and type); a field the scan does not want
// has an empty column.
struct SeriesColumns {
  std::vector<int64_t> timestamps;
  std::vector<uint64_t> versions;  // empty while every row's is 0 (RangeColumns)
  std::vector<int64_t> ttls;       // empty while every row's is 0
  std::vector<ValueColumn> fields;
  std::vector<uint8_t> wanted;  // parallel to `fields`

  // Empty columns for `schema`, wanting the fields `scan_fields` names (all
  // when it is empty).
  SeriesColumns(const std::vector<ChunkField>& schema, const std::vector<std::string>& scan_fields);
  size_t size() const { return timestamps.size(); }
  uint64_t version(size_t row) const { return versions.empty() ? 0 : versions[row]; }
  int64_t ttl(size_t row) const { return ttls.empty() ? 0 : ttls[row]; }
  // Room for `rows` rows without moving what is there.
  void Reserve(size_t rows);
  // Appends `record` (values parallel to the schema) unless it carries no
  // wanted field. Returns whether it did.
  bool Append(const ChunkRecord& record);
  // Appends record `i` of `chunk` (decoded typed: DecodeChunkTyped; columns mapped to fields by
  // `column_to_field`, -1 = not a field of the series), unless it carries no
  // wanted field. Returns whether it did.
  bool AppendDecoded(const DecodedChunk& chunk, const std::vector<int>& column_to_field, size_t i);
  // Appends records [begin, end) of `chunk` (decoded typed), reversed when
  // !ascending, in bulk. Precondition: each of them carries a wanted field
  // and none has expired.
  void AppendDecodedRun(const DecodedChunk& chunk, const std::vector<int>& column_to_field, size_t begin,
                        size_t end, bool ascending);
};

// Appends the records of `chunk` within [from, to) to `out`, values laid out
// along `fields` (matched by name and type; others dropped), each with its
// LSN from `lsns` (the chunk row's, one per record). Consumes the chunk's
// values.
void AppendChunkRecords(DecodedChunk&& chunk, const std::vector<uint64_t>& lsns,
                        const std::vector<ChunkField>& fields, int64_t from, int64_t to,
                        std::vector<ChunkRecord>* out);

// Appends `value` as row `row` of a column that stays empty while every
// value is zero (RangeColumns::versions, ttls).
template <typename T>
void AppendMostlyZero(std::vector<T>* column, size_t row, T value) {
  if (column->empty() && value == T{}) return;
  if (column->size() < row) column->resize(row, T{});
  column->push_back(value);
}

}  // namespace cairn
