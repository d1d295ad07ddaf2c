// Mbed TLS error codes as text.
#pragma once

#include <string>

namespace cairn::tls_internal {

// Mbed TLS's description of `error` (a negative code) followed by the code in
// hex, e.g. "SSL - An invalid SSL record was received (-0x7200)".
std::string MbedTlsErrorText(int error);

}  // namespace cairn::tls_internal
