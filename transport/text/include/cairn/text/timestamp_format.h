// Text forms of cairn timestamps (nanoseconds since the Unix epoch, UTC) for
// people: shell output, JSON results, log lines.
//
// Every int64 value is accepted, including ones before 1970 and the extremes
// (1677-09-21 ... 2262-04-11); the calendar is proleptic Gregorian and the
// arithmetic is pure, so results do not depend on the host's time zone or on
// the width of time_t (32-bit armhf).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

namespace cairn {

// RFC 3339 in UTC with as many groups of three fraction digits as the value
// needs: "2024-05-01T12:00:00Z", "2024-05-01T12:00:00.250Z",
// "1969-12-31T23:59:59.999999999Z".
std::string FormatTimestampUtc(int64_t unix_nanos);

// RFC 3339 in UTC with exactly millisecond precision (truncated toward the
// past), a fixed width that lines up in logs: "2024-05-01T12:00:00.000Z".
std::string FormatTimestampUtcMillis(int64_t unix_nanos);

}  // namespace cairn
