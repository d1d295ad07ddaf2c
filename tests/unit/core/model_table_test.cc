#include <gtest/gtest.h>

#include "cairn/core/table.h"

namespace cairn {
namespace {

constexpr int64_t kSecond = 1'000'000'000;
// 2026-11-21T09:41:07Z
constexpr int64_t kSample = int64_t{1'795'254'067} * kSecond;

TEST(PeriodTest, StartsAndStems) {
  EXPECT_EQ(PeriodFileStem(Period::kHour, PeriodStart(Period::kHour, kSample)), "2026-11-21T09");
  EXPECT_EQ(PeriodFileStem(Period::kDay, PeriodStart(Period::kDay, kSample)), "2026-11-21");
  EXPECT_EQ(PeriodFileStem(Period::kWeek, PeriodStart(Period::kWeek, kSample)), "2026-W47");
  EXPECT_EQ(PeriodFileStem(Period::kMonth, PeriodStart(Period::kMonth, kSample)), "2026-11");
  EXPECT_EQ(PeriodStart(Period::kDay, kSample) % (86400 * kSecond), 0);
  // ISO weeks start on Monday: 2026-11-16.
  EXPECT_EQ(PeriodFileStem(Period::kDay, PeriodStart(Period::kWeek, kSample)), "2026-11-16");
  EXPECT_EQ(PeriodFileStem(Period::kDay, NextPeriodStart(Period::kMonth, kSample)), "2026-12-01");
  // December rolls into January; 2024 is a leap year.
  const int64_t december = PeriodStart(Period::kMonth, int64_t{1'765'000'000} * kSecond);  // 2025-12-06
  EXPECT_EQ(PeriodFileStem(Period::kMonth, NextPeriodStart(Period::kMonth, december)), "2026-01");
  const int64_t feb2024 = int64_t{1'708'000'000} * kSecond;  // 2024-02-15
  EXPECT_EQ(NextPeriodStart(Period::kMonth, feb2024) - PeriodStart(Period::kMonth, feb2024),
            29 * 86400 * kSecond);
  // Before the epoch, periods still floor downwards.
  EXPECT_EQ(PeriodFileStem(Period::kDay, PeriodStart(Period::kDay, -1)), "1969-12-31");
  EXPECT_EQ(PeriodFileStem(Period::kHour, PeriodStart(Period::kHour, 0)), "1970-01-01T00");
  // 2021-01-03 belongs to ISO week 2020-W53.
  EXPECT_EQ(PeriodFileStem(Period::kWeek, PeriodStart(Period::kWeek, int64_t{1'609'632'000} * kSecond)),
            "2020-W53");
}

TEST(PeriodTest, LastRepresentablePeriodEndsAtInt64Max) {
  for (Period p : {Period::kHour, Period::kDay, Period::kWeek, Period::kMonth}) {
    EXPECT_EQ(NextPeriodStart(p, INT64_MAX), INT64_MAX);
    EXPECT_LE(PeriodStart(p, INT64_MAX), INT64_MAX);
    EXPECT_EQ(NextPeriodStart(p, INT64_MIN + 1) > PeriodStart(p, INT64_MIN + 1), true);
  }
}

TEST(PeriodTest, StemsParseBack) {
  for (Period p : {Period::kHour, Period::kDay, Period::kWeek, Period::kMonth}) {
    int64_t start = PeriodStart(p, int64_t{1'500'000'000} * kSecond);
    for (int i = 0; i < 200; ++i) {
      auto parsed = ParsePeriodFileStem(p, PeriodFileStem(p, start));
      ASSERT_TRUE(parsed.ok()) << PeriodFileStem(p, start);
      EXPECT_EQ(*parsed, start);
      start = NextPeriodStart(p, start);
    }
  }
  EXPECT_FALSE(ParsePeriodFileStem(Period::kDay, "2026-02-30").ok());
  EXPECT_FALSE(ParsePeriodFileStem(Period::kDay, "2026-11-21x").ok());
  EXPECT_FALSE(ParsePeriodFileStem(Period::kDay, "catalog").ok());
  EXPECT_FALSE(ParsePeriodFileStem(Period::kHour, "2026-11-21T24").ok());
  EXPECT_FALSE(ParsePeriodFileStem(Period::kWeek, "2026-W54").ok());
}

TEST(TableOptionsTest, NamesAndRanges) {
  EXPECT_TRUE(ValidateTableName("sensors_2-a").ok());
  EXPECT_FALSE(ValidateTableName("").ok());
  EXPECT_FALSE(ValidateTableName("-x").ok());
  EXPECT_FALSE(ValidateTableName("../etc").ok());
  EXPECT_FALSE(ValidateTableName("a b").ok());
  EXPECT_FALSE(ValidateTableName(std::string(65, 'a')).ok());
  // The data directory's own entries: a table there would share (and its
  // drop would delete) the write-ahead log, the lock or the token file.
  for (const char* reserved : {"log", "LOG", "Log", "LOCK", "lock", "tokens", "TOKENS", "sync", "tmp"}) {
    Status status = ValidateTableName(reserved);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << reserved;
    EXPECT_NE(status.message().find("reserved"), std::string::npos) << status.message();
  }
  EXPECT_TRUE(ValidateTableName("logs").ok());
  EXPECT_TRUE(ValidateTableName("syslog").ok());
  EXPECT_TRUE(ValidateTableOptions({}).ok());
  TableOptions o;
  o.retention_seconds = 0;
  EXPECT_FALSE(ValidateTableOptions(o).ok());
  o = {};
  o.default_ttl_seconds = -1;
  EXPECT_FALSE(ValidateTableOptions(o).ok());
  EXPECT_EQ(ParsePeriod("week").value(), Period::kWeek);
  EXPECT_FALSE(ParsePeriod("fortnight").ok());
}

}  // namespace
}  // namespace cairn
