#include "cairn/text/json_writer.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include <gtest/gtest.h>

namespace cairn {
namespace {

std::string Quoted(std::string_view value) {
  std::string out;
  AppendJsonString(&out, value);
  return out;
}

TEST(JsonStringTest, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(Quoted("plain"), "\"plain\"");
  EXPECT_EQ(Quoted("a\"b\\c/d"), R"("a\"b\\c/d")");
  EXPECT_EQ(Quoted("\b\f\n\r\t"), R"("\b\f\n\r\t")");
  EXPECT_EQ(Quoted(std::string("\x00\x01\x1f\x7f", 4)), R"("\u0000\u0001\u001f\u007f")");
  EXPECT_EQ(Quoted("\x1b[2J"), R"("\u001b[2J")");
}

TEST(JsonStringTest, WellFormedUtf8PassesThrough) {
  EXPECT_EQ(Quoted("Küche"), "\"Küche\"");
  EXPECT_EQ(Quoted("温度"), "\"温度\"");
  EXPECT_EQ(Quoted("\xF0\x9F\x8C\xA1"), "\"\xF0\x9F\x8C\xA1\"");  // U+1F321
  EXPECT_EQ(Quoted("\xF4\x8F\xBF\xBF"), "\"\xF4\x8F\xBF\xBF\"");  // U+10FFFF
  EXPECT_EQ(Quoted("\xC2\x85"), "\"\xC2\x85\"");                  // U+0085 is legal raw JSON
}

TEST(JsonStringTest, IllFormedUtf8BecomesReplacementEscapes) {
  EXPECT_EQ(Quoted("a\xFFz"), R"("a\ufffdz")");
  EXPECT_EQ(Quoted("\x80"), R"("\ufffd")");
  // Overlong encodings of '/' and NUL.
  EXPECT_EQ(Quoted("\xC0\xAF"), R"("\ufffd\ufffd")");
  EXPECT_EQ(Quoted("\xE0\x80\xAF"), R"("\ufffd\ufffd\ufffd")");
  // A UTF-16 surrogate (U+D800) encoded directly.
  EXPECT_EQ(Quoted("\xED\xA0\x80"), R"("\ufffd\ufffd\ufffd")");
  // Above U+10FFFF.
  EXPECT_EQ(Quoted("\xF4\x90\x80\x80"), R"("\ufffd\ufffd\ufffd\ufffd")");
  // A truncated sequence is one replacement, and the next character survives.
  EXPECT_EQ(Quoted("\xE2\x82"
                   "A"),
            R"("\ufffdA")");
  EXPECT_EQ(Quoted("end\xF0\x9F\x8C"), R"("end\ufffd")");
}

TEST(JsonWriterTest, PlacesCommasAndColonsInNestedDocuments) {
  JsonWriter json;
  json.BeginObject();
  json.Key("a");
  json.Int(1);
  json.Key("list");
  json.BeginArray();
  json.Bool(true);
  json.Null();
  json.BeginObject();
  json.EndObject();
  json.BeginArray();
  json.EndArray();
  json.String("x");
  json.EndArray();
  json.Key("b");
  json.Uint(18446744073709551615u);
  json.EndObject();
  EXPECT_EQ(json.text(), R"({"a":1,"list":[true,null,{},[],"x"],"b":18446744073709551615})");
}

TEST(JsonWriterTest, KeysAreEscapedLikeStrings) {
  JsonWriter json;
  json.BeginObject();
  json.Key("we\"ird\n");
  json.String("v");
  json.EndObject();
  EXPECT_EQ(json.text(), R"({"we\"ird\n":"v"})");
}

TEST(JsonWriterTest, IntegersCoverTheInt64Range) {
  JsonWriter json;
  json.BeginArray();
  json.Int(std::numeric_limits<int64_t>::min());
  json.Int(std::numeric_limits<int64_t>::max());
  json.Int(0);
  json.EndArray();
  EXPECT_EQ(json.text(), "[-9223372036854775808,9223372036854775807,0]");
}

TEST(JsonWriterTest, DoublesRoundTripAndNonFiniteBecomeNull) {
  JsonWriter json;
  json.BeginArray();
  json.Double(0.1);
  json.Double(-1.5e300);
  json.Double(21.0);
  json.Double(5e-324);
  json.Double(std::nan(""));
  json.Double(std::numeric_limits<double>::infinity());
  json.Double(-std::numeric_limits<double>::infinity());
  json.EndArray();
  EXPECT_EQ(json.text(), "[0.1,-1.5e+300,21,5e-324,null,null,null]");
}

TEST(JsonWriterTest, TopLevelScalar) {
  JsonWriter json;
  json.String("only");
  EXPECT_EQ(json.text(), "\"only\"");
}

}  // namespace
}  // namespace cairn
