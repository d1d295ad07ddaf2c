#include <array>
#include <string>

#include <gtest/gtest.h>

#include "cairn/util/hex.h"

namespace cairn::util {
namespace {

TEST(HexTest, EncodesLowercaseTwoDigitsPerByte) {
  EXPECT_EQ(HexEncode(std::string_view()), "");
  EXPECT_EQ(HexEncode(std::string("\x00\x0f\xa5\xff", 4)), "000fa5ff");
  const std::array<uint8_t, 3> bytes = {0xDE, 0xAD, 0x01};
  EXPECT_EQ(HexEncode(std::span<const uint8_t>(bytes)), "dead01");
  std::string out = "key:";
  AppendHex("\x12\x34", &out);
  EXPECT_EQ(out, "key:1234");
}

TEST(HexTest, DecodesEitherCaseAndRoundTrips) {
  EXPECT_EQ(HexDecode(""), std::string());
  EXPECT_EQ(HexDecode("DEADbeef"), std::string("\xde\xad\xbe\xef"));
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  EXPECT_EQ(HexDecode(HexEncode(all)), all);
}

TEST(HexTest, RefusesAnOddLengthOrABadDigit) {
  EXPECT_EQ(HexDecode("abc"), std::nullopt);
  EXPECT_EQ(HexDecode("0g"), std::nullopt);
  EXPECT_EQ(HexDecode("g0"), std::nullopt);
  EXPECT_EQ(HexDecode(" 0"), std::nullopt);
  EXPECT_EQ(HexDecode("+1"), std::nullopt);
  EXPECT_EQ(HexDecode(std::string("0\0", 2)), std::nullopt);
}

TEST(HexTest, DigitValuesAndLowercaseCheck) {
  EXPECT_EQ(HexDigitValue('0'), 0);
  EXPECT_EQ(HexDigitValue('9'), 9);
  EXPECT_EQ(HexDigitValue('a'), 10);
  EXPECT_EQ(HexDigitValue('F'), 15);
  EXPECT_EQ(HexDigitValue('g'), -1);
  EXPECT_EQ(HexDigitValue('/'), -1);
  EXPECT_EQ(HexDigitValue(':'), -1);
  EXPECT_TRUE(IsLowerHex(""));
  EXPECT_TRUE(IsLowerHex("0123456789abcdef"));
  EXPECT_FALSE(IsLowerHex("ABCDEF"));
  EXPECT_FALSE(IsLowerHex("12 4"));
}

}  // namespace
}  // namespace cairn::util
