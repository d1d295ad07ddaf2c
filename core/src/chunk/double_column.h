// Double columns (chunk_format.md §3.3, double fields): decimal scaling to
// integers (the ALP idea) with an exceptions list, or Gorilla XOR when the
// values are not short decimals.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cairn/platform/status.h"

#include "chunk/coding.h"

namespace cairn::chunk_coding {

enum class DoubleMode : uint8_t { kDecimal = 0, kXor = 1 };

// Largest decimal exponent tried; 10^18 is exact in a double and v * 10^18
// still fits an int64 for |v| < 4.6.
inline constexpr int kMaxDecimalExponent = 18;

// Appends the shorter of the decimal and XOR encodings of `values`.
// Precondition: values non-empty and all finite.
void EncodeDoubles(std::span<const double> values, std::string* out);

// Decodes out.size() doubles; the encoding must end exactly at the end of
// `reader` (a double column is the tail of its section). `scratch` is reused
// between calls to avoid an allocation per column.
Status DecodeDoubles(ByteReader* reader, std::span<double> out, std::vector<int64_t>* scratch);

}  // namespace cairn::chunk_coding
