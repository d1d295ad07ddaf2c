#include "cairn/platform/tls.h"

#include <utility>

#include "tls/tls_connection.h"
#include "tls/tls_endpoint.h"

namespace cairn {

using tls_internal::EstablishTlsConnection;
using tls_internal::TlsEndpoint;
using tls_internal::TlsEndpointSettings;
using tls_internal::TlsRole;

TlsServerContext::TlsServerContext(std::shared_ptr<const TlsEndpoint> endpoint)
    : endpoint_(std::move(endpoint)) {}

TlsServerContext::~TlsServerContext() = default;

Result<std::unique_ptr<TlsServerContext>> TlsServerContext::Create(Env* env,
                                                                   const TlsServerOptions& options) {
  TlsEndpointSettings settings;
  settings.role = TlsRole::kServer;
  settings.certificate_path = options.certificate_path;
  settings.private_key_path = options.private_key_path;
  settings.trusted_ca_path = options.client_ca_path;
  settings.handshake_timeout_ms = options.handshake_timeout_ms;
  CAIRN_ASSIGN_OR_RETURN(std::shared_ptr<const TlsEndpoint> endpoint, TlsEndpoint::Create(env, settings));
  return std::unique_ptr<TlsServerContext>(new TlsServerContext(std::move(endpoint)));
}

Result<std::unique_ptr<TcpConnection>> TlsServerContext::Accept(
    std::unique_ptr<TcpConnection> transport) const {
  return EstablishTlsConnection(endpoint_, std::move(transport));
}

TlsClientContext::TlsClientContext(std::shared_ptr<const TlsEndpoint> endpoint)
    : endpoint_(std::move(endpoint)) {}

TlsClientContext::~TlsClientContext() = default;

Result<std::unique_ptr<TlsClientContext>> TlsClientContext::Create(Env* env,
                                                                   const TlsClientOptions& options) {
  TlsEndpointSettings settings;
  settings.role = TlsRole::kClient;
  settings.certificate_path = options.certificate_path;
  settings.private_key_path = options.private_key_path;
  settings.trusted_ca_path = options.ca_path;
  settings.server_name = options.server_name;
  settings.handshake_timeout_ms = options.handshake_timeout_ms;
  CAIRN_ASSIGN_OR_RETURN(std::shared_ptr<const TlsEndpoint> endpoint, TlsEndpoint::Create(env, settings));
  return std::unique_ptr<TlsClientContext>(new TlsClientContext(std::move(endpoint)));
}

Result<std::unique_ptr<TcpConnection>> TlsClientContext::Connect(
    std::unique_ptr<TcpConnection> transport) const {
  return EstablishTlsConnection(endpoint_, std::move(transport));
}

}  // namespace cairn
