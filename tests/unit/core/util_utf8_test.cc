#include <string>

#include <gtest/gtest.h>

#include "cairn/util/utf8.h"

namespace cairn::util {
namespace {

// Decodes all of `text` into (valid, length) units, the way every caller walks it.
std::string Units(std::string_view text) {
  std::string shape;
  for (size_t pos = 0; pos < text.size();) {
    const Utf8Unit unit = DecodeUtf8(text, pos);
    shape += (unit.valid ? 'v' : 'x') + std::to_string(unit.length);
    pos += unit.length;
  }
  return shape;
}

TEST(Utf8Test, DecodesEachLengthToItsCodePoint) {
  EXPECT_EQ(DecodeUtf8("A", 0).code_point, 0x41u);
  EXPECT_EQ(DecodeUtf8("\xC3\xA9", 0).code_point, 0xE9u);
  EXPECT_EQ(DecodeUtf8("\xE2\x80\xA8", 0).code_point, 0x2028u);
  EXPECT_EQ(DecodeUtf8("\xF0\x9F\x98\x80", 0).code_point, 0x1F600u);
  EXPECT_EQ(DecodeUtf8("\xF4\x8F\xBF\xBF", 0).code_point, 0x10FFFFu);
  EXPECT_EQ(Units(std::string("a\0b", 3)), "v1v1v1");
  EXPECT_EQ(Units("\xC3\xA9\xE2\x80\xA8\xF0\x9F\x98\x80"), "v2v3v4");
}

TEST(Utf8Test, RefusesOverlongForms) {
  EXPECT_EQ(Units("\xC0\xAF"), "x1x1");  // '/' in two bytes: C0 never leads
  EXPECT_EQ(Units("\xC1\xBF"), "x1x1");
  EXPECT_EQ(Units("\xE0\x80\xAF"), "x1x1x1");        // E0 needs a second byte >= A0
  EXPECT_EQ(Units("\xF0\x80\x80\xAF"), "x1x1x1x1");  // F0 needs a second byte >= 90
  EXPECT_FALSE(IsValidUtf8("\xC0\x80"));             // the "modified UTF-8" NUL
}

TEST(Utf8Test, RefusesSurrogatesAndCodePointsAboveTheLast) {
  EXPECT_EQ(Units("\xED\xA0\x80"), "x1x1x1");        // U+D800
  EXPECT_EQ(Units("\xED\xBF\xBF"), "x1x1x1");        // U+DFFF
  EXPECT_TRUE(IsValidUtf8("\xED\x9F\xBF"));          // U+D7FF, just below
  EXPECT_EQ(Units("\xF4\x90\x80\x80"), "x1x1x1x1");  // U+110000
  EXPECT_EQ(Units("\xF5\x80\x80\x80"), "x1x1x1x1");
  EXPECT_EQ(Units("\xFF"), "x1");
}

TEST(Utf8Test, ATruncatedSequenceIsOneUnitAndSwallowsNothingAfterIt) {
  EXPECT_EQ(Units("\xE2\x82"
                  "A"),
            "x2v1");
  EXPECT_EQ(Units("\xF0\x9F\x98"), "x3");
  EXPECT_EQ(Units("\xC3"), "x1");
  EXPECT_EQ(Units("\x80"), "x1");  // a lone continuation byte
  EXPECT_FALSE(IsValidUtf8("abc\xE2\x82"));
}

TEST(Utf8Test, IsValidUtf8TakesTheEmptyStringAndNul) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8(std::string("\0", 1)));
  EXPECT_TRUE(IsValidUtf8("\xF0\x9F\x98\x80 ok"));
}

TEST(Utf8Test, AppendUtf8RoundTripsEveryLengthBoundary) {
  for (uint32_t code_point :
       {0x0u, 0x7Fu, 0x80u, 0x7FFu, 0x800u, 0xD7FFu, 0xE000u, 0xFFFFu, 0x10000u, 0x10FFFFu}) {
    std::string text;
    AppendUtf8(&text, code_point);
    const Utf8Unit unit = DecodeUtf8(text, 0);
    EXPECT_TRUE(unit.valid) << code_point;
    EXPECT_EQ(unit.length, text.size()) << code_point;
    EXPECT_EQ(unit.code_point, code_point);
  }
  std::string replacement;
  AppendUtf8(&replacement, 0xFFFD);
  EXPECT_EQ(replacement, kReplacementCharacter);
}

}  // namespace
}  // namespace cairn::util
