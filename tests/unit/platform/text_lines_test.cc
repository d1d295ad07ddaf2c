#include "cairn/platform/text_lines.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace cairn {
namespace {

std::vector<std::string> Lines(std::string_view text) {
  std::vector<std::string> lines;
  TextLines cursor(text);
  std::string_view line;
  while (cursor.Next(&line)) lines.emplace_back(line);
  return lines;
}

using List = std::vector<std::string>;

TEST(TextLinesTest, SplitsOnNewlinesKeepingEmptyLines) {
  EXPECT_EQ(Lines("a\n\nb\n"), (List{"a", "", "b"}));
  EXPECT_EQ(Lines("\n"), (List{""}));
  EXPECT_EQ(Lines(""), List{});
}

TEST(TextLinesTest, ALastLineWithoutNewlineCounts) { EXPECT_EQ(Lines("a\nlast"), (List{"a", "last"})); }

TEST(TextLinesTest, CrlfReadsLikeLfButOtherCarriageReturnsStay) {
  EXPECT_EQ(Lines("a\r\nb\r\n"), (List{"a", "b"}));
  EXPECT_EQ(Lines("a\rb\n\r\r\n"), (List{"a\rb", "\r"}));
}

}  // namespace
}  // namespace cairn
