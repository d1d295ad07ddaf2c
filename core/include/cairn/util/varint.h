// LEB128 varints (7 bits a byte, least significant group first, high bit set
// on every byte but the last) and zigzag for signed values: the integer
// encoding of chunks, write batches, catalog keys and record blocks.
//
// Header-only so that the chunk decoder's hot loops inline them.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace cairn::util {

// The longest varint of a uint64_t.
inline constexpr size_t kMaxVarintBytes = 10;

// Maps signed to unsigned so that small magnitudes stay small:
// 0, -1, 1, -2, ... become 0, 1, 2, 3, ...
inline uint64_t ZigZagEncode(int64_t value) {
  return (static_cast<uint64_t>(value) << 1) ^ static_cast<uint64_t>(value >> 63);
}

inline int64_t ZigZagDecode(uint64_t value) { return static_cast<int64_t>((value >> 1) ^ (0 - (value & 1))); }

// Appends `value` as a varint of 1 to 10 bytes.
inline void PutVarint(std::string* out, uint64_t value) {
  char bytes[kMaxVarintBytes];
  size_t size = 0;
  while (value >= 0x80) {
    bytes[size++] = static_cast<char>((value & 0x7F) | 0x80);
    value >>= 7;
  }
  bytes[size++] = static_cast<char>(value);
  out->append(bytes, size);
}

// The number of bytes PutVarint writes for `value`.
inline size_t VarintSize(uint64_t value) {
  size_t size = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++size;
  }
  return size;
}

// Decodes the varint at [p, limit) into `*value` and returns the byte after
// it; nullptr, leaving `*value` alone, when the bytes end before the varint
// does or the varint does not fit 64 bits (more than 10 bytes, or a tenth
// byte above 1). Overlong encodings that fit (a zero group with the high bit
// set) are accepted, as every reader so far has.
inline const unsigned char* GetVarint(const unsigned char* p, const unsigned char* limit, uint64_t* value) {
  uint64_t result = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (p == limit) return nullptr;
    const uint64_t byte = *p++;
    // The tenth byte carries only bit 63: anything above would overflow.
    if (shift == 63 && byte > 1) return nullptr;
    result |= (byte & 0x7F) << shift;
    if ((byte & 0x80) == 0) {
      *value = result;
      return p;
    }
  }
  return nullptr;
}

}  // namespace cairn::util
