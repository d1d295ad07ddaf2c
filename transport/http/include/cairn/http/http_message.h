// HTTP/1.1 requests and responses as the server and the API exchange them,
// and the URL pieces (RFC 3986) the API needs: percent-decoding, the query
// string, the path's segments.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cairn/platform/env.h"
#include "cairn/platform/status.h"

namespace cairn {

struct HttpRequest {
  std::string method;  // "GET", "POST" ... as sent (HTTP methods are case-sensitive)
  std::string path;    // the request-target before '?', still percent-encoded
  std::string query;   // after '?', still encoded; empty without one
  // In arrival order; names lowercased, values without surrounding blanks.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;  // de-chunked, as sent (not decompressed)
  std::string peer_address;
  bool tls = false;
  // HTTP/1.0 (no chunked transfer coding) rather than HTTP/1.1.
  bool http_1_0 = false;
  // The verified client certificate of a mutual-TLS connection.
  std::optional<PeerCertificate> client_certificate;

  // The value of the first header named `lowercase_name`, or nullptr.
  const std::string* Header(std::string_view lowercase_name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  // Besides Content-Type, Content-Length, Connection and Date, which the
  // server writes itself.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // The server closes the connection after this response.
  bool close_connection = false;

  // A body too large to hold at once: when set, `body` is its first piece
  // and the server calls `more` for the next ones, each appended to the
  // (emptied) argument, until it returns false. Sent with chunked transfer
  // coding (to an HTTP/1.0 client: without a length, closing the connection
  // at the end). An error from `more` ends the response without its final
  // chunk and closes the connection, so that the client sees a broken
  // transfer, never a short answer that looks whole.
  std::function<Result<bool>(std::string* piece)> more;
  // Trailer fields `more` may fill in as it goes (e.g. what a long read
  // skipped), sent after the last chunk; their names are announced in the
  // head. Ignored for an HTTP/1.0 client.
  std::vector<std::string> trailer_names;
  std::shared_ptr<std::vector<std::pair<std::string, std::string>>> trailers;

  // A JSON body (one line, ending in "\n").
  static HttpResponse Json(int status, std::string body);
  // The error shape of every endpoint: {"error":{"code":C,"message":M}}.
  // `code` defaults to the status's reason phrase.
  static HttpResponse Error(int status, std::string_view message, std::string_view code = {});
};

// "OK", "Not Found" ...; "Unknown" for a code this server never sends.
std::string_view HttpReasonPhrase(int status);

// The HTTP status that carries a failed Status: InvalidArgument 400,
// PermissionDenied 403, NotFound 404, AlreadyExists and FailedPrecondition
// 409, ResourceExhausted 507, Busy and Unavailable 503, TimedOut 504,
// anything else 500.
int HttpStatusFor(const Status& status);

// Decodes %XX escapes; with `plus_is_space` (query strings) '+' is a space.
// InvalidArgument for a '%' not followed by two hex digits, and for a
// decoded NUL byte.
Result<std::string> PercentDecode(std::string_view text, bool plus_is_space);

// "a=1&b=x%20y&flag" as (name, value) pairs in order, decoded; a name without
// '=' has an empty value; empty pieces ("a=1&&b=2") are skipped.
Result<std::vector<std::pair<std::string, std::string>>> ParseQueryString(std::string_view query);

// "/v1/tables/a%2Fb/devices" as {"v1", "tables", "a/b", "devices"}: split on
// '/' first, then each segment decoded, so an encoded slash stays inside its
// segment. A trailing slash adds no empty segment; "/" is {}.
// InvalidArgument when the path does not start with '/' or a segment does
// not decode.
Result<std::vector<std::string>> SplitPath(std::string_view path);

}  // namespace cairn
