#include "cairn/text/timestamp_format.h"

#include <cstdio>

namespace cairn {

namespace {

constexpr int64_t kNanosPerSecond = 1000000000;
constexpr int64_t kSecondsPerDay = 86400;

struct CivilTime {
  int64_t year;
  unsigned month, day, hour, minute, second;
  int64_t nanos;  // 0 .. 999'999'999
};

// Floor division and its non-negative remainder; never overflows, even for
// INT64_MIN.
void FloorDivide(int64_t value, int64_t divisor, int64_t* quotient, int64_t* remainder) {
  *quotient = value / divisor;
  *remainder = value % divisor;
  if (*remainder < 0) {
    *quotient -= 1;
    *remainder += divisor;
  }
}

// Days since 1970-01-01 to a proleptic Gregorian date, after Howard Hinnant's
// "civil_from_days": shifts the year to start in March so that the leap day
// falls at the end, then splits into 400-year eras.
void CivilFromDays(int64_t days, int64_t* year, unsigned* month, unsigned* day) {
  days += 719468;
  const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const auto day_of_era = static_cast<unsigned>(days - era * 146097);
  const unsigned year_of_era =
      (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
  const unsigned day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
  const unsigned shifted_month = (5 * day_of_year + 2) / 153;
  *day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
  *month = shifted_month < 10 ? shifted_month + 3 : shifted_month - 9;
  *year = static_cast<int64_t>(year_of_era) + era * 400 + (*month <= 2 ? 1 : 0);
}

CivilTime ToCivil(int64_t unix_nanos) {
  CivilTime t;
  int64_t seconds, days, second_of_day;
  FloorDivide(unix_nanos, kNanosPerSecond, &seconds, &t.nanos);
  FloorDivide(seconds, kSecondsPerDay, &days, &second_of_day);
  CivilFromDays(days, &t.year, &t.month, &t.day);
  t.hour = static_cast<unsigned>(second_of_day / 3600);
  t.minute = static_cast<unsigned>(second_of_day / 60 % 60);
  t.second = static_cast<unsigned>(second_of_day % 60);
  return t;
}

std::string FormatWithFraction(const CivilTime& t, const char* fraction) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%04lld-%02u-%02uT%02u:%02u:%02u%sZ", static_cast<long long>(t.year),
                t.month, t.day, t.hour, t.minute, t.second, fraction);
  return buffer;
}

}  // namespace

std::string FormatTimestampUtc(int64_t unix_nanos) {
  const CivilTime t = ToCivil(unix_nanos);
  char fraction[32] = "";
  if (t.nanos % 1000000 == 0) {
    if (t.nanos != 0)
      std::snprintf(fraction, sizeof(fraction), ".%03lld", static_cast<long long>(t.nanos / 1000000));
  } else if (t.nanos % 1000 == 0) {
    std::snprintf(fraction, sizeof(fraction), ".%06lld", static_cast<long long>(t.nanos / 1000));
  } else {
    std::snprintf(fraction, sizeof(fraction), ".%09lld", static_cast<long long>(t.nanos));
  }
  return FormatWithFraction(t, fraction);
}

std::string FormatTimestampUtcMillis(int64_t unix_nanos) {
  const CivilTime t = ToCivil(unix_nanos);
  char fraction[32];
  std::snprintf(fraction, sizeof(fraction), ".%03lld", static_cast<long long>(t.nanos / 1000000));
  return FormatWithFraction(t, fraction);
}

}  // namespace cairn
