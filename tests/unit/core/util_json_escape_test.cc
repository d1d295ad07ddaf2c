#include <string>

#include <gtest/gtest.h>

#include "cairn/util/json_escape.h"

namespace cairn::util {
namespace {

std::string Plain(std::string_view text) {
  std::string out;
  AppendJsonString(text, &out);
  return out;
}

std::string ForDisplay(std::string_view text) {
  std::string out;
  AppendJsonStringForDisplay(text, &out);
  return out;
}

TEST(JsonEscapeTest, PlainEscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(Plain(""), "\"\"");
  EXPECT_EQ(Plain("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(Plain("\n\r\t"), "\"\\n\\r\\t\"");
  EXPECT_EQ(Plain(std::string("\0\x01\x1f\b\f", 5)), "\"\\u0000\\u0001\\u001f\\u0008\\u000c\"");
  EXPECT_EQ(Plain("/"), "\"/\"");
}

TEST(JsonEscapeTest, PlainKeepsEveryOtherByte) {
  EXPECT_EQ(Plain("\x7f"), "\"\x7f\"");
  EXPECT_EQ(Plain("\xE2\x80\xA8\xE2\x80\xA9"), "\"\xE2\x80\xA8\xE2\x80\xA9\"");  // U+2028, U+2029
  EXPECT_EQ(Plain("\xC3(\xFF"), "\"\xC3(\xFF\"");                                // ill-formed bytes too
}

TEST(JsonEscapeTest, ForDisplayUsesShortFormsAndEscapesDel) {
  EXPECT_EQ(ForDisplay("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(ForDisplay("\b\f\n\r\t"), "\"\\b\\f\\n\\r\\t\"");
  EXPECT_EQ(ForDisplay(std::string("\0\x1b\x7f", 3)), "\"\\u0000\\u001b\\u007f\"");
}

TEST(JsonEscapeTest, ForDisplayReplacesEachIllFormedUnitAndKeepsCharacters) {
  EXPECT_EQ(ForDisplay("\xE2\x82"
                       "A"),
            "\"\\ufffdA\"");
  EXPECT_EQ(ForDisplay("\xC0\xAF"), "\"\\ufffd\\ufffd\"");
  EXPECT_EQ(ForDisplay("\xED\xA0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");
  EXPECT_EQ(ForDisplay("\xC3\xA9\xE2\x80\xA8\xF0\x9F\x98\x80"), "\"\xC3\xA9\xE2\x80\xA8\xF0\x9F\x98\x80\"");
  // C1 controls are well-formed characters; JSON allows them raw.
  EXPECT_EQ(ForDisplay("\xC2\x85"), "\"\xC2\x85\"");
}

TEST(JsonEscapeTest, ParseJsonHex4ReadsEitherCaseAndNamesTheBadDigit) {
  uint32_t unit = 0;
  size_t bad_at = 99;
  ASSERT_TRUE(ParseJsonHex4("00e9", &unit, &bad_at));
  EXPECT_EQ(unit, 0xE9u);
  ASSERT_TRUE(ParseJsonHex4("D83Dxyz", &unit, &bad_at));
  EXPECT_EQ(unit, 0xD83Du);
  EXPECT_FALSE(ParseJsonHex4("12g4", &unit, &bad_at));
  EXPECT_EQ(bad_at, 2u);
  EXPECT_FALSE(ParseJsonHex4("-123", &unit, &bad_at));
  EXPECT_EQ(bad_at, 0u);
}

TEST(JsonEscapeTest, SurrogatePairsCombine) {
  EXPECT_TRUE(IsHighSurrogate(0xD800));
  EXPECT_TRUE(IsHighSurrogate(0xDBFF));
  EXPECT_FALSE(IsHighSurrogate(0xDC00));
  EXPECT_TRUE(IsLowSurrogate(0xDC00));
  EXPECT_TRUE(IsLowSurrogate(0xDFFF));
  EXPECT_FALSE(IsLowSurrogate(0xE000));
  EXPECT_EQ(CombineSurrogates(0xD83D, 0xDE00), 0x1F600u);
  EXPECT_EQ(CombineSurrogates(0xD800, 0xDC00), 0x10000u);
  EXPECT_EQ(CombineSurrogates(0xDBFF, 0xDFFF), 0x10FFFFu);
}

}  // namespace
}  // namespace cairn::util
