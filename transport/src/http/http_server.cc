#include "cairn/transport/http_server.h"

#include <algorithm>
#include <ctime>

#include "request_reader.h"

namespace cairn {

struct HttpServer::Connection {
  std::thread thread;
  std::unique_ptr<TcpConnection> accepted;  // handed to the thread
  std::mutex mutex;
  // The stream being served, for Stop() to shut down; null while none is
  // (before it is set up, during a TLS handshake, after the end).
  TcpConnection* active = nullptr;
  // A request is being handled: Stop() lets it finish and answer.
  bool in_handler = false;
  std::atomic<bool> finished{false};
};

namespace {

constexpr int kAcceptPollMs = 200;
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

std::string ResponseHead(const HttpResponse& response, bool keep_alive, size_t content_length,
                         const std::string& date) {
  std::string head = "HTTP/1.1 " + std::to_string(response.status) + " ";
  head += HttpReasonPhrase(response.status);
  head += "\r\nDate: " + date + "\r\n";
  if (response.status != 204 && response.status != 304) {
    head += "Content-Type: " + response.content_type + "\r\n";
    head += "Content-Length: " + std::to_string(content_length) + "\r\n";
  }
  for (const auto& [name, value] : response.headers) head += name + ": " + value + "\r\n";
  head += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  return head;
}

}  // namespace

Result<std::unique_ptr<HttpServer>> HttpServer::Start(Env* env, const HttpServerOptions& options,
                                                      HttpHandler handler, ConnectionWrapper wrapper,
                                                      HttpLogFunction log) {
  if (options.max_connections == 0) return Status::InvalidArgument("max_connections must be at least 1");
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
      log_(std::move(log)),
      listener_(std::move(listener)),
      port_(listener_->port()) {}

HttpServer::~HttpServer() { Stop(); }

HttpServerStats HttpServer::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void HttpServer::Stop() {
  if (stopping_.exchange(true)) {
    if (accept_thread_.joinable()) accept_thread_.join();
    return;
  }
  if (accept_thread_.joinable()) accept_thread_.join();
  std::list<std::unique_ptr<Connection>> connections;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    connections.swap(connections_);
  }
  for (const std::unique_ptr<Connection>& connection : connections) {
    std::lock_guard<std::mutex> lock(connection->mutex);
    if (connection->active != nullptr && !connection->in_handler) connection->active->Shutdown();
  }
  for (const std::unique_ptr<Connection>& connection : connections) {
    if (connection->thread.joinable()) connection->thread.join();
  }
  listener_.reset();
}

void HttpServer::ReapFinished() {
  std::list<std::unique_ptr<Connection>> finished;
  {
    std::lock_guard<std::mutex> lock(mutex_);
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

void HttpServer::AcceptLoop() {
  while (!stopping_.load(std::memory_order_acquire)) {
    ReapFinished();
    Result<std::unique_ptr<TcpConnection>> accepted = listener_->Accept(kAcceptPollMs);
    if (!accepted.ok()) {
      if (log_) log_("http: " + accepted.status().message());
      // Out of descriptors: give the open connections time to end.
      env_->SleepForMicros(100'000);
      continue;
    }
    if (*accepted == nullptr) continue;
    std::unique_ptr<TcpConnection> stream = std::move(*accepted);
    bool refuse;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      refuse = connections_.size() >= options_.max_connections;
      if (refuse) {
        ++stats_.connections_refused;
      } else {
        ++stats_.connections_accepted;
      }
    }
    if (refuse) {
      if (!wrapper_) {
        HttpResponse response =
            HttpResponse::Error(503, "too many open connections (limit " +
                                         std::to_string(options_.max_connections) + "); retry later");
        response.headers.emplace_back("Retry-After", "1");
        const std::string body = response.body;
        static_cast<void>(
            stream->Write(ResponseHead(response, false, body.size(), HttpDate(env_->NowUnixNanos())) + body,
                          kRefusalWriteMs));
      }
      continue;
    }
    auto connection = std::make_unique<Connection>();
    connection->accepted = std::move(stream);
    Connection* raw = connection.get();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      connections_.push_back(std::move(connection));
      stats_.open_connections = connections_.size();
    }
    raw->thread = env_->StartThread([this, raw] { Serve(raw); });
  }
}

void HttpServer::Serve(Connection* connection) {
  std::unique_ptr<TcpConnection> stream = std::move(connection->accepted);
  const std::string peer = stream->peer_address();
  if (wrapper_) {
    Result<std::unique_ptr<TcpConnection>> wrapped = wrapper_(std::move(stream));
    if (!wrapped.ok()) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++stats_.connections_failed;
      }
      if (log_) log_("http: connection from " + peer + " failed: " + wrapped.status().message());
      connection->finished.store(true, std::memory_order_release);
      return;
    }
    stream = std::move(*wrapped);
  }
  {
    std::lock_guard<std::mutex> lock(connection->mutex);
    connection->active = stream.get();
  }
  if (!stopping_.load(std::memory_order_acquire))
    ServeRequests(connection, stream.get(), static_cast<bool>(wrapper_));
  {
    std::lock_guard<std::mutex> lock(connection->mutex);
    connection->active = nullptr;
  }
  stream.reset();
  connection->finished.store(true, std::memory_order_release);
}

void HttpServer::ServeRequests(Connection* connection, TcpConnection* stream, bool tls) {
  http::RequestLimits limits;
  limits.max_target_bytes = options_.max_target_bytes;
  limits.max_header_bytes = options_.max_header_bytes;
  limits.max_body_bytes = options_.max_body_bytes;
  http::RequestReader reader(limits);
  std::string buffer;  // bytes read but not yet taken by the reader
  char chunk[16 * 1024];
  bool peer_closed = false;

  // What the connection waits for, each with its own deadline.
  enum class Phase { kIdle, kHead, kBody };
  const auto now_ms = [this] { return env_->MonotonicNanos() / 1'000'000; };
  for (;;) {
    Phase phase = Phase::kIdle;
    int64_t deadline = now_ms() + options_.idle_timeout_ms;
    bool sent_continue = false;
    while (reader.state() == http::RequestReader::State::kIncomplete) {
      if (!buffer.empty()) {
        const size_t taken = reader.Feed(buffer);
        buffer.erase(0, taken);
        if (reader.state() != http::RequestReader::State::kIncomplete) break;
      }
      const Phase now_waiting_for = !reader.started()            ? Phase::kIdle
                                    : !reader.headers_complete() ? Phase::kHead
                                                                 : Phase::kBody;
      if (now_waiting_for != phase) {
        phase = now_waiting_for;
        deadline = now_ms() + (phase == Phase::kHead ? options_.header_timeout_ms : options_.body_timeout_ms);
      }
      if (reader.headers_complete() && reader.expects_continue() && !sent_continue) {
        sent_continue = true;
        if (!stream->Write("HTTP/1.1 100 Continue\r\n\r\n", options_.write_timeout_ms).ok()) return;
      }
      if (peer_closed) {
        reader.FeedEndOfStream();
        break;
      }
      const int64_t remaining = deadline - now_ms();
      Result<size_t> got = remaining > 0 ? stream->Read(chunk, sizeof(chunk), static_cast<int>(remaining))
                                         : Result<size_t>(Status::TimedOut("deadline passed"));
      if (!got.ok()) {
        if (got.status().code() != StatusCode::kTimedOut || !reader.started()) return;  // idle or gone
        {
          std::lock_guard<std::mutex> lock(mutex_);
          ++stats_.requests_timed_out;
        }
        WriteResponse(
            stream,
            HttpResponse::Error(408, reader.headers_complete() ? "the request body did not arrive in time"
                                                               : "the request head did not arrive in time"),
            false, false);
        return;
      }
      if (*got == 0) {
        if (!reader.started()) return;  // closed between requests
        peer_closed = true;
        continue;
      }
      buffer.append(chunk, *got);
    }

    if (reader.state() == http::RequestReader::State::kFailed) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++stats_.requests_malformed;
      }
      if (!peer_closed || reader.error_status() != 400) {
        WriteResponse(stream, HttpResponse::Error(reader.error_status(), reader.error_message()), false,
                      false);
      }
      return;
    }

    HttpRequest& request = reader.request();
    request.peer_address = stream->peer_address();
    request.tls = tls;
    const bool head_only = request.method == "HEAD";
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.requests;
    }
    {
      std::lock_guard<std::mutex> lock(connection->mutex);
      if (stopping_.load(std::memory_order_acquire)) return;
      connection->in_handler = true;
    }
    HttpResponse response = handler_(request);
    {
      std::lock_guard<std::mutex> lock(connection->mutex);
      connection->in_handler = false;
    }
    const bool keep_alive = reader.keep_alive() && !response.close_connection && !peer_closed &&
                            !stopping_.load(std::memory_order_acquire);
    if (!WriteResponse(stream, response, keep_alive, head_only) || !keep_alive) return;
    reader.Reset();
  }
}

bool HttpServer::WriteResponse(TcpConnection* stream, const HttpResponse& response, bool keep_alive,
                               bool head_only) {
  std::string message =
      ResponseHead(response, keep_alive, response.body.size(), HttpDate(env_->NowUnixNanos()));
  if (!head_only && response.status != 204 && response.status != 304) message += response.body;
  return stream->Write(message, options_.write_timeout_ms).ok();
}

}  // namespace cairn
