// What all connections of one TLS context share: configuration, credentials,
// trusted CAs and the random generator.
#pragma once

#include <memory>
#include <string>

#include <mbedtls/pk.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>

#include "cairn/platform/env.h"
#include "cairn/platform/status.h"

#include "tls/tls_random.h"

namespace cairn::tls_internal {

enum class TlsRole { kServer, kClient };

struct TlsEndpointSettings {
  TlsRole role = TlsRole::kServer;
  // Own certificate chain and key: required for a server, optional (both or
  // neither) for a client.
  std::string certificate_path;
  std::string private_key_path;
  // CAs that must have signed the peer's certificate. Optional for a server
  // (then clients are not asked for one), required for a client.
  std::string trusted_ca_path;
  // Client only: the DNS name or numeric IP address the server's
  // certificate must carry.
  std::string server_name;
  int handshake_timeout_ms = 10000;
};

// Immutable once created, so any number of connections may use one endpoint
// from any number of threads; each connection holds a shared_ptr to it.
class TlsEndpoint {
 public:
  // Loads and checks the files through `env` and builds the Mbed TLS
  // configuration. `env` is not owned and must outlive the endpoint.
  static Result<std::shared_ptr<const TlsEndpoint>> Create(Env* env, const TlsEndpointSettings& settings);

  ~TlsEndpoint();
  TlsEndpoint(const TlsEndpoint&) = delete;
  TlsEndpoint& operator=(const TlsEndpoint&) = delete;

  Env* env() const { return env_; }
  TlsRole role() const { return role_; }
  const mbedtls_ssl_config* config() const { return &config_; }
  int handshake_timeout_ms() const { return handshake_timeout_ms_; }
  // Client only: the name the server's certificate must carry, as given.
  const std::string& server_name() const { return server_name_; }
  // Client only: the server name to send as SNI and to check in the server's
  // certificate by Mbed TLS; empty when the server name is an IP address,
  // which this endpoint's verify callback checks instead.
  const std::string& dns_server_name() const { return dns_server_name_; }

 private:
  TlsEndpoint(Env* env, const TlsEndpointSettings& settings);

  Status Configure(const TlsEndpointSettings& settings);
  Status ConfigureServer(const TlsEndpointSettings& settings);
  Status ConfigureClient(const TlsEndpointSettings& settings);
  Status LoadOwnCredentials(const TlsEndpointSettings& settings);

  // Mbed TLS's verify callback for a server named by IP address: flags the
  // server's certificate unless it lists that address (Mbed TLS 2.28 checks
  // only DNS names). `self` is the TlsEndpoint.
  static int VerifyServerAddress(void* self, mbedtls_x509_crt* certificate, int depth, uint32_t* flags);

  Env* const env_;
  const TlsRole role_;
  const int handshake_timeout_ms_;
  const std::string server_name_;
  std::string dns_server_name_;
  // The server's address in network byte order (4 or 16 bytes) when the
  // server name is an IP address; empty otherwise.
  std::string server_address_bytes_;

  std::unique_ptr<TlsRandom> random_;
  mbedtls_x509_crt own_certificates_;
  mbedtls_pk_context own_key_;
  mbedtls_x509_crt trusted_cas_;
  mbedtls_ssl_config config_;
};

}  // namespace cairn::tls_internal
