// Little-endian fixed-width integers, the byte order of every cairn format
// (log segments, chunks, write batches, the sync envelope and receipts).
//
// Header-only so that the chunk decoder's hot loops inline them. Writers
// append to a std::string; readers take a pointer and trust the caller to
// have checked that the bytes exist.
//
// Thread-safety: pure functions.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace cairn::util {

// Appends the low `width` bytes of `value`, least significant first.
// Precondition: width <= 8.
inline void PutLittleEndian(std::string* out, uint64_t value, size_t width) {
  char bytes[8];
  for (size_t i = 0; i < width; ++i) bytes[i] = static_cast<char>(value >> (8 * i));
  out->append(bytes, width);
}

inline void PutFixed32(std::string* out, uint32_t value) { PutLittleEndian(out, value, 4); }
inline void PutFixed64(std::string* out, uint64_t value) { PutLittleEndian(out, value, 8); }

// Reads `width` bytes at `src`, least significant first, zero-extended.
// Precondition: width <= 8 and `src` points at `width` readable bytes.
inline uint64_t LoadLittleEndian(const char* src, size_t width) {
  uint64_t value = 0;
  for (size_t i = 0; i < width; ++i) {
    value |= static_cast<uint64_t>(static_cast<unsigned char>(src[i])) << (8 * i);
  }
  return value;
}

// Precondition: `src` points at 4 (DecodeFixed32) or 8 (DecodeFixed64)
// readable bytes; no alignment is needed.
inline uint32_t DecodeFixed32(const void* src) {
  uint32_t word;
  std::memcpy(&word, src, sizeof(word));
  if constexpr (std::endian::native == std::endian::big) word = __builtin_bswap32(word);
  return word;
}

inline uint64_t DecodeFixed64(const void* src) {
  uint64_t word;
  std::memcpy(&word, src, sizeof(word));
  if constexpr (std::endian::native == std::endian::big) word = __builtin_bswap64(word);
  return word;
}

}  // namespace cairn::util
