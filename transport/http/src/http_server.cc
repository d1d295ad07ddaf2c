#include "cairn/http/http_server.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "server_connection.h"

namespace cairn {

namespace {

constexpr int kAcceptPollMs = 200;
// After the drain, how long connection threads get to write their last 503
// before every connection not in a handler is shut down.
constexpr int kFinalAnswersMs = 1000;
constexpr int kRefusalWriteMs = 1000;

// "Sat, 21 Nov 2026 09:41:07 GMT" (RFC 9110's IMF-fixdate).
std::string HttpDate(int64_t unix_nanos) {
  const time_t seconds = static_cast<time_t>(unix_nanos / 1'000'000'000);
  struct tm parts = {};
  gmtime_r(&seconds, &parts);
  char text[64];
  strftime(text, sizeof(text), "%a, %d %b %Y %H:%M:%S GMT", &parts);
  return text;
}

// How the body's end is told: by its length, by the last chunk, or (an
// HTTP/1.0 client of a streamed body) by closing the connection.
enum class BodyFraming : uint8_t { kLength, kChunked, kClose };

std::string ResponseHead(const HttpResponse& response, bool keep_alive, BodyFraming framing,
                         size_t content_length, const std::string& date) {
  std::string head = "HTTP/1.1 " + std::to_string(response.status) + " ";
  head += HttpReasonPhrase(response.status);
  head += "\r\nDate: " + date + "\r\n";
  if (response.status != 204 && response.status != 304) {
    head += "Content-Type: " + response.content_type + "\r\n";
    if (framing == BodyFraming::kLength) {
      head += "Content-Length: " + std::to_string(content_length) + "\r\n";
    } else if (framing == BodyFraming::kChunked) {
      head += "Transfer-Encoding: chunked\r\n";
      for (const std::string& name : response.trailer_names) head += "Trailer: " + name + "\r\n";
    }
  }
  for (const auto& [name, value] : response.headers) head += name + ": " + value + "\r\n";
  head += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  return head;
}

// A TCP stream shared between the connection's thread (through whatever
// wraps it, e.g. TLS) and the server, which may shut it down from another
// thread at any time, also while the wrapper is destroying its own handle.
class SharedStream final : public TcpConnection {
 public:
  explicit SharedStream(std::shared_ptr<TcpConnection> inner) : inner_(std::move(inner)) {}
  Result<size_t> Read(char* dst, size_t n, int timeout_ms) override {
    return inner_->Read(dst, n, timeout_ms);
  }
  Status Write(std::string_view data, int timeout_ms) override { return inner_->Write(data, timeout_ms); }
  void Shutdown() override { inner_->Shutdown(); }
  const std::string& peer_address() const override { return inner_->peer_address(); }
  const PeerCertificate* peer_certificate() const override { return inner_->peer_certificate(); }

 private:
  const std::shared_ptr<TcpConnection> inner_;
};

}  // namespace

Result<std::unique_ptr<HttpServer>> HttpServer::Start(Env* env, const HttpServerOptions& options,
                                                      HttpHandler handler, ConnectionWrapper wrapper,
                                                      HttpLogFunction log) {
  if (options.max_connections == 0 || options.max_connections_per_address == 0) {
    return Status::InvalidArgument("max_connections and max_connections_per_address must be at least 1");
  }
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<TcpListener> listener,
                         env->ListenTcp(options.listen_address, options.port));
  std::unique_ptr<HttpServer> server(new HttpServer(env, options, std::move(handler), std::move(wrapper),
                                                    std::move(log), std::move(listener)));
  HttpServer* raw = server.get();
  server->accept_thread_ = env->StartThread([raw] { raw->AcceptLoop(); });
  return server;
}

HttpServer::HttpServer(Env* env, const HttpServerOptions& options, HttpHandler handler,
                       ConnectionWrapper wrapper, HttpLogFunction log, std::unique_ptr<TcpListener> listener)
    : env_(env),
      options_(options),
      handler_(std::move(handler)),
      wrapper_(std::move(wrapper)),
      log_(env, std::move(log)),
      listener_(std::move(listener)),
      port_(listener_->port()) {}

HttpServer::~HttpServer() { Stop(); }

HttpServerStats HttpServer::stats() const {
  MutexLock lock(&mutex_);
  HttpServerStats stats = stats_;
  for (const std::unique_ptr<Connection>& connection : connections_) {
    if (connection->evicted || connection->finished.load()) continue;
    MutexLock guard(&connection->mutex);
    if (connection->phase == Phase::kWaiting) ++stats.waiting_connections;
  }
  return stats;
}

void HttpServer::Count(uint64_t HttpServerStats::*counter) {
  MutexLock lock(&mutex_);
  ++(stats_.*counter);
}

HttpResponse HttpServer::StoppingResponse() const {
  HttpResponse response = HttpResponse::Error(503, "cairnd is stopping; retry in a few seconds");
  response.headers.emplace_back("Retry-After", std::to_string(options_.retry_after_seconds));
  response.close_connection = true;
  return response;
}

// ---- stopping ---------------------------------------------------------------

void HttpServer::Stop() {
  if (stopping_.load()) {
    if (accept_thread_.joinable()) accept_thread_.join();
    return;
  }
  // Before the flag: a thread that sees the flag reads the start too.
  stop_started_nanos_.store(env_->MonotonicNanos());
  stopping_.store(true);
  // The accept loop answers what waits in the listen queue, then closes
  // the listener.
  if (accept_thread_.joinable()) accept_thread_.join();

  const auto all_finished = [this] {
    MutexLock lock(&mutex_);
    return std::all_of(connections_.begin(), connections_.end(),
                       [](const std::unique_ptr<Connection>& c) { return c->finished.load(); });
  };
  const auto shut_down_where = [this](auto&& condition) {
    MutexLock lock(&mutex_);
    for (const std::unique_ptr<Connection>& connection : connections_) {
      MutexLock guard(&connection->mutex);
      if (connection->transport != nullptr && condition(connection->phase)) connection->transport->Shutdown();
    }
  };
  const auto wait_until = [&](int64_t deadline) {
    while (!all_finished() && env_->MonotonicNanos() < deadline) env_->SleepForMicros(10'000);
  };
  // A TLS handshake has no request to finish. A plain connection whose
  // thread has not run yet is also in kHandshake, but its request may already
  // be waiting in the socket: it is answered like any other.
  if (wrapper_) shut_down_where([](Phase phase) { return phase == Phase::kHandshake; });
  const int64_t drain_end = stop_started_nanos_.load() + int64_t{options_.drain_timeout_ms} * 1'000'000;
  wait_until(drain_end);
  drain_over_.store(true);
  wait_until(env_->MonotonicNanos() + int64_t{kFinalAnswersMs} * 1'000'000);
  shut_down_where([](Phase phase) { return phase != Phase::kHandling; });

  std::list<std::unique_ptr<Connection>> connections;
  {
    MutexLock lock(&mutex_);
    connections.swap(connections_);
  }
  for (const std::unique_ptr<Connection>& connection : connections) {
    if (connection->thread.joinable()) connection->thread.join();
  }
}

void HttpServer::ReapFinished() {
  std::list<std::unique_ptr<Connection>> finished;
  {
    MutexLock lock(&mutex_);
    for (auto it = connections_.begin(); it != connections_.end();) {
      if ((*it)->finished.load(std::memory_order_acquire)) {
        finished.push_back(std::move(*it));
        it = connections_.erase(it);
      } else {
        ++it;
      }
    }
    stats_.open_connections = connections_.size();
  }
  for (const std::unique_ptr<Connection>& connection : finished) connection->thread.join();
}

// ---- admission --------------------------------------------------------------

void HttpServer::AcceptLoop() {
  while (!stopping_.load(std::memory_order_acquire)) {
    ReapFinished();
    Result<std::unique_ptr<TcpConnection>> accepted = listener_->Accept(kAcceptPollMs);
    if (!accepted.ok()) {
      log_.Log("accept", "http: " + accepted.status().message());
      // Out of descriptors: give the open connections time to end.
      env_->SleepForMicros(100'000);
      continue;
    }
    if (*accepted != nullptr) Admit(std::move(*accepted));
  }
  // Stopping: connections that completed their handshake with the kernel
  // before the stop get an answer (503) instead of a reset.
  for (;;) {
    ReapFinished();
    Result<std::unique_ptr<TcpConnection>> accepted = listener_->Accept(0);
    if (!accepted.ok() || *accepted == nullptr) break;
    Admit(std::move(*accepted));
  }
  listener_.reset();
}

HttpServer::Connection* HttpServer::ChooseEvictionLocked(const std::string& address, bool* refuse) {
  *refuse = false;
  const auto live_at = [this](const std::string& peer) REQUIRES(mutex_) {
    const auto found = live_per_address_.find(peer);
    return found == live_per_address_.end() ? size_t{0} : found->second;
  };
  const bool address_full = live_at(address) >= options_.max_connections_per_address;
  const bool server_full = live_connections_ >= options_.max_connections;
  if (!address_full && !server_full) return nullptr;
  // The candidates: the newcomer's own address when it is at its limit,
  // else the address holding the most connections that has one waiting.
  Connection* victim = nullptr;
  size_t victim_address_count = 0;
  int64_t victim_since = 0;
  for (const std::unique_ptr<Connection>& connection : connections_) {
    if (connection->evicted || connection->finished.load()) continue;
    if (address_full && connection->address != address) continue;
    MutexLock guard(&connection->mutex);
    if (connection->phase != Phase::kWaiting && connection->phase != Phase::kHandshake) continue;
    const size_t count = live_at(connection->address);
    const bool better = victim == nullptr || count > victim_address_count ||
                        (count == victim_address_count && connection->waiting_since_nanos < victim_since);
    if (better) {
      victim = connection.get();
      victim_address_count = count;
      victim_since = connection->waiting_since_nanos;
    }
  }
  if (victim == nullptr) *refuse = true;
  return victim;
}

void HttpServer::Admit(std::unique_ptr<TcpConnection> stream) {
  const std::string address = stream->peer_address();
  auto connection = std::make_unique<Connection>();
  Connection* const raw = connection.get();
  std::string displaced, refusal;
  {
    MutexLock lock(&mutex_);
    bool refuse = false;
    Connection* victim = ChooseEvictionLocked(address, &refuse);
    if (victim != nullptr) {
      {
        MutexLock guard(&victim->mutex);
        if (victim->transport != nullptr) victim->transport->Shutdown();
      }
      // Shut down while it waited: it ends without reading anything more.
      victim->evicted = true;
      --live_per_address_[victim->address];
      --live_connections_;
      ++stats_.connections_evicted;
      displaced = victim->address;
    }
    if (refuse) {
      ++stats_.connections_refused;
      const size_t from_address = live_per_address_[address];
      refusal = "http: refused a connection from " + address +
                " with 503: " + std::to_string(live_connections_) + " connections in progress (limit " +
                std::to_string(options_.max_connections) + "), " + std::to_string(from_address) +
                " from that address (limit " + std::to_string(options_.max_connections_per_address) + ")";
    } else {
      ++stats_.connections_accepted;
      ++live_per_address_[address];
      ++live_connections_;
      connection->address = address;
      {
        // Nobody else sees the connection yet; the lock is for the analysis.
        MutexLock guard(&connection->mutex);
        connection->waiting_since_nanos = env_->MonotonicNanos();
        // Set before the thread starts, so that it can be displaced at once.
        connection->transport = std::shared_ptr<TcpConnection>(std::move(stream));
      }
      connections_.push_back(std::move(connection));
      stats_.open_connections = connections_.size();
    }
  }
  if (!displaced.empty()) {
    log_.Log("evicted", "http: closed a waiting connection from " + displaced +
                            " to make room for a new one from " + address);
  }
  if (!refusal.empty()) {
    log_.Log("refused", refusal);
    Refuse(std::move(stream), "too many connections in progress; retry later");
    return;
  }
  raw->thread = env_->StartThread([this, raw] { Serve(raw); });
}

void HttpServer::Refuse(std::unique_ptr<TcpConnection> stream, const std::string& why) {
  // TLS: no handshake for a refusal. Plain: a 503 the client can read (a
  // request that arrived already is read first, so that the close does not
  // reset the connection; nothing is waited for).
  if (wrapper_) return;
  char sink[16 * 1024];
  static_cast<void>(stream->Read(sink, sizeof(sink), 0));
  HttpResponse response = HttpResponse::Error(503, why);
  response.headers.emplace_back("Retry-After", std::to_string(options_.retry_after_seconds));
  static_cast<void>(stream->Write(
      ResponseHead(response, false, BodyFraming::kLength, response.body.size(), HttpDate(env_->NowUnixNanos())) + response.body,
      kRefusalWriteMs));
}

// ---- one connection ---------------------------------------------------------

void HttpServer::SetPhase(Connection* connection, Phase phase) {
  MutexLock guard(&connection->mutex);
  if (connection->phase == phase) return;
  // A new connection has waited since it was accepted (a TLS one through
  // its handshake); one between requests since its last response.
  if (phase == Phase::kWaiting && connection->phase != Phase::kHandshake) {
    connection->waiting_since_nanos = env_->MonotonicNanos();
  }
  connection->phase = phase;
}

void HttpServer::Serve(Connection* connection) {
  std::shared_ptr<TcpConnection> transport;
  {
    MutexLock guard(&connection->mutex);
    transport = connection->transport;
  }
  std::unique_ptr<TcpConnection> stream = std::make_unique<SharedStream>(transport);
  const std::string& peer = connection->address;
  bool served = true;
  if (wrapper_) {
    Result<std::unique_ptr<TcpConnection>> wrapped = wrapper_(std::move(stream));
    if (wrapped.ok()) {
      stream = std::move(*wrapped);
    } else {
      served = false;
      Count(&HttpServerStats::connections_failed);
      log_.Log("tls", "http: connection from " + peer + " failed: " + wrapped.status().message());
    }
  }
  if (served) ServeRequests(connection, stream.get());
  stream.reset();
  transport.reset();
  {
    MutexLock guard(&connection->mutex);
    connection->phase = Phase::kDone;
    // The last owner: closes the socket now rather than at the next reap.
    connection->transport.reset();
  }
  {
    MutexLock lock(&mutex_);
    if (!connection->evicted) {
      --live_per_address_[connection->address];
      if (live_per_address_[connection->address] == 0) live_per_address_.erase(connection->address);
      --live_connections_;
    }
  }
  connection->finished.store(true, std::memory_order_release);
}

bool HttpServer::WriteResponse(TcpConnection* stream, const HttpResponse& response, bool keep_alive,
                               bool head_only, bool chunked_allowed) {
  const bool has_body = !head_only && response.status != 204 && response.status != 304;
  if (!response.more) {
    std::string message = ResponseHead(response, keep_alive, BodyFraming::kLength, response.body.size(),
                                       HttpDate(env_->NowUnixNanos()));
    // A small answer goes out in one write (one packet); a large one is
    // not copied behind its head to save a system call.
    constexpr size_t kCopiedBodyBytes = 16 * 1024;
    if (has_body && response.body.size() > kCopiedBodyBytes) {
      return stream->Write(message, options_.write_timeout_ms).ok() &&
             stream->Write(response.body, options_.write_timeout_ms).ok();
    }
    if (has_body) message += response.body;
    return stream->Write(message, options_.write_timeout_ms).ok();
  }
  const BodyFraming framing = chunked_allowed ? BodyFraming::kChunked : BodyFraming::kClose;
  keep_alive = keep_alive && framing == BodyFraming::kChunked;
  std::string message = ResponseHead(response, keep_alive, framing, 0, HttpDate(env_->NowUnixNanos()));
  if (!has_body) return stream->Write(message, options_.write_timeout_ms).ok();
  // Each piece goes out as it is made: the answer is never held whole.
  std::string piece = response.body;
  while (true) {
    if (!piece.empty()) {
      if (framing == BodyFraming::kChunked) {
        char size[24];
        const int n = std::snprintf(size, sizeof(size), "%zx\r\n", piece.size());
        message.append(size, static_cast<size_t>(n));
        message += piece;
        message += "\r\n";
      } else {
        message += piece;
      }
      if (!stream->Write(message, options_.write_timeout_ms).ok()) return false;
      message.clear();
    }
    piece.clear();
    Result<bool> produced = response.more(&piece);
    if (!produced.ok()) {
      // Whatever was made before the failure, then a broken transfer.
      log_.Log("stream", "http: a streamed answer stopped: " + produced.status().ToString());
      return false;
    }
    if (!*produced && piece.empty()) break;
  }
  if (framing == BodyFraming::kClose) {
    if (!message.empty()) (void)stream->Write(message, options_.write_timeout_ms);  // the head of an empty body
    return false;  // the close ends the body
  }
  message = "0\r\n";
  if (response.trailers) {
    for (const auto& [name, value] : *response.trailers) message += name + ": " + value + "\r\n";
  }
  message += "\r\n";
  return stream->Write(message, options_.write_timeout_ms).ok() && keep_alive;
}

}  // namespace cairn
