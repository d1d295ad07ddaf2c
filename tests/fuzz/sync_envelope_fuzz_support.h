// Shared by the sync envelope fuzzer and its seed generator: the key every
// seed is signed with, and re-signing, so that mutated inputs get past the
// MAC and reach the parsers behind it.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "cairn/platform/crypto.h"

namespace cairn::fuzz {

inline constexpr std::string_view kSyncFuzzKey = "sync envelope fuzz key, 32 bytes";

// Aborts (which libFuzzer reports with the input) when a property fails.
inline void RequireSync(bool condition, const char* property) {
  if (!condition) {
    std::fprintf(stderr, "property violated: %s\n", property);
    std::abort();
  }
}

// `input` with its last 32 bytes replaced by the HMAC of the rest (the
// binary MAC of envelope_format.md §2). Empty when too short.
inline std::string WithValidBinaryMac(std::string_view input) {
  if (input.size() < 32) return std::string();
  std::string fixed(input.substr(0, input.size() - 32));
  const Sha256Digest mac = HmacSha256(kSyncFuzzKey, fixed);
  fixed.append(reinterpret_cast<const char*>(mac.data()), mac.size());
  return fixed;
}

// `input` with its last 74 bytes replaced by a JSON signature trailer over
// the rest (envelope_format.md §2). Empty when too short.
inline std::string WithValidJsonMac(std::string_view input) {
  constexpr size_t kTrailerBytes = 74;
  if (input.size() < kTrailerBytes) return std::string();
  std::string fixed(input.substr(0, input.size() - kTrailerBytes));
  const Sha256Digest mac = HmacSha256(kSyncFuzzKey, fixed);
  static constexpr char kDigits[] = "0123456789abcdef";
  fixed.append(",\"mac\":\"");
  for (uint8_t byte : mac) {
    fixed.push_back(kDigits[byte >> 4]);
    fixed.push_back(kDigits[byte & 0xF]);
  }
  fixed.append("\"}");
  return fixed;
}

}  // namespace cairn::fuzz
