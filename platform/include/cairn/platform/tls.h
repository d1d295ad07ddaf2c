// TLS over cairn's TcpConnection (Mbed TLS 2.28), for the HTTPS server and
// for outbound connections.
//
// A context holds what every connection of one endpoint shares: the
// configuration (TLS 1.2, ECDHE key exchange with AEAD ciphers only, no
// renegotiation, no session resumption), the certificates and keys, and a
// random generator. Accept (server) or Connect (client) runs the handshake
// over a plain TcpConnection and returns a TcpConnection that carries the
// application data encrypted, so code above this layer treats plain and TLS
// connections alike.
//
// Randomness: each context owns one CTR_DRBG seeded with "cairn" as
// personalisation and fed by Env::RandomBytes (so the OS stays behind the
// Env). All connections of the context draw from it under a mutex; a
// handshake needs only a few hundred bytes, so the lock is never contended
// for long, and one seeded generator per context is cheaper than seeding one
// per connection.
//
// Lifetime: a connection keeps the state it needs from its context alive, so
// a context may be destroyed (for instance replaced after a certificate
// reload) while connections it made are still open.
#pragma once

#include <memory>
#include <string>

#include "cairn/platform/env.h"
#include "cairn/platform/status.h"

namespace cairn {

namespace tls_internal {
class TlsEndpoint;
}  // namespace tls_internal

struct TlsServerOptions {
  // PEM: the server certificate, optionally followed by the intermediates of
  // its chain (leaf first). All of them are sent to clients.
  std::string certificate_path;
  // PEM: the unencrypted RSA or EC private key of the leaf.
  std::string private_key_path;
  // Optional PEM bundle of CAs. When set, the server asks every client for a
  // certificate and accepts only clients presenting one these CAs signed
  // (mutual TLS). When empty, clients are not asked for a certificate.
  std::string client_ca_path;
  // Upper bound of one whole handshake, in milliseconds (< 0: no limit).
  int handshake_timeout_ms = 10000;
};

// The server side of TLS. Thread-safe: Accept may run on many threads at once.
class TlsServerContext {
 public:
  // Reads the files named in `options` through `env` and checks that the key
  // belongs to the certificate. NotFound when a file is missing;
  // InvalidArgument naming the file and Mbed TLS's reason when its contents
  // do not parse or the key does not match. `env` is not owned and must
  // outlive the context and every connection it accepts.
  static Result<std::unique_ptr<TlsServerContext>> Create(Env* env, const TlsServerOptions& options);

  ~TlsServerContext();
  TlsServerContext(const TlsServerContext&) = delete;
  TlsServerContext& operator=(const TlsServerContext&) = delete;

  // Runs the server handshake over `transport` (owned from now on, also on
  // failure, when it is closed). Returns a connection whose Read and Write
  // carry application data:
  //   - Read returns 0 once the peer sent close_notify or closed the TCP
  //     connection in order, honours its timeout like a plain connection
  //     (TimedOut leaves the connection usable) and returns data already
  //     decrypted without waiting;
  //   - Write sends all of its data or fails; after a failed Write the
  //     connection can only be closed;
  //   - Shutdown forwards to the transport (waking blocked calls);
  //   - destruction sends close_notify (waiting at most 200 ms) unless the
  //     connection was shut down or broken, then closes the transport.
  // Errors: TimedOut (handshake_timeout_ms passed), Unavailable (the peer
  // closed the connection or aborted the handshake with an alert, for
  // instance because it does not trust our certificate), PermissionDenied
  // (mutual TLS: the client sent no certificate or one that does not
  // verify), InvalidArgument (the peer does not speak TLS 1.2: plain text,
  // an old protocol version, no common cipher), each with Mbed TLS's reason.
  // To abort a handshake from another thread (server shutdown), call
  // Shutdown() on `transport` through a pointer kept before the call: the
  // transport lives until Accept returns, which it then does with
  // Unavailable.
  Result<std::unique_ptr<TcpConnection>> Accept(std::unique_ptr<TcpConnection> transport) const;

 private:
  explicit TlsServerContext(std::shared_ptr<const tls_internal::TlsEndpoint> endpoint);

  std::shared_ptr<const tls_internal::TlsEndpoint> endpoint_;
};

struct TlsClientOptions {
  // PEM bundle of the CAs the server's certificate must chain to. Required.
  std::string ca_path;
  // The name the server's certificate must carry: a DNS name (matched
  // against the DNS subject alternative names, or the common name when there
  // are none; also sent as SNI) or a numeric IPv4 or IPv6 address (matched
  // against the IP address subject alternative names). Required.
  std::string server_name;
  // Optional client certificate and its unencrypted key, for servers that
  // require mutual TLS. Both or neither.
  std::string certificate_path;
  std::string private_key_path;
  // Upper bound of one whole handshake, in milliseconds (< 0: no limit).
  int handshake_timeout_ms = 10000;
};

// The client side of TLS. Thread-safe: Connect may run on many threads at once.
class TlsClientContext {
 public:
  // Reads and checks the files as TlsServerContext::Create does.
  // InvalidArgument also when ca_path or server_name is empty, or only one
  // of certificate_path and private_key_path is set. `env` is not owned and
  // must outlive the context and every connection it makes.
  static Result<std::unique_ptr<TlsClientContext>> Create(Env* env, const TlsClientOptions& options);

  ~TlsClientContext();
  TlsClientContext(const TlsClientContext&) = delete;
  TlsClientContext& operator=(const TlsClientContext&) = delete;

  // Runs the client handshake over `transport` (owned from now on). The
  // returned connection behaves as described at TlsServerContext::Accept.
  // Errors: PermissionDenied when the server's certificate does not chain to
  // ca_path, has expired or does not carry server_name (the message says
  // which); Unavailable when the server closed the connection or aborted the
  // handshake (for instance because it requires a client certificate);
  // TimedOut; InvalidArgument for other protocol failures.
  Result<std::unique_ptr<TcpConnection>> Connect(std::unique_ptr<TcpConnection> transport) const;

 private:
  explicit TlsClientContext(std::shared_ptr<const tls_internal::TlsEndpoint> endpoint);

  std::shared_ptr<const tls_internal::TlsEndpoint> endpoint_;
};

}  // namespace cairn
