// RequestReader: turns the bytes of one HTTP/1.x connection into requests,
// one at a time, with Node.js's http-parser (Debian's libhttp-parser) doing
// the parsing and this class enforcing cairn's limits on it.
//
//   reader.Feed(bytes) -> how many bytes it took
//   reader.state():
//     kIncomplete   feed more bytes
//     kComplete     request() holds a whole request; bytes not taken belong
//                   to the next one (pipelining); call Reset() before
//                   feeding them
//     kFailed       the request is malformed or too large: error_status()
//                   (400, 413, 414, 431, 501, 505) and error_message() say
//                   why; the connection cannot continue
//
// headers_complete() turns true once the head has been read, so that the
// server can answer `Expect: 100-continue` before the body arrives.
//
// Thread-safety: one reader per connection.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include <http_parser.h>

#include "cairn/http/http_message.h"

namespace cairn::http {

struct RequestLimits {
  size_t max_target_bytes = 8 * 1024;   // request-target: 414 beyond
  size_t max_header_bytes = 16 * 1024;  // all header names and values: 431 beyond
  size_t max_headers = 64;              // 431 beyond
  size_t max_body_bytes = 8 << 20;      // 413 beyond (declared or received)
};

class RequestReader {
 public:
  enum class State { kIncomplete, kComplete, kFailed };

  explicit RequestReader(const RequestLimits& limits);
  RequestReader(const RequestReader&) = delete;
  RequestReader& operator=(const RequestReader&) = delete;

  // Parses as much of `data` as belongs to the current request. Returns the
  // number of bytes taken. Precondition: state() == kIncomplete.
  size_t Feed(std::string_view data);

  // Tells the parser the peer closed its side: a request whose body runs to
  // the end of the connection is then complete, anything else half-read
  // fails.
  void FeedEndOfStream();

  State state() const { return state_; }
  bool headers_complete() const { return headers_complete_; }
  // Whether any byte of the current request has been taken.
  bool started() const { return started_; }
  // Whether the request asked for `100 Continue` before sending its body.
  bool expects_continue() const { return expects_continue_; }
  // Whether the connection may carry another request after this one.
  bool keep_alive() const { return keep_alive_; }

  // Valid in kComplete (and the head alone once headers_complete()).
  HttpRequest& request() { return request_; }

  int error_status() const { return error_status_; }
  const std::string& error_message() const { return error_message_; }

  // Starts over for the next request on the same connection.
  void Reset();

 private:
  static int OnMessageBegin(http_parser* parser);
  static int OnUrl(http_parser* parser, const char* at, size_t length);
  static int OnHeaderField(http_parser* parser, const char* at, size_t length);
  static int OnHeaderValue(http_parser* parser, const char* at, size_t length);
  static int OnHeadersComplete(http_parser* parser);
  static int OnBody(http_parser* parser, const char* at, size_t length);
  static int OnMessageComplete(http_parser* parser);

  // Records the first failure; returns non-zero so http-parser stops.
  int Fail(int status, std::string message);
  // Moves the header being read into the request.
  void FinishHeader();

  const RequestLimits limits_;
  http_parser parser_;
  http_parser_settings settings_;
  State state_ = State::kIncomplete;
  bool started_ = false;
  bool headers_complete_ = false;
  bool expects_continue_ = false;
  bool keep_alive_ = false;
  HttpRequest request_;
  std::string target_;
  std::string header_name_, header_value_;
  bool reading_value_ = false;
  size_t header_bytes_ = 0;
  int error_status_ = 0;
  std::string error_message_;
};

}  // namespace cairn::http
