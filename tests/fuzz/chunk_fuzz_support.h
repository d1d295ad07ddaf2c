// Shared by the chunk fuzzers and their seed generator.
#pragma once

#include <bit>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "chunk/chunk_codec.h"
#include "chunk/crc32c.h"

namespace cairn::fuzz {

// The schema the statistics fuzzer decodes with (statistics blobs carry no
// schema of their own): one field of every type.
inline std::vector<ChunkField> StatsFuzzSchema() {
  return {{"temperature", FieldType::kDouble},
          {"count", FieldType::kInt64},
          {"alarm", FieldType::kBool},
          {"state", FieldType::kString},
          {"seen", FieldType::kTimestamp}};
}

// Aborts (which libFuzzer reports with the input) when a property fails.
inline void Require(bool condition, const char* property) {
  if (!condition) {
    std::fprintf(stderr, "property violated: %s\n", property);
    std::abort();
  }
}

// The input with its last four bytes replaced by the CRC-32C of the rest, so
// that mutations reach the parser behind the checksum. Empty when too short.
inline std::string WithValidChecksum(std::string_view input) {
  if (input.size() < 4) return std::string();
  std::string fixed(input.substr(0, input.size() - 4));
  uint32_t crc = Crc32c(fixed);
  for (int i = 0; i < 4; ++i) fixed.push_back(static_cast<char>(crc >> (8 * i)));
  return fixed;
}

// Value equality that tells -0.0 from 0.0.
inline bool SameValue(const Value& a, const Value& b) {
  if (a.index() != b.index()) return false;
  if (const double* x = std::get_if<double>(&a)) {
    return std::bit_cast<uint64_t>(*x) == std::bit_cast<uint64_t>(std::get<double>(b));
  }
  return a == b;
}

}  // namespace cairn::fuzz
