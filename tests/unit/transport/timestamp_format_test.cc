#include "cairn/text/timestamp_format.h"

#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

namespace cairn {
namespace {

constexpr int64_t kSecond = 1000000000;

TEST(FormatTimestampUtcTest, ShowsOnlyTheFractionDigitsTheValueNeeds) {
  EXPECT_EQ(FormatTimestampUtc(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatTimestampUtc(1714564800 * kSecond), "2024-05-01T12:00:00Z");
  EXPECT_EQ(FormatTimestampUtc(1714564800 * kSecond + 250000000), "2024-05-01T12:00:00.250Z");
  EXPECT_EQ(FormatTimestampUtc(1714564800 * kSecond + 250001000), "2024-05-01T12:00:00.250001Z");
  EXPECT_EQ(FormatTimestampUtc(1714564800 * kSecond + 1), "2024-05-01T12:00:00.000000001Z");
}

TEST(FormatTimestampUtcTest, HandlesLeapDaysAndCenturies) {
  EXPECT_EQ(FormatTimestampUtc(951782400 * kSecond), "2000-02-29T00:00:00Z");
  EXPECT_EQ(FormatTimestampUtc(4107542400 * kSecond), "2100-03-01T00:00:00Z");
  EXPECT_EQ(FormatTimestampUtc(1709164799 * kSecond), "2024-02-28T23:59:59Z");
}

TEST(FormatTimestampUtcTest, TimesBeforeTheEpochRoundTowardThePast) {
  EXPECT_EQ(FormatTimestampUtc(-1), "1969-12-31T23:59:59.999999999Z");
  EXPECT_EQ(FormatTimestampUtc(-kSecond), "1969-12-31T23:59:59Z");
  EXPECT_EQ(FormatTimestampUtc(-86400 * kSecond), "1969-12-31T00:00:00Z");
}

TEST(FormatTimestampUtcTest, Int64Extremes) {
  EXPECT_EQ(FormatTimestampUtc(std::numeric_limits<int64_t>::max()), "2262-04-11T23:47:16.854775807Z");
  EXPECT_EQ(FormatTimestampUtc(std::numeric_limits<int64_t>::min()), "1677-09-21T00:12:43.145224192Z");
}

TEST(FormatTimestampUtcMillisTest, FixedMillisecondWidthTruncatedTowardThePast) {
  EXPECT_EQ(FormatTimestampUtcMillis(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(FormatTimestampUtcMillis(1714564800 * kSecond + 250999999), "2024-05-01T12:00:00.250Z");
  EXPECT_EQ(FormatTimestampUtcMillis(-1), "1969-12-31T23:59:59.999Z");
}

}  // namespace
}  // namespace cairn
