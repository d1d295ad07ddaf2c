#include "request_reader.h"

#include <algorithm>
#include <cctype>
#include <climits>

namespace cairn::http {
namespace {

std::string Lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::string_view TrimBlanks(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

RequestReader* Self(http_parser* parser) { return static_cast<RequestReader*>(parser->data); }

}  // namespace

RequestReader::RequestReader(const RequestLimits& limits) : limits_(limits) {
  http_parser_settings_init(&settings_);
  settings_.on_message_begin = &RequestReader::OnMessageBegin;
  settings_.on_url = &RequestReader::OnUrl;
  settings_.on_header_field = &RequestReader::OnHeaderField;
  settings_.on_header_value = &RequestReader::OnHeaderValue;
  settings_.on_headers_complete = &RequestReader::OnHeadersComplete;
  settings_.on_body = &RequestReader::OnBody;
  settings_.on_message_complete = &RequestReader::OnMessageComplete;
  Reset();
}

void RequestReader::Reset() {
  http_parser_init(&parser_, HTTP_REQUEST);
  parser_.data = this;
  state_ = State::kIncomplete;
  started_ = false;
  headers_complete_ = false;
  expects_continue_ = false;
  keep_alive_ = false;
  request_ = HttpRequest();
  target_.clear();
  header_name_.clear();
  header_value_.clear();
  reading_value_ = false;
  header_bytes_ = 0;
  error_status_ = 0;
  error_message_.clear();
}

size_t RequestReader::Feed(std::string_view data) {
  if (state_ != State::kIncomplete || data.empty()) return 0;
  started_ = true;
  const size_t taken = http_parser_execute(&parser_, &settings_, data.data(), data.size());
  const http_errno error = HTTP_PARSER_ERRNO(&parser_);
  if (state_ == State::kIncomplete && error != HPE_OK && error != HPE_PAUSED) {
    if (error == HPE_INVALID_VERSION) {
      Fail(505, "unsupported HTTP version; use HTTP/1.1");
    } else if (error == HPE_INVALID_METHOD) {
      Fail(501, "unknown HTTP method");
    } else if (error == HPE_HEADER_OVERFLOW) {
      Fail(431, "request head larger than the parser's limit");
    } else {
      Fail(400, std::string("malformed HTTP request: ") + http_errno_description(error));
    }
  }
  return taken;
}

void RequestReader::FeedEndOfStream() {
  if (state_ != State::kIncomplete || !started_) return;
  http_parser_execute(&parser_, &settings_, nullptr, 0);
  if (state_ == State::kIncomplete) Fail(400, "the connection closed in the middle of a request");
}

int RequestReader::Fail(int status, std::string message) {
  if (state_ != State::kFailed) {
    state_ = State::kFailed;
    error_status_ = status;
    error_message_ = std::move(message);
  }
  // Not 1: from on_headers_complete, 1 would mean "no body follows".
  return -1;
}

void RequestReader::FinishHeader() {
  if (header_name_.empty() && header_value_.empty()) return;
  request_.headers.emplace_back(Lowercase(std::move(header_name_)), std::string(TrimBlanks(header_value_)));
  header_name_.clear();
  header_value_.clear();
}

int RequestReader::OnMessageBegin(http_parser* parser) {
  Self(parser)->started_ = true;
  return 0;
}

int RequestReader::OnUrl(http_parser* parser, const char* at, size_t length) {
  RequestReader* self = Self(parser);
  if (self->target_.size() + length > self->limits_.max_target_bytes) {
    return self->Fail(
        414, "request target longer than " + std::to_string(self->limits_.max_target_bytes) + " bytes");
  }
  self->target_.append(at, length);
  return 0;
}

int RequestReader::OnHeaderField(http_parser* parser, const char* at, size_t length) {
  RequestReader* self = Self(parser);
  if (self->reading_value_) {
    self->FinishHeader();
    self->reading_value_ = false;
  }
  self->header_bytes_ += length;
  if (self->header_bytes_ > self->limits_.max_header_bytes) {
    return self->Fail(
        431, "request headers larger than " + std::to_string(self->limits_.max_header_bytes) + " bytes");
  }
  if (self->header_name_.empty() && self->request_.headers.size() >= self->limits_.max_headers) {
    return self->Fail(431, "more than " + std::to_string(self->limits_.max_headers) + " request headers");
  }
  self->header_name_.append(at, length);
  return 0;
}

int RequestReader::OnHeaderValue(http_parser* parser, const char* at, size_t length) {
  RequestReader* self = Self(parser);
  self->reading_value_ = true;
  self->header_bytes_ += length;
  if (self->header_bytes_ > self->limits_.max_header_bytes) {
    return self->Fail(
        431, "request headers larger than " + std::to_string(self->limits_.max_header_bytes) + " bytes");
  }
  self->header_value_.append(at, length);
  return 0;
}

int RequestReader::OnHeadersComplete(http_parser* parser) {
  RequestReader* self = Self(parser);
  self->FinishHeader();
  HttpRequest& request = self->request_;
  request.method = http_method_str(static_cast<http_method>(parser->method));
  request.http_1_0 = parser->http_minor == 0;
  if (parser->upgrade) return self->Fail(501, "protocol upgrades are not supported");
  if (parser->http_major != 1) return self->Fail(505, "unsupported HTTP version; use HTTP/1.1");
  if (self->target_.empty() || self->target_[0] != '/') {
    return self->Fail(400, "the request target must be a path starting with '/'");
  }
  const size_t question = self->target_.find('?');
  request.path = self->target_.substr(0, question);
  if (question != std::string::npos) request.query = self->target_.substr(question + 1);
  // http-parser reports ULLONG_MAX when there is no Content-Length.
  if (parser->content_length != ULLONG_MAX && parser->content_length > self->limits_.max_body_bytes) {
    return self->Fail(413, "request body of " + std::to_string(parser->content_length) +
                               " bytes is larger than the limit of " +
                               std::to_string(self->limits_.max_body_bytes) + " bytes");
  }
  const std::string* expect = request.Header("expect");
  self->expects_continue_ = expect != nullptr && Lowercase(*expect) == "100-continue";
  self->keep_alive_ = http_should_keep_alive(parser) != 0;
  self->headers_complete_ = true;
  return 0;
}

int RequestReader::OnBody(http_parser* parser, const char* at, size_t length) {
  RequestReader* self = Self(parser);
  if (self->request_.body.size() + length > self->limits_.max_body_bytes) {
    return self->Fail(413, "request body larger than the limit of " +
                               std::to_string(self->limits_.max_body_bytes) + " bytes");
  }
  self->request_.body.append(at, length);
  return 0;
}

int RequestReader::OnMessageComplete(http_parser* parser) {
  RequestReader* self = Self(parser);
  if (self->state_ == State::kFailed) return -1;
  self->keep_alive_ = http_should_keep_alive(parser) != 0;
  self->state_ = State::kComplete;
  // Stop here: the bytes after this request belong to the next one.
  http_parser_pause(parser, 1);
  return 0;
}

}  // namespace cairn::http
