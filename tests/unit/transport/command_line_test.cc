#include "cairn/shell/command_line.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace cairn {
namespace {

std::vector<std::string> Words(std::string_view line) {
  Result<std::vector<CommandToken>> tokens = TokenizeCommandLine(line);
  EXPECT_TRUE(tokens.ok()) << tokens.status().ToString();
  std::vector<std::string> words;
  if (!tokens.ok()) return words;
  for (const CommandToken& token : *tokens) words.push_back(token.text);
  return words;
}

using List = std::vector<std::string>;

TEST(TokenizeCommandLineTest, SplitsOnRunsOfWhitespace) {
  EXPECT_EQ(Words("  range  sensors\tdev-1 \r\n"), (List{"range", "sensors", "dev-1"}));
  EXPECT_EQ(Words(""), List{});
  EXPECT_EQ(Words(" \t "), List{});
}

TEST(TokenizeCommandLineTest, DoubleQuotesGroupWordsAndJoinNeighbours) {
  EXPECT_EQ(Words(R"(latest "living room" x)"), (List{"latest", "living room", "x"}));
  EXPECT_EQ(Words(R"(id="a b"c)"), (List{"id=a bc"}));
  EXPECT_EQ(Words(R"(put "" end)"), (List{"put", "", "end"}));
}

TEST(TokenizeCommandLineTest, InsideQuotesOnlyQuoteAndBackslashAreEscaped) {
  EXPECT_EQ(Words(R"("say \"hi\"")"), (List{R"(say "hi")"}));
  EXPECT_EQ(Words(R"("back\\slash")"), (List{R"(back\slash)"}));
  EXPECT_EQ(Words(R"("C:\data\n")"), (List{R"(C:\data\n)"}));
}

TEST(TokenizeCommandLineTest, BackslashOutsideQuotesMakesTheNextByteLiteral) {
  EXPECT_EQ(Words(R"(a\ b \"q\" \\)"), (List{"a b", "\"q\"", "\\"}));
}

TEST(TokenizeCommandLineTest, SingleQuotesAreOrdinaryCharacters) {
  EXPECT_EQ(Words("it's 'x y'"), (List{"it's", "'x", "y'"}));
}

TEST(TokenizeCommandLineTest, QuotedOrEscapedWordsAreMarkedLiteral) {
  Result<std::vector<CommandToken>> tokens = TokenizeCommandLine(R"(--json "--json" \--json --j"son")");
  ASSERT_TRUE(tokens.ok());
  ASSERT_EQ(tokens->size(), 4u);
  EXPECT_FALSE((*tokens)[0].literal);
  EXPECT_TRUE((*tokens)[1].literal);
  EXPECT_TRUE((*tokens)[2].literal);
  EXPECT_TRUE((*tokens)[3].literal);
  for (const CommandToken& token : *tokens) EXPECT_EQ(token.text, "--json");
}

TEST(TokenizeCommandLineTest, Utf8PassesThroughUntouched) {
  EXPECT_EQ(Words("put \"Küche 温度\" \xF0\x9F\x8C\xA1"), (List{"put", "Küche 温度", "\xF0\x9F\x8C\xA1"}));
}

TEST(TokenizeCommandLineTest, UnterminatedQuoteIsAnErrorNamingItsColumn) {
  Result<std::vector<CommandToken>> tokens = TokenizeCommandLine(R"(put "ü abc)");
  ASSERT_FALSE(tokens.ok());
  EXPECT_EQ(tokens.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(tokens.status().message(), "unterminated quote: the \" at column 5 is never closed");

  Result<std::vector<CommandToken>> escaped_close = TokenizeCommandLine(R"("abc\")");
  ASSERT_FALSE(escaped_close.ok());
  EXPECT_NE(escaped_close.status().message().find("unterminated quote"), std::string::npos);
}

TEST(TokenizeCommandLineTest, TrailingBackslashIsAnError) {
  Result<std::vector<CommandToken>> tokens = TokenizeCommandLine("help \\");
  ASSERT_FALSE(tokens.ok());
  EXPECT_EQ(tokens.status().message(), "line ends with a backslash (nothing left to escape)");
}

TEST(TokenizeCommandLineTest, NulBytesStayInsideWords) {
  const std::string line("a\0b c", 5);
  EXPECT_EQ(Words(line), (List{std::string("a\0b", 3), "c"}));
}

TEST(CommandWordTest, PlainWordsStayAsTheyAreOthersAreQuoted) {
  EXPECT_EQ(CommandWord("pump-7"), "pump-7");
  EXPECT_EQ(CommandWord("a b"), "\"a b\"");
  EXPECT_EQ(CommandWord(""), "\"\"");
  EXPECT_EQ(CommandWord("say \"hi\" \\o/"), "\"say \\\"hi\\\" \\\\o/\"");
  EXPECT_EQ(QuoteCommandWord("pump-7"), "\"pump-7\"");
}

TEST(CommandWordTest, EveryWordTokenizesBackToItself) {
  const List texts = {"plain", "", "a b", "tab\there", "\"", "\\", "end\\", "C:\\data",
                      "line\nbreak", std::string("nul\0byte", 8), "--json", "Zürich"};
  for (const std::string& text : texts) {
    EXPECT_EQ(Words("cmd " + CommandWord(text)), (List{"cmd", text})) << text;
    EXPECT_EQ(Words("cmd " + QuoteCommandWord(text)), (List{"cmd", text})) << text;
  }
}

}  // namespace
}  // namespace cairn
