#include "http_test_client.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace cairn {

std::string HttpTestResponse::Header(std::string_view lowercase_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lowercase_name) return value;
  }
  return "";
}

Result<HttpTestClient> HttpTestClient::Connect(const std::string& address, uint16_t port) {
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<TcpConnection> connection,
                         Env::Default()->ConnectTcp(address, port, 10000));
  return HttpTestClient(std::move(connection));
}

Status HttpTestClient::Send(std::string_view bytes) { return connection_->Write(bytes, timeout_ms_); }

Result<HttpTestResponse> HttpTestClient::Request(
    std::string_view method, std::string_view target,
    const std::vector<std::pair<std::string, std::string>>& headers, std::string_view body) {
  std::string request = std::string(method) + " " + std::string(target) + " HTTP/1.1\r\nHost: cairn-test\r\n";
  for (const auto& [name, value] : headers) request += name + ": " + value + "\r\n";
  if (!body.empty() || method == "POST" || method == "PUT") {
    request += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  }
  request += "\r\n";
  request += body;
  CAIRN_RETURN_IF_ERROR(Send(request));
  return ReadResponse(method == "HEAD");
}

Result<bool> HttpTestClient::Fill() {
  char chunk[16384];
  CAIRN_ASSIGN_OR_RETURN(size_t got, connection_->Read(chunk, sizeof(chunk), timeout_ms_));
  if (got == 0) return false;
  buffer_.append(chunk, got);
  return true;
}

Result<HttpTestResponse> HttpTestClient::ReadResponse(bool head_request) {
  size_t head_end;
  while ((head_end = buffer_.find("\r\n\r\n")) == std::string::npos) {
    CAIRN_ASSIGN_OR_RETURN(bool more, Fill());
    if (!more) return Status::Unavailable("the server closed the connection before a whole response head");
  }
  const std::string head = buffer_.substr(0, head_end);
  buffer_.erase(0, head_end + 4);
  HttpTestResponse response;
  if (head.compare(0, 9, "HTTP/1.1 ") != 0 || head.size() < 12) {
    return Status::Corruption("not an HTTP/1.1 status line: " + head.substr(0, 40));
  }
  std::from_chars(head.data() + 9, head.data() + 12, response.status);
  size_t line_start = head.find("\r\n");
  while (line_start != std::string::npos) {
    line_start += 2;
    const size_t line_end = head.find("\r\n", line_start);
    const std::string line = head.substr(line_start, line_end - line_start);
    const size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      size_t value_start = line.find_first_not_of(' ', colon + 1);
      response.headers.emplace_back(name, value_start == std::string::npos ? "" : line.substr(value_start));
    }
    line_start = line_end;
  }
  if (head_request || response.status == 204 || response.status == 304 || response.status / 100 == 1) {
    return response;
  }
  if (response.Header("transfer-encoding").find("chunked") != std::string::npos) {
    CAIRN_RETURN_IF_ERROR(ReadChunkedBody(&response.body, &response.headers));
    return response;
  }
  const std::string length_text = response.Header("content-length");
  if (length_text.empty()) {
    // Framed by the end of the connection.
    for (;;) {
      CAIRN_ASSIGN_OR_RETURN(bool more, Fill());
      if (!more) break;
    }
    response.body = std::move(buffer_);
    buffer_.clear();
    return response;
  }
  size_t length = 0;
  std::from_chars(length_text.data(), length_text.data() + length_text.size(), length);
  while (buffer_.size() < length) {
    CAIRN_ASSIGN_OR_RETURN(bool more, Fill());
    if (!more) return Status::Unavailable("the server closed the connection in the middle of a body");
  }
  response.body = buffer_.substr(0, length);
  buffer_.erase(0, length);
  return response;
}

Status HttpTestClient::ReadChunkedBody(std::string* body,
                                       std::vector<std::pair<std::string, std::string>>* trailers) {
  for (;;) {
    size_t line_end;
    while ((line_end = buffer_.find("\r\n")) == std::string::npos) {
      CAIRN_ASSIGN_OR_RETURN(bool more, Fill());
      if (!more) return Status::Unavailable("the server closed the connection in a chunk size line");
    }
    size_t size = 0;
    const auto [end, error] = std::from_chars(buffer_.data(), buffer_.data() + line_end, size, 16);
    if (error != std::errc() || end == buffer_.data()) {
      return Status::Corruption("bad chunk size line: " + buffer_.substr(0, std::min<size_t>(line_end, 40)));
    }
    buffer_.erase(0, line_end + 2);
    if (size == 0) break;
    // The chunk, then its CRLF.
    while (buffer_.size() < size + 2) {
      CAIRN_ASSIGN_OR_RETURN(bool more, Fill());
      if (!more) return Status::Unavailable("the server closed the connection in the middle of a chunk");
    }
    body->append(buffer_, 0, size);
    buffer_.erase(0, size + 2);
  }
  // The trailer section: fields, then an empty line.
  for (;;) {
    size_t line_end;
    while ((line_end = buffer_.find("\r\n")) == std::string::npos) {
      CAIRN_ASSIGN_OR_RETURN(bool more, Fill());
      if (!more) return Status::Unavailable("the server closed the connection in the trailer section");
    }
    const std::string line = buffer_.substr(0, line_end);
    buffer_.erase(0, line_end + 2);
    if (line.empty()) return Status::Ok();
    const size_t colon = line.find(':');
    if (colon == std::string::npos) return Status::Corruption("bad trailer field: " + line);
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const size_t value_start = line.find_first_not_of(' ', colon + 1);
    trailers->emplace_back(name, value_start == std::string::npos ? "" : line.substr(value_start));
  }
}

bool HttpTestClient::ServerClosed(int timeout_ms) {
  if (!buffer_.empty()) return false;
  char byte;
  Result<size_t> got = connection_->Read(&byte, 1, timeout_ms);
  if (!got.ok()) return got.status().code() == StatusCode::kUnavailable;
  return *got == 0;
}

}  // namespace cairn
