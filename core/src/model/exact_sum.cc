#include "model/exact_sum.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace cairn {

namespace {

constexpr uint64_t kTopBit = uint64_t{1} << 63;
constexpr int64_t kExactDoubleInteger = int64_t{1} << 53;  // every integer up to it is a double

// An unsigned 128-bit magnitude.
struct Words {
  uint64_t high = 0, low = 0;
};

Words Negate(Words w) {
  const uint64_t low = ~w.low + 1;
  return Words{~w.high + (low == 0 ? 1 : 0), low};
}

// Divides `w` by `divisor` (> 0) in place and returns the remainder. The
// low word goes bit by bit: with no 128-bit type there is no wider dividend
// to hand the hardware.
uint64_t DivideInPlace(Words* w, uint64_t divisor) {
  uint64_t remainder = w->high % divisor;
  w->high /= divisor;
  uint64_t quotient = 0;
  for (int bit = 63; bit >= 0; --bit) {
    const bool carry = (remainder & kTopBit) != 0;  // 2 * remainder >= 2^64 > divisor
    remainder = (remainder << 1) | ((w->low >> bit) & 1);
    quotient <<= 1;
    if (carry || remainder >= divisor) {
      remainder -= divisor;  // wraps back into range when carry was set
      quotient |= 1;
    }
  }
  w->low = quotient;
  return remainder;
}

// `w` (high word non-zero) plus a fraction that is non-zero when `sticky`,
// rounded once: the top 64 bits with every bit below them folded into the
// lowest one, which lies far below a double's rounding position, so the
// uint64 -> double conversion (round to nearest even) rounds as the whole
// value would.
double RoundWide(Words w, bool sticky) {
  const int shift = std::bit_width(w.high);  // 1 .. 64
  uint64_t top = shift == 64 ? w.high : (w.high << (64 - shift)) | (w.low >> shift);
  const uint64_t below = shift == 64 ? w.low : w.low & ((uint64_t{1} << shift) - 1);
  if (below != 0 || sticky) top |= 1;
  return std::ldexp(static_cast<double>(top), shift);
}

}  // namespace

ExactSum ExactSum::FromWords(int64_t high, uint64_t low) {
  ExactSum sum;
  sum.high_ = static_cast<uint64_t>(high);
  sum.low_ = low;
  return sum;
}

ExactSum ExactSum::Product(int64_t value, uint64_t count) {
  const uint64_t magnitude = value < 0 ? 0 - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
  const uint64_t a0 = magnitude & 0xffffffffu, a1 = magnitude >> 32;
  const uint64_t b0 = count & 0xffffffffu, b1 = count >> 32;
  const uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  const uint64_t middle = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
  Words w{p11 + (p01 >> 32) + (p10 >> 32) + (middle >> 32), (middle << 32) | (p00 & 0xffffffffu)};
  if (value < 0) w = Negate(w);
  ExactSum product;
  product.high_ = w.high;
  product.low_ = w.low;
  return product;
}

void ExactSum::Add(int64_t value) {
  const uint64_t low = low_ + static_cast<uint64_t>(value);
  high_ += (value < 0 ? UINT64_MAX : 0) + (low < low_ ? 1 : 0);
  low_ = low;
}

void ExactSum::Add(const ExactSum& other) {
  const uint64_t low = low_ + other.low_;
  high_ += other.high_ + (low < low_ ? 1 : 0);
  low_ = low;
}

bool ExactSum::FitsInt64() const { return high_ == ((low_ & kTopBit) != 0 ? UINT64_MAX : 0); }

double ExactSum::ToDouble() const {
  const bool negative = high() < 0;
  const Words w = negative ? Negate(Words{high_, low_}) : Words{high_, low_};
  const double magnitude = w.high == 0 ? static_cast<double>(w.low) : RoundWide(w, false);
  return negative ? -magnitude : magnitude;
}

double ExactSum::DividedBy(uint64_t count) const {
  if (FitsInt64() && count <= static_cast<uint64_t>(kExactDoubleInteger)) {
    const int64_t value = ToInt64();
    // Both operands are exact doubles and IEEE division rounds once.
    if (value >= -kExactDoubleInteger && value <= kExactDoubleInteger) {
      return static_cast<double>(value) / static_cast<double>(count);
    }
  }
  const bool negative = high() < 0;
  Words quotient = negative ? Negate(Words{high_, low_}) : Words{high_, low_};
  uint64_t remainder = DivideInPlace(&quotient, count);
  double magnitude = 0;
  if (quotient.high != 0) {
    magnitude = RoundWide(quotient, remainder != 0);
  } else {
    // Long division continues into the fraction until 64 significant bits
    // are known (or it ends exactly); the quotient is at least 1/count >=
    // 2^-64, so that takes at most 127 steps.
    uint64_t significand = quotient.low;
    int exponent = 0;
    while ((significand & kTopBit) == 0 && remainder != 0) {
      const bool carry = (remainder & kTopBit) != 0;
      remainder <<= 1;
      const bool bit = carry || remainder >= count;
      if (bit) remainder -= count;
      significand = (significand << 1) | (bit ? 1 : 0);
      --exponent;
    }
    if (remainder != 0) significand |= 1;
    magnitude = std::ldexp(static_cast<double>(significand), exponent);
  }
  return negative ? -magnitude : magnitude;
}

std::string ExactSum::ToString() const {
  const bool negative = high() < 0;
  Words w = negative ? Negate(Words{high_, low_}) : Words{high_, low_};
  constexpr uint64_t kChunk = 10'000'000'000'000'000'000u;  // 10^19, the largest power of ten in a word
  std::string digits;                                       // least significant first
  do {
    uint64_t part = DivideInPlace(&w, kChunk);
    const bool more = w.high != 0 || w.low != 0;
    for (int i = 0; i < 19 && (more || part != 0 || i == 0); ++i) {
      digits.push_back(static_cast<char>('0' + part % 10));
      part /= 10;
    }
    if (!more) break;
  } while (true);
  if (negative) digits.push_back('-');
  std::reverse(digits.begin(), digits.end());
  return digits;
}

}  // namespace cairn
