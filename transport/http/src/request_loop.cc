// The requests of one HttpServer connection, one after the other: read a
// request within its deadlines, check its head, answer it, then keep the
// connection for the next request or end it.
#include <algorithm>
#include <optional>
#include <string>

#include "cairn/http/http_server.h"

#include "request_reader.h"
#include "server_connection.h"

namespace cairn {

namespace {

// The longest a connection thread blocks in one read, so that it notices a
// stop soon even while its own deadlines are far away.
constexpr int kStopPollMs = 100;
// After an error answered before the whole request was read, the rest of
// the request is read and dropped for this long (at most kLingerBytes), so
// that closing with unread input does not reset the connection before the
// client has read the answer.
constexpr int kLingerMs = 1000;
constexpr size_t kLingerBytes = 1 << 20;

// Reads and drops what the peer still sends, briefly (see kLingerMs).
void Linger(TcpConnection* stream, Env* env) {
  char sink[16 * 1024];
  size_t dropped = 0;
  const int64_t deadline = env->MonotonicNanos() + int64_t{kLingerMs} * 1'000'000;
  while (dropped < kLingerBytes) {
    const int64_t remaining_ms = (deadline - env->MonotonicNanos()) / 1'000'000;
    if (remaining_ms <= 0) return;
    Result<size_t> got = stream->Read(sink, sizeof(sink), static_cast<int>(remaining_ms));
    if (!got.ok() || *got == 0) return;
    dropped += *got;
  }
}

http::RequestLimits LimitsOf(const HttpServerOptions& options) {
  http::RequestLimits limits;
  limits.max_target_bytes = options.max_target_bytes;
  limits.max_header_bytes = options.max_header_bytes;
  limits.max_body_bytes = options.max_body_bytes;
  return limits;
}

}  // namespace

// Each step returns false when the connection must end; whatever answer is
// due then has been written already.
class HttpServer::RequestLoop {
 public:
  RequestLoop(HttpServer* server, Connection* connection, TcpConnection* stream)
      : server_(server),
        options_(server->options_),
        connection_(connection),
        stream_(stream),
        peer_(connection->address),
        tls_(static_cast<bool>(server->wrapper_)),
        reader_(LimitsOf(server->options_)) {}

  void Run() {
    for (;;) {
      BeginRequest();
      if (!ReadRequest() || !AnswerRequest()) return;
    }
  }

 private:
  // What the connection waits for, each with its own deadline.
  enum class Wait { kRequest, kHead, kBody };

  void BeginRequest();
  // Reads until the reader holds a whole request or has refused it.
  bool ReadRequest();
  // Moves to the deadline of what the reader waits for now.
  void FollowDeadline();
  // Runs the head check once the head is in; a refusal is answered here.
  bool CheckHead();
  // Sends 100 Continue, once, when the head asks for it.
  bool ContinueIfExpected();
  // Once the drain is over: takes the bytes of a request that already
  // arrived, and answers 503 to a request being read.
  bool ReadAfterDrain();
  // One read, until the deadline at most.
  bool ReadMore();
  // The deadline passed: a silent connection is closed, a slow request
  // answered 408.
  void AnswerDeadlinePassed();
  // Answers the request read (or the reader's refusal of it).
  bool AnswerRequest();
  // Writes the handler's response; true when the connection stays open for
  // the next request.
  bool WriteAndKeepAlive(const HttpResponse& response, bool head_only);
  // Writes a last response, then drops the rest of an unread request.
  void AnswerAndEnd(const HttpResponse& response, bool whole_request_read);
  int64_t NowMs() const { return server_->env_->MonotonicNanos() / 1'000'000; }
  bool Stopping() const { return server_->stopping_.load(std::memory_order_acquire); }

  HttpServer* const server_;
  const HttpServerOptions& options_;
  Connection* const connection_;
  TcpConnection* const stream_;
  const std::string& peer_;
  const bool tls_;
  http::RequestReader reader_;
  std::string buffer_;  // bytes read but not yet taken by the reader
  char chunk_[16 * 1024];
  bool peer_closed_ = false;
  bool first_request_ = true;

  // The request being read.
  Wait waiting_for_ = Wait::kRequest;
  int64_t deadline_ms_ = 0;
  bool sent_continue_ = false;
  bool head_checked_ = false;
  // Whether the request's first byte came before Stop() began.
  bool begun_before_stop_ = true;
};

void HttpServer::RequestLoop::BeginRequest() {
  waiting_for_ = Wait::kRequest;
  const int request_timeout = first_request_ ? options_.first_byte_timeout_ms : options_.idle_timeout_ms;
  deadline_ms_ = NowMs() + request_timeout;
  sent_continue_ = false;
  head_checked_ = false;
  begun_before_stop_ = !Stopping();
}

bool HttpServer::RequestLoop::ReadRequest() {
  while (reader_.state() == http::RequestReader::State::kIncomplete) {
    if (!buffer_.empty()) {
      const size_t taken = reader_.Feed(buffer_);
      buffer_.erase(0, taken);
      if (reader_.state() != http::RequestReader::State::kIncomplete) break;
    }
    FollowDeadline();
    if (!CheckHead() || !ContinueIfExpected()) return false;
    if (peer_closed_) {
      reader_.FeedEndOfStream();
      break;
    }
    server_->SetPhase(connection_, waiting_for_ == Wait::kRequest ? Phase::kWaiting : Phase::kReading);
    const bool more = server_->drain_over_.load(std::memory_order_acquire) ? ReadAfterDrain() : ReadMore();
    if (!more) return false;
  }
  return true;
}

void HttpServer::RequestLoop::FollowDeadline() {
  const Wait now_waiting_for = !reader_.started()            ? Wait::kRequest
                               : !reader_.headers_complete() ? Wait::kHead
                                                             : Wait::kBody;
  if (now_waiting_for == waiting_for_) return;
  waiting_for_ = now_waiting_for;
  deadline_ms_ =
      NowMs() + (waiting_for_ == Wait::kHead ? options_.header_timeout_ms : options_.body_timeout_ms);
}

bool HttpServer::RequestLoop::CheckHead() {
  if (head_checked_ || !reader_.headers_complete()) return true;
  head_checked_ = true;
  HttpRequest& head = reader_.request();
  head.peer_address = peer_;
  head.tls = tls_;
  if (const PeerCertificate* certificate = stream_->peer_certificate())
    head.client_certificate = *certificate;
  if (!options_.head_check) return true;
  std::optional<HttpResponse> refusal = options_.head_check(head);
  if (!refusal) return true;
  server_->Count(&HttpServerStats::requests_refused_at_head);
  AnswerAndEnd(*refusal, reader_.state() == http::RequestReader::State::kComplete);
  return false;
}

bool HttpServer::RequestLoop::ContinueIfExpected() {
  if (!reader_.headers_complete() || !reader_.expects_continue() || sent_continue_) return true;
  sent_continue_ = true;
  return stream_->Write("HTTP/1.1 100 Continue\r\n\r\n", options_.write_timeout_ms).ok();
}

bool HttpServer::RequestLoop::ReadAfterDrain() {
  if (waiting_for_ == Wait::kRequest) {
    // Bytes already waiting in the socket are a request that arrived (a
    // busy gateway may not have run this thread yet): it is answered 503
    // like any other, not closed on.
    Result<size_t> pending = stream_->Read(chunk_, sizeof(chunk_), 0);
    if (!pending.ok() || *pending == 0) return false;
    if (!reader_.started() && buffer_.empty()) begun_before_stop_ = false;
    buffer_.append(chunk_, *pending);
    return true;
  }
  server_->Count(&HttpServerStats::requests_refused_stopping);
  AnswerAndEnd(server_->StoppingResponse(), false);
  return false;
}

bool HttpServer::RequestLoop::ReadMore() {
  const int64_t remaining = deadline_ms_ - NowMs();
  Result<size_t> got =
      remaining > 0
          ? stream_->Read(chunk_, sizeof(chunk_), static_cast<int>(std::min<int64_t>(remaining, kStopPollMs)))
          : Result<size_t>(Status::TimedOut("deadline passed"));
  if (!got.ok()) {
    if (got.status().code() != StatusCode::kTimedOut) return false;  // gone, displaced or shut down
    if (NowMs() < deadline_ms_) return true;
    AnswerDeadlinePassed();
    return false;
  }
  if (*got == 0) {
    if (!reader_.started()) return false;  // closed between requests
    peer_closed_ = true;
    return true;
  }
  if (!reader_.started() && buffer_.empty()) begun_before_stop_ = !Stopping();
  buffer_.append(chunk_, *got);
  return true;
}

void HttpServer::RequestLoop::AnswerDeadlinePassed() {
  if (waiting_for_ == Wait::kRequest) {
    if (first_request_ && !Stopping()) {
      server_->log_.Log("silent", "http: closed a connection from " + peer_ + " that sent nothing within " +
                                      std::to_string(options_.first_byte_timeout_ms) + " ms");
    }
    return;
  }
  server_->Count(&HttpServerStats::requests_timed_out);
  const bool head = waiting_for_ == Wait::kHead;
  server_->log_.Log("timeout",
                    "http: answered 408 to " + peer_ + ": the request " + (head ? "head" : "body") +
                        " did not arrive within " +
                        std::to_string(head ? options_.header_timeout_ms : options_.body_timeout_ms) + " ms");
  AnswerAndEnd(HttpResponse::Error(408, head ? "the request head did not arrive in time"
                                             : "the request body did not arrive in time"),
               false);
}

bool HttpServer::RequestLoop::AnswerRequest() {
  if (reader_.state() == http::RequestReader::State::kFailed) {
    server_->Count(&HttpServerStats::requests_malformed);
    if (!peer_closed_ || reader_.error_status() != 400) {
      AnswerAndEnd(HttpResponse::Error(reader_.error_status(), reader_.error_message()), false);
    }
    return false;
  }
  if (!CheckHead()) return false;

  HttpRequest& request = reader_.request();
  const bool head_only = request.method == "HEAD";
  server_->Count(&HttpServerStats::requests);
  if (!begun_before_stop_) {
    // A request that began after the stop: not taken on.
    server_->Count(&HttpServerStats::requests_refused_stopping);
    AnswerAndEnd(server_->StoppingResponse(), true);
    return false;
  }
  server_->SetPhase(connection_, Phase::kHandling);
  HttpResponse response = server_->handler_(request);
  server_->SetPhase(connection_, Phase::kWriting);
  return WriteAndKeepAlive(response, head_only);
}

bool HttpServer::RequestLoop::WriteAndKeepAlive(const HttpResponse& response, bool head_only) {
  const bool keep_alive = reader_.keep_alive() && !response.close_connection && !peer_closed_ && !Stopping();
  if (!server_->WriteResponse(stream_, response, keep_alive, head_only, !reader_.request().http_1_0) ||
      !keep_alive) {
    return false;
  }
  reader_.Reset();
  first_request_ = false;
  return true;
}

void HttpServer::RequestLoop::AnswerAndEnd(const HttpResponse& response, bool whole_request_read) {
  server_->SetPhase(connection_, Phase::kWriting);
  if (server_->WriteResponse(stream_, response, false, false) && !whole_request_read) {
    Linger(stream_, server_->env_);
  }
}

void HttpServer::ServeRequests(Connection* connection, TcpConnection* stream) {
  RequestLoop(this, connection, stream).Run();
}

}  // namespace cairn
