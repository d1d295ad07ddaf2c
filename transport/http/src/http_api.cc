#include "cairn/http/http_api.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <set>
#include <span>

#include "cairn/http/clock_metrics.h"
#include "cairn/shell/engine_commands.h"
#include "cairn/text/json_value.h"
#include "cairn/text/json_writer.h"
#include "cairn/shell/result_renderer.h"

#include "api_call.h"
#include "flash_wear_metrics.h"
#include "request_auth.h"
#include "cairn/shell/record_table.h"

namespace cairn {
namespace {

using http_api_internal::AddTagFilter;

using http_api_internal::ErrorFor;

// The options a table can be created (PUT) or altered (PATCH) with.
constexpr std::string_view kCreateOptions[] = {"period", "retention", "ttl", "max_series", "on_conflict",
                                               "attributes"};
constexpr std::string_view kAlterOptions[] = {"retention", "ttl", "max_series", "on_conflict", "attributes"};

}  // namespace

// One endpoint: its path, where {table} and {device} stand for any one
// segment (the path is also the route's label in the request metrics), the
// methods it takes, who may call it, and its handler.
struct HttpApi::Route {
  enum class Methods : uint8_t {
    kGet,        // GET and HEAD (answered without the body); a 405 allows GET
    kGetOrHead,  // the same, and a 405 allows GET, HEAD
    kPost,
    kOwn,  // the handler checks the method itself
  };
  enum class Guard : uint8_t {
    kPublic,  // answers without a token
    kToken,   // any valid token
    kRead,    // scope read:{table}
    kAdmin,   // the admin scope, for {table} where the path names one
  };
  std::string_view path;
  Methods methods;
  Guard guard;
  HttpResponse (HttpApi::*handle)(Call* call);
};

HttpApi::HttpApi(Engine* engine, Env* env, const CommandRegistry* commands, TokenStore* tokens,
                 AuthThrottle* throttle, ApiMetrics* metrics, HttpApiOptions options,
                 std::function<HttpServerStats()> server_stats)
    : HttpApi(std::make_shared<const EngineHolder>(engine), env, commands, tokens, throttle, metrics,
              std::move(options), std::move(server_stats)) {}

HttpApi::HttpApi(const EngineHolder* storage, Env* env, const CommandRegistry* commands, TokenStore* tokens,
                 AuthThrottle* throttle, ApiMetrics* metrics, HttpApiOptions options,
                 std::function<HttpServerStats()> server_stats)
    // Not owned: an aliasing pointer without an owner.
    : HttpApi(std::shared_ptr<const EngineHolder>(std::shared_ptr<void>(), storage), env, commands, tokens,
              throttle, metrics, std::move(options), std::move(server_stats)) {}

HttpApi::HttpApi(std::shared_ptr<const EngineHolder> storage, Env* env, const CommandRegistry* commands,
                 TokenStore* tokens, AuthThrottle* throttle, ApiMetrics* metrics, HttpApiOptions options,
                 std::function<HttpServerStats()> server_stats)
    : storage_(std::move(storage)),
      env_(env),
      commands_(commands),
      tokens_(tokens),
      metrics_(metrics),
      options_(std::move(options)),
      server_stats_(std::move(server_stats)),
      log_(env, options_.log),
      authenticator_(std::make_unique<RequestAuthenticator>(env, tokens, throttle, metrics,
                                                            options_.client_certificate_identity, &log_)) {}

HttpApi::~HttpApi() = default;

namespace {

// Whether `token` may read something: the health details are for readers.
bool HasReadScope(const TokenInfo& token) {
  return std::any_of(token.scopes.begin(), token.scopes.end(),
                     [](const TokenScope& scope) { return scope.access != Access::kWrite; });
}

}  // namespace

std::optional<HttpResponse> HttpApi::CheckHead(const HttpRequest& head) {
  Result<std::vector<std::string>> path = SplitPath(head.path);
  // A malformed path is answered by Handle, with the body read.
  if (!path.ok()) return std::nullopt;
  const Route* route = FindRoute(*path);
  if (route != nullptr && route->guard == Route::Guard::kPublic) return std::nullopt;
  const int64_t started = env_->MonotonicNanos();
  RequestAuthenticator::Outcome outcome = authenticator_->Authenticate(head);
  if (!outcome.refusal) return std::nullopt;
  metrics_->RecordRequest("unauthenticated", outcome.refusal->status, env_->MonotonicNanos() - started);
  return std::move(outcome.refusal);
}

HttpResponse HttpApi::Handle(const HttpRequest& request) {
  const int64_t started = env_->MonotonicNanos();
  Call call(request);
  std::string route = "unmatched";
  HttpResponse response = Dispatch(&call, &route);
  metrics_->RecordRequest(route, response.status, env_->MonotonicNanos() - started);
  return response;
}

namespace {

// Whether `path` (split at '/') matches `pattern` segment by segment, a
// `{name}` segment of the pattern (e.g. {table}) matching any one segment.
bool RouteMatches(std::string_view pattern, const std::vector<std::string>& path) {
  pattern.remove_prefix(1);  // the leading '/'
  size_t index = 0;
  while (!pattern.empty()) {
    const size_t slash = pattern.find('/');
    const std::string_view segment = pattern.substr(0, slash);
    if (index == path.size()) return false;
    if (segment.front() != '{' && segment != path[index]) return false;
    ++index;
    pattern = slash == std::string_view::npos ? std::string_view() : pattern.substr(slash + 1);
  }
  return index == path.size();
}

HttpResponse MethodNotAllowed(std::string_view allowed) {
  HttpResponse response = HttpResponse::Error(405, "method not allowed here; use " + std::string(allowed));
  response.headers.emplace_back("Allow", std::string(allowed));
  return response;
}

// The table a route names: every such path begins /v1/tables/{table}.
const std::string& TableSegment(const std::vector<std::string>& path) { return path[2]; }
// The device of the /v1/tables/{table}/devices/{device}/... routes.
const std::string& DeviceSegment(const std::vector<std::string>& path) { return path[4]; }

}  // namespace

const HttpApi::Route* HttpApi::FindRoute(const std::vector<std::string>& path) {
  using Methods = Route::Methods;
  using Guard = Route::Guard;
  static constexpr Route kRoutes[] = {
      {"/", Methods::kGet, Guard::kPublic, &HttpApi::Index},
      {"/healthz", Methods::kGet, Guard::kPublic, &HttpApi::Healthz},
      {"/ping", Methods::kGetOrHead, Guard::kPublic, &HttpApi::Ping},
      {"/write", Methods::kPost, Guard::kToken, &HttpApi::WriteV1},
      {"/api/v2/write", Methods::kPost, Guard::kToken, &HttpApi::WriteV2},
      {"/metrics", Methods::kGet, Guard::kToken, &HttpApi::Metrics},
      {"/v1/stats", Methods::kGet, Guard::kAdmin, &HttpApi::Stats},
      {"/v1/health", Methods::kGet, Guard::kToken, &HttpApi::Health},
      {"/v1/sync", Methods::kGet, Guard::kAdmin, &HttpApi::Sync},
      {"/v1/tables", Methods::kGet, Guard::kToken, &HttpApi::Tables},
      {"/v1/tables/{table}", Methods::kOwn, Guard::kAdmin, &HttpApi::ChangeTable},
      {"/v1/tables/{table}/devices", Methods::kGet, Guard::kRead, &HttpApi::TableNames},
      {"/v1/tables/{table}/measures", Methods::kGet, Guard::kRead, &HttpApi::TableNames},
      {"/v1/tables/{table}/latest", Methods::kPost, Guard::kRead, &HttpApi::LatestBatch},
      {"/v1/tables/{table}/devices/{device}/latest", Methods::kGet, Guard::kRead, &HttpApi::DeviceLatest},
      {"/v1/tables/{table}/devices/{device}/readings", Methods::kGet, Guard::kRead, &HttpApi::Readings},
      {"/v1/tables/{table}/devices/{device}/aggregate", Methods::kGet, Guard::kRead, &HttpApi::Aggregate},
  };
  for (const Route& route : kRoutes) {
    if (RouteMatches(route.path, path)) return &route;
  }
  return nullptr;
}

HttpResponse HttpApi::Dispatch(Call* call, std::string* route_name) {
  const HttpRequest& request = call->request();
  Result<std::vector<std::string>> segments = SplitPath(request.path);
  if (!segments.ok()) return HttpResponse::Error(400, segments.status().message());
  call->segments() = std::move(*segments);
  Result<std::vector<std::pair<std::string, std::string>>> parameters = ParseQueryString(request.query);
  if (!parameters.ok()) return HttpResponse::Error(400, parameters.status().message());
  call->parameters() = std::move(*parameters);

  const Route* route = FindRoute(call->segments());
  // Everything but the public routes needs a token, also to learn that a
  // path leads nowhere.
  if (route == nullptr || route->guard != Route::Guard::kPublic) {
    RequestAuthenticator::Outcome authenticated = authenticator_->Authenticate(request);
    if (authenticated.refusal) return std::move(*authenticated.refusal);
    call->token() = std::move(authenticated.token);
  }
  if (route == nullptr) return HttpResponse::Error(404, "no such endpoint: " + request.path);
  *route_name = std::string(route->path);
  if (auto refused = CheckMethod(*route, request.method)) return *refused;
  if (auto denied = CheckGuard(*route, *call)) return *denied;
  if (auto unavailable = CheckStorage(*route)) return *unavailable;
  return (this->*route->handle)(call);
}

namespace {

// 503 for `why`, with Retry-After: the client may come back when the
// daemon has tried to open the storage again.
HttpResponse StorageUnavailable(int status, std::string body, int retry_after_seconds) {
  HttpResponse response = HttpResponse::Json(status, std::move(body));
  response.headers.emplace_back("Retry-After", std::to_string(std::max(1, retry_after_seconds)));
  return response;
}

}  // namespace

std::optional<HttpResponse> HttpApi::CheckStorage(const Route& route) const {
  // The routes that answer without the engine: the page, the probe and
  // the health routes, which report the outage themselves.
  if (route.handle == &HttpApi::Index || route.handle == &HttpApi::Ping || route.handle == &HttpApi::Healthz ||
      route.handle == &HttpApi::Health) {
    return std::nullopt;
  }
  Status available = storage_->Check();
  if (available.ok()) return std::nullopt;
  HttpResponse error = ErrorFor(available);
  return StorageUnavailable(error.status, std::move(error.body), options_.storage_retry_after_seconds);
}

std::optional<HttpResponse> HttpApi::CheckMethod(const Route& route, const std::string& method) {
  const bool get = method == "GET" || method == "HEAD";
  switch (route.methods) {
    case Route::Methods::kGet:
      if (!get) return MethodNotAllowed("GET");
      break;
    case Route::Methods::kGetOrHead:
      if (!get) return MethodNotAllowed("GET, HEAD");
      break;
    case Route::Methods::kPost:
      if (method != "POST") return MethodNotAllowed("POST");
      break;
    case Route::Methods::kOwn:
      break;
  }
  return std::nullopt;
}

std::optional<HttpResponse> HttpApi::CheckGuard(const Route& route, Call& call) {
  const bool names_table = route.path.find("{table}") != std::string_view::npos;
  switch (route.guard) {
    case Route::Guard::kPublic:
    case Route::Guard::kToken:
      return std::nullopt;
    case Route::Guard::kRead:
      return call.Require(Access::kRead, TableSegment(call.segments()));
    case Route::Guard::kAdmin:
      return call.Require(Access::kAdmin, names_table ? TableSegment(call.segments()) : std::string());
  }
  return std::nullopt;
}

// ---- the routes without a token ----

HttpResponse HttpApi::Index(Call*) {
  HttpResponse page;
  page.content_type = "text/html; charset=utf-8";
  page.body = std::string(options_.index_html);
  page.headers.emplace_back("Cache-Control", "no-cache");
  page.headers.emplace_back("Content-Security-Policy",
                            "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                            "img-src 'self' data:");
  return page;
}

HttpResponse HttpApi::Healthz(Call* call) {
  // A monitor without a token learns the level only; a token with a read
  // scope also gets the problems and figures, as from /v1/health.
  if (call->request().Header("authorization") != nullptr) {
    RequestAuthenticator::Outcome outcome = authenticator_->Authenticate(call->request());
    if (outcome.token && HasReadScope(*outcome.token)) return HealthDetails(call);
  }
  return HealthLevelOnly();
}

HttpResponse HttpApi::Ping(Call*) {
  HttpResponse pong;
  pong.status = 204;
  pong.headers.emplace_back("X-Influxdb-Version", "1.8-compatible (cairn)");
  return pong;
}

// ---- the routes with a token ----

HttpResponse HttpApi::WriteV1(Call* call) { return Write(call, "db"); }

HttpResponse HttpApi::WriteV2(Call* call) { return Write(call, "bucket"); }

HttpResponse HttpApi::Stats(Call* call) {
  if (auto bad = call->CheckParameters({})) return *bad;
  return RunCommand(call, "stats", {}, {}, "");
}

HttpResponse HttpApi::Health(Call* call) {
  if (!HasReadScope(*call->token())) {
    return HttpResponse::Error(403, "token '" + call->token()->name + "' lacks a read scope (any table)");
  }
  if (auto bad = call->CheckParameters({})) return *bad;
  return HealthDetails(call);
}

HttpResponse HttpApi::Sync(Call* call) {
  if (auto bad = call->CheckParameters({"view"})) return *bad;
  std::vector<std::string> arguments;
  if (auto view = call->Parameter("view")) arguments.push_back(std::string(*view));
  return RunCommand(call, "sync", std::move(arguments), {}, "tables");
}

HttpResponse HttpApi::ChangeTable(Call* call) {
  const std::string& table = TableSegment(call->segments());
  const std::string& method = call->request().method;
  if (method == "PUT") return CreateTable(call, table, /*alter=*/false);
  if (method == "PATCH") return CreateTable(call, table, /*alter=*/true);
  if (method == "DELETE") {
    if (auto bad = call->CheckParameters({})) return *bad;
    return RunCommand(call, "drop-table", {table}, {}, "");
  }
  return MethodNotAllowed("PUT, PATCH, DELETE");
}

HttpResponse HttpApi::TableNames(Call* call) {
  // The command and the answer's member are named as the path ends:
  // devices or measures.
  const std::string& what = call->segments()[3];
  std::vector<std::pair<std::string, std::string>> options;
  if (what == "devices") {
    if (auto bad = call->CheckParameters({"after", "limit"})) return *bad;
    for (const char* name : {"after", "limit"}) {
      if (std::optional<std::string> value = call->Parameter(name)) options.emplace_back(name, *value);
    }
  } else if (auto bad = call->CheckParameters({})) {
    return *bad;
  }
  return RunCommand(call, what, {TableSegment(call->segments())}, options, what);
}

HttpResponse HttpApi::DeviceLatest(Call* call) {
  if (auto bad = call->CheckParameters({"measure", "tag.*"})) return *bad;
  std::vector<std::string> arguments = {TableSegment(call->segments()), DeviceSegment(call->segments())};
  if (std::optional<std::string> measure = call->Parameter("measure")) arguments.push_back(*measure);
  std::vector<std::pair<std::string, std::string>> options;
  AddTagFilter(call->TagParameters(), &options);
  return RunCommand(call, "latest", std::move(arguments), options, "records");
}

HttpResponse HttpApi::RunCommand(Call* call, std::string_view command, std::vector<std::string> arguments,
                                 const std::vector<std::pair<std::string, std::string>>& options,
                                 std::string_view rows_member) {
  (void)call;
  Result<CommandInvocation> invocation = commands_->BindArguments(command, std::move(arguments), options);
  if (!invocation.ok()) return ErrorFor(invocation.status());
  metrics_->RecordQuery(command);
  CommandResult result = commands_->Run(*invocation);
  if (!result.ok()) return ErrorFor(result.error());
  return HttpResponse::Json(200, RenderJson(result, RenderOptions(), rows_member));
}

HttpResponse HttpApi::Tables(Call* call) {
  if (auto bad = call->CheckParameters({})) return *bad;
  Result<CommandInvocation> invocation = commands_->BindArguments("tables", {}, {});
  if (!invocation.ok()) return ErrorFor(invocation.status());
  metrics_->RecordQuery("tables");
  CommandResult result = commands_->Run(*invocation);
  if (!result.ok()) return ErrorFor(result.error());
  // Only the tables this token may read.
  const std::vector<std::string>& columns = result.columns();
  const size_t name_column =
      static_cast<size_t>(std::find(columns.begin(), columns.end(), "table") - columns.begin());
  std::vector<CommandResult::Row> readable;
  for (const CommandResult::Row& row : result.rows()) {
    if (name_column < row.size()) {
      if (const std::string* name = std::get_if<std::string>(&row[name_column])) {
        if (call->token()->Allows(Access::kRead, *name)) readable.push_back(row);
      }
    }
  }
  return HttpResponse::Json(
      200, RenderJson(CommandResult::Table(columns, std::move(readable)), RenderOptions(), "tables"));
}

HttpResponse HttpApi::CreateTable(Call* call, const std::string& table, bool alter) {
  const std::span<const std::string_view> accepted = alter
                                                         ? std::span<const std::string_view>(kAlterOptions)
                                                         : std::span<const std::string_view>(kCreateOptions);
  std::string accepted_list;
  for (std::string_view name : accepted)
    accepted_list += (accepted_list.empty() ? "" : ", ") + std::string(name);
  std::vector<std::pair<std::string, std::string>> options;
  for (const auto& [key, value] : call->parameters()) {
    if (http_api_internal::IsCredentialParameter(key)) continue;
    if (std::find(accepted.begin(), accepted.end(), key) == accepted.end()) {
      return HttpResponse::Error(400, "unknown query parameter '" + key + "'; accepted: " + accepted_list);
    }
    if (std::any_of(options.begin(), options.end(), [&key = key](const auto& o) { return o.first == key; })) {
      return HttpResponse::Error(400, "query parameter '" + key + "' is given more than once");
    }
    options.emplace_back(key, value);
  }
  const std::string& body = call->request().body;
  if (body.find_first_not_of(" \t\r\n") != std::string::npos) {
    Result<JsonValue> document = JsonValue::Parse(body);
    if (!document.ok())
      return HttpResponse::Error(400, "the body is not JSON: " + document.status().message());
    if (!document->is_object()) {
      return HttpResponse::Error(
          400, "the body must be a JSON object like {\"retention\":\"30d\",\"max_series\":\"50000\"}");
    }
    for (const auto& [key, value] : document->members()) {
      if (std::find(accepted.begin(), accepted.end(), key) == accepted.end()) {
        return HttpResponse::Error(400, "unknown member '" + key + "'; accepted: " + accepted_list);
      }
      std::string text;
      if (value.is_string()) {
        text = value.text();
      } else if (key == "max_series" && value.is_number()) {
        text = value.text();
      } else if (key == "attributes" && value.kind() == JsonValue::Kind::kArray) {
        for (const JsonValue& name : value.elements()) {
          if (!name.is_string()) return HttpResponse::Error(400, "member 'attributes' must list strings");
          text += (text.empty() ? "" : ",") + name.text();
        }
      } else {
        return HttpResponse::Error(400, "member '" + key + "' must be a string like \"30d\"" +
                                            (key == "max_series" ? " or a number" : ""));
      }
      if (std::any_of(options.begin(), options.end(),
                      [&key = key](const auto& option) { return option.first == key; })) {
        return HttpResponse::Error(400, "'" + key + "' is given both in the query and in the body");
      }
      options.emplace_back(key, std::move(text));
    }
  }
  for (auto& option : options) {
    if (option.first == "max_series") option.first = "max-series";
    if (option.first == "on_conflict") option.first = "on-conflict";
  }
  HttpResponse response = RunCommand(call, alter ? "alter-table" : "create-table", {table}, options, "");
  if (response.status == 200 && !alter) response.status = 201;
  return response;
}

HttpResponse HttpApi::LatestBatch(Call* call) {
  const std::string& table = TableSegment(call->segments());
  if (auto bad = call->CheckParameters({})) return *bad;
  Result<JsonValue> document = JsonValue::Parse(call->request().body);
  if (!document.ok()) return HttpResponse::Error(400, "the body is not JSON: " + document.status().message());
  const JsonValue* devices = document->is_object() ? document->Find("devices") : nullptr;
  if (devices == nullptr || devices->kind() != JsonValue::Kind::kArray || devices->elements().empty()) {
    return HttpResponse::Error(400, "the body must be {\"devices\":[\"id\",...]} with at least one device");
  }
  if (devices->elements().size() > kMaxBatchDevices) {
    return HttpResponse::Error(400, "at most " + std::to_string(kMaxBatchDevices) + " devices per request");
  }
  std::vector<std::string> arguments = {table};
  for (const JsonValue& device : devices->elements()) {
    if (!device.is_string()) return HttpResponse::Error(400, "every device must be a string");
    arguments.push_back(device.text());
  }
  std::vector<std::pair<std::string, std::string>> options;
  for (const auto& [key, value] : document->members()) {
    if (key == "devices") continue;
    if (key != "measure" || !value.is_string()) {
      return HttpResponse::Error(400,
                                 "unexpected member '" + key + "'; accepted: devices, measure (a string)");
    }
    options.emplace_back("measure", value.text());
  }
  return RunCommand(call, "latest-batch", std::move(arguments), options, "records");
}

HttpResponse HttpApi::Aggregate(Call* call) {
  const std::string& table = TableSegment(call->segments());
  const std::string& device = DeviceSegment(call->segments());
  if (auto bad = call->CheckParameters({"measure", "field", "step", "fn", "from", "to", "group_by", "tag.*"}))
    return *bad;
  std::optional<std::string> measure = call->Parameter("measure");
  std::optional<std::string> field = call->Parameter("field");
  if (!measure || !field) return HttpResponse::Error(400, "aggregate needs ?measure=M&field=F&step=D");
  std::vector<std::pair<std::string, std::string>> options;
  for (const char* name : {"step", "fn", "from", "to"}) {
    if (std::optional<std::string> value = call->Parameter(name)) options.emplace_back(name, *value);
  }
  if (std::optional<std::string> group_by = call->Parameter("group_by")) options.emplace_back("group-by", *group_by);
  AddTagFilter(call->TagParameters(), &options);
  return RunCommand(call, "agg", {table, device, *measure, *field}, options, "buckets");
}

HttpResponse HttpApi::HealthLevelOnly() {
  if (engine() == nullptr) {
    JsonWriter json;
    json.BeginObject();
    json.Key("status");
    json.String(kStorageUnavailableStatus);
    json.EndObject();
    return StorageUnavailable(503, json.text(), options_.storage_retry_after_seconds);
  }
  HealthLevel level = engine()->Health().level;
  // A damaged tokens file leaves the store serving no token: the API is
  // down for every client, which a monitor must see.
  if (level == HealthLevel::kOk && !tokens_->damage().ok()) level = HealthLevel::kDegraded;
  if (!env_->FreeSpace(options_.data_dir).ok()) level = HealthLevel::kFailing;
  JsonWriter json;
  json.BeginObject();
  json.Key("status");
  json.String(HealthLevelName(level));
  json.EndObject();
  return HttpResponse::Json(level == HealthLevel::kFailing ? 503 : 200, json.text());
}

HttpResponse HttpApi::HealthDetails(Call* call) {
  HttpResponse response = RunCommand(call, "health", {}, {}, "");
  if (response.status != 200) return response;
  if (engine() == nullptr) {
    return StorageUnavailable(503, std::move(response.body), options_.storage_retry_after_seconds);
  }
  if (engine()->Health().level == HealthLevel::kFailing) response.status = 503;
  return response;
}

HttpResponse HttpApi::Metrics(Call* call) {
  if (auto bad = call->CheckParameters({})) return *bad;
  Result<uint64_t> free = env_->FreeSpace(options_.data_dir);
  Result<uint64_t> resident = env_->ProcessResidentBytes();
  HttpResponse response;
  response.content_type = "text/plain; version=0.0.4; charset=utf-8";
  response.body = metrics_->RenderPrometheus(
      engine()->Stats(), server_stats_ ? server_stats_() : HttpServerStats(), free.ok() ? *free : 0,
      resident.ok() ? std::optional<uint64_t>(*resident) : std::nullopt);
  response.body += RenderClockMetrics(engine()->Clock());
  response.body += RenderFlashWearMetrics(engine()->FlashWear());
  if (options_.extra_metrics) response.body += options_.extra_metrics();
  return response;
}

}  // namespace cairn
