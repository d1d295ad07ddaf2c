#include "cairn/core/table.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace cairn {

namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;
constexpr int64_t kSecondsPerDay = 86400;

// Civil-from-days and days-from-civil (proleptic Gregorian, UTC); pure
// arithmetic so that period boundaries never depend on the OS time zone.
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

void CivilFromDays(int64_t z, int64_t* year, unsigned* month, unsigned* day) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *day = doy - (153 * mp + 2) / 5 + 1;
  *month = mp < 10 ? mp + 3 : mp - 9;
  *year = static_cast<int64_t>(yoe) + era * 400 + (*month <= 2);
}

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

}  // namespace

std::string_view PeriodName(Period period) {
  switch (period) {
    case Period::kHour:
      return "hour";
    case Period::kDay:
      return "day";
    case Period::kWeek:
      return "week";
    case Period::kMonth:
      return "month";
  }
  return "unknown";
}

Result<Period> ParsePeriod(std::string_view name) {
  if (name == "hour") return Period::kHour;
  if (name == "day") return Period::kDay;
  if (name == "week") return Period::kWeek;
  if (name == "month") return Period::kMonth;
  return Status::InvalidArgument("unknown period '" + std::string(name) + "' (hour, day, week or month)");
}

std::string_view ConflictPolicyName(ConflictPolicy policy) {
  switch (policy) {
    case ConflictPolicy::kReject:
      return "reject";
    case ConflictPolicy::kOverwrite:
      return "overwrite";
  }
  return "unknown";
}

Result<ConflictPolicy> ParseConflictPolicy(std::string_view name) {
  for (ConflictPolicy policy : {ConflictPolicy::kReject, ConflictPolicy::kOverwrite}) {
    if (ConflictPolicyName(policy) == name) return policy;
  }
  return Status::InvalidArgument("unknown on_conflict '" + std::string(name) + "' (reject, overwrite)");
}

int64_t PeriodStart(Period period, int64_t unix_nanos) {
  const int64_t seconds = FloorDiv(unix_nanos, kNanosPerSecond);
  const int64_t days = FloorDiv(seconds, kSecondsPerDay);
  int64_t start_seconds = 0;
  switch (period) {
    case Period::kHour:
      start_seconds = FloorDiv(seconds, 3600) * 3600;
      break;
    case Period::kDay:
      start_seconds = days * kSecondsPerDay;
      break;
    case Period::kWeek:
      // 1970-01-01 was a Thursday; ISO weeks start on Monday.
      start_seconds = (days - (((days + 3) % 7) + 7) % 7) * kSecondsPerDay;
      break;
    case Period::kMonth: {
      int64_t y;
      unsigned m, d;
      CivilFromDays(days, &y, &m, &d);
      start_seconds = DaysFromCivil(y, m, 1) * kSecondsPerDay;
      break;
    }
  }
  int64_t start;
  // The first period before 1677-09-21 starts before int64 nanoseconds begin.
  if (__builtin_mul_overflow(start_seconds, kNanosPerSecond, &start)) return INT64_MIN;
  return start;
}

int64_t NextPeriodStart(Period period, int64_t unix_nanos) {
  const int64_t start = PeriodStart(period, unix_nanos);
  int64_t length = 0;
  switch (period) {
    case Period::kHour:
      length = 3600 * kNanosPerSecond;
      break;
    case Period::kDay:
      length = kSecondsPerDay * kNanosPerSecond;
      break;
    case Period::kWeek:
      length = 7 * kSecondsPerDay * kNanosPerSecond;
      break;
    case Period::kMonth: {
      int64_t y;
      unsigned m, d;
      CivilFromDays(FloorDiv(start, kSecondsPerDay * kNanosPerSecond), &y, &m, &d);
      if (++m > 12) m = 1, ++y;
      // In days first: the next month's start in nanoseconds may not exist.
      length = (DaysFromCivil(y, m, 1) - FloorDiv(start, kSecondsPerDay * kNanosPerSecond)) * kSecondsPerDay *
               kNanosPerSecond;
      break;
    }
  }
  int64_t next;
  // The last period before 2262-04-11 ends past what int64 nanoseconds hold.
  if (__builtin_add_overflow(start, length, &next)) return INT64_MAX;
  return next;
}

std::string PeriodFileStem(Period period, int64_t start) {
  const int64_t seconds = FloorDiv(start, kNanosPerSecond);
  const int64_t days = FloorDiv(seconds, kSecondsPerDay);
  int64_t y;
  unsigned m, d;
  CivilFromDays(days, &y, &m, &d);
  char buf[48];
  switch (period) {
    case Period::kHour:
      snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02lld", static_cast<long long>(y), m, d,
               static_cast<long long>(FloorDiv(seconds - days * kSecondsPerDay, 3600)));
      break;
    case Period::kDay:
      snprintf(buf, sizeof buf, "%04lld-%02u-%02u", static_cast<long long>(y), m, d);
      break;
    case Period::kWeek: {
      // The ISO week-numbering year is the year of the week's Thursday.
      int64_t ty;
      unsigned tm, td;
      CivilFromDays(days + 3, &ty, &tm, &td);
      const int64_t week = (days + 3 - DaysFromCivil(ty, 1, 1)) / 7 + 1;
      snprintf(buf, sizeof buf, "%04lld-W%02lld", static_cast<long long>(ty), static_cast<long long>(week));
      break;
    }
    case Period::kMonth:
      snprintf(buf, sizeof buf, "%04lld-%02u", static_cast<long long>(y), m);
      break;
  }
  return buf;
}

Result<int64_t> ParsePeriodFileStem(Period period, std::string_view stem) {
  const std::string text(stem);
  int year = 0, month = 1, day = 1, hour = 0, week = 1;
  char tail = 0;
  int parsed = 0;
  switch (period) {
    case Period::kHour:
      parsed = sscanf(text.c_str(), "%4d-%2d-%2dT%2d%c", &year, &month, &day, &hour, &tail) - 4;
      break;
    case Period::kDay:
      parsed = sscanf(text.c_str(), "%4d-%2d-%2d%c", &year, &month, &day, &tail) - 3;
      break;
    case Period::kWeek:
      parsed = sscanf(text.c_str(), "%4d-W%2d%c", &year, &week, &tail) - 2;
      break;
    case Period::kMonth:
      parsed = sscanf(text.c_str(), "%4d-%2d%c", &year, &month, &tail) - 2;
      break;
  }
  const auto invalid = [&] {
    return Status::InvalidArgument("'" + text + "' is not a " + std::string(PeriodName(period)) +
                                   " period name");
  };
  if (parsed != 0 || month < 1 || month > 12 || day < 1 || day > 31 || hour < 0 || hour > 23 || week < 1 ||
      week > 53) {
    return invalid();
  }
  int64_t days;
  if (period == Period::kWeek) {
    // ISO week 1 is the week holding January 4th.
    const int64_t jan4 = DaysFromCivil(year, 1, 4);
    const int64_t week1_monday = jan4 - (((jan4 + 3) % 7) + 7) % 7;
    days = week1_monday + int64_t{7} * (week - 1);
  } else {
    days = DaysFromCivil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  }
  const int64_t start = (days * kSecondsPerDay + int64_t{hour} * 3600) * kNanosPerSecond;
  // Round-trip check rejects impossible dates such as 2026-02-30.
  if (PeriodFileStem(period, start) != text) return invalid();
  return start;
}

Status ValidateTableName(std::string_view name) {
  if (name.empty() || name.size() > 64) return Status::InvalidArgument("table name must be 1-64 bytes");
  if (name[0] == '-') return Status::InvalidArgument("table name must not start with '-'");
  for (char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) {
      return Status::InvalidArgument("table name '" + std::string(name) +
                                     "' may contain only letters, digits, '_' and '-'");
    }
  }
  // A table's directory sits beside the engine's and the daemon's own files
  // in the data directory: a table named like one of them would mix its
  // period files into them, and dropping it would delete them (`log` is the
  // write-ahead log). Compared without case, for filesystems that ignore it.
  for (std::string_view reserved : kReservedTableNames) {
    if (name.size() == reserved.size() &&
        std::equal(name.begin(), name.end(), reserved.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
        })) {
      return Status::InvalidArgument("table name '" + std::string(name) +
                                     "' is reserved for cairn's own files in the data directory");
    }
  }
  return Status::Ok();
}

Status ValidateTableOptions(const TableOptions& options) {
  if (options.retention_seconds <= 0) return Status::InvalidArgument("retention must be positive");
  if (options.default_ttl_seconds < 0) return Status::InvalidArgument("default ttl must not be negative");
  if (options.max_series > kMaxSeriesLimit) {
    return Status::InvalidArgument("max_series must be at most " + std::to_string(kMaxSeriesLimit) +
                                   " (0: the engine's default)");
  }
  if (options.on_conflict != ConflictPolicy::kReject && options.on_conflict != ConflictPolicy::kOverwrite) {
    return Status::InvalidArgument("on_conflict must be reject or overwrite");
  }
  if (options.shards != 1 || options.shard_by != "random") {
    return Status::InvalidArgument("write sharding is not available in this version: shards must be 1");
  }
  if (options.attributes.size() > kMaxDimensionsPerSeries) {
    return Status::InvalidArgument("a table declares at most " + std::to_string(kMaxDimensionsPerSeries) +
                                   " attributes");
  }
  for (const std::string& name : options.attributes) {
    CAIRN_RETURN_IF_ERROR(ValidateIdentifier("attribute name", name, kMaxDimensionBytes));
  }
  if (!options.sparse_indexes.empty()) {
    return Status::InvalidArgument("sparse indexes are not available in this version");
  }
  return Status::Ok();
}

}  // namespace cairn
