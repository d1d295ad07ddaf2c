#include "chunk/double_column.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "chunk/integer_sequence.h"

namespace cairn::chunk_coding {
namespace {

constexpr double kPowersOfTen[kMaxDecimalExponent + 1] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18};

constexpr uint64_t kExponentBits = 0x7FF0000000000000ull;

bool IsFiniteBits(uint64_t bits) { return (bits & kExponentBits) != kExponentBits; }

// The integer k with double(k) / 10^exponent bit-identical to `value`, if any.
// The check uses exactly the decoder's formula, so whatever passes here
// round-trips, including values whose product with 10^e was inexact.
bool ToDecimal(double value, int exponent, int64_t* integer) {
  double scaled = value * kPowersOfTen[exponent];
  if (!(std::fabs(scaled) < 0x1p62)) return false;
  int64_t candidate = static_cast<int64_t>(std::round(scaled));
  double restored = static_cast<double>(candidate) / kPowersOfTen[exponent];
  if (std::bit_cast<uint64_t>(restored) != std::bit_cast<uint64_t>(value)) return false;
  *integer = candidate;
  return true;
}

struct ExponentChoice {
  int exponent = 0;
  size_t exceptions = 0;
};

// The smallest exponent with the fewest exceptions. Stops at the first exponent
// without exceptions, and abandons an exponent once it is no better than the best.
ExponentChoice ChooseExponent(std::span<const double> values) {
  ExponentChoice best{0, values.size() + 1};
  for (int exponent = 0; exponent <= kMaxDecimalExponent; ++exponent) {
    size_t exceptions = 0;
    int64_t ignored;
    for (double value : values) {
      if (!ToDecimal(value, exponent, &ignored) && ++exceptions >= best.exceptions) break;
    }
    if (exceptions < best.exceptions) best = {exponent, exceptions};
    if (exceptions == 0) break;
  }
  return best;
}

void AppendDecimal(std::span<const double> values, int exponent, std::string* out) {
  std::vector<int64_t> integers(values.size());
  std::vector<uint8_t> exact(values.size());
  size_t exception_count = 0;
  size_t first_exact = values.size();
  for (size_t i = 0; i < values.size(); ++i) {
    exact[i] = ToDecimal(values[i], exponent, &integers[i]);
    if (exact[i] && first_exact == values.size()) first_exact = i;
    exception_count += !exact[i];
  }
  // Exceptions repeat a neighbouring integer so they add no delta.
  for (size_t i = 0; i < values.size(); ++i) {
    if (exact[i]) continue;
    if (i < first_exact) {
      integers[i] = first_exact < values.size() ? integers[first_exact] : 0;
    } else {
      integers[i] = integers[i - 1];
    }
  }
  PutByte(out, static_cast<uint8_t>(DoubleMode::kDecimal));
  PutByte(out, static_cast<uint8_t>(exponent));
  EncodeIntegerSequence(integers, out);
  PutVarint(out, exception_count);
  size_t next_position = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    if (exact[i]) continue;
    PutVarint(out, i - next_position);
    PutFixed64(out, std::bit_cast<uint64_t>(values[i]));
    next_position = i + 1;
  }
}

constexpr unsigned kMaxLeadingZeros = 31;  // fits the 5-bit field

void AppendXor(std::span<const double> values, std::string* out) {
  PutByte(out, static_cast<uint8_t>(DoubleMode::kXor));
  BitWriter writer(out);
  uint64_t previous = std::bit_cast<uint64_t>(values[0]);
  writer.Write(previous, 64);
  bool have_window = false;
  unsigned window_leading = 0;
  unsigned window_trailing = 0;
  for (size_t i = 1; i < values.size(); ++i) {
    uint64_t bits = std::bit_cast<uint64_t>(values[i]);
    uint64_t difference = bits ^ previous;
    previous = bits;
    if (difference == 0) {
      writer.Write(0, 1);
      continue;
    }
    writer.Write(1, 1);
    unsigned leading =
        std::min<unsigned>(static_cast<unsigned>(std::countl_zero(difference)), kMaxLeadingZeros);
    unsigned trailing = static_cast<unsigned>(std::countr_zero(difference));
    if (have_window && leading >= window_leading && trailing >= window_trailing) {
      writer.Write(0, 1);
      writer.Write(difference >> window_trailing, 64 - window_leading - window_trailing);
      continue;
    }
    unsigned meaningful = 64 - leading - trailing;
    writer.Write(1, 1);
    writer.Write(leading, 5);
    writer.Write(meaningful - 1, 6);
    writer.Write(difference >> trailing, meaningful);
    have_window = true;
    window_leading = leading;
    window_trailing = trailing;
  }
  writer.Flush();
}

Status DecodeDecimal(ByteReader* reader, std::span<double> out, std::vector<int64_t>* scratch) {
  uint8_t exponent;
  if (!reader->ReadByte(&exponent)) return Status::Corruption("truncated decimal exponent");
  if (exponent > kMaxDecimalExponent) {
    return Status::Corruption("decimal exponent " + std::to_string(exponent) + " exceeds " +
                              std::to_string(kMaxDecimalExponent));
  }
  scratch->resize(out.size());
  CAIRN_RETURN_IF_ERROR(DecodeIntegerSequence(reader, *scratch));
  const double divisor = kPowersOfTen[exponent];
  const int64_t* integers = scratch->data();
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(integers[i]) / divisor;

  uint64_t exception_count;
  if (!reader->ReadVarint(&exception_count)) return Status::Corruption("truncated exception count");
  if (exception_count > out.size()) {
    return Status::Corruption("exception count " + std::to_string(exception_count) + " exceeds " +
                              std::to_string(out.size()) + " values");
  }
  uint64_t next_position = 0;
  for (uint64_t i = 0; i < exception_count; ++i) {
    uint64_t gap;
    uint64_t bits;
    if (!reader->ReadVarint(&gap) || !reader->ReadFixed64(&bits)) {
      return Status::Corruption("truncated exception");
    }
    if (gap >= out.size() - next_position) {
      return Status::Corruption("exception position beyond " + std::to_string(out.size()) + " values");
    }
    if (!IsFiniteBits(bits)) return Status::Corruption("non-finite exception value");
    uint64_t position = next_position + gap;
    out[static_cast<size_t>(position)] = std::bit_cast<double>(bits);
    next_position = position + 1;
  }
  if (!reader->empty()) {
    return Status::Corruption(std::to_string(reader->remaining()) +
                              " unexpected bytes after decimal doubles");
  }
  return Status::Ok();
}

Status DecodeXor(ByteReader* reader, std::span<double> out) {
  BitReader bits(reader->position(), reader->remaining());
  const Status truncated = Status::Corruption("truncated XOR stream");
  uint64_t previous;
  if (!bits.ReadChecked(64, &previous)) return truncated;
  if (!IsFiniteBits(previous)) return Status::Corruption("non-finite XOR value");
  out[0] = std::bit_cast<double>(previous);
  bool have_window = false;
  unsigned window_leading = 0;
  unsigned window_trailing = 0;
  for (size_t i = 1; i < out.size(); ++i) {
    uint64_t control;
    if (!bits.ReadChecked(1, &control)) return truncated;
    if (control != 0) {
      if (!bits.ReadChecked(1, &control)) return truncated;
      if (control != 0) {
        uint64_t leading;
        uint64_t meaningful_minus_one;
        if (!bits.ReadChecked(5, &leading) || !bits.ReadChecked(6, &meaningful_minus_one)) return truncated;
        unsigned meaningful = static_cast<unsigned>(meaningful_minus_one) + 1;
        if (leading + meaningful > 64) return Status::Corruption("XOR window exceeds 64 bits");
        window_leading = static_cast<unsigned>(leading);
        window_trailing = 64 - window_leading - meaningful;
        have_window = true;
      } else if (!have_window) {
        return Status::Corruption("XOR window reused before it was set");
      }
      uint64_t significant;
      if (!bits.ReadChecked(64 - window_leading - window_trailing, &significant)) return truncated;
      previous ^= significant << window_trailing;  // window_trailing <= 63: meaningful >= 1
      if (!IsFiniteBits(previous)) return Status::Corruption("non-finite XOR value");
    }
    out[i] = std::bit_cast<double>(previous);
  }
  uint64_t used_bytes = (bits.bits_consumed() + 7) / 8;
  if (used_bytes != reader->remaining()) {
    return Status::Corruption(std::to_string(reader->remaining() - used_bytes) +
                              " unexpected bytes after XOR doubles");
  }
  reader->Skip(reader->remaining());
  return Status::Ok();
}

}  // namespace

void EncodeDoubles(std::span<const double> values, std::string* out) {
  ExponentChoice choice = ChooseExponent(values);
  if (choice.exceptions == 0) {
    AppendDecimal(values, choice.exponent, out);
    return;
  }
  std::string xor_encoding;
  AppendXor(values, &xor_encoding);
  if (choice.exceptions < values.size()) {
    std::string decimal_encoding;
    AppendDecimal(values, choice.exponent, &decimal_encoding);
    if (decimal_encoding.size() <= xor_encoding.size()) {
      out->append(decimal_encoding);
      return;
    }
  }
  out->append(xor_encoding);
}

Status DecodeDoubles(ByteReader* reader, std::span<double> out, std::vector<int64_t>* scratch) {
  if (out.empty()) return Status::Ok();
  uint8_t mode;
  if (!reader->ReadByte(&mode)) return Status::Corruption("truncated double mode");
  switch (static_cast<DoubleMode>(mode)) {
    case DoubleMode::kDecimal:
      return DecodeDecimal(reader, out, scratch);
    case DoubleMode::kXor:
      return DecodeXor(reader, out);
  }
  return Status::Corruption("unknown double mode " + std::to_string(mode));
}

}  // namespace cairn::chunk_coding
