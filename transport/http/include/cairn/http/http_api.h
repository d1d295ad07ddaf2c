// HttpApi: cairnd's HTTP endpoints (DESIGN §7). It turns a request into a
// command of the shared command layer (engine_commands.h) or a write, checks
// the caller's token and renders the answer as JSON, so the serial shell and
// HTTP answer every query with the same code.
//
// Without a token:
//   GET  /                    the web page (its data comes from /v1 with a token)
//   GET  /healthz             {"status":"ok"} or {"status":"degraded"} (200), {"status":"failing"}
//                             or {"status":"unavailable"} (503, below): the engine's health level, and degraded while the tokens file
//                             is damaged. Nothing else without a token: no path, no figures. With
//                             a token that has a read scope, the details of GET /v1/health, with
//                             the same status codes
//   GET  /ping                204 (InfluxDB clients probe it): the process answers, whatever
//                             the storage's state
// InfluxDB-compatible writes (scope write:<table>):
//   POST /write?db=T&precision=ns|us|ms|s          InfluxDB 1.x
//   POST /api/v2/write?bucket=T&precision=...      InfluxDB 2.x
//        body: line protocol, `Content-Encoding: gzip` accepted. 204 once
//        the stored records are durable; 400 with every bad line's number and
//        reason (the good lines of the body are stored all the same); 404 for
//        an unknown table unless auto_create_tables.
// Queries, JSON (scope read:<table>):
//   GET    /v1/tables                                     {"tables":[...]} (the tables the token can read)
//   PUT    /v1/tables/{t}    (admin)  ?period=&retention=&ttl=&max_series=&on_conflict= or the same
//                                     as a JSON object body: creates the table
//   PATCH  /v1/tables/{t}    (admin)  ?retention=&ttl=&max_series=&on_conflict= (or a JSON body):
//                                     changes them
//   DELETE /v1/tables/{t}    (admin)
//   GET    /v1/tables/{t}/devices[?after=&limit=]         {"devices":[...]} by id, and "next_after":"<id>"
//                                                         when limit cut the list
//   GET    /v1/tables/{t}/measures                        {"measures":[...]}
//   GET    /v1/tables/{t}/devices/{d}/latest[?measure=]   {"records":[...]}
//   POST   /v1/tables/{t}/latest   {"devices":[...],"measure":"..."}  {"records":[...]} with a device member
//   GET    /v1/tables/{t}/devices/{d}/readings?measure=|prefix=&from=&to=&order=asc|desc&limit=&page=
//                                           &format=json|csv|ndjson
//                                                         {"records":[...],"next_page":"..."}
//                                                         (+ "incomplete":true,"skipped":"..." when
//                                                         damaged chunks were stepped over)
//          format=csv: a header line and a line per record, with a column for every tag and field
//          of the measures asked for; format=ndjson: each record's JSON object on a line. Their
//          notes travel as headers: Cairn-Next-Page, Cairn-Tags, Cairn-Incomplete, Cairn-Skipped.
//          limit=all (no page): the whole range in any format, streamed with chunked transfer
//          coding (api_readings.cc); what it skipped comes as the trailers Cairn-Incomplete and
//          Cairn-Skipped (and in the JSON body).
//   GET    /v1/tables/{t}/devices/{d}/aggregate?measure=&field=&step=&fn=&from=&to=
//                                                         {"buckets":[...]}
//   GET    /v1/stats         (admin)                      engine counters
//   GET    /v1/health        (any read scope)             the shell's `health`: level, problems,
//                                                         data directory, free space
//   GET    /metrics          (any valid token)            Prometheus text
//
// Tokens: `Authorization: Bearer <t>` or `Token <t>`, or HTTP Basic with the
// token as password, or InfluxDB 1.x's `?p=<t>` query parameter, or a
// mutual-TLS client certificate naming a token (client_certificate_identity).
// A missing or invalid token is 401, a valid one without the scope 403. A
// credential that failed too often is answered 429 with Retry-After
// (AuthThrottle, auth_limiter.h); a valid token never is. CheckHead runs
// this check on the head alone, so that the server refuses a request before
// reading its body.
//
// Every error is {"error":{"code":...,"message":...}} with the status of
// HttpStatusFor (http_message.h), or 404/405 for an unknown route or method.
//
// Storage unavailable (the EngineHolder is still empty: cairnd could not
// open its data directory): /, /ping and the health routes answer; /healthz
// says {"status":"unavailable"} with 503, and the details (/v1/health, or
// /healthz with a read token) name the outage and its remedy as
// problem.storage, also with 503. Every other route, once its token and
// scope pass, answers 503 {"error":{"code":"Unavailable","message":"storage
// unavailable: PROBLEM; REMEDY"}}. Every such 503 carries Retry-After
// (HttpApiOptions::storage_retry_after_seconds).
//
// Thread-safety: Handle may run concurrently on many threads.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "cairn/core/engine.h"
#include "cairn/platform/env.h"
#include "cairn/http/api_metrics.h"
#include "cairn/http/auth_limiter.h"
#include "cairn/shell/command_registry.h"
#include "cairn/shell/engine_holder.h"
#include "cairn/http/http_message.h"
#include "cairn/http/rate_limited_log.h"
#include "cairn/http/token_store.h"

namespace cairn {

// Which names of a verified client certificate identify a token (by its
// name in the token store).
enum class ClientCertificateIdentity : uint8_t {
  kOff,              // none: a certificate only opens the connection
  kCommonName,       // the subject's common name
  kAlternativeName,  // the first DNS, email or URI subject alternative name that names a token
};

class RequestAuthenticator;
class LineSlices;

struct HttpApiOptions {
  std::string data_dir;  // for /healthz: must not be empty
  // The line-protocol tag that names the device.
  std::string device_tag = "device";
  // A write to an unknown table creates it with default options.
  bool auto_create_tables = false;
  // A gzip body may not inflate beyond this (a small bomb cannot fill memory).
  size_t max_decompressed_body_bytes = 64 << 20;
  size_t max_line_bytes = 64 * 1024;
  // The page served at "/".
  std::string_view index_html;
  // More Prometheus text appended to /metrics (the sync gauges); may be empty.
  std::function<std::string()> extra_metrics;
  ClientCertificateIdentity client_certificate_identity = ClientCertificateIdentity::kOff;
  // Lines about lockouts and rejected writes (rate-limited); may be empty.
  std::function<void(const std::string&)> log;
  // Retry-After of a 503 while the storage is unavailable: how often the
  // daemon tries to open it again.
  int storage_retry_after_seconds = 10;
  // Rows per `range` call of a streamed readings answer (limit=all); at
  // most the range command's largest --limit (EngineCommandOptions).
  size_t range_page_rows = 1000;
};

class HttpApi {
 public:
  // Nothing is owned; everything must outlive the API. `commands` must hold
  // the builtin and engine commands (RegisterEngineCommands). `server_stats`
  // (may be empty) feeds /metrics with the server's connection counts.
  HttpApi(Engine* engine, Env* env, const CommandRegistry* commands, TokenStore* tokens,
          AuthThrottle* throttle, ApiMetrics* metrics, HttpApiOptions options,
          std::function<HttpServerStats()> server_stats = {});
  // The same over a holder whose engine may come later (engine_holder.h);
  // `commands` must then be registered over the same holder.
  HttpApi(const EngineHolder* storage, Env* env, const CommandRegistry* commands, TokenStore* tokens,
          AuthThrottle* throttle, ApiMetrics* metrics, HttpApiOptions options,
          std::function<HttpServerStats()> server_stats = {});
  ~HttpApi();

  HttpResponse Handle(const HttpRequest& request);

  // For HttpServerOptions::head_check: refuses (401, 429) a request whose
  // route needs a token it does not carry, before its body is read.
  std::optional<HttpResponse> CheckHead(const HttpRequest& head);

 private:
  struct Route;
  class Call;

  // What the public constructors delegate to.
  HttpApi(std::shared_ptr<const EngineHolder> storage, Env* env, const CommandRegistry* commands,
          TokenStore* tokens, AuthThrottle* throttle, ApiMetrics* metrics, HttpApiOptions options,
          std::function<HttpServerStats()> server_stats);

  // The endpoint `path` (split) leads to, or null.
  static const Route* FindRoute(const std::vector<std::string>& path);
  // Routes the request; sets `route_name` once a route is found.
  HttpResponse Dispatch(Call* call, std::string* route_name);
  // 405 unless the route takes `method`; 403 unless the call's token passes
  // the route's guard.
  static std::optional<HttpResponse> CheckMethod(const Route& route, const std::string& method);
  static std::optional<HttpResponse> CheckGuard(const Route& route, Call& call);
  // 503 with Retry-After while the route needs the engine and there is none.
  std::optional<HttpResponse> CheckStorage(const Route& route) const;
  HttpResponse RunCommand(Call* call, std::string_view command, std::vector<std::string> arguments,
                          const std::vector<std::pair<std::string, std::string>>& options,
                          std::string_view rows_member);

  // The handlers of the routes (http_api.h's list, FindRoute's table). The
  // path's table and device come from the call's segments.
  HttpResponse Index(Call* call);
  HttpResponse Healthz(Call* call);
  HttpResponse Ping(Call* call);
  HttpResponse WriteV1(Call* call);
  HttpResponse WriteV2(Call* call);
  HttpResponse Metrics(Call* call);
  HttpResponse Stats(Call* call);
  HttpResponse Health(Call* call);
  HttpResponse Sync(Call* call);
  HttpResponse Tables(Call* call);
  // PUT, PATCH or DELETE /v1/tables/{table}.
  HttpResponse ChangeTable(Call* call);
  // /v1/tables/{table}/devices and /measures.
  HttpResponse TableNames(Call* call);
  HttpResponse LatestBatch(Call* call);
  HttpResponse DeviceLatest(Call* call);
  HttpResponse Readings(Call* call);
  HttpResponse Aggregate(Call* call);

  HttpResponse CreateTable(Call* call, const std::string& table, bool alter);
  // /healthz's level-only answer, and the `health` details (/v1/health).
  HttpResponse HealthLevelOnly();
  HttpResponse HealthDetails(Call* call);

  // The steps of an InfluxDB write (api_write.cc): `table_parameter` names
  // the table (db or bucket); the table must exist or be created (404
  // otherwise); the parsed lines are stored and answered 204, or 400 with
  // the refused lines. The lines are stored a slice at a time: a write the
  // engine refuses as a whole (a full disk) is answered with its error after
  // the slices before it were stored.
  HttpResponse Write(Call* call, std::string_view table_parameter);
  std::optional<HttpResponse> EnsureWriteTable(const std::string& table, const std::string& peer);
  HttpResponse StoreLines(const std::string& table, const std::string& peer, LineSlices* lines);

  // Null while the storage is unavailable; a handler of a route that needs
  // it runs only after CheckStorage found it.
  Engine* engine() const { return storage_->engine(); }

  // Owned only when the API was given an Engine rather than a holder.
  const std::shared_ptr<const EngineHolder> storage_;
  Env* const env_;
  const CommandRegistry* const commands_;
  TokenStore* const tokens_;
  ApiMetrics* const metrics_;
  const HttpApiOptions options_;
  const std::function<HttpServerStats()> server_stats_;
  RateLimitedLog log_;
  std::unique_ptr<RequestAuthenticator> authenticator_;
};

}  // namespace cairn
