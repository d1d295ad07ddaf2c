#include "cairn/shell/line_editor.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace cairn {
namespace {

// Feeds `input` and collects every event and all echo.
struct Session {
  explicit Session(size_t max_line_bytes = 4096) : editor(max_line_bytes) {}

  void Type(std::string_view input) {
    for (char c : input) {
      if (std::optional<LineEvent> event = editor.Feed(c, &echo)) events.push_back(std::move(*event));
    }
  }

  std::vector<std::string> Lines() const {
    std::vector<std::string> lines;
    for (const LineEvent& event : events) {
      if (event.kind == LineEvent::Kind::kLine) lines.push_back(event.line);
    }
    return lines;
  }

  LineEditor editor;
  std::string echo;
  std::vector<LineEvent> events;
};

using Lines = std::vector<std::string>;

TEST(LineEditorTest, EchoesTypedTextAndEndsLinesOnCarriageReturn) {
  Session session;
  session.Type("help\r");
  EXPECT_EQ(session.Lines(), Lines{"help"});
  EXPECT_EQ(session.echo, "help\r\n");
  EXPECT_EQ(session.editor.line(), "");
}

TEST(LineEditorTest, CrLfAndLfEachEndOneLine) {
  Session session;
  session.Type("a\r\nb\nc\r\r\nd\n\n");
  EXPECT_EQ(session.Lines(), (Lines{"a", "b", "c", "", "d", ""}));
}

TEST(LineEditorTest, LineFeedOfACrLfPairIsSwallowedAcrossFeeds) {
  Session session;
  session.Type("x\r");
  session.Type("\ny\r");
  EXPECT_EQ(session.Lines(), (Lines{"x", "y"}));
}

TEST(LineEditorTest, BackspaceAndDeleteEraseOneCharacter) {
  Session session;
  session.Type("vers\x7fsion\r");
  EXPECT_EQ(session.Lines(), Lines{"version"});
  EXPECT_EQ(session.echo, "vers\b \bsion\r\n");

  Session other;
  other.Type("ab\b\bhelp\r");
  EXPECT_EQ(other.Lines(), Lines{"help"});
}

TEST(LineEditorTest, BackspaceErasesAWholeUtf8Character) {
  Session session;
  session.Type("a\xC3\xBC");  // "aü"
  session.Type("\x7f");       // erases ü (2 bytes)
  EXPECT_EQ(session.editor.line(), "a");
  session.Type("\xF0\x9F\x8C\xA1\x7f");  // a 4-byte character, erased at once
  EXPECT_EQ(session.editor.line(), "a");
  session.Type("\xE6\xB8\xA9\x7f\x7f\x7f");  // one 3-byte character, then 'a', then nothing
  EXPECT_EQ(session.editor.line(), "");
  EXPECT_EQ(session.echo, "a\xC3\xBC\b \b\xF0\x9F\x8C\xA1\b \b\xE6\xB8\xA9\b \b\b \b");
}

TEST(LineEditorTest, BackspaceErasesStrayBytesOneByOne) {
  Session session;
  session.Type("a\x80\x80");
  session.Type("\x7f");
  EXPECT_EQ(session.editor.line(), "a\x80");
  session.Type("b\xC3");  // an incomplete character at the end
  session.Type("\x7f");
  EXPECT_EQ(session.editor.line(),
            "a\x80"
            "b");
}

TEST(LineEditorTest, CtrlCAbandonsTheLine) {
  Session session;
  session.Type("rang\x03version\r");
  ASSERT_EQ(session.events.size(), 2u);
  EXPECT_EQ(session.events[0].kind, LineEvent::Kind::kCancelled);
  EXPECT_EQ(session.events[0].line, "");
  EXPECT_EQ(session.Lines(), Lines{"version"});
  EXPECT_EQ(session.echo, "rang^C\r\nversion\r\n");
}

TEST(LineEditorTest, CtrlUErasesTheWholeLine) {
  Session session;
  session.Type("ab\xC3\xBC\x15help\r");
  EXPECT_EQ(session.Lines(), Lines{"help"});
  EXPECT_EQ(session.echo, "ab\xC3\xBC\b \b\b \b\b \bhelp\r\n");
}

TEST(LineEditorTest, OtherControlCharactersAreIgnoredAndTabIsASpace) {
  Session session;
  session.Type(std::string("\x04he\x00lp\x01\x07\tx\r", 11));
  EXPECT_EQ(session.Lines(), Lines{"help x"});
  EXPECT_EQ(session.echo, "help x\r\n");
}

TEST(LineEditorTest, CtrlDOnAnEmptyLineIsIgnored) {
  Session session;
  session.Type("\x04");
  EXPECT_TRUE(session.events.empty());
  EXPECT_EQ(session.echo, "");
}

TEST(LineEditorTest, EscapeSequencesAreSwallowedWhole) {
  Session session;
  // Up arrow (CSI A), Delete key (CSI 3 ~), F1 (SS3 P), an Alt-x chord.
  session.Type("he\x1b[A\x1b[3~\x1bOP\x1bxlp\r");
  EXPECT_EQ(session.Lines(), Lines{"help"});
  EXPECT_EQ(session.echo, "help\r\n");
}

TEST(LineEditorTest, EnterStillWorksRightAfterAnEscape) {
  Session session;
  session.Type("help\x1b\r");
  EXPECT_EQ(session.Lines(), Lines{"help"});
  Session csi;
  csi.Type("help\x1b[1\r");
  EXPECT_EQ(csi.Lines(), Lines{"help"});
}

TEST(LineEditorTest, LinesPastTheCapAreRefusedAtEnter) {
  Session session(8);
  session.Type("12345678");
  EXPECT_TRUE(session.events.empty());
  session.Type("9ab");
  EXPECT_EQ(session.editor.line(), "12345678");
  EXPECT_EQ(session.echo, "12345678");  // nothing past the cap is echoed
  session.Type("\r");
  ASSERT_EQ(session.events.size(), 1u);
  EXPECT_EQ(session.events[0].kind, LineEvent::Kind::kOverlong);
  EXPECT_EQ(session.events[0].line, "");

  // Erasing back under the cap does not make the mutilated line acceptable.
  session.Type("123456789\x7f\x7f\r");
  ASSERT_EQ(session.events.size(), 2u);
  EXPECT_EQ(session.events[1].kind, LineEvent::Kind::kOverlong);

  // The next line starts fresh.
  session.Type("12345678\r");
  EXPECT_EQ(session.Lines(), Lines{"12345678"});
}

}  // namespace
}  // namespace cairn
