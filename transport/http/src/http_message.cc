#include "cairn/http/http_message.h"

#include "cairn/text/json_writer.h"
#include "cairn/util/hex.h"

namespace cairn {

const std::string* HttpRequest::Header(std::string_view lowercase_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lowercase_name) return &value;
  }
  return nullptr;
}

HttpResponse HttpResponse::Json(int status, std::string body) {
  HttpResponse response;
  response.status = status;
  response.body = std::move(body);
  if (response.body.empty() || response.body.back() != '\n') response.body += '\n';
  return response;
}

HttpResponse HttpResponse::Error(int status, std::string_view message, std::string_view code) {
  JsonWriter json;
  json.BeginObject();
  json.Key("error");
  json.BeginObject();
  json.Key("code");
  json.String(code.empty() ? HttpReasonPhrase(status) : code);
  json.Key("message");
  json.String(message);
  json.EndObject();
  json.EndObject();
  return Json(status, json.text());
}

std::string_view HttpReasonPhrase(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 411:
      return "Length Required";
    case 413:
      return "Payload Too Large";
    case 414:
      return "URI Too Long";
    case 415:
      return "Unsupported Media Type";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    case 505:
      return "HTTP Version Not Supported";
    case 507:
      return "Insufficient Storage";
    default:
      return "Unknown";
  }
}

int HttpStatusFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kPermissionDenied:
      return 403;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kAlreadyExists:
    case StatusCode::kFailedPrecondition:
      return 409;
    case StatusCode::kResourceExhausted:
      return 507;
    case StatusCode::kBusy:
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kTimedOut:
      return 504;
    default:
      return 500;
  }
}

namespace {

using util::HexDigitValue;

}  // namespace

Result<std::string> PercentDecode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '%') {
      if (i + 2 >= text.size() || HexDigitValue(text[i + 1]) < 0 || HexDigitValue(text[i + 2]) < 0) {
        return Status::InvalidArgument("bad percent escape at offset " + std::to_string(i) +
                                       ": '%' needs two hex digits");
      }
      c = static_cast<char>(HexDigitValue(text[i + 1]) * 16 + HexDigitValue(text[i + 2]));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      c = ' ';
    }
    if (c == '\0') return Status::InvalidArgument("a NUL byte (%00) is not allowed in a URL");
    out.push_back(c);
  }
  return out;
}

Result<std::vector<std::pair<std::string, std::string>>> ParseQueryString(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> parameters;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    std::string_view piece = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (piece.empty()) continue;
    const size_t equals = piece.find('=');
    CAIRN_ASSIGN_OR_RETURN(std::string name, PercentDecode(piece.substr(0, equals), true));
    std::string value;
    if (equals != std::string_view::npos) {
      CAIRN_ASSIGN_OR_RETURN(value, PercentDecode(piece.substr(equals + 1), true));
    }
    parameters.emplace_back(std::move(name), std::move(value));
  }
  return parameters;
}

Result<std::vector<std::string>> SplitPath(std::string_view path) {
  if (path.empty() || path[0] != '/') return Status::InvalidArgument("the path must start with '/'");
  std::vector<std::string> segments;
  path.remove_prefix(1);
  while (!path.empty()) {
    const size_t slash = path.find('/');
    CAIRN_ASSIGN_OR_RETURN(std::string segment, PercentDecode(path.substr(0, slash), false));
    segments.push_back(std::move(segment));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return segments;
}

}  // namespace cairn
