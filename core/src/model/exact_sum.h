// ExactSum: the exact sum of int64 values, for integer aggregates (sum, avg)
// in queries, chunk statistics and the quota's downsampling.
//
// Why not `__int128`: GCC has none on 32-bit ARM (the armhf gateways), so
// the 128-bit two's complement value is kept in two 64-bit words and the
// same code runs on every target. 2^64 int64 values, the most any count in
// cairn can hold, sum to at most 2^127 in magnitude, which fits: a sum of
// at most 2^64 terms never wraps.
#pragma once

#include <cstdint>
#include <string>

namespace cairn {

class ExactSum {
 public:
  ExactSum() = default;

  // The value high * 2^64 + low (two's complement words).
  static ExactSum FromWords(int64_t high, uint64_t low);

  // value * count, exactly.
  static ExactSum Product(int64_t value, uint64_t count);

  void Add(int64_t value);
  void Add(const ExactSum& other);

  int64_t high() const { return static_cast<int64_t>(high_); }
  uint64_t low() const { return low_; }

  bool FitsInt64() const;
  // Precondition: FitsInt64().
  int64_t ToInt64() const { return static_cast<int64_t>(low_); }

  // The sum rounded once to the nearest double (ties to even).
  double ToDouble() const;

  // The exact quotient sum / count rounded once to the nearest double (ties
  // to even): the mean of `count` values summing to this. count > 0.
  double DividedBy(uint64_t count) const;

  // Decimal, e.g. "-170141183460469231731687303715884105728".
  std::string ToString() const;

  friend bool operator==(const ExactSum& a, const ExactSum& b) {
    return a.high_ == b.high_ && a.low_ == b.low_;
  }
  friend bool operator<(const ExactSum& a, const ExactSum& b) {
    return a.high() != b.high() ? a.high() < b.high() : a.low_ < b.low_;
  }
  friend bool operator<=(const ExactSum& a, const ExactSum& b) { return !(b < a); }

 private:
  // Unsigned words: additions wrap as two's complement without undefined
  // behaviour; high() reads the upper word back as signed.
  uint64_t high_ = 0;
  uint64_t low_ = 0;
};

}  // namespace cairn
