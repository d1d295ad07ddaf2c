// A throwaway public key infrastructure for tests of TLS code (HTTPS, MQTT).
#pragma once

#include <string>

#include "cairn/platform/status.h"

namespace cairn {

// Paths of the PEM files GenerateTestPki wrote. Keys are EC P-256, in SEC1
// PEM ("EC PRIVATE KEY"), unencrypted.
struct TestPki {
  // A self-signed CA (basicConstraints CA:TRUE, pathlen 0) that signed the
  // server and client certificates below.
  std::string ca_certificate_path;
  std::string ca_key_path;
  // CN "localhost"; subject alternative names DNS "localhost", IP 127.0.0.1
  // and IP ::1; extendedKeyUsage serverAuth.
  std::string server_certificate_path;
  std::string server_key_path;
  // CN "cairn-test-client"; subject alternative name DNS
  // "gateway-7.example"; extendedKeyUsage clientAuth.
  std::string client_certificate_path;
  std::string client_key_path;
  // Another self-signed CA, unrelated to everything above: a client that
  // trusts only this one must reject the server.
  std::string other_ca_certificate_path;
};

// Generates fresh keys and certificates (valid from one day ago to 30 days
// ahead of Env::Default()'s wall clock, signed with ECDSA-SHA256, with
// subject and authority key identifiers, keyUsage and extendedKeyUsage as
// OpenSSL-based peers such as curl and mosquitto expect) and writes them
// into `dir` (created if missing): ca.pem, ca.key, server.pem, server.key,
// client.pem, client.key, other_ca.pem. Randomness comes from
// Env::Default()->RandomBytes. Calls for different directories may run
// concurrently.
Result<TestPki> GenerateTestPki(const std::string& dir);

}  // namespace cairn
