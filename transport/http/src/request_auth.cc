#include "request_auth.h"

#include <vector>

namespace cairn {

namespace {

constexpr int64_t kTokenReloadIntervalNanos = 1'000'000'000;

HttpResponse Unauthorized(const std::string& message, bool invalid_token) {
  HttpResponse response = HttpResponse::Error(401, message);
  response.headers.emplace_back("WWW-Authenticate", invalid_token
                                                        ? "Bearer realm=\"cairn\", error=\"invalid_token\""
                                                        : "Bearer realm=\"cairn\"");
  return response;
}

}  // namespace

RequestAuthenticator::RequestAuthenticator(Env* env, TokenStore* tokens, AuthThrottle* throttle,
                                           ApiMetrics* metrics, ClientCertificateIdentity identity,
                                           RateLimitedLog* log)
    : env_(env), tokens_(tokens), throttle_(throttle), metrics_(metrics), identity_(identity), log_(log) {}

void RequestAuthenticator::ReloadAtMostEverySecond(int64_t now_nanos) {
  int64_t previous = last_token_reload_nanos_.load(std::memory_order_relaxed);
  if (now_nanos - previous >= kTokenReloadIntervalNanos &&
      last_token_reload_nanos_.compare_exchange_strong(previous, now_nanos, std::memory_order_relaxed)) {
    static_cast<void>(tokens_->ReloadIfChanged());
  }
}

RequestAuthenticator::Outcome RequestAuthenticator::Authenticate(const HttpRequest& request) {
  const int64_t now = env_->MonotonicNanos();
  ReloadAtMostEverySecond(now);
  std::optional<std::string> presented;
  if (const std::string* authorization = request.Header("authorization")) {
    Result<std::string> extracted = ExtractPresentedToken(*authorization);
    if (!extracted.ok()) {
      return {std::nullopt, Failure(AuthThrottle::CredentialKey(*authorization), request.peer_address,
                                    extracted.status().message(), now)};
    }
    presented = std::move(*extracted);
  } else if (Result<std::vector<std::pair<std::string, std::string>>> parameters =
                 ParseQueryString(request.query);
             parameters.ok()) {
    for (auto& [name, value] : *parameters) {
      if (name == "p") {
        presented = std::move(value);
        break;
      }
    }
  }
  if (!presented) {
    if (identity_ != ClientCertificateIdentity::kOff && request.client_certificate) {
      std::string refusal;
      std::optional<TokenInfo> token = FromCertificate(*request.client_certificate, &refusal);
      if (token) return {std::move(token), std::nullopt};
      metrics_->RecordAuthFailure();
      log_->Log("certificate",
                "http: refused a client certificate from " + request.peer_address + ": " + refusal);
      return {std::nullopt, Unauthorized(refusal, false)};
    }
    return {std::nullopt,
            Unauthorized("this endpoint needs a token: send 'Authorization: Bearer <token>' (create one with "
                         "`cairnd token create`)",
                         false)};
  }
  Result<TokenInfo> token = tokens_->Authenticate(*presented);
  if (token.ok()) return {std::move(token).value(), std::nullopt};
  const std::string key = AuthThrottle::CredentialKey(*presented);
  // A token made with `cairnd token create` a moment ago works at once;
  // a credential already being slowed down is not worth reading the file.
  if (!throttle_->Throttled(key, request.peer_address, now) && tokens_->ReloadIfChanged().ok()) {
    token = tokens_->Authenticate(*presented);
    if (token.ok()) return {std::move(token).value(), std::nullopt};
  }
  std::string message = "invalid token";
  if (!tokens_->damage().ok()) {
    message +=
        " (cairnd's tokens file is damaged: no token works until an operator repairs it; cairnd's log "
        "says how)";
  }
  return {std::nullopt, Failure(key, request.peer_address, message, now)};
}

std::optional<TokenInfo> RequestAuthenticator::FromCertificate(const PeerCertificate& certificate,
                                                               std::string* refusal) {
  std::vector<std::string> names;
  if (identity_ == ClientCertificateIdentity::kCommonName) {
    if (!certificate.common_name.empty()) names.push_back(certificate.common_name);
  } else {
    names = certificate.alternative_names;
  }
  for (const std::string& name : names) {
    if (std::optional<TokenInfo> token = tokens_->FindByName(name)) return token;
  }
  const std::string what =
      identity_ == ClientCertificateIdentity::kCommonName ? "common name" : "alternative names";
  std::string listed;
  for (const std::string& name : names) listed += (listed.empty() ? "'" : ", '") + name + "'";
  *refusal =
      "the client certificate's " + what + " (" + (listed.empty() ? std::string("none") : listed) +
      ") name no token; an operator grants it scopes with `cairnd token create --name NAME --scope SCOPE`, "
      "or send 'Authorization: Bearer <token>'";
  return std::nullopt;
}

HttpResponse RequestAuthenticator::Failure(const std::string& credential_key, const std::string& address,
                                           const std::string& message, int64_t now_nanos) {
  metrics_->RecordAuthFailure();
  const AuthThrottle::Verdict verdict = throttle_->OnFailure(credential_key, address, now_nanos);
  if (verdict.credential_now_blocked) {
    log_->Log("auth", "http: " + credential_key + " failed authentication too often (last from " + address +
                          "); it is answered 429 for a while. Valid tokens from that address still pass");
  }
  if (verdict.address_now_blocked) {
    log_->Log("auth", "http: too many failed authentications from " + address +
                          "; its failing requests are answered 429 and their connections closed for a while");
  }
  if (!verdict.throttled) return Unauthorized(message, true);
  metrics_->RecordRateLimited();
  HttpResponse response =
      HttpResponse::Error(429, message + "; this credential failed too often: retry after " +
                                   std::to_string(verdict.retry_after_seconds) + " s, with a valid token");
  response.headers.emplace_back("Retry-After", std::to_string(verdict.retry_after_seconds));
  response.close_connection = verdict.address_blocked;
  return response;
}

}  // namespace cairn
