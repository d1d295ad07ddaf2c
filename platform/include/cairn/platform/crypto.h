// Hashes and message authentication (Mbed TLS), for the layers above:
// API tokens are stored as SHA-256 digests, sync payloads are signed with
// HMAC-SHA256.
//
// Thread-safety: pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace cairn {

using Sha256Digest = std::array<uint8_t, 32>;

Sha256Digest Sha256(std::string_view data);

// HMAC-SHA256 (RFC 2104) of `data` under `key`.
Sha256Digest HmacSha256(std::string_view key, std::string_view data);

// Whether a and b hold the same bytes, taking the same time for every
// content of equal-length inputs (a token or MAC check must not reveal how
// many leading bytes matched). Different lengths compare unequal at once.
bool ConstantTimeEqual(std::span<const uint8_t> a, std::span<const uint8_t> b);

}  // namespace cairn
