// AuthFailureLimiter: slows down token guessing on the HTTP shell (DESIGN §7).
//
// Per peer (the client's address, or whatever key the caller chooses), the
// limiter remembers the times of its most recent failed authentications. A
// peer is blocked as soon as `max_failures` of them lie within the last
// `window`, and stays blocked until the oldest of those is `window` old: a
// sliding window, so a guesser gets at most `max_failures` attempts per
// `window` however it spaces them. A blocked request is refused before its
// token is even looked at (HTTP 429 with Retry-After), and nothing is
// recorded for it, so hammering a block does not extend it. A successful
// authentication clears nothing: whoever holds a good token has no need to
// guess, and a block in force stays in force.
//
// Usage per request:
//   if (limiter.IsBlocked(peer, now)) -> 429, Retry-After: RetryAfterSeconds(peer, now)
//   else authenticate; on failure limiter.RecordFailure(peer, now) -> 401
//
// Memory is bounded: at most `max_tracked_peers` peers are remembered. Peers
// whose failures have all left the window are forgotten first; when every
// remembered peer is still within its window, the one whose latest failure
// is oldest is forgotten to make room. An attacker with many addresses can
// therefore displace a block, but one with many addresses gets that many
// attempts anyway; IPv6 callers may key by /64 prefix to close that gap.
//
// Times are monotonic nanoseconds supplied by the caller (Env::MonotonicNanos),
// so that tests decide what "now" is. They are expected not to go backwards;
// a time earlier than one already recorded for the peer counts as that later
// time.
//
// Thread-safety: every method may be called from any thread concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace cairn {

struct AuthFailureLimiterOptions {
  // Failures within `window_nanos` that block a peer. At least 1.
  int max_failures = 5;
  // Length of the sliding window, which is also the longest a block lasts
  // after the failure that caused it. Positive.
  int64_t window_nanos = int64_t{60} * 1'000'000'000;
  // Peers remembered at once. At least 1. About 150 bytes each (address,
  // max_failures times, list and map nodes), so the default costs under 1 MB.
  size_t max_tracked_peers = 4096;
};

class AuthFailureLimiter {
 public:
  // Out-of-range options are raised to their minimum.
  explicit AuthFailureLimiter(AuthFailureLimiterOptions options = {});

  AuthFailureLimiter(const AuthFailureLimiter&) = delete;
  AuthFailureLimiter& operator=(const AuthFailureLimiter&) = delete;

  // True when `peer` must be refused at `now_nanos`.
  bool IsBlocked(std::string_view peer, int64_t now_nanos) const;

  // Counts a failed authentication of `peer` at `now_nanos`.
  void RecordFailure(std::string_view peer, int64_t now_nanos);

  // Whole seconds until `peer` is no longer blocked, rounded up (at least 1
  // while blocked); 0 when it is not blocked. For the Retry-After header.
  int64_t RetryAfterSeconds(std::string_view peer, int64_t now_nanos) const;

  // How many peers are remembered now (for metrics and tests).
  size_t TrackedPeers() const;

 private:
  struct Peer {
    std::string address;
    // The latest failures, oldest first, at most max_failures of them.
    std::vector<int64_t> failure_times;
  };
  using PeerList = std::list<Peer>;

  // When the peer's block ends; 0 when it is not blocked at `now_nanos`.
  // Precondition: mutex_ held.
  int64_t BlockedUntilLocked(std::string_view peer, int64_t now_nanos) const;
  // Forgets peers at the front whose latest failure has left the window.
  // Precondition: mutex_ held.
  void ForgetExpiredLocked(int64_t now_nanos);

  const AuthFailureLimiterOptions options_;
  mutable std::mutex mutex_;
  // Least recently failed first.
  PeerList peers_;
  // Keys view the address strings inside peers_' nodes, which never move.
  std::unordered_map<std::string_view, PeerList::iterator> by_address_;
};

}  // namespace cairn
