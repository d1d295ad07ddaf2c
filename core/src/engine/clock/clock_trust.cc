#include "engine/clock/clock_trust.h"

#include <algorithm>
#include <charconv>

namespace cairn {

namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;
constexpr std::string_view kClockFileHeader = "cairn-clock 1\n";
constexpr std::string_view kLastTrustedKey = "last_trusted_unix_nanos ";

std::string Seconds(int64_t unix_nanos) { return std::to_string(unix_nanos / kNanosPerSecond); }

}  // namespace

std::string_view ClockTrustPolicyName(ClockTrustPolicy policy) {
  switch (policy) {
    case ClockTrustPolicy::kAuto:
      return "auto";
    case ClockTrustPolicy::kNtp:
      return "ntp";
    case ClockTrustPolicy::kAlways:
      return "always";
  }
  return "unknown";
}

Result<ClockTrustPolicy> ParseClockTrustPolicy(std::string_view name) {
  for (auto policy : {ClockTrustPolicy::kAuto, ClockTrustPolicy::kNtp, ClockTrustPolicy::kAlways}) {
    if (ClockTrustPolicyName(policy) == name) return policy;
  }
  return Status::InvalidArgument("unknown clock trust policy '" + std::string(name) + "' (auto, ntp, always)");
}

Status ValidateClockOptions(const ClockOptions& options) {
  if (options.future_tolerance_seconds < 1)
    return Status::InvalidArgument("the clock's future tolerance must be at least 1 s");
  if (options.horizon_unix_seconds < 0) return Status::InvalidArgument("the clock's horizon is negative");
  if (options.save_interval_seconds < 1)
    return Status::InvalidArgument("the clock's save interval must be at least 1 s");
  if (options.floor_unix_seconds < 0) return Status::InvalidArgument("the clock's floor is negative");
  return Status::Ok();
}

ClockTrust::ClockTrust(Env* env, std::string data_dir, const ClockOptions& options)
    : env_(env), data_dir_(std::move(data_dir)), options_(options) {}

std::string ClockTrust::Path() const { return JoinPath(data_dir_, "CLOCK"); }

Status ClockTrust::Open() {
  Result<std::string> text = env_->ReadFileToString(Path());
  MutexLock lock(&mutex_);
  if (text.ok()) {
    // A damaged file is not fatal: the saved time only ever makes kAuto
    // refuse a clock behind it, so losing it errs towards trusting.
    const size_t at = text->find(kLastTrustedKey);
    int64_t value = 0;
    const char* begin = at == std::string::npos ? nullptr : text->data() + at + kLastTrustedKey.size();
    if (!text->starts_with(kClockFileHeader) || begin == nullptr ||
        std::from_chars(begin, text->data() + text->size(), value).ec != std::errc() || value < 0) {
      last_error_ = Path() + " is damaged; the last trusted time is unknown until the clock is trusted again";
    } else {
      last_trusted_ns_ = value;
    }
  } else if (!text.status().Is(StatusCode::kNotFound)) {
    last_error_ = text.status().message();
  }
  last_trusted_at_open_ = last_trusted_ns_;
  kernel_synchronized_ = env_->WallClockSynchronized();
  const int64_t wall = env_->NowUnixNanos();
  if (Evaluate(wall, kernel_synchronized_)) {
    trusted_offset_ns_ = wall - env_->MonotonicNanos();
    trusted_since_ns_ = wall;
    // Without the kernel's word, the time the process was down is unknown:
    // deletions resume from the deletion clock saved at the last stop, so a
    // clock stepped ahead while cairn was down deletes nothing early either.
    // The cost: without NTP, retention lags by the downtime (safe).
    anchor_wall_ = kernel_synchronized_ || last_trusted_ns_ == 0 ? wall : std::min(wall, last_trusted_ns_);
    anchor_monotonic_ = env_->MonotonicNanos();
    trusted_ = true;
  }
  return Status::Ok();
}

bool ClockTrust::Evaluate(int64_t wall, bool synchronized) {
  if (options_.policy == ClockTrustPolicy::kAlways) {
    reason_ = "trusted by policy (clock trust=always)";
    return true;
  }
  if (synchronized) {
    reason_ = "the kernel reports the clock synchronised";
    return true;
  }
  if (options_.policy == ClockTrustPolicy::kNtp) {
    reason_ = "the kernel does not report the clock synchronised (clock trust=ntp waits for a time daemon)";
    return false;
  }
  const int64_t floor = options_.floor_unix_seconds * kNanosPerSecond;
  if (wall < floor) {
    reason_ = "the clock reads " + Seconds(wall) + " s since the epoch, before the plausible floor of " +
              std::to_string(options_.floor_unix_seconds) + " s (no RTC and no time source yet)";
    return false;
  }
  if (wall < last_trusted_ns_) {
    reason_ = "the clock reads " + Seconds(wall) + " s since the epoch, behind the last trusted time " +
              Seconds(last_trusted_ns_) + " s (set back, or restored from an old saved time)";
    return false;
  }
  reason_ = "the clock is plausible (past the floor and the last trusted time; clock trust=auto)";
  return true;
}

bool ClockTrust::Poll() {
  MutexLock lock(&mutex_);
  kernel_synchronized_ = env_->WallClockSynchronized();
  if (trusted_) {
    if (kernel_synchronized_) {
      // The kernel vouches for the wall clock now: deletions follow it.
      anchor_wall_ = env_->NowUnixNanos();
      anchor_monotonic_ = env_->MonotonicNanos();
    }
    return false;
  }
  // Monotonic first, then wall: the offset errs by the few nanoseconds
  // between the two reads, never by a clock step (trust is decided on the
  // wall value read here).
  const int64_t monotonic = env_->MonotonicNanos();
  const int64_t wall = env_->NowUnixNanos();
  if (!Evaluate(wall, kernel_synchronized_)) return false;
  trusted_offset_ns_ = wall - monotonic;
  trusted_since_ns_ = wall;
  anchor_wall_ = wall;
  anchor_monotonic_ = monotonic;
  trusted_ = true;
  return true;
}

bool ClockTrust::Trusted() {
  if (trusted_) return true;
  Poll();
  return trusted_;
}

std::optional<int64_t> ClockTrust::DeletionNow() {
  if (!trusted_) return std::nullopt;
  const bool synchronized = env_->WallClockSynchronized();
  const int64_t monotonic = env_->MonotonicNanos();
  const int64_t wall = env_->NowUnixNanos();
  MutexLock lock(&mutex_);
  kernel_synchronized_ = synchronized;
  sync_checked_monotonic_ = monotonic;
  if (synchronized) {
    anchor_wall_ = wall;
    anchor_monotonic_ = monotonic;
    return wall;
  }
  return std::min(wall, anchor_wall_ + (monotonic - anchor_monotonic_));
}

int64_t ClockTrust::ExpiryNow() {
  if (!trusted_) return 0;
  const int64_t monotonic = env_->MonotonicNanos();
  {
    MutexLock lock(&mutex_);
    if (sync_checked_monotonic_ != 0 && monotonic - sync_checked_monotonic_ < kExpirySyncRecheckNanos) {
      // The cap holds even while the kernel was last seen synchronised: a
      // wall clock stepped since then reaches queries by a second at most.
      const int64_t cap = anchor_wall_ + (monotonic - anchor_monotonic_);
      const int64_t wall = env_->NowUnixNanos();
      return std::min(wall, kernel_synchronized_ ? cap + kExpirySyncRecheckNanos : cap);
    }
  }
  return DeletionNow().value_or(0);
}

std::string ClockTrust::CheckClientTimestamp(int64_t timestamp, int64_t now) {
  if (options_.horizon_unix_seconds > 0 && timestamp < options_.horizon_unix_seconds * kNanosPerSecond) {
    ++timestamps_refused_;
    return "timestamp " + std::to_string(timestamp) + " is before the clock horizon (" +
           std::to_string(options_.horizon_unix_seconds) + " s since the epoch)";
  }
  // While untrusted the gateway's clock is no yardstick: the client may
  // know the time better than a gateway that booted at 1970.
  if (!trusted_) return "";
  const int64_t tolerance = options_.future_tolerance_seconds * kNanosPerSecond;
  if (timestamp > now && timestamp - now > tolerance) {
    ++timestamps_refused_;
    return "timestamp " + std::to_string(timestamp) + " is more than " +
           std::to_string(options_.future_tolerance_seconds) + " s ahead of the gateway's trusted clock (" +
           std::to_string(now) + ")";
  }
  return "";
}

Status ClockTrust::SaveIfDue(bool force) {
  if (!trusted_) return Status::Ok();
  const int64_t monotonic = env_->MonotonicNanos();
  const std::optional<int64_t> now = DeletionNow();
  if (!now) return Status::Ok();
  MutexLock lock(&mutex_);
  const bool due = last_saved_monotonic_ == 0 ||
                   monotonic - last_saved_monotonic_ >= options_.save_interval_seconds * kNanosPerSecond;
  if (!force && !due) return Status::Ok();
  // The saved time never goes back: it is a lower bound of the true time.
  const int64_t value = std::max(last_trusted_ns_, *now);
  if (value == last_trusted_ns_ && last_saved_monotonic_ != 0) return Status::Ok();
  std::string text(kClockFileHeader);
  text += kLastTrustedKey;
  text += std::to_string(value) + "\n";
  Status saved = env_->WriteFileAtomically(Path(), text);
  if (!saved.ok()) {
    last_error_ = saved.message();
    return saved;
  }
  last_trusted_ns_ = value;
  last_saved_monotonic_ = monotonic;
  last_error_.clear();
  return Status::Ok();
}

ClockStatus ClockTrust::Snapshot() {
  ClockStatus s;
  s.policy = options_.policy;
  s.trusted = trusted_;
  MutexLock lock(&mutex_);
  s.reason = reason_;
  s.kernel_synchronized = kernel_synchronized_;
  s.last_trusted_unix_nanos = last_trusted_ns_;
  s.deletions_allowed = trusted_;
  s.timestamps_refused = timestamps_refused_;
  s.last_error = last_error_;
  return s;
}

}  // namespace cairn
