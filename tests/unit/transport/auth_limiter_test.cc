#include "cairn/http/auth_limiter.h"

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace cairn {
namespace {

constexpr int64_t kSecond = 1'000'000'000;
// An arbitrary monotonic origin away from 0.
constexpr int64_t kStart = int64_t{5'000} * kSecond;

AuthFailureLimiterOptions FivePerMinute() {
  AuthFailureLimiterOptions options;
  options.max_failures = 5;
  options.window_nanos = 60 * kSecond;
  options.max_tracked_peers = 100;
  return options;
}

TEST(AuthFailureLimiterTest, UnknownPeerIsNotBlocked) {
  AuthFailureLimiter limiter(FivePerMinute());
  EXPECT_FALSE(limiter.IsBlocked("10.0.0.1", kStart));
  EXPECT_EQ(limiter.RetryAfterSeconds("10.0.0.1", kStart), 0);
  EXPECT_EQ(limiter.TrackedPeers(), 0u);
}

TEST(AuthFailureLimiterTest, BlocksAtTheFifthFailureWithinTheWindow) {
  AuthFailureLimiter limiter(FivePerMinute());
  for (int i = 0; i < 4; ++i) {
    limiter.RecordFailure("10.0.0.1", kStart + i * kSecond);
    EXPECT_FALSE(limiter.IsBlocked("10.0.0.1", kStart + i * kSecond)) << "after failure " << i + 1;
  }
  limiter.RecordFailure("10.0.0.1", kStart + 4 * kSecond);
  EXPECT_TRUE(limiter.IsBlocked("10.0.0.1", kStart + 4 * kSecond));
  // Until the first of the five is a minute old.
  EXPECT_EQ(limiter.RetryAfterSeconds("10.0.0.1", kStart + 4 * kSecond), 56);
  EXPECT_TRUE(limiter.IsBlocked("10.0.0.1", kStart + 60 * kSecond - 1));
  EXPECT_EQ(limiter.RetryAfterSeconds("10.0.0.1", kStart + 60 * kSecond - 1), 1) << "rounded up";
  EXPECT_FALSE(limiter.IsBlocked("10.0.0.1", kStart + 60 * kSecond));
  EXPECT_EQ(limiter.RetryAfterSeconds("10.0.0.1", kStart + 60 * kSecond), 0);
}

TEST(AuthFailureLimiterTest, FailuresSpreadWiderThanTheWindowNeverBlock) {
  AuthFailureLimiter limiter(FivePerMinute());
  // One failure every 15 s: any 60 s hold at most four.
  for (int i = 0; i < 40; ++i) {
    const int64_t now = kStart + i * 15 * kSecond;
    limiter.RecordFailure("10.0.0.1", now);
    EXPECT_FALSE(limiter.IsBlocked("10.0.0.1", now)) << "failure " << i + 1;
  }
}

TEST(AuthFailureLimiterTest, WindowSlides) {
  AuthFailureLimiter limiter(FivePerMinute());
  limiter.RecordFailure("p", kStart);
  for (int i = 0; i < 4; ++i) limiter.RecordFailure("p", kStart + (50 + i) * kSecond);
  // Failures at 0, 50, 51, 52, 53: blocked until 60.
  EXPECT_TRUE(limiter.IsBlocked("p", kStart + 53 * kSecond));
  EXPECT_EQ(limiter.RetryAfterSeconds("p", kStart + 53 * kSecond), 7);
  EXPECT_FALSE(limiter.IsBlocked("p", kStart + 60 * kSecond));
  // Four failures remain within the window: one more blocks again, until
  // the oldest of the latest five (at 50) is a minute old.
  limiter.RecordFailure("p", kStart + 61 * kSecond);
  EXPECT_TRUE(limiter.IsBlocked("p", kStart + 61 * kSecond));
  EXPECT_EQ(limiter.RetryAfterSeconds("p", kStart + 61 * kSecond), 49);
  EXPECT_FALSE(limiter.IsBlocked("p", kStart + 110 * kSecond));
}

TEST(AuthFailureLimiterTest, PeersAreIndependent) {
  AuthFailureLimiter limiter(FivePerMinute());
  for (int i = 0; i < 5; ++i) limiter.RecordFailure("10.0.0.1", kStart);
  limiter.RecordFailure("10.0.0.2", kStart);
  EXPECT_TRUE(limiter.IsBlocked("10.0.0.1", kStart));
  EXPECT_FALSE(limiter.IsBlocked("10.0.0.2", kStart));
  EXPECT_FALSE(limiter.IsBlocked("::1", kStart));
  EXPECT_EQ(limiter.TrackedPeers(), 2u);
}

TEST(AuthFailureLimiterTest, OnlyTheConfiguredNumberBlocks) {
  AuthFailureLimiterOptions options = FivePerMinute();
  options.max_failures = 1;
  options.window_nanos = 10 * kSecond;
  AuthFailureLimiter limiter(options);
  limiter.RecordFailure("p", kStart);
  EXPECT_TRUE(limiter.IsBlocked("p", kStart));
  EXPECT_EQ(limiter.RetryAfterSeconds("p", kStart), 10);
  EXPECT_FALSE(limiter.IsBlocked("p", kStart + 10 * kSecond));
}

TEST(AuthFailureLimiterTest, OutOfRangeOptionsAreRaisedToTheirMinimum) {
  AuthFailureLimiterOptions options;
  options.max_failures = 0;
  options.window_nanos = 0;
  options.max_tracked_peers = 0;
  AuthFailureLimiter limiter(options);
  limiter.RecordFailure("p", kStart);
  EXPECT_TRUE(limiter.IsBlocked("p", kStart)) << "one failure blocks, for 1 ns";
  EXPECT_FALSE(limiter.IsBlocked("p", kStart + 1));
  limiter.RecordFailure("q", kStart);
  EXPECT_EQ(limiter.TrackedPeers(), 1u);
}

TEST(AuthFailureLimiterTest, TimesGoingBackwardsCountAsTheLatest) {
  AuthFailureLimiter limiter(FivePerMinute());
  for (int i = 0; i < 4; ++i) limiter.RecordFailure("p", kStart + 30 * kSecond);
  limiter.RecordFailure("p", kStart);  // a thread that read the clock earlier
  EXPECT_TRUE(limiter.IsBlocked("p", kStart + 30 * kSecond));
  EXPECT_EQ(limiter.RetryAfterSeconds("p", kStart + 30 * kSecond), 60);
}

TEST(AuthFailureLimiterTest, MemoryIsBoundedByForgettingTheLeastRecentlyFailedPeer) {
  AuthFailureLimiterOptions options = FivePerMinute();
  options.max_tracked_peers = 3;
  AuthFailureLimiter limiter(options);
  for (int i = 0; i < 4; ++i) limiter.RecordFailure("old", kStart);
  for (int i = 0; i < 5; ++i) limiter.RecordFailure("attacker", kStart + kSecond);
  limiter.RecordFailure("middle", kStart + 2 * kSecond);
  EXPECT_EQ(limiter.TrackedPeers(), 3u);
  // A fourth peer displaces the one whose latest failure is oldest.
  limiter.RecordFailure("new", kStart + 3 * kSecond);
  EXPECT_EQ(limiter.TrackedPeers(), 3u);
  EXPECT_TRUE(limiter.IsBlocked("attacker", kStart + 3 * kSecond)) << "the attacker was not the oldest";
  // Had "old" been remembered, this would be its fifth failure.
  limiter.RecordFailure("old", kStart + 3 * kSecond);
  EXPECT_FALSE(limiter.IsBlocked("old", kStart + 3 * kSecond));
  EXPECT_EQ(limiter.TrackedPeers(), 3u);
}

TEST(AuthFailureLimiterTest, PeersWhoseFailuresExpiredAreForgotten) {
  AuthFailureLimiter limiter(FivePerMinute());
  for (int i = 0; i < 50; ++i) limiter.RecordFailure("10.0.0." + std::to_string(i), kStart);
  EXPECT_EQ(limiter.TrackedPeers(), 50u);
  limiter.RecordFailure("late", kStart + 60 * kSecond);
  EXPECT_EQ(limiter.TrackedPeers(), 1u);
}

TEST(AuthFailureLimiterTest, ManyPeersStayWithinTheCap) {
  AuthFailureLimiter limiter(FivePerMinute());
  for (int i = 0; i < 1000; ++i) limiter.RecordFailure("peer-" + std::to_string(i), kStart + i);
  EXPECT_EQ(limiter.TrackedPeers(), 100u);
  // The latest hundred are the ones remembered.
  for (int i = 0; i < 4; ++i) limiter.RecordFailure("peer-999", kStart + 1000);
  EXPECT_TRUE(limiter.IsBlocked("peer-999", kStart + 1000));
}

TEST(AuthFailureLimiterTest, ConcurrentCallersAllCount) {
  AuthFailureLimiterOptions options = FivePerMinute();
  options.max_failures = 400;
  AuthFailureLimiter limiter(options);
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&limiter, t] {
      for (int i = 0; i < 100; ++i) {
        limiter.RecordFailure("shared", kStart + i);
        limiter.RecordFailure("own-" + std::to_string(t), kStart + i);
        (void)limiter.IsBlocked("shared", kStart + i);
        (void)limiter.RetryAfterSeconds("shared", kStart + i);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_TRUE(limiter.IsBlocked("shared", kStart + 100)) << "all 400 failures were counted";
  EXPECT_FALSE(limiter.IsBlocked("own-0", kStart + 100));
  EXPECT_EQ(limiter.TrackedPeers(), size_t{1 + kThreads});
}

// ---- AuthThrottle -----------------------------------------------------------------

AuthThrottleOptions SmallThrottle() {
  AuthThrottleOptions options;
  options.per_credential = FivePerMinute();
  options.per_address = FivePerMinute();
  options.per_address.max_failures = 12;
  return options;
}

TEST(AuthThrottleTest, TheFailingCredentialIsSlowedNotItsAddress) {
  AuthThrottle throttle(SmallThrottle());
  const std::string revoked = AuthThrottle::CredentialKey("cairn_0123456789abcdef_" + std::string(43, 'A'));
  EXPECT_EQ(revoked, "token 0123456789abcdef");
  for (int i = 0; i < 5; ++i) {
    const AuthThrottle::Verdict verdict = throttle.OnFailure(revoked, "10.0.0.1", kStart + i * kSecond);
    EXPECT_FALSE(verdict.throttled) << "failure " << i + 1 << " is still a 401";
    EXPECT_EQ(verdict.credential_now_blocked, i == 4);
  }
  const AuthThrottle::Verdict sixth = throttle.OnFailure(revoked, "10.0.0.1", kStart + 5 * kSecond);
  EXPECT_TRUE(sixth.throttled);
  EXPECT_FALSE(sixth.address_blocked);
  EXPECT_EQ(sixth.retry_after_seconds, 55);
  EXPECT_TRUE(throttle.Throttled(revoked, "10.0.0.9", kStart + 5 * kSecond)) << "from anywhere";
  // Another credential from the same address is judged on its own.
  const std::string other = AuthThrottle::CredentialKey("guess");
  EXPECT_EQ(other.rfind("credential sha256:", 0), 0u) << other;
  EXPECT_EQ(other.size(), std::string("credential sha256:").size() + 16);
  EXPECT_FALSE(throttle.OnFailure(other, "10.0.0.1", kStart + 6 * kSecond).throttled);
  // The block ends a window after its first failure.
  EXPECT_FALSE(throttle.Throttled(revoked, "10.0.0.1", kStart + 60 * kSecond));
}

TEST(AuthThrottleTest, AnAddressFailingWithManyCredentialsIsBounded) {
  AuthThrottle throttle(SmallThrottle());
  for (int i = 0; i < 12; ++i) {
    const AuthThrottle::Verdict verdict =
        throttle.OnFailure(AuthThrottle::CredentialKey("guess-" + std::to_string(i)), "10.0.0.2", kStart + i);
    EXPECT_FALSE(verdict.throttled);
    EXPECT_EQ(verdict.address_now_blocked, i == 11);
  }
  const AuthThrottle::Verdict next =
      throttle.OnFailure(AuthThrottle::CredentialKey("guess-99"), "10.0.0.2", kStart + 20);
  EXPECT_TRUE(next.throttled);
  EXPECT_TRUE(next.address_blocked);
  EXPECT_GE(next.retry_after_seconds, 1);
  EXPECT_FALSE(throttle.Throttled(AuthThrottle::CredentialKey("guess-99"), "10.0.0.3", kStart + 20));
}

TEST(AuthThrottleTest, CredentialKeysNeverHoldTheSecret) {
  const std::string token = "cairn_3f9a0c51d2e4b687_C4jx8JuPFdrOTPJ4ibaAaRRxkyt8XeB6E6ds_WBqbac";
  EXPECT_EQ(AuthThrottle::CredentialKey(token), "token 3f9a0c51d2e4b687");
  const std::string password = "hunter2-hunter2";
  EXPECT_EQ(AuthThrottle::CredentialKey(password).find("hunter2"), std::string::npos);
  EXPECT_NE(AuthThrottle::CredentialKey("a"), AuthThrottle::CredentialKey("b"));
  EXPECT_EQ(AuthThrottle::CredentialKey("cairn_XYZ_secret").rfind("credential", 0), 0u);
}

}  // namespace
}  // namespace cairn
