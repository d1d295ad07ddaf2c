#include "cairn/platform/crypto.h"

#include <mbedtls/md.h>
#include <mbedtls/sha256.h>

namespace cairn {

Sha256Digest Sha256(std::string_view data) {
  Sha256Digest digest;
  // Cannot fail for SHA-256 with a software implementation.
  static_cast<void>(mbedtls_sha256_ret(reinterpret_cast<const unsigned char*>(data.data()), data.size(),
                                       digest.data(), /*is224=*/0));
  return digest;
}

Sha256Digest HmacSha256(std::string_view key, std::string_view data) {
  Sha256Digest digest;
  static_cast<void>(mbedtls_md_hmac(
      mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), reinterpret_cast<const unsigned char*>(key.data()),
      key.size(), reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest.data()));
  return digest;
}

bool ConstantTimeEqual(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  if (a.size() != b.size()) return false;
  // volatile: the compiler must not turn the loop into an early-exit memcmp.
  volatile uint8_t difference = 0;
  for (size_t i = 0; i < a.size(); ++i) difference = difference | static_cast<uint8_t>(a[i] ^ b[i]);
  return difference == 0;
}

}  // namespace cairn
