// The names inside an X.509 certificate: its subject alternative names
// (walked in the DER, because Mbed TLS 2.28 lists only some kinds) and its
// subject's common name.
#pragma once

#include <functional>
#include <string_view>

#include <mbedtls/x509_crt.h>

#include "cairn/platform/env.h"

namespace cairn::tls_internal {

// Calls `visit(tag, value)` for every GeneralName of the certificate's
// subjectAltName extension, in order; `tag` is the GeneralName's choice
// (MBEDTLS_X509_SAN_DNS_NAME, MBEDTLS_X509_SAN_IP_ADDRESS, ...) and `value`
// its raw content (text for names, 4 or 16 bytes for an IP address).
// Stops early when `visit` returns false. The DER has already been
// validated by Mbed TLS when it parsed the certificate; any surprise ends
// the walk as if there were no more names.
void ForEachAlternativeName(const mbedtls_x509_crt& certificate,
                            const std::function<bool(int tag, std::string_view value)>& visit);

// The common name and the DNS, email and URI alternative names of
// `certificate` (see PeerCertificate).
PeerCertificate NamesOf(const mbedtls_x509_crt& certificate);

}  // namespace cairn::tls_internal
