// HttpTestClient: the client side of HTTP/1.1 for tests, over any
// TcpConnection (plain from Env::ConnectTcp, or TLS). It writes requests as
// given, byte for byte, so tests can also send malformed or slow ones, and
// reads responses framed by Content-Length, by chunked transfer coding (as
// InfluxDB sends them), or by the end of the connection.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cairn/platform/env.h"
#include "cairn/platform/status.h"

namespace cairn {

struct HttpTestResponse {
  int status = 0;
  // Names lowercased; a chunked body's trailer fields follow the head's.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  // The first header named `lowercase_name`, or "" when absent.
  std::string Header(std::string_view lowercase_name) const;
};

class HttpTestClient {
 public:
  explicit HttpTestClient(std::unique_ptr<TcpConnection> connection) : connection_(std::move(connection)) {}

  // Connects in plain text to address:port.
  static Result<HttpTestClient> Connect(const std::string& address, uint16_t port);

  // Sends one request with Host and Content-Length added (plus `headers`),
  // and reads its response.
  Result<HttpTestResponse> Request(std::string_view method, std::string_view target,
                                   const std::vector<std::pair<std::string, std::string>>& headers = {},
                                   std::string_view body = {});

  // Sends raw bytes.
  Status Send(std::string_view bytes);

  // Reads one response; `head_request` when it answers a HEAD (no body).
  Result<HttpTestResponse> ReadResponse(bool head_request = false);

  // True when the server has closed the connection: a read sees its end
  // (or a reset) within `timeout_ms`, with no bytes pending.
  bool ServerClosed(int timeout_ms);

  TcpConnection* connection() { return connection_.get(); }

 private:
  // Reads a body sent with Transfer-Encoding: chunked into `body`, and its
  // trailer fields (names lowercased) into `trailers`.
  Status ReadChunkedBody(std::string* body, std::vector<std::pair<std::string, std::string>>* trailers);
  // Reads more bytes into buffer_; false at the end of the stream.
  Result<bool> Fill();

  std::unique_ptr<TcpConnection> connection_;
  std::string buffer_;
  int timeout_ms_ = 20000;
};

}  // namespace cairn
