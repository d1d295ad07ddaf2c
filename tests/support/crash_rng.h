// A seeded source of draws for crash tests, bit-for-bit the same on x86-64,
// aarch64 and armhf: a std::mt19937_64 (whose output the standard fixes)
// with explicit 64-bit arithmetic on top (the standard distributions are
// not specified bit-for-bit across library versions).
//
// Header-only so that both the test support library (which links the
// platform only) and header-only test helpers can use it.
//
// Thread-safety: none.
#pragma once

#include <cstdint>
#include <random>

namespace cairn::crash {

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}

  uint64_t Next() { return engine_(); }
  // Uniform in [low, high]; precondition low <= high.
  int64_t Between(int64_t low, int64_t high) {
    const uint64_t span = static_cast<uint64_t>(high) - static_cast<uint64_t>(low) + 1;
    if (span == 0) return static_cast<int64_t>(Next());
    return static_cast<int64_t>(static_cast<uint64_t>(low) + Next() % span);
  }
  // Index into a container of `size` elements; precondition size > 0.
  size_t Index(size_t size) { return static_cast<size_t>(Next() % static_cast<uint64_t>(size)); }
  // True with probability percent/100.
  bool Percent(int percent) { return Between(0, 99) < percent; }

 private:
  std::mt19937_64 engine_;
};

}  // namespace cairn::crash
