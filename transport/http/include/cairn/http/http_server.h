// HttpServer: HTTP/1.1 over TCP, optionally TLS, for cairnd's API.
//
// One thread accepts; each connection is served by a thread of its own (a
// gateway has a handful of clients, and a thread per connection keeps every
// read and write a plain blocking call with a deadline). Requests on a
// connection are answered in order with keep-alive; HTTP/1.0 clients and
// `Connection: close` end the connection after the response.
//
// Connection slots. At most max_connections connections are served at once,
// at most max_connections_per_address of them from one address. A
// connection that is waiting for the first byte of a request (a fresh one,
// one between requests, or one in its TLS handshake) holds its slot only
// until first_byte_timeout_ms (fresh) or idle_timeout_ms (between requests)
// passes. When a new connection finds no slot, the server closes a waiting
// connection to make room: the one waiting longest among those of the new
// connection's own address when that address is at its limit, otherwise
// among those of the address holding the most connections. So a client
// that opens many silent connections only ever displaces its own, and a
// legitimate client meets a 503 (with Retry-After; a TLS listener closes
// the connection instead, a handshake would cost more than the refusal
// saves) only when every slot is busy with a request in progress. This is
// how a thread-per-connection server with a connection cap stays reachable:
// only work in progress, never silence, may hold a slot.
//
// Limits on one request, each answered with a JSON error and the
// connection closed:
//   - a request head not complete within header_timeout_ms of its first
//     byte, or a body not complete within body_timeout_ms of its head: 408;
//   - target, headers, body over the limits below: 414, 431, 413 (a declared
//     Content-Length is refused before the body is read);
//   - `head_check` refuses the request once its head has arrived and before
//     its body is read (authentication): its response, and with a body
//     still to come the connection is closed. `Expect: 100-continue` is
//     answered 100 only after the head passed the checks.
//
// Stop() drains: it stops accepting (connections already waiting in the
// listen queue are served like the others), lets requests in progress
// finish and be answered for up to drain_timeout_ms, and answers every
// request that begins meanwhile 503 with Retry-After. Kept-alive connections
// between requests stay open through the drain (a client may be sending its
// next request already: it gets the 503 rather than a closed connection), so
// the drain lasts its whole bound while such a connection is open, and ends
// as soon as every connection has. At the end of the bound, requests still
// arriving are answered 503 and every connection is closed. A request whose
// handler runs is always let finish (an engine write must not be cut), and
// every response written while stopping carries `Connection: close`.
//
// Thread-safety: Start and Stop from one thread; port() and stats() from any.
// The handler and the head check run concurrently on connection threads.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "cairn/platform/env.h"
#include "cairn/platform/mutex.h"
#include "cairn/platform/status.h"
#include "cairn/http/http_message.h"
#include "cairn/http/rate_limited_log.h"

namespace cairn {

// Looks at a request whose head (method, target, headers, peer, client
// certificate) has arrived and whose body has not: a response refuses the
// request without reading its body, nullopt lets it go on. Must not throw.
using HttpHeadCheck = std::function<std::optional<HttpResponse>(const HttpRequest& head)>;

struct HttpServerOptions {
  std::string listen_address = "0.0.0.0";
  uint16_t port = 8086;  // InfluxDB's, so its clients work unchanged; 0 = any free port
  size_t max_connections = 32;
  // A reverse proxy on the gateway makes every client one address: raise
  // this (up to max_connections) behind one.
  size_t max_connections_per_address = 16;
  size_t max_target_bytes = 8 * 1024;
  size_t max_header_bytes = 16 * 1024;
  size_t max_body_bytes = 8 << 20;
  // A new connection (after its TLS handshake) must send its first byte
  // within this.
  int first_byte_timeout_ms = 5'000;
  int header_timeout_ms = 10'000;
  int body_timeout_ms = 60'000;
  int idle_timeout_ms = 60'000;
  int write_timeout_ms = 30'000;
  // How long Stop() lets requests in progress finish.
  int drain_timeout_ms = 5'000;
  // Retry-After of the 503 answers (full server, stopping).
  int retry_after_seconds = 5;
  // Optional; see the top of this file.
  HttpHeadCheck head_check;
};

// Answers one complete request. Must not throw.
using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

// Wraps an accepted connection before any byte is read, e.g. in TLS
// (TlsServerContext::Accept). Runs on the connection's thread. A failure
// closes the connection and is reported to the log function.
using ConnectionWrapper =
    std::function<Result<std::unique_ptr<TcpConnection>>(std::unique_ptr<TcpConnection>)>;

// Receives one line about a noteworthy event (a failed handshake, a
// timeout, a refused or displaced connection). Called from any thread, at
// most a few lines a minute per kind of event (RateLimitedLog).
using HttpLogFunction = std::function<void(const std::string&)>;

struct HttpServerStats {
  uint64_t connections_accepted = 0;
  uint64_t connections_refused = 0;  // no slot: 503
  uint64_t connections_evicted = 0;  // waiting ones closed to make room
  uint64_t connections_failed = 0;   // the wrapper (TLS handshake) failed
  uint64_t requests = 0;
  uint64_t requests_timed_out = 0;         // 408
  uint64_t requests_malformed = 0;         // 400, 413, 414, 431, 501, 505 from the parser
  uint64_t requests_refused_at_head = 0;   // the head check answered
  uint64_t requests_refused_stopping = 0;  // 503 while stopping
  uint64_t open_connections = 0;
  // Open connections between requests (or before their first): the ones a
  // newcomer may displace when the server or its address is full.
  uint64_t waiting_connections = 0;
};

class HttpServer {
 public:
  // Listens and starts serving. `env` must outlive the server; `wrapper`
  // may be empty (plain HTTP). InvalidArgument for a zero connection limit;
  // otherwise fails as ListenTcp does.
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

  // Whether Stop() has begun.
  bool stopping() const { return stopping_.load(std::memory_order_acquire); }

  // Drains and stops (see the top of this file), then joins every thread.
  // Returns after about drain_timeout_ms at most, plus the time handlers
  // already running take and a second for the last answers. Idempotent.
  void Stop();

 private:
  struct Connection;
  enum class Phase : uint8_t;
  // One connection's requests, read and answered in turn (request_loop.cc).
  class RequestLoop;

  HttpServer(Env* env, const HttpServerOptions& options, HttpHandler handler, ConnectionWrapper wrapper,
             HttpLogFunction log, std::unique_ptr<TcpListener> listener);

  void AcceptLoop();
  // Takes in one accepted connection: a slot, a displaced waiting
  // connection, or a 503.
  void Admit(std::unique_ptr<TcpConnection> stream);
  // Answers 503 on a connection that gets no slot and closes it.
  void Refuse(std::unique_ptr<TcpConnection> stream, const std::string& why);
  // The waiting connection to close for a newcomer from `address`; null
  // when there is room or nothing to close.
  Connection* ChooseEvictionLocked(const std::string& address, bool* refuse) REQUIRES(mutex_);
  // Joins the threads of connections that have ended.
  void ReapFinished();
  void Serve(Connection* connection);
  // Answers requests on one connection until it ends (a RequestLoop).
  void ServeRequests(Connection* connection, TcpConnection* stream);
  // Records what the connection is doing.
  void SetPhase(Connection* connection, Phase phase);
  // Writes a response, a streamed one (HttpResponse::more) chunked where
  // `chunked_allowed` (an HTTP/1.1 request); false when the connection must
  // end.
  bool WriteResponse(TcpConnection* stream, const HttpResponse& response, bool keep_alive, bool head_only,
                     bool chunked_allowed = false);
  HttpResponse StoppingResponse() const;
  void Count(uint64_t HttpServerStats::*counter);

  Env* const env_;
  const HttpServerOptions options_;
  const HttpHandler handler_;
  const ConnectionWrapper wrapper_;
  RateLimitedLog log_;
  std::unique_ptr<TcpListener> listener_;
  const uint16_t port_;

  std::atomic<bool> stopping_{false};
  // Monotonic time Stop() began and the end of its drain; requests still
  // arriving after the end are answered 503.
  std::atomic<int64_t> stop_started_nanos_{0};
  std::atomic<bool> drain_over_{false};
  std::thread accept_thread_;

  // Taken before any connection's own mutex (Connection::mutex, which is
  // declared ACQUIRED_AFTER this one).
  mutable Mutex mutex_;
  std::list<std::unique_ptr<Connection>> connections_ GUARDED_BY(mutex_);
  // Connections holding a slot (not displaced), per peer address.
  std::map<std::string, size_t> live_per_address_ GUARDED_BY(mutex_);
  size_t live_connections_ GUARDED_BY(mutex_) = 0;
  HttpServerStats stats_ GUARDED_BY(mutex_);
};

}  // namespace cairn
