// Slowing down failed authentication on the HTTP shell (DESIGN §7).
//
// AuthFailureLimiter counts failures per key in a sliding window.
// AuthThrottle combines two of them into the policy HttpApi applies:
//
//   - A valid token is never refused. Tokens carry 256 random bits, so
//     guessing one is not the threat a limiter must stop; refusing a
//     correct client because another client (or a revoked token retried by
//     a forgotten script) failed from the same address is. Authentication
//     therefore always runs first, and only its failures are throttled.
//   - The failing credential itself is slowed: after `max_failures`
//     failures of one credential within the window it is answered 429 with
//     Retry-After instead of 401. A credential is keyed by the token id
//     when it looks like a cairn token (the public half: guesses at one
//     id's secret share one budget), otherwise by a prefix of its SHA-256.
//   - The work one address can cause is bounded too: past a larger budget
//     of failures from one address, its failing requests are answered 429
//     and their connection is closed, so a client cycling through many
//     wrong credentials has to open a new connection (under the server's
//     per-address connection limit) for every attempt. Its valid tokens
//     still pass.
//
// AuthFailureLimiter: per key (an address, a credential, whatever the
// caller chooses; "peer" below), the limiter remembers the times of its most
// recent failed authentications. A peer is blocked as soon as
// `max_failures` of them lie within the last `window`, and stays blocked
// until the oldest of those is `window` old: a sliding window, so a peer
// gets at most `max_failures` failures per `window` however it spaces them.
// Nothing is recorded while a peer is blocked, so hammering a block does not
// extend it. A success clears nothing.
//
// Memory is bounded: at most `max_tracked_peers` peers are remembered. Peers
// whose failures have all left the window are forgotten first; when every
// remembered peer is still within its window, the one whose latest failure
// is oldest is forgotten to make room. An attacker with many keys can
// therefore displace a block, but one with many keys gets that many
// attempts anyway.
//
// Times are monotonic nanoseconds supplied by the caller (Env::MonotonicNanos),
// so that tests decide what "now" is. They are expected not to go backwards;
// a time earlier than one already recorded for the peer counts as that later
// time.
//
// Thread-safety: every method of both classes may be called from any thread
// concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cairn/platform/mutex.h"

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
  int64_t BlockedUntilLocked(std::string_view peer, int64_t now_nanos) const REQUIRES(mutex_);
  // Forgets peers at the front whose latest failure has left the window.
  void ForgetExpiredLocked(int64_t now_nanos) REQUIRES(mutex_);

  const AuthFailureLimiterOptions options_;
  mutable Mutex mutex_;
  // Least recently failed first.
  PeerList peers_ GUARDED_BY(mutex_);
  // Keys view the address strings inside peers_' nodes, which never move.
  std::unordered_map<std::string_view, PeerList::iterator> by_address_ GUARDED_BY(mutex_);
};

struct AuthThrottleOptions {
  // One credential: 5 failures a minute, then 429 for that credential.
  AuthFailureLimiterOptions per_credential = {5, int64_t{60} * 1'000'000'000, 4096};
  // One address: 60 failures a minute (several stale clients behind one
  // address stay within it), then its failing requests are answered 429 and
  // their connections closed.
  AuthFailureLimiterOptions per_address = {60, int64_t{60} * 1'000'000'000, 4096};
};

// The failed-authentication policy of the top of this file.
class AuthThrottle {
 public:
  explicit AuthThrottle(AuthThrottleOptions options = {});

  AuthThrottle(const AuthThrottle&) = delete;
  AuthThrottle& operator=(const AuthThrottle&) = delete;

  // What to answer a request whose authentication failed.
  struct Verdict {
    // 429 with Retry-After (and, when `address_blocked`, close the
    // connection) rather than 401.
    bool throttled = false;
    bool address_blocked = false;
    // For Retry-After: whole seconds until the blocks in force end (>= 1
    // when throttled).
    int64_t retry_after_seconds = 0;
    // This failure made the credential (or the address) reach its limit:
    // worth one log line.
    bool credential_now_blocked = false;
    bool address_now_blocked = false;
  };

  // Counts a failed authentication of `credential_key` (CredentialKey) from
  // `address` at `now_nanos`, unless either is blocked already, and says
  // how to answer it.
  Verdict OnFailure(std::string_view credential_key, std::string_view address, int64_t now_nanos);

  // Whether a failure of `credential_key` from `address` would be answered
  // 429 now (nothing is recorded): a throttled credential is not worth a
  // fresh look at the tokens file.
  bool Throttled(std::string_view credential_key, std::string_view address, int64_t now_nanos) const;

  // The key a presented credential is throttled under: "token <id>" for
  // text shaped like a cairn token (cairn_<16 hex>_...), otherwise
  // "credential sha256:<16 hex digits of its SHA-256>". Never contains a
  // secret, so it may be logged.
  static std::string CredentialKey(std::string_view presented);

  // How many credentials and addresses are remembered (for tests).
  size_t TrackedCredentials() const { return credentials_.TrackedPeers(); }
  size_t TrackedAddresses() const { return addresses_.TrackedPeers(); }

 private:
  AuthFailureLimiter credentials_;
  AuthFailureLimiter addresses_;
};

}  // namespace cairn
