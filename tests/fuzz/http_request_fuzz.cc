// Fuzzes cairnd's HTTP request path without sockets: the bytes of one
// connection go through RequestReader (http-parser and cairn's limits), and
// every complete request through HttpApi::Handle (routing, authentication,
// scopes, commands, writes) over a real engine (fuzz_engine_fixture.h).
//
// Input: the first byte is the size of the pieces the connection's bytes
// arrive in (0: all at once), to exercise incremental parsing; the rest is
// the byte stream, which may hold several pipelined requests. As the server
// does, the stream ends after a request that does not keep the connection
// alive, and a peer that stops sending mid-request is told to the reader.
//
// Properties:
//   - the reader takes every byte offered while a request is incomplete,
//     never more; a failure has one of the documented statuses and a reason;
//   - the requests, and whether the stream ends in a failure, do not depend
//     on how the bytes were cut (compared with a second reader fed
//     everything at once);
//   - a complete request has a method, a path starting with '/', lowercase
//     header names, trimmed values and a body within the limit;
//   - a response has a status in 100..599 and not 500 (a bug, corruption or
//     an I/O error, none of which a request may cause); 204 has no body;
//     JSON bodies are one line of well-formed UTF-8 that cairn::JsonValue
//     parses (so no duplicate keys); every status >= 300 has a JSON body
//     {"error":{"code":..,"message":..}}; 401 says WWW-Authenticate, 405
//     Allow, 429 Retry-After;
//   - nothing but "/", /healthz and /ping answers 2xx to a request that does
//     not carry a valid token, and the read:sensors token gets 2xx only for
//     reads of table sensors, the table list and /metrics;
//   - the data directory keeps its log and token file (the fixture).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/http/api_metrics.h"
#include "cairn/http/auth_limiter.h"
#include "cairn/http/http_api.h"
#include "cairn/http/http_message.h"
#include "cairn/text/json_value.h"

#include "fuzz_engine_fixture.h"
#include "request_reader.h"

namespace {

using cairn::fuzz::IsWellFormedUtf8;
using cairn::fuzz::Require;

constexpr std::string_view kPeerAddress = "192.0.2.7";

cairn::http::RequestLimits Limits() {
  cairn::http::RequestLimits limits;
  limits.max_target_bytes = 2048;
  limits.max_header_bytes = 4096;
  limits.max_headers = 16;
  limits.max_body_bytes = 64 * 1024;
  return limits;
}

// ---- independent helpers (not the code under test's) ------------------------

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX decoded where well-formed, anything else kept; '+' also as a space
// when `plus_is_space`.
std::string LenientPercentDecode(std::string_view text, bool plus_is_space) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && HexDigit(text[i + 1]) >= 0 && HexDigit(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexDigit(text[i + 1]) * 16 + HexDigit(text[i + 2])));
      i += 2;
    } else if (plus_is_space && text[i] == '+') {
      out.push_back(' ');
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

// The bytes of a base64 word in either alphabet; other bytes are skipped.
std::string LenientBase64Decode(std::string_view word) {
  std::string out;
  uint32_t bits = 0;
  int count = 0;
  for (char c : word) {
    int value = -1;
    if (c >= 'A' && c <= 'Z') value = c - 'A';
    if (c >= 'a' && c <= 'z') value = c - 'a' + 26;
    if (c >= '0' && c <= '9') value = c - '0' + 52;
    if (c == '+' || c == '-') value = 62;
    if (c == '/' || c == '_') value = 63;
    if (value < 0) continue;
    bits = (bits << 6) | static_cast<uint32_t>(value);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out.push_back(static_cast<char>((bits >> count) & 0xFF));
    }
  }
  return out;
}

// Whether `token` is anywhere the request could carry it: a header value,
// a base64 word of one (HTTP Basic), the query raw or decoded. Generous on
// purpose: the property built on it must never blame a request that did
// carry the token.
bool Carries(const cairn::HttpRequest& request, std::string_view token) {
  for (const auto& [name, value] : request.headers) {
    if (value.find(token) != std::string::npos) return true;
    size_t start = 0;
    while (start < value.size()) {
      size_t end = value.find_first_of(" \t", start);
      if (end == std::string::npos) end = value.size();
      if (LenientBase64Decode(std::string_view(value).substr(start, end - start)).find(token) !=
          std::string::npos) {
        return true;
      }
      start = end + 1;
    }
  }
  return request.query.find(token) != std::string::npos ||
         LenientPercentDecode(request.query, true).find(token) != std::string::npos;
}

// The path's non-empty segments, decoded where decodable.
std::vector<std::string> Segments(std::string_view path) {
  std::vector<std::string> segments;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (end > start) segments.push_back(LenientPercentDecode(path.substr(start, end - start), false));
    start = end + 1;
  }
  return segments;
}

bool HasHeader(const cairn::HttpResponse& response, std::string_view name) {
  for (const auto& [key, value] : response.headers) {
    if (key == name) return !value.empty();
  }
  return false;
}

// ---- properties --------------------------------------------------------------

void CheckRequest(const cairn::HttpRequest& request, const cairn::http::RequestLimits& limits) {
  Require(!request.method.empty(), "a request has a method");
  Require(!request.path.empty() && request.path[0] == '/', "a request path starts with '/'");
  Require(request.path.find('?') == std::string::npos, "the query is split off the path");
  Require(request.path.size() + request.query.size() <= limits.max_target_bytes,
          "the target is within limits");
  Require(request.headers.size() <= limits.max_headers, "at most max_headers headers");
  for (const auto& [name, value] : request.headers) {
    for (char c : name) Require(!(c >= 'A' && c <= 'Z'), "header names are lowercase");
    Require(value.empty() || (value.front() != ' ' && value.front() != '\t' && value.back() != ' ' &&
                              value.back() != '\t'),
            "header values are trimmed");
  }
  Require(request.body.size() <= limits.max_body_bytes, "the body is within limits");
}

// What HttpApi must grant: an error body for every failure, and 2xx only to
// the tokens whose scopes allow it.
void CheckResponse(const cairn::HttpRequest& request, const cairn::HttpResponse& response) {
  const std::string context = request.method + " " + request.path + "?" + request.query + " -> " +
                              std::to_string(response.status) + " " + response.body;
  Require(response.status >= 100 && response.status <= 599, "the status is in 100..599", context);
  // 500 carries Internal (a bug), Corruption or IOError: none of them can
  // come from a request to a healthy engine on a healthy disk.
  Require(response.status != 500, "no request makes the API fail internally", context);
  if (response.status == 204) Require(response.body.empty(), "204 has no body", context);
  const bool json = response.content_type.rfind("application/json", 0) == 0;
  if (response.status >= 300) {
    Require(json && !response.body.empty(), "an error has a JSON body", context);
  }
  if (json && !response.body.empty()) {
    Require(IsWellFormedUtf8(response.body), "a JSON body is well-formed UTF-8", context);
    Require(response.body.back() == '\n' && response.body.find('\n') == response.body.size() - 1,
            "a JSON body is one line", context);
    cairn::Result<cairn::JsonValue> document = cairn::JsonValue::Parse(response.body);
    Require(document.ok(), "a JSON body parses",
            document.ok() ? context : document.status().ToString() + ": " + context);
    Require(document->is_object(), "a JSON body is an object", context);
    if (response.status >= 300) {
      const cairn::JsonValue* error = document->Find("error");
      Require(error != nullptr && error->is_object(), "an error body has an \"error\" object", context);
      const cairn::JsonValue* code = error->Find("code");
      const cairn::JsonValue* message = error->Find("message");
      Require(code != nullptr && code->is_string() && !code->text().empty(), "an error has a code", context);
      Require(message != nullptr && message->is_string() && !message->text().empty(),
              "an error has a message", context);
    }
  }
  if (response.status == 401)
    Require(HasHeader(response, "WWW-Authenticate"), "401 says WWW-Authenticate", context);
  if (response.status == 405) Require(HasHeader(response, "Allow"), "405 says Allow", context);
  if (response.status == 429) Require(HasHeader(response, "Retry-After"), "429 says Retry-After", context);

  if (response.status < 200 || response.status >= 300) return;
  const std::vector<std::string> path = Segments(request.path);
  const bool open = path.empty() || (path.size() == 1 && (path[0] == "healthz" || path[0] == "ping"));
  if (open) return;
  const bool admin = Carries(request, cairn::fuzz::kAdminToken);
  const bool reader = Carries(request, cairn::fuzz::kReadSensorsToken);
  Require(admin || reader, "2xx outside /, /healthz and /ping needs a valid token", context);
  if (admin) return;
  const bool reads_sensors = path.size() >= 4 && path[0] == "v1" && path[1] == "tables" &&
                             path[2] == "sensors" && (request.method != "DELETE" && request.method != "PUT");
  const bool lists_tables = path.size() == 2 && path[0] == "v1" && path[1] == "tables";
  const bool metrics = path.size() == 1 && path[0] == "metrics";
  const bool health = path.size() == 2 && path[0] == "v1" && path[1] == "health";
  Require(reads_sensors || lists_tables || metrics || health,
          "the read:sensors token gets 2xx only for what it may read", context);
  if (lists_tables) {
    cairn::Result<cairn::JsonValue> document = cairn::JsonValue::Parse(response.body);
    const cairn::JsonValue* tables = document.ok() ? document->Find("tables") : nullptr;
    Require(tables != nullptr && tables->kind() == cairn::JsonValue::Kind::kArray, "/v1/tables lists tables",
            context);
    for (const cairn::JsonValue& table : tables->elements()) {
      const cairn::JsonValue* name = table.Find("table");
      Require(name != nullptr && name->is_string() && name->text() == "sensors",
              "the read:sensors token sees only table sensors", context);
    }
  }
}

// What one connection's bytes became.
struct Outcome {
  std::vector<cairn::HttpRequest> requests;
  int failure_status = 0;  // 0: no failure
};

bool SameRequest(const cairn::HttpRequest& a, const cairn::HttpRequest& b) {
  return a.method == b.method && a.path == b.path && a.query == b.query && a.headers == b.headers &&
         a.body == b.body;
}

// Feeds `stream` to a reader in pieces of `piece` bytes (0: all at once) as
// HttpServer::ServeRequests does, handing each complete request to
// `handle`, which returns whether the connection goes on.
template <typename Handler>
Outcome Read(std::string_view stream, size_t piece, Handler handle) {
  const cairn::http::RequestLimits limits = Limits();
  cairn::http::RequestReader reader(limits);
  Outcome outcome;
  for (;;) {
    bool peer_closed = false;
    while (reader.state() == cairn::http::RequestReader::State::kIncomplete && !stream.empty()) {
      const size_t offered = piece == 0 ? stream.size() : std::min(piece, stream.size());
      const size_t taken = reader.Feed(stream.substr(0, offered));
      Require(taken <= offered, "the reader takes no more than offered");
      if (reader.state() == cairn::http::RequestReader::State::kIncomplete) {
        Require(taken == offered, "an incomplete request takes every byte offered");
      }
      stream.remove_prefix(taken);
    }
    if (reader.state() == cairn::http::RequestReader::State::kIncomplete) {
      if (!reader.started()) return outcome;  // closed between requests
      peer_closed = true;
      reader.FeedEndOfStream();
      Require(reader.state() != cairn::http::RequestReader::State::kIncomplete,
              "the end of the stream settles the request");
    }
    if (reader.state() == cairn::http::RequestReader::State::kFailed) {
      const int status = reader.error_status();
      Require(
          status == 400 || status == 413 || status == 414 || status == 431 || status == 501 || status == 505,
          "a malformed request fails with a documented status");
      Require(!reader.error_message().empty(), "a malformed request says why");
      outcome.failure_status = status;
      return outcome;
    }
    cairn::HttpRequest& request = reader.request();
    CheckRequest(request, limits);
    request.peer_address = std::string(kPeerAddress);
    outcome.requests.push_back(request);
    if (!handle(request) || !reader.keep_alive() || peer_closed) return outcome;
    reader.Reset();
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  cairn::fuzz::PreferClassicSchedule(argc, argv);
  cairn::fuzz::EngineFixture::Get();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  cairn::fuzz::EngineFixture& fixture = cairn::fuzz::EngineFixture::Get();
  const size_t piece = data[0];
  const std::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);

  // Fresh per input, so that an input's answers do not depend on earlier
  // ones' failed authentications.
  cairn::AuthThrottle limiter;
  cairn::ApiMetrics metrics;
  cairn::HttpApiOptions options;
  options.data_dir = fixture.data_dir();
  options.max_decompressed_body_bytes = 256 * 1024;
  options.max_line_bytes = 4096;
  options.index_html = "<!doctype html><title>cairn</title>";
  cairn::HttpApi api(fixture.engine(), fixture.env(), &fixture.commands(), fixture.tokens(), &limiter,
                     &metrics, options);

  const Outcome served = Read(stream, piece, [&](const cairn::HttpRequest& request) {
    const cairn::HttpResponse response = api.Handle(request);
    CheckResponse(request, response);
    return !response.close_connection;
  });
  if (piece != 0) {
    const Outcome whole = Read(stream, 0, [&](const cairn::HttpRequest&) {
      // The same requests in the same order: Handle would have answered
      // them the same way, so the connection goes on as above.
      return true;
    });
    const size_t compared = std::min(served.requests.size(), whole.requests.size());
    for (size_t i = 0; i < compared; ++i) {
      Require(SameRequest(served.requests[i], whole.requests[i]),
              "requests do not depend on how bytes arrive");
    }
    if (served.requests.size() == whole.requests.size()) {
      // Which problem is reported may depend on the cut: an over-long target
      // with a bad byte near its end is 414 in pieces, 400 at once.
      Require((served.failure_status == 0) == (whole.failure_status == 0),
              "failures do not depend on how bytes arrive");
    } else {
      // The server stops after a request that closes the connection.
      Require(served.requests.size() < whole.requests.size() && served.failure_status == 0,
              "only a closing response ends the connection early");
    }
  }
  fixture.AfterInput();
  return 0;
}
