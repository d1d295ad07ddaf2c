// RequestAuthenticator: who a request of the HTTP API acts as (http_api.h).
//
// The credential is, in this order: the Authorization header (Bearer,
// Token or Basic; ExtractPresentedToken), InfluxDB 1.x's `?p=` query
// parameter, or, with a client-certificate identity configured, the
// verified client certificate of a mutual-TLS connection, whose common name
// (or one of whose DNS, email or URI alternative names) names a token: the
// request then has that token's scopes. A presented token always wins over
// the certificate, so one client machine can hold a certificate and still
// use a narrower token.
//
// Failures go through AuthThrottle: 401, or 429 with Retry-After once the
// credential (or the address) failed too often; a valid token is never
// refused. Lockouts are logged (rate-limited).
//
// Thread-safety: Authenticate may run on many threads at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "cairn/platform/env.h"
#include "cairn/http/api_metrics.h"
#include "cairn/http/auth_limiter.h"
#include "cairn/http/http_api.h"
#include "cairn/http/http_message.h"
#include "cairn/http/rate_limited_log.h"
#include "cairn/http/token_store.h"

namespace cairn {

class RequestAuthenticator {
 public:
  // Nothing is owned; everything must outlive the authenticator.
  RequestAuthenticator(Env* env, TokenStore* tokens, AuthThrottle* throttle, ApiMetrics* metrics,
                       ClientCertificateIdentity identity, RateLimitedLog* log);

  // Exactly one of the two is set.
  struct Outcome {
    std::optional<TokenInfo> token;
    std::optional<HttpResponse> refusal;
  };

  // Decides for a request whose head has arrived (the body is not looked
  // at).
  Outcome Authenticate(const HttpRequest& request);

 private:
  // A token created or revoked with `cairnd token` while cairnd runs is seen
  // within a second. A file that fails to load keeps the tokens already
  // loaded.
  void ReloadAtMostEverySecond(int64_t now_nanos);
  // The token a verified client certificate names; sets `*refusal` when
  // the certificate names none.
  std::optional<TokenInfo> FromCertificate(const PeerCertificate& certificate, std::string* refusal);
  // 401 or 429 for a failed credential.
  HttpResponse Failure(const std::string& credential_key, const std::string& address,
                       const std::string& message, int64_t now_nanos);

  Env* const env_;
  TokenStore* const tokens_;
  AuthThrottle* const throttle_;
  ApiMetrics* const metrics_;
  const ClientCertificateIdentity identity_;
  RateLimitedLog* const log_;
  // Monotonic time of the last look at the token file.
  std::atomic<int64_t> last_token_reload_nanos_{0};
};

}  // namespace cairn
