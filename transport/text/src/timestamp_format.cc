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

// Appends `value` as exactly `width` decimal digits. Precondition: it fits.
void AppendDigits(uint64_t value, int width, std::string* out) {
  char digits[20];
  for (int i = width - 1; i >= 0; --i) {
    digits[i] = static_cast<char>('0' + value % 10);
    value /= 10;
  }
  out->append(digits, static_cast<size_t>(width));
}

// YYYY-MM-DDTHH:MM:SS<fraction>Z, the fraction `fraction_digits` long (0, 3,
// 6 or 9). Written digit by digit: timestamps fill every answer, and
// printf-style formatting was most of the cost of serialising one.
std::string FormatCivil(const CivilTime& t, int fraction_digits) {
  std::string out;
  out.reserve(32);
  if (t.year >= 0 && t.year <= 9999) {
    AppendDigits(static_cast<uint64_t>(t.year), 4, &out);
  } else {
    char year[24];
    std::snprintf(year, sizeof(year), "%04lld", static_cast<long long>(t.year));
    out += year;
  }
  out.push_back('-');
  AppendDigits(t.month, 2, &out);
  out.push_back('-');
  AppendDigits(t.day, 2, &out);
  out.push_back('T');
  AppendDigits(t.hour, 2, &out);
  out.push_back(':');
  AppendDigits(t.minute, 2, &out);
  out.push_back(':');
  AppendDigits(t.second, 2, &out);
  if (fraction_digits > 0) {
    out.push_back('.');
    uint64_t fraction = static_cast<uint64_t>(t.nanos);
    for (int d = 9; d > fraction_digits; --d) fraction /= 10;
    AppendDigits(fraction, fraction_digits, &out);
  }
  out.push_back('Z');
  return out;
}

}  // namespace

std::string FormatTimestampUtc(int64_t unix_nanos) {
  const CivilTime t = ToCivil(unix_nanos);
  const int digits = t.nanos == 0 ? 0 : t.nanos % 1000000 == 0 ? 3 : t.nanos % 1000 == 0 ? 6 : 9;
  return FormatCivil(t, digits);
}

std::string FormatTimestampUtcMillis(int64_t unix_nanos) { return FormatCivil(ToCivil(unix_nanos), 3); }

}  // namespace cairn
