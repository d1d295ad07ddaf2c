// A TcpConnection carrying TLS over another TcpConnection.
#pragma once

#include <memory>

#include "cairn/platform/env.h"
#include "cairn/platform/status.h"

#include "tls/tls_endpoint.h"

namespace cairn::tls_internal {

// Runs the handshake of `endpoint`'s role over `transport` and returns the
// encrypted connection (see TlsServerContext::Accept for its behaviour and
// errors). Owns `transport` from the call on; on failure it is closed.
Result<std::unique_ptr<TcpConnection>> EstablishTlsConnection(std::shared_ptr<const TlsEndpoint> endpoint,
                                                              std::unique_ptr<TcpConnection> transport);

}  // namespace cairn::tls_internal
