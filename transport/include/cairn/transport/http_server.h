// HttpServer: HTTP/1.1 over TCP, optionally TLS, for cairnd's API.
//
// One thread accepts; each connection is served by a thread of its own (a
// gateway has a handful of clients, and a thread per connection keeps every
// read and write a plain blocking call with a deadline). Requests on a
// connection are answered in order with keep-alive; HTTP/1.0 clients and
// `Connection: close` end the connection after the response.
//
// Limits, each answered with a JSON error and the connection closed:
//   - more than max_connections open: 503 (TLS: the connection is closed
//     without a handshake, which would cost more than the refusal saves);
//   - a request head not complete within header_timeout_ms of its first
//     byte, or a body not complete within body_timeout_ms of its head: 408
//     (a slow client cannot hold a thread for long);
//   - target, headers, body over RequestLimits: 414, 431, 413 (a declared
//     Content-Length is refused before the body is read; `Expect:
//     100-continue` is answered only when the body is within the limit);
//   - no new request within idle_timeout_ms on a kept-alive connection: the
//     connection is closed silently.
//
// Thread-safety: Start and Stop from one thread; port() and stats() from any.
// The handler runs concurrently on connection threads.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "cairn/platform/env.h"
#include "cairn/platform/status.h"
#include "cairn/transport/http_message.h"

namespace cairn {

struct HttpServerOptions {
  std::string listen_address = "0.0.0.0";
  uint16_t port = 8086;  // InfluxDB's, so its clients work unchanged; 0 = any free port
  size_t max_connections = 32;
  size_t max_target_bytes = 8 * 1024;
  size_t max_header_bytes = 16 * 1024;
  size_t max_body_bytes = 8 << 20;
  int header_timeout_ms = 10'000;
  int body_timeout_ms = 60'000;
  int idle_timeout_ms = 60'000;
  int write_timeout_ms = 30'000;
};

// Answers one complete request. Must not throw.
using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

// Wraps an accepted connection before any byte is read, e.g. in TLS
// (TlsServerContext::Accept). Runs on the connection's thread. A failure
// closes the connection and is reported to the log function.
using ConnectionWrapper =
    std::function<Result<std::unique_ptr<TcpConnection>>(std::unique_ptr<TcpConnection>)>;

// Receives one line about a noteworthy event (a failed handshake, an
// accept error). Called from any thread.
using HttpLogFunction = std::function<void(const std::string&)>;

struct HttpServerStats {
  uint64_t connections_accepted = 0;
  uint64_t connections_refused = 0;  // over max_connections
  uint64_t connections_failed = 0;   // the wrapper (TLS handshake) failed
  uint64_t requests = 0;
  uint64_t requests_timed_out = 0;  // 408
  uint64_t requests_malformed = 0;  // 400, 413, 414, 431, 501, 505 from the parser
  uint64_t open_connections = 0;
};

class HttpServer {
 public:
  // Listens and starts serving. `env` must outlive the server; `wrapper`
  // may be empty (plain HTTP). Fails as ListenTcp does.
  static Result<std::unique_ptr<HttpServer>> Start(Env* env, const HttpServerOptions& options,
                                                   HttpHandler handler, ConnectionWrapper wrapper,
                                                   HttpLogFunction log);

  // Stops.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The port listened on.
  uint16_t port() const { return port_; }
  bool tls() const { return static_cast<bool>(wrapper_); }

  HttpServerStats stats() const;

  // Stops accepting, ends every open connection (a request being handled
  // finishes first) and joins the threads. Idempotent.
  void Stop();

 private:
  struct Connection;

  HttpServer(Env* env, const HttpServerOptions& options, HttpHandler handler, ConnectionWrapper wrapper,
             HttpLogFunction log, std::unique_ptr<TcpListener> listener);

  void AcceptLoop();
  // Joins the threads of connections that have ended.
  void ReapFinished();
  void Serve(Connection* connection);
  // Answers requests on one connection until it ends.
  void ServeRequests(Connection* connection, TcpConnection* stream, bool tls);
  // Writes a response; false when the connection must end.
  bool WriteResponse(TcpConnection* stream, const HttpResponse& response, bool keep_alive, bool head_only);

  Env* const env_;
  const HttpServerOptions options_;
  const HttpHandler handler_;
  const ConnectionWrapper wrapper_;
  const HttpLogFunction log_;
  std::unique_ptr<TcpListener> listener_;
  const uint16_t port_;

  std::atomic<bool> stopping_{false};
  std::thread accept_thread_;

  mutable std::mutex mutex_;  // guards connections_ and the stats below
  std::list<std::unique_ptr<Connection>> connections_;
  HttpServerStats stats_;
};

}  // namespace cairn
