// Shared helpers of the chunk codec tests: limits and time units, exact
// comparison of a decoded chunk with the records it was encoded from, and a
// schema with one field of every type.
#pragma once

#include <bit>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "chunk/chunk_codec.h"
#include "chunk_records.h"

namespace cairn::chunk_codec_testing {

inline constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
inline constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
inline constexpr int64_t kSecond = 1'000'000'000;
inline constexpr int64_t kMillisecond = 1'000'000;

// A readable account of `value` for failure messages; doubles show their bits.
inline std::string Describe(const Value& value) {
  std::ostringstream out;
  switch (value.index()) {
    case 0:
      return "absent";
    case 1:
      out.precision(17);
      out << "double " << std::get<double>(value) << " (0x" << std::hex
          << std::bit_cast<uint64_t>(std::get<double>(value)) << ")";
      break;
    case 2:
      out << "int64 " << std::get<int64_t>(value);
      break;
    case 3:
      out << "bool " << std::get<bool>(value);
      break;
    case 4:
      out << "string of " << std::get<std::string>(value).size() << " bytes";
      break;
    case 5:
      out << "timestamp " << std::get<Timestamp>(value).unix_nanos;
      break;
  }
  return out.str();
}

// Value equality that tells -0.0 from 0.0.
inline bool SameValue(const Value& a, const Value& b) {
  if (a.index() != b.index()) return false;
  if (const double* x = std::get_if<double>(&a)) {
    return std::bit_cast<uint64_t>(*x) == std::bit_cast<uint64_t>(std::get<double>(b));
  }
  return a == b;
}

// `decoded` holds exactly `schema` and `records`: timestamps, versions, ttls,
// presence and values, bit for bit.
inline void ExpectMatches(const DecodedChunk& decoded, const std::vector<ChunkField>& schema,
                          const std::vector<ChunkRecord>& records) {
  ASSERT_EQ(decoded.size(), records.size());
  ASSERT_EQ(decoded.versions.size(), records.size());
  ASSERT_EQ(decoded.ttls.size(), records.size());
  EXPECT_EQ(decoded.Schema(), schema);
  for (size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(decoded.timestamps[i], records[i].timestamp) << "record " << i;
    EXPECT_EQ(decoded.versions[i], records[i].version) << "record " << i;
    EXPECT_EQ(decoded.ttls[i], records[i].ttl) << "record " << i;
  }
  for (size_t f = 0; f < decoded.columns.size(); ++f) {
    const ChunkColumn& column = decoded.columns[f];
    ASSERT_EQ(column.present.size(), records.size());
    ASSERT_EQ(column.values.size(), records.size());
    for (size_t i = 0; i < records.size(); ++i) {
      const Value& expected = records[i].values[f];
      EXPECT_EQ(column.present[i] != 0, !std::holds_alternative<std::monostate>(expected))
          << "field " << column.field.name << " record " << i;
      EXPECT_TRUE(SameValue(column.values[i], expected))
          << "field " << column.field.name << " record " << i << ": " << Describe(column.values[i]) << " vs "
          << Describe(expected);
    }
  }
}

// The encoding of `records`, or an empty string and a failed expectation.
inline std::string EncodeOrDie(const std::vector<ChunkField>& schema,
                               const std::vector<ChunkRecord>& records) {
  Result<std::string> encoded = EncodeChunk(schema, records, nullptr);
  EXPECT_TRUE(encoded.ok()) << encoded.status().ToString();
  return encoded.ok() ? *encoded : std::string();
}

using test_chunks::MakeRecord;

// One field of every type.
inline const std::vector<ChunkField> kAllTypes = {{"temperature", FieldType::kDouble},
                                                  {"count", FieldType::kInt64},
                                                  {"alarm", FieldType::kBool},
                                                  {"state", FieldType::kString},
                                                  {"seen", FieldType::kTimestamp}};

}  // namespace cairn::chunk_codec_testing
