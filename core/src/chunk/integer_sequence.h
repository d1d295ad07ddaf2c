// The integer sequence of the chunk format (chunk_format.md §2): a run of
// int64 values stored as runs, frame-of-reference bit-packed frames, or
// packed deltas, whichever is shortest. Every integer-valued column (the
// timestamp deltas, versions, ttls, int64 and timestamp fields, and the
// scaled integers of decimal doubles) goes through it.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "cairn/platform/status.h"

#include "chunk/coding.h"

namespace cairn::chunk_coding {

// Values per bit-packed frame. Small enough that a burst (a sensor glitch)
// widens only its own frame, large enough that frame headers stay ~1%.
inline constexpr size_t kValuesPerFrame = 128;

enum class SequenceMode : uint8_t { kRuns = 0, kFrames = 1, kDelta = 2 };

// Appends the shortest encoding of `values` to `out`; nothing when empty.
void EncodeIntegerSequence(std::span<const int64_t> values, std::string* out);

// Decodes exactly out.size() values from `reader` into `out`. Returns
// Corruption (message without context; callers add it) when the bytes are
// truncated or malformed.
Status DecodeIntegerSequence(ByteReader* reader, std::span<int64_t> out);

}  // namespace cairn::chunk_coding
