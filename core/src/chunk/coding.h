// Byte- and bit-level primitives of the chunk format (chunk_format.md §1):
// little-endian fixed-width integers, LEB128 varints and zigzag (from
// cairn/util, named here for the codec), and LSB-first bit streams.
// Header-only so that the hot decode loops inline them.
//
// Readers never read past the bytes they were given: every read either
// checks the remaining length itself or documents that the caller has
// checked it up front.
//
// Thread-safety: plain values; one object per thread.
#pragma once

#include <bit>
#include <cstdint>
#include <string>
#include <string_view>

#include "cairn/util/endian.h"
#include "cairn/util/varint.h"

namespace cairn::chunk_coding {

using util::PutFixed32;
using util::PutFixed64;
using util::PutVarint;
using util::VarintSize;
using util::ZigZagDecode;
using util::ZigZagEncode;

// All-ones in the low `width` bits; width may be 0..64 (no shift by 64).
inline uint64_t LowBitsMask(unsigned width) {
  return width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
}

// Bits needed to write `value` (0 for 0).
inline unsigned BitWidth(uint64_t value) { return static_cast<unsigned>(std::bit_width(value)); }

inline uint64_t LoadLittleEndian64(const unsigned char* p) { return util::DecodeFixed64(p); }

inline uint32_t LoadLittleEndian32(const unsigned char* p) { return util::DecodeFixed32(p); }

inline void PutSignedVarint(std::string* out, int64_t value) { PutVarint(out, ZigZagEncode(value)); }

// A byte string as its varint length, then its bytes.
inline void PutLengthPrefixed(std::string* out, std::string_view bytes) {
  PutVarint(out, bytes.size());
  out->append(bytes);
}

inline void PutByte(std::string* out, uint8_t value) { out->push_back(static_cast<char>(value)); }

// A cursor over a byte range. Each Read* returns false, consuming nothing
// useful, when the bytes run out or the encoding is malformed; callers turn
// that into a Corruption status naming what they were reading.
class ByteReader {
 public:
  explicit ByteReader(std::string_view bytes)
      : position_(reinterpret_cast<const unsigned char*>(bytes.data())), end_(position_ + bytes.size()) {}

  size_t remaining() const { return static_cast<size_t>(end_ - position_); }
  bool empty() const { return position_ == end_; }
  const unsigned char* position() const { return position_; }

  bool ReadByte(uint8_t* value) {
    if (position_ == end_) return false;
    *value = *position_++;
    return true;
  }

  bool ReadVarint(uint64_t* value) {
    const unsigned char* next = util::GetVarint(position_, end_, value);
    if (next == nullptr) return false;
    position_ = next;
    return true;
  }

  bool ReadSignedVarint(int64_t* value) {
    uint64_t raw;
    if (!ReadVarint(&raw)) return false;
    *value = ZigZagDecode(raw);
    return true;
  }

  bool ReadFixed64(uint64_t* value) {
    if (remaining() < 8) return false;
    *value = LoadLittleEndian64(position_);
    position_ += 8;
    return true;
  }

  bool ReadBytes(size_t size, std::string_view* bytes) {
    if (remaining() < size) return false;
    *bytes = std::string_view(reinterpret_cast<const char*>(position_), size);
    position_ += size;
    return true;
  }

  // Reads what PutLengthPrefixed wrote into `*text`; false when truncated.
  bool ReadLengthPrefixed(std::string* text) {
    uint64_t length;
    std::string_view bytes;
    if (!ReadVarint(&length) || length > remaining() || !ReadBytes(static_cast<size_t>(length), &bytes)) {
      return false;
    }
    text->assign(bytes);
    return true;
  }

  bool Skip(size_t size) {
    if (remaining() < size) return false;
    position_ += size;
    return true;
  }

 private:
  const unsigned char* position_;
  const unsigned char* end_;
};

// Appends integers of 0..64 bits to a string as an LSB-first bit stream.
// Bits are gathered in a 64-bit accumulator and flushed a word at a time.
class BitWriter {
 public:
  explicit BitWriter(std::string* out) : out_(out) {}

  void Write(uint64_t value, unsigned width) {
    if (width == 0) return;
    value &= LowBitsMask(width);
    accumulator_ |= value << filled_;  // filled_ < 64 always
    unsigned total = filled_ + width;
    if (total >= 64) {
      PutFixed64(out_, accumulator_);
      // Bits of `value` that did not fit; with filled_ == 0 all of it fitted.
      accumulator_ = filled_ == 0 ? 0 : value >> (64 - filled_);
      filled_ = total - 64;
    } else {
      filled_ = total;
    }
  }

  // Writes the pending bits, zero-padded to a byte boundary. The writer may
  // be reused afterwards; the next bit starts a new byte.
  void Flush() {
    for (unsigned written = 0; written < filled_; written += 8) {
      out_->push_back(static_cast<char>(accumulator_ >> written));
    }
    accumulator_ = 0;
    filled_ = 0;
  }

 private:
  std::string* out_;
  uint64_t accumulator_ = 0;
  unsigned filled_ = 0;
};

// Reads an LSB-first bit stream. Read() trusts the caller to have checked
// that the bits exist (the frame decoders check whole frames up front);
// ReadChecked() checks itself, for variable-length streams.
class BitReader {
 public:
  BitReader(const unsigned char* data, size_t size_bytes) : data_(data), size_bytes_(size_bytes) {}

  uint64_t bits_remaining() const { return static_cast<uint64_t>(size_bytes_) * 8 - position_; }
  uint64_t bits_consumed() const { return position_; }

  // Precondition: width <= 64 and width <= bits_remaining().
  uint64_t Read(unsigned width) {
    size_t byte = static_cast<size_t>(position_ >> 3);
    unsigned shift = static_cast<unsigned>(position_ & 7);
    uint64_t word;
    if (byte + 8 <= size_bytes_) {
      word = LoadLittleEndian64(data_ + byte);
    } else {
      word = 0;
      for (size_t i = byte; i < size_bytes_; ++i) word |= static_cast<uint64_t>(data_[i]) << (8 * (i - byte));
    }
    uint64_t value = word >> shift;
    // A 64-bit word starting mid-byte lacks up to 7 of the wanted bits.
    if (width + shift > 64 && byte + 8 < size_bytes_) {
      value |= static_cast<uint64_t>(data_[byte + 8]) << (64 - shift);
    }
    position_ += width;
    return value & LowBitsMask(width);
  }

  // Precondition: count <= bits_remaining().
  void SkipBits(uint64_t count) { position_ += count; }

  bool ReadChecked(unsigned width, uint64_t* value) {
    if (width > 64 || width > bits_remaining()) return false;
    *value = Read(width);
    return true;
  }

 private:
  const unsigned char* data_;
  size_t size_bytes_;
  uint64_t position_ = 0;
};

}  // namespace cairn::chunk_coding
