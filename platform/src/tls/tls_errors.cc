#include "tls/tls_errors.h"

#include <cstdio>

#include <mbedtls/error.h>

namespace cairn::tls_internal {

std::string MbedTlsErrorText(int error) {
  char description[256] = {};
  mbedtls_strerror(error, description, sizeof(description));
  char code[32] = {};
  std::snprintf(code, sizeof(code), " (%s0x%04X)", error < 0 ? "-" : "",
                static_cast<unsigned>(error < 0 ? -error : error));
  return std::string(description) + code;
}

}  // namespace cairn::tls_internal
