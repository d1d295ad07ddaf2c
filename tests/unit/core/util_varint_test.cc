#include <cstdint>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "cairn/util/varint.h"

namespace cairn::util {
namespace {

const unsigned char* Begin(const std::string& bytes) {
  return reinterpret_cast<const unsigned char*>(bytes.data());
}

const unsigned char* End(const std::string& bytes) { return Begin(bytes) + bytes.size(); }

TEST(VarintTest, RoundTripsAtEverySizeBoundary) {
  for (unsigned bits = 0; bits <= 64; ++bits) {
    for (uint64_t value : {bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1,
                           bits == 64 ? uint64_t{0} : uint64_t{1} << bits}) {
      std::string bytes;
      PutVarint(&bytes, value);
      EXPECT_EQ(bytes.size(), VarintSize(value)) << value;
      uint64_t decoded = 0;
      EXPECT_EQ(GetVarint(Begin(bytes), End(bytes), &decoded), End(bytes)) << value;
      EXPECT_EQ(decoded, value);
    }
  }
  std::string max;
  PutVarint(&max, ~uint64_t{0});
  EXPECT_EQ(max.size(), kMaxVarintBytes);
  EXPECT_EQ(VarintSize(0), 1u);
  EXPECT_EQ(VarintSize(127), 1u);
  EXPECT_EQ(VarintSize(128), 2u);
}

TEST(VarintTest, KnownBytes) {
  std::string bytes;
  PutVarint(&bytes, 300);
  EXPECT_EQ(bytes, "\xAC\x02");
}

TEST(VarintTest, RefusesTruncationWithoutTouchingTheValue) {
  const std::string bytes = "\xAC";
  uint64_t value = 7;
  EXPECT_EQ(GetVarint(Begin(bytes), End(bytes), &value), nullptr);
  EXPECT_EQ(value, 7u);
  EXPECT_EQ(GetVarint(Begin(bytes), Begin(bytes), &value), nullptr);
}

TEST(VarintTest, RefusesOverflowPastSixtyFourBits) {
  uint64_t value = 7;
  // Ten bytes whose tenth carries more than bit 63.
  const std::string too_big("\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\x02", 10);
  EXPECT_EQ(GetVarint(Begin(too_big), End(too_big), &value), nullptr);
  // Eleven bytes: continuation on the tenth.
  const std::string too_long("\x80\x80\x80\x80\x80\x80\x80\x80\x80\x81\x00", 11);
  EXPECT_EQ(GetVarint(Begin(too_long), End(too_long), &value), nullptr);
  EXPECT_EQ(value, 7u);
  // The largest value is ten bytes with 1 in the tenth.
  const std::string largest("\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\x01", 10);
  EXPECT_EQ(GetVarint(Begin(largest), End(largest), &value), End(largest));
  EXPECT_EQ(value, ~uint64_t{0});
}

TEST(VarintTest, StopsAtTheFirstByteWithoutTheHighBit) {
  const std::string bytes("\x05\x80\x01", 3);
  uint64_t value = 0;
  const unsigned char* next = GetVarint(Begin(bytes), End(bytes), &value);
  EXPECT_EQ(value, 5u);
  ASSERT_EQ(next, Begin(bytes) + 1);
  EXPECT_EQ(GetVarint(next, End(bytes), &value), End(bytes));
  EXPECT_EQ(value, 128u);
}

TEST(VarintTest, ZigZagMapsSmallMagnitudesToSmallValues) {
  EXPECT_EQ(ZigZagEncode(0), 0u);
  EXPECT_EQ(ZigZagEncode(-1), 1u);
  EXPECT_EQ(ZigZagEncode(1), 2u);
  EXPECT_EQ(ZigZagEncode(-2), 3u);
  EXPECT_EQ(ZigZagEncode(std::numeric_limits<int64_t>::max()), ~uint64_t{0} - 1);
  EXPECT_EQ(ZigZagEncode(std::numeric_limits<int64_t>::min()), ~uint64_t{0});
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{1}, std::numeric_limits<int64_t>::min(),
                    std::numeric_limits<int64_t>::max()}) {
    EXPECT_EQ(ZigZagDecode(ZigZagEncode(v)), v);
  }
}

}  // namespace
}  // namespace cairn::util
