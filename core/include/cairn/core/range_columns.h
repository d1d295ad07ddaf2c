// A range answer as columns: what Engine::RangeColumns returns, and what
// serialisers (HTTP JSON/CSV/NDJSON, the bench) read without building a row
// object per reading.
//
// Rows are those Engine::Range would return, in the same order. Row i is
// (series[row_series[i]], timestamps[i], version(i), ttl(i)) and carries
// column c's value where columns[c].present[i] is 1. A column is one
// (field name, type) pair: two series with a field of one name and two
// types give two columns of that name, each present only in its own rows.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cairn/core/record.h"

namespace cairn {

// One field's values over the rows of an answer, in typed arrays: one entry
// per row in `present` and in the array of the column's type (zero, empty
// or false where absent); the arrays of the other types stay empty.
struct ValueColumn {
  std::string name;
  FieldType type = FieldType::kDouble;
  std::vector<uint8_t> present;
  std::vector<double> doubles;        // kDouble
  std::vector<int64_t> integers;      // kInt64, kTimestamp (ns since epoch)
  std::vector<uint8_t> bools;         // kBool, 0 or 1
  std::vector<std::string> strings;   // kString

  size_t size() const { return present.size(); }
  // Appends `value` (monostate = absent). Precondition: monostate or of `type`.
  void Append(const Value& value);
  void AppendAbsent();
  // Appends row `row` of `other`, a column of the same type.
  void AppendFrom(const ValueColumn& other, size_t row);
  // Row `row` as a Value (monostate where absent). Precondition: row < size().
  Value ValueAt(size_t row) const;
  void Reserve(size_t rows);
};

// The identity and metadata of a series that contributes rows.
struct ColumnSeries {
  std::string device_id;
  std::string measure_name;
  TagMap dimensions;  // part of the identity
  TagMap attributes;  // metadata as last written
  int shard = 0;
};

struct RangeColumns {
  std::vector<ColumnSeries> series;
  std::vector<uint32_t> row_series;  // per row, an index into `series`
  std::vector<int64_t> timestamps;   // per row, ns since epoch
  // Per row, or empty when every row's is 0 (most data is never
  // rewritten and has no ttl: the common answer spends no memory on them).
  std::vector<uint64_t> versions;
  std::vector<int64_t> ttls;         // Unix seconds; 0 = none
  std::vector<ValueColumn> columns;  // sorted by (name, type)

  size_t size() const { return timestamps.size(); }
  uint64_t version(size_t row) const { return versions.empty() ? 0 : versions[row]; }
  int64_t ttl(size_t row) const { return ttls.empty() ? 0 : ttls[row]; }
};

}  // namespace cairn
