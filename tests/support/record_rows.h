// Record rows for tests that round-trip records through a codec, an
// envelope or a sink: building them, comparing them bit for bit (a double's
// sign of zero and NaN payload count) and describing them in failures.
//
// Header-only, so that any test can use it whatever it links.
#pragma once

#include <bit>
#include <cstdint>
#include <sstream>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/core/engine.h"

namespace cairn::test_rows {

// A row with its fields in the given order.
inline RecordRow Row(std::string device_id, std::string measure_name, int64_t timestamp,
                     std::vector<Field> fields, uint64_t version = 0, int64_t ttl = 0, int shard = 0) {
  RecordRow row;
  row.device_id = std::move(device_id);
  row.measure_name = std::move(measure_name);
  row.shard = shard;
  row.timestamp = timestamp;
  row.version = version;
  row.ttl = ttl;
  row.fields = std::move(fields);
  return row;
}

// Same type and value; doubles compared by their bits.
inline bool SameValue(const Value& a, const Value& b) {
  if (a.index() != b.index()) return false;
  if (const double* x = std::get_if<double>(&a)) {
    return std::bit_cast<uint64_t>(*x) == std::bit_cast<uint64_t>(std::get<double>(b));
  }
  return a == b;
}

// Same identity, version, ttl and fields in the same order (SameValue).
inline bool SameRow(const RecordRow& a, const RecordRow& b) {
  if (std::tie(a.device_id, a.measure_name, a.shard, a.timestamp, a.version, a.ttl) !=
      std::tie(b.device_id, b.measure_name, b.shard, b.timestamp, b.version, b.ttl)) {
    return false;
  }
  if (a.fields.size() != b.fields.size()) return false;
  for (size_t i = 0; i < a.fields.size(); ++i) {
    if (a.fields[i].name != b.fields[i].name || !SameValue(a.fields[i].value, b.fields[i].value))
      return false;
  }
  return true;
}

inline std::string DescribeValue(const Value& value) {
  std::ostringstream out;
  out.precision(17);
  if (const auto* d = std::get_if<double>(&value)) {
    out << "double " << *d << " (bits " << std::hex << std::bit_cast<uint64_t>(*d) << std::dec << ")";
  } else if (const auto* i = std::get_if<int64_t>(&value)) {
    out << "int64 " << *i;
  } else if (const auto* b = std::get_if<bool>(&value)) {
    out << "bool " << (*b ? "true" : "false");
  } else if (const auto* s = std::get_if<std::string>(&value)) {
    out << "string of " << s->size() << " bytes";
  } else if (const auto* t = std::get_if<Timestamp>(&value)) {
    out << "timestamp " << t->unix_nanos;
  } else {
    out << "absent";
  }
  return out.str();
}

inline std::string DescribeRow(const RecordRow& row) {
  std::ostringstream out;
  out << "(" << row.device_id << ", " << row.measure_name << ", shard " << row.shard << ", t "
      << row.timestamp << ", v " << row.version << ", ttl " << row.ttl << ") {";
  for (const Field& field : row.fields) out << " " << field.name << ": " << DescribeValue(field.value) << ";";
  out << " }";
  return out.str();
}

// Both lists the same length and equal row by row (SameRow).
inline void ExpectSameRows(const std::vector<RecordRow>& expected, const std::vector<RecordRow>& actual) {
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_TRUE(SameRow(expected[i], actual[i])) << "row " << i << "\n expected " << DescribeRow(expected[i])
                                                 << "\n actual   " << DescribeRow(actual[i]);
  }
}

}  // namespace cairn::test_rows
