#include "cairn/http/auth_limiter.h"

#include <algorithm>
#include <utility>

#include "cairn/platform/crypto.h"
#include "cairn/util/hex.h"

namespace cairn {

namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;

AuthFailureLimiterOptions Sanitized(AuthFailureLimiterOptions options) {
  options.max_failures = std::max(options.max_failures, 1);
  options.window_nanos = std::max<int64_t>(options.window_nanos, 1);
  options.max_tracked_peers = std::max<size_t>(options.max_tracked_peers, 1);
  return options;
}

}  // namespace

AuthFailureLimiter::AuthFailureLimiter(AuthFailureLimiterOptions options) : options_(Sanitized(options)) {}

int64_t AuthFailureLimiter::BlockedUntilLocked(std::string_view peer, int64_t now_nanos) const {
  const auto found = by_address_.find(peer);
  if (found == by_address_.end()) return 0;
  const std::vector<int64_t>& times = found->second->failure_times;
  if (times.size() < static_cast<size_t>(options_.max_failures)) return 0;
  if (now_nanos - times.front() >= options_.window_nanos) return 0;
  return times.front() + options_.window_nanos;
}

bool AuthFailureLimiter::IsBlocked(std::string_view peer, int64_t now_nanos) const {
  MutexLock guard(&mutex_);
  return BlockedUntilLocked(peer, now_nanos) != 0;
}

int64_t AuthFailureLimiter::RetryAfterSeconds(std::string_view peer, int64_t now_nanos) const {
  MutexLock guard(&mutex_);
  const int64_t until = BlockedUntilLocked(peer, now_nanos);
  if (until == 0) return 0;
  const int64_t remaining = until - now_nanos;
  return std::max<int64_t>(1, (remaining + kNanosPerSecond - 1) / kNanosPerSecond);
}

void AuthFailureLimiter::ForgetExpiredLocked(int64_t now_nanos) {
  while (!peers_.empty() && now_nanos - peers_.front().failure_times.back() >= options_.window_nanos) {
    by_address_.erase(peers_.front().address);
    peers_.pop_front();
  }
}

void AuthFailureLimiter::RecordFailure(std::string_view peer, int64_t now_nanos) {
  MutexLock guard(&mutex_);
  ForgetExpiredLocked(now_nanos);
  auto found = by_address_.find(peer);
  if (found == by_address_.end()) {
    if (peers_.size() >= options_.max_tracked_peers) {
      by_address_.erase(peers_.front().address);
      peers_.pop_front();
    }
    peers_.push_back(Peer{std::string(peer), {}});
    found = by_address_.emplace(peers_.back().address, std::prev(peers_.end())).first;
  } else {
    peers_.splice(peers_.end(), peers_, found->second);
  }
  std::vector<int64_t>& times = found->second->failure_times;
  // Keeps the times ascending when threads record slightly out of order.
  if (!times.empty()) now_nanos = std::max(now_nanos, times.back());
  std::erase_if(times, [&](int64_t time) { return now_nanos - time >= options_.window_nanos; });
  if (times.size() == static_cast<size_t>(options_.max_failures)) times.erase(times.begin());
  times.push_back(now_nanos);
}

size_t AuthFailureLimiter::TrackedPeers() const {
  MutexLock guard(&mutex_);
  return peers_.size();
}

// ---- AuthThrottle -------------------------------------------------------------

AuthThrottle::AuthThrottle(AuthThrottleOptions options)
    : credentials_(options.per_credential), addresses_(options.per_address) {}

AuthThrottle::Verdict AuthThrottle::OnFailure(std::string_view credential_key, std::string_view address,
                                              int64_t now_nanos) {
  Verdict verdict;
  const bool credential_blocked = credentials_.IsBlocked(credential_key, now_nanos);
  verdict.address_blocked = addresses_.IsBlocked(address, now_nanos);
  if (!credential_blocked) {
    credentials_.RecordFailure(credential_key, now_nanos);
    verdict.credential_now_blocked = credentials_.IsBlocked(credential_key, now_nanos);
  }
  if (!verdict.address_blocked) {
    addresses_.RecordFailure(address, now_nanos);
    verdict.address_now_blocked = addresses_.IsBlocked(address, now_nanos);
  }
  // The failure that reaches a limit is still answered 401: the client
  // learns its credential is wrong before it learns it is being slowed.
  verdict.throttled = credential_blocked || verdict.address_blocked;
  if (verdict.throttled) {
    verdict.retry_after_seconds =
        std::max<int64_t>({1, credentials_.RetryAfterSeconds(credential_key, now_nanos),
                           addresses_.RetryAfterSeconds(address, now_nanos)});
  }
  return verdict;
}

bool AuthThrottle::Throttled(std::string_view credential_key, std::string_view address,
                             int64_t now_nanos) const {
  return credentials_.IsBlocked(credential_key, now_nanos) || addresses_.IsBlocked(address, now_nanos);
}

std::string AuthThrottle::CredentialKey(std::string_view presented) {
  // The layout of token_store.h: "cairn_" + 16 lowercase hex digits + "_".
  constexpr std::string_view kPrefix = "cairn_";
  constexpr size_t kIdChars = 16;
  if (presented.size() > kPrefix.size() + kIdChars && presented.substr(0, kPrefix.size()) == kPrefix &&
      presented[kPrefix.size() + kIdChars] == '_') {
    const std::string_view id = presented.substr(kPrefix.size(), kIdChars);
    if (std::all_of(id.begin(), id.end(),
                    [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }))
      return "token " + std::string(id);
  }
  const Sha256Digest digest = Sha256(presented);
  return "credential sha256:" + util::HexEncode(std::span<const uint8_t>(digest.data(), 8));
}

}  // namespace cairn
