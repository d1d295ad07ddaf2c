// ClockTrust: decides when the wall clock is trusted (cairn/core/clock.h),
// remembers the last trusted time in <data_dir>/CLOCK (clock_format.md), and
// gives the engine the clocks it may stamp, check and delete by.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "cairn/core/clock.h"
#include "cairn/platform/env.h"
#include "cairn/platform/mutex.h"

namespace cairn {

class ClockTrust {
 public:
  // `env` must outlive this object. Nothing is read before Open.
  ClockTrust(Env* env, std::string data_dir, const ClockOptions& options);

  // Reads the saved last trusted time (a missing file is a first start; a
  // damaged one is ignored and reported in last_error: it only ever makes
  // kAuto trust a clock sooner) and takes a first look at the clock.
  Status Open();

  // Looks at the clock again when it is not trusted yet. Returns true when
  // this call made it trusted (the caller then stamps what waits for it).
  bool Poll();

  // Whether readings may be stamped now. Polls while untrusted.
  bool Trusted();

  // wall - monotonic, fixed at the moment trust arrived in this process:
  // a reading that arrived at monotonic m happened at m + offset. Only
  // meaningful once Trusted().
  int64_t TrustedOffsetNanos() const { return trusted_offset_ns_.load(); }

  // The wall time at which trust arrived: a receiver stamp older than it was
  // taken from a clock not yet trusted.
  int64_t TrustedSinceUnixNanos() const { return trusted_since_ns_.load(); }

  // The last trusted time saved before this process started (0: none); the
  // estimate for readings of a boot that never saw trust starts from it.
  int64_t LastTrustedAtOpen() const { return last_trusted_at_open_; }

  // The clock deletions by time (retention, ttl) may use, or nullopt while
  // they must wait: the clock is untrusted. When the kernel says the clock
  // is synchronised this is the wall clock; otherwise it is the wall clock
  // capped by the last synchronised (or first trusted) reading plus the
  // monotonic time since, so that a step forward of the wall clock never
  // deletes early; a step backwards deletes later, which is safe.
  std::optional<int64_t> DeletionNow();

  // The clock expiry is judged by in queries: DeletionNow, or 0 (nothing
  // has expired) while deletions wait. The kernel's synchronisation state
  // it uses may be up to kExpirySyncRecheckNanos old: asking the kernel
  // is a system call, which cost a latest-reading query half its time, and
  // a query that sees a reading expire a second late or early harms
  // nothing; a wall clock stepped since the kernel was asked moves it by a
  // second at most. Deletions (DeletionNow) always ask.
  int64_t ExpiryNow();
  static constexpr int64_t kExpirySyncRecheckNanos = 1'000'000'000;

  // Why a client timestamp is refused, or empty when it is accepted: before
  // the horizon (always), more than future_tolerance ahead of `now` (only
  // while trusted). Counts refusals.
  std::string CheckClientTimestamp(int64_t timestamp, int64_t now);

  // Saves the last trusted time when trusted and the save interval has
  // passed (or `force`). Atomic file replacement; errors are kept in
  // last_error and returned.
  Status SaveIfDue(bool force);

  // The status fields this component owns (held counts are the engine's).
  ClockStatus Snapshot();

 private:
  // Decides trust from the policy; sets reason_.
  bool Evaluate(int64_t wall, bool synchronized) REQUIRES(mutex_);
  std::string Path() const;

  Env* const env_;
  const std::string data_dir_;
  const ClockOptions options_;

  mutable Mutex mutex_;
  std::atomic<bool> trusted_{false};
  std::atomic<int64_t> trusted_offset_ns_{0};
  std::atomic<int64_t> trusted_since_ns_{0};
  int64_t last_trusted_at_open_ = 0;  // written by Open, before other threads look
  int64_t last_trusted_ns_ GUARDED_BY(mutex_) = 0;
  int64_t last_saved_monotonic_ GUARDED_BY(mutex_) = 0;  // 0: never saved in this process
  // The deletion clock's cap.
  int64_t anchor_wall_ GUARDED_BY(mutex_) = 0;
  int64_t anchor_monotonic_ GUARDED_BY(mutex_) = 0;
  bool kernel_synchronized_ GUARDED_BY(mutex_) = false;
  int64_t sync_checked_monotonic_ GUARDED_BY(mutex_) = 0;  // 0: not yet
  std::string reason_ GUARDED_BY(mutex_) = "not looked at yet";
  std::string last_error_ GUARDED_BY(mutex_);
  std::atomic<uint64_t> timestamps_refused_{0};
};

}  // namespace cairn
