// Time and duration arguments as typed in shell commands and HTTP query
// parameters (DESIGN §5, §7).
//
// Times are RFC 3339 (`2026-11-21T09:41:07Z`, `2026-11-21T10:41:07.25+01:00`,
// `2026-11-21` for midnight UTC), integer nanoseconds since the epoch, `now`,
// or relative to now (`-1h`, `-30m`, `+10s`). Durations are one or more
// number-unit pairs: `30d`, `12h`, `90m`, `3600s`, `1h30m`; units ns, us, ms,
// s, m, h, d, w. Thread-safe: the functions read only their arguments.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "cairn/platform/status.h"

namespace cairn {

// A time argument as nanoseconds since the epoch; relative times
// and `now` count from `now_unix_nanos`. InvalidArgument naming the accepted
// forms, or the part out of range (month 13, 1600-01-01, ...).
Result<int64_t> ParseTimeArgument(std::string_view text, int64_t now_unix_nanos);

// A duration argument in nanoseconds, >= 0. InvalidArgument for
// a malformed text or one that overflows int64 nanoseconds (about 292 years).
Result<int64_t> ParseDurationArgument(std::string_view text);

// `seconds` in the largest unit that divides it exactly: "30d", "90m",
// "3601s", "0s". Precondition: seconds >= 0.
std::string FormatDurationSeconds(int64_t seconds);

}  // namespace cairn
