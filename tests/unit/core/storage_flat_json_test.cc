#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "storage/flat_json.h"

namespace cairn {
namespace {

std::string Quoted(std::string_view text) {
  std::string out;
  AppendJsonString(text, &out);
  return out;
}

TEST(FlatJsonTest, QuotesSpecialCharacters) {
  EXPECT_EQ(Quoted("plain"), "\"plain\"");
  EXPECT_EQ(Quoted("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(Quoted("line\nfeed\ttab\rcr"), "\"line\\nfeed\\ttab\\rcr\"");
  EXPECT_EQ(Quoted(std::string("\x01\x1f\0", 3)), "\"\\u0001\\u001f\\u0000\"");
  EXPECT_EQ(Quoted("grüße ✓"), "\"grüße ✓\"");
}

TEST(FlatJsonTest, ParsesMembersInOrder) {
  Result<std::vector<FlatJsonMember>> members = ParseFlatJsonObject(
      " {\"z\": 1, \"a\":\"x\" ,\"m\" : -9223372036854775808, \"n\": 9223372036854775807}\n");
  ASSERT_TRUE(members.ok()) << members.status().ToString();
  ASSERT_EQ(members->size(), 4u);
  EXPECT_EQ((*members)[0].key, "z");
  EXPECT_EQ(std::get<int64_t>((*members)[0].value), 1);
  EXPECT_EQ((*members)[1].key, "a");
  EXPECT_EQ(std::get<std::string>((*members)[1].value), "x");
  EXPECT_EQ(std::get<int64_t>((*members)[2].value), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(std::get<int64_t>((*members)[3].value), std::numeric_limits<int64_t>::max());
  Result<std::vector<FlatJsonMember>> empty = ParseFlatJsonObject("{}");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(FlatJsonTest, RoundTripsAnyBytes) {
  std::string key;
  for (int c = 1; c < 256; ++c) key.push_back(static_cast<char>(c));
  std::string value("nul\0inside", 10);
  std::string text = "{";
  AppendJsonString(key, &text);
  text += ":";
  AppendJsonString(value, &text);
  text += "}";
  Result<std::vector<FlatJsonMember>> members = ParseFlatJsonObject(text);
  ASSERT_TRUE(members.ok()) << members.status().ToString();
  ASSERT_EQ(members->size(), 1u);
  EXPECT_EQ((*members)[0].key, key);
  EXPECT_EQ(std::get<std::string>((*members)[0].value), value);
}

TEST(FlatJsonTest, DecodesEscapes) {
  Result<std::vector<FlatJsonMember>> members =
      ParseFlatJsonObject(R"({"e":"\"\\\/\b\f\n\r\t\u00fc\u2713\ud83d\ude00"})");
  ASSERT_TRUE(members.ok()) << members.status().ToString();
  EXPECT_EQ(std::get<std::string>((*members)[0].value), "\"\\/\b\f\n\r\tü✓\xF0\x9F\x98\x80");
}

TEST(FlatJsonTest, RejectsWhatItDoesNotStore) {
  for (const char* text : {"",
                           "[]",
                           "{",
                           "{\"a\"}",
                           "{\"a\":}",
                           "{\"a\":1,}",
                           "{\"a\":1.5}",
                           "{\"a\":1e3}",
                           "{\"a\":true}",
                           "{\"a\":null}",
                           "{\"a\":{}}",
                           "{\"a\":[1]}",
                           "{\"a\":1} x",
                           "{\"a\":\"unterminated}",
                           "{\"a\":\"\\x\"}",
                           "{\"a\":\"\\u12\"}",
                           "{\"a\":\"\\ud800\"}",
                           "{\"a\":\"\\udc00\"}",
                           "{\"a\":9223372036854775808}",
                           "{\"a\":-9223372036854775809}",
                           "{\"a\":-}",
                           "{a:1}",
                           "{\"a\":\"raw\ttab\"}"}) {
    Result<std::vector<FlatJsonMember>> members = ParseFlatJsonObject(text);
    EXPECT_TRUE(members.status().Is(StatusCode::kCorruption)) << "accepted: " << text;
  }
}

}  // namespace
}  // namespace cairn
