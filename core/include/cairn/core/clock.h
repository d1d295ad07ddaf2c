// Clock trust: when the engine believes the gateway's wall clock, and what it
// does with readings and deletions while it does not.
//
// A gateway without an RTC boots at 1970 or at a time saved before it went
// down, and its clock is right only once a time daemon has set it. The engine
// therefore:
//   - stamps the readings it must stamp itself (Record::receiver_time) only
//     with a trusted clock; while the clock is untrusted it keeps them in a
//     durable hold (clock_format.md beside the engine) with the boot id and
//     the monotonic time of their arrival, and stamps them exactly once trust
//     arrives in the same boot (wall = monotonic + the offset trusted then);
//     readings of an earlier boot that never saw trust get the best estimate
//     (the last trusted time plus their monotonic time) and the bool field
//     kClockEstimatedField = true;
//   - refuses client timestamps far ahead of a trusted clock or before a
//     configured horizon, and accepts any other client timestamp while the
//     clock is untrusted (the client may know the time better);
//   - deletes nothing by time (retention, ttl) on an untrusted clock, and
//     never lets the clock it deletes by run ahead of the monotonic clock
//     unless the kernel says the wall clock is synchronised.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "cairn/platform/status.h"

namespace cairn {

// When the engine trusts the wall clock. Trust, once gained, lasts until the
// process stops: the monotonic clock carries it (a synchronised clock that
// loses its time source drifts by seconds a day, not years).
enum class ClockTrustPolicy : uint8_t {
  // Trusted when the kernel says the clock is synchronised (Env::
  // WallClockSynchronized), or when the clock is plausible: not before
  // ClockOptions::floor_unix_seconds and not behind the last trusted time
  // this data directory saw. The default: it catches the 1970 boot and a
  // clock set back behind what the gateway knew, needs no time daemon on a
  // gateway with an RTC, and does not hold readings forever in containers
  // or on systems whose time daemon never reports to the kernel. Its limit:
  // a clock restored from a saved time (fake-hwclock) is plausible; use kNtp
  // there.
  kAuto = 0,
  // Trusted only when the kernel says the clock is synchronised: for
  // gateways without RTC that run a time daemon.
  kNtp = 1,
  // Always trusted: the operator vouches for the clock (a reliable RTC, no
  // network). Deletions still never run ahead of the monotonic clock.
  kAlways = 2,
};

std::string_view ClockTrustPolicyName(ClockTrustPolicy policy);  // "auto", "ntp", "always"
Result<ClockTrustPolicy> ParseClockTrustPolicy(std::string_view name);

// The bool field the engine adds to a reading whose time is an estimate (it
// arrived without a timestamp in a boot whose clock never became trusted).
inline constexpr std::string_view kClockEstimatedField = "clock_estimated";

struct ClockOptions {
  ClockTrustPolicy policy = ClockTrustPolicy::kAuto;
  // kAuto never trusts a clock before this instant (2024-01-01T00:00:00Z):
  // no gateway running this release lives earlier.
  int64_t floor_unix_seconds = 1'704'067'200;
  // While the clock is trusted, client timestamps further ahead of it are
  // refused (a sensor with a wild clock would otherwise create period files
  // that retention never reaches).
  int64_t future_tolerance_seconds = 86'400;
  // Client timestamps before this instant (Unix seconds) are refused
  // whatever the clock; 0: no horizon (retention alone bounds the past).
  int64_t horizon_unix_seconds = 0;
  // At most this many readings wait in the hold for a trusted clock; past
  // it, readings without a timestamp are refused (with the reason) until
  // the clock is trusted. Each costs its encoded size on disk and in memory.
  uint64_t max_held_readings = 100'000;
  // The last trusted time is saved to the data directory at most this often
  // (and when trust arrives, and at close): a write per hour, not per reading.
  int64_t save_interval_seconds = 3600;
};

// Validates the options (InvalidArgument naming the bad one).
Status ValidateClockOptions(const ClockOptions& options);

// What the engine knows of the clock now and what it did because of it.
struct ClockStatus {
  ClockTrustPolicy policy = ClockTrustPolicy::kAuto;
  bool trusted = false;
  // Why the clock is (not) trusted, for a person.
  std::string reason;
  // The kernel's answer at the last look (Env::WallClockSynchronized).
  bool kernel_synchronized = false;
  // The latest wall time known to be right (saved in the data directory;
  // 0 when never). A clock behind it is known to be wrong.
  int64_t last_trusted_unix_nanos = 0;
  // Deletions by time (retention, ttl) wait while this is false.
  bool deletions_allowed = false;
  // Readings now waiting in the hold for a trusted clock.
  uint64_t held_readings = 0;
  // Since Open: readings held; stamped exactly once trust came in their
  // boot; stamped with an estimate (earlier boot, kClockEstimatedField);
  // refused when their stamp was applied (e.g. older than retention by then).
  uint64_t readings_held = 0, readings_restamped = 0, readings_estimated = 0, restamps_refused = 0;
  // Since Open: client timestamps refused for being too far ahead of the
  // trusted clock or before the horizon.
  uint64_t timestamps_refused = 0;
  // The last failure of the hold or of saving the trusted time; empty when
  // the last attempt worked.
  std::string last_error;
};

}  // namespace cairn
