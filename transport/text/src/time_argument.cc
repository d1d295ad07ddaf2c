// Time and duration arguments of the shell and the HTTP API
// (time_argument.h). Pure text: no clock is read here.
#include "cairn/text/time_argument.h"

#include <algorithm>
#include <charconv>
#include <string>
#include <string_view>
#include <system_error>

namespace cairn {

namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;
constexpr int64_t kSecondsPerDay = 86400;

constexpr const char* kTimeForms =
    "expected RFC 3339 like 2026-11-21T09:41:07Z, nanoseconds since the epoch, now, or a time relative to "
    "now like -1h";
constexpr const char* kDurationForms =
    "expected numbers with units like 30d, 12h, 90m, 3600s or 1h30m (units ns, us, ms, s, m, h, d, w)";

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// ---- times and durations ------------------------------------------------------

// Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar.
int64_t DaysFromCivil(int64_t year, int month, int day) {
  year -= month <= 2 ? 1 : 0;
  const int64_t era = (year >= 0 ? year : year - 399) / 400;
  const int64_t year_of_era = year - era * 400;
  const int64_t day_of_year = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  return era * 146097 + day_of_era - 719468;
}

int DaysInMonth(int64_t year, int month) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return month == 2 && leap ? 29 : kDays[month - 1];
}

Status BadTime(std::string_view text, const std::string& why) {
  return Status::InvalidArgument("bad time '" + std::string(text) + "': " + why);
}

// Reads `count` digits at `*pos` into `*value`.
bool ReadDigits(std::string_view text, size_t* pos, size_t count, int* value) {
  if (*pos + count > text.size()) return false;
  int result = 0;
  for (size_t i = 0; i < count; ++i) {
    const char c = text[*pos + i];
    if (!IsDigit(c)) return false;
    result = result * 10 + (c - '0');
  }
  *pos += count;
  *value = result;
  return true;
}

bool ReadChar(std::string_view text, size_t* pos, char expected) {
  if (*pos >= text.size() || text[*pos] != expected) return false;
  ++*pos;
  return true;
}

// YYYY-MM-DD[(T|t| )HH:MM:SS[.fraction](Z|z|(+|-)HH:MM)]
Result<int64_t> ParseRfc3339(std::string_view text) {
  size_t pos = 0;
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!ReadDigits(text, &pos, 4, &year) || !ReadChar(text, &pos, '-') || !ReadDigits(text, &pos, 2, &month) ||
      !ReadChar(text, &pos, '-') || !ReadDigits(text, &pos, 2, &day)) {
    return BadTime(text, kTimeForms);
  }
  int64_t fraction_nanos = 0;
  int64_t offset_seconds = 0;
  if (pos < text.size()) {
    if (text[pos] != 'T' && text[pos] != 't' && text[pos] != ' ') return BadTime(text, kTimeForms);
    ++pos;
    if (!ReadDigits(text, &pos, 2, &hour) || !ReadChar(text, &pos, ':') ||
        !ReadDigits(text, &pos, 2, &minute) || !ReadChar(text, &pos, ':') ||
        !ReadDigits(text, &pos, 2, &second)) {
      return BadTime(text, kTimeForms);
    }
    if (ReadChar(text, &pos, '.')) {
      size_t digits = 0;
      while (pos < text.size() && IsDigit(text[pos])) {
        if (++digits > 9) return BadTime(text, "more than 9 fraction digits (cairn keeps nanoseconds)");
        fraction_nanos = fraction_nanos * 10 + (text[pos] - '0');
        ++pos;
      }
      if (digits == 0) return BadTime(text, "no digits after the decimal point");
      for (size_t i = digits; i < 9; ++i) fraction_nanos *= 10;
    }
    if (pos == text.size()) return BadTime(text, "no time zone; end it with Z or an offset like +01:00");
    if (text[pos] == 'Z' || text[pos] == 'z') {
      ++pos;
    } else if (text[pos] == '+' || text[pos] == '-') {
      const int sign = text[pos] == '-' ? -1 : 1;
      ++pos;
      int offset_hours = 0, offset_minutes = 0;
      if (!ReadDigits(text, &pos, 2, &offset_hours) || !ReadChar(text, &pos, ':') ||
          !ReadDigits(text, &pos, 2, &offset_minutes) || offset_hours > 23 || offset_minutes > 59) {
        return BadTime(text, "the offset must look like +01:00 or -05:30");
      }
      offset_seconds = sign * (offset_hours * 3600 + offset_minutes * 60);
    } else {
      return BadTime(text, kTimeForms);
    }
    if (pos != text.size()) return BadTime(text, kTimeForms);
  }
  if (month < 1 || month > 12) return BadTime(text, "month " + std::to_string(month) + " does not exist");
  if (day < 1 || day > DaysInMonth(year, month)) {
    return BadTime(text, "day " + std::to_string(day) + " does not exist in that month");
  }
  if (hour > 23) return BadTime(text, "hour " + std::to_string(hour) + " does not exist");
  if (minute > 59) return BadTime(text, "minute " + std::to_string(minute) + " does not exist");
  if (second > 59) {
    return BadTime(text, "second " + std::to_string(second) + " does not exist (leap seconds are not kept)");
  }
  // Years 0000-9999 keep these products far inside int64; only the final
  // scaling to nanoseconds can leave it.
  int64_t seconds =
      DaysFromCivil(year, month, day) * kSecondsPerDay + hour * 3600 + minute * 60 + second - offset_seconds;
  // Before 1970 the fraction is taken from the next second up, so that the
  // earliest instant int64 holds (1677-09-21T00:12:43.145224192Z) does not
  // overflow on the way.
  if (seconds < 0 && fraction_nanos > 0) {
    seconds += 1;
    fraction_nanos -= kNanosPerSecond;
  }
  int64_t nanos = 0;
  if (__builtin_mul_overflow(seconds, kNanosPerSecond, &nanos) ||
      __builtin_add_overflow(nanos, fraction_nanos, &nanos)) {
    return BadTime(text, "outside the times cairn can store (1677-09-21 to 2262-04-11)");
  }
  return nanos;
}

bool IsIntegerText(std::string_view text) {
  if (!text.empty() && text[0] == '-') text.remove_prefix(1);
  return !text.empty() && std::all_of(text.begin(), text.end(), IsDigit);
}

}  // namespace

Result<int64_t> ParseDurationArgument(std::string_view text) {
  const auto bad = [&] {
    return Status::InvalidArgument("bad duration '" + std::string(text) + "': " + kDurationForms);
  };
  if (text.empty()) return bad();
  int64_t total = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t number_start = pos;
    while (pos < text.size() && IsDigit(text[pos])) ++pos;
    if (pos == number_start) return bad();
    int64_t number = 0;
    const auto [end, error] = std::from_chars(text.data() + number_start, text.data() + pos, number);
    const size_t unit_start = pos;
    while (pos < text.size() && !IsDigit(text[pos])) ++pos;
    const std::string_view unit = text.substr(unit_start, pos - unit_start);
    int64_t unit_nanos = 0;
    if (unit == "ns") {
      unit_nanos = 1;
    } else if (unit == "us") {
      unit_nanos = 1'000;
    } else if (unit == "ms") {
      unit_nanos = 1'000'000;
    } else if (unit == "s") {
      unit_nanos = kNanosPerSecond;
    } else if (unit == "m") {
      unit_nanos = 60 * kNanosPerSecond;
    } else if (unit == "h") {
      unit_nanos = 3600 * kNanosPerSecond;
    } else if (unit == "d") {
      unit_nanos = kSecondsPerDay * kNanosPerSecond;
    } else if (unit == "w") {
      unit_nanos = 7 * kSecondsPerDay * kNanosPerSecond;
    } else {
      return bad();
    }
    int64_t part = 0;
    if (error != std::errc() || __builtin_mul_overflow(number, unit_nanos, &part) ||
        __builtin_add_overflow(total, part, &total)) {
      return Status::InvalidArgument("bad duration '" + std::string(text) +
                                     "': too long (at most about 292 years)");
    }
  }
  return total;
}

Result<int64_t> ParseTimeArgument(std::string_view text, int64_t now_unix_nanos) {
  if (text == "now") return now_unix_nanos;
  if (IsIntegerText(text)) {
    int64_t nanos = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), nanos);
    if (error != std::errc()) return BadTime(text, "out of the range of int64 nanoseconds");
    return nanos;
  }
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    Result<int64_t> offset = ParseDurationArgument(text.substr(1));
    if (!offset.ok()) return BadTime(text, kTimeForms);
    int64_t result = 0;
    const bool overflow = text[0] == '-' ? __builtin_sub_overflow(now_unix_nanos, *offset, &result)
                                         : __builtin_add_overflow(now_unix_nanos, *offset, &result);
    if (overflow) return BadTime(text, "outside the times cairn can store (1677-09-21 to 2262-04-11)");
    return result;
  }
  return ParseRfc3339(text);
}

std::string FormatDurationSeconds(int64_t seconds) {
  if (seconds == 0) return "0s";
  if (seconds % kSecondsPerDay == 0) return std::to_string(seconds / kSecondsPerDay) + "d";
  if (seconds % 3600 == 0) return std::to_string(seconds / 3600) + "h";
  if (seconds % 60 == 0) return std::to_string(seconds / 60) + "m";
  return std::to_string(seconds) + "s";
}

}  // namespace cairn
