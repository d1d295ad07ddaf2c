// LineEditor: the line discipline of the serial shell, without any I/O.
//
// A serial port in raw mode delivers keystrokes one byte at a time; the
// editor turns them into complete lines and says what to echo so the person
// at the terminal sees what they type:
//   - printable bytes (UTF-8 included) are appended and echoed;
//   - CR, LF and CRLF each end a line once (the LF of a CRLF pair is
//     swallowed, even when it arrives in a later read); the echo is "\r\n";
//   - backspace (0x08) and DEL (0x7f) erase one UTF-8 character, echoing
//     "\b \b"; Ctrl-U erases the whole line;
//   - Ctrl-C abandons the line (echo "^C\r\n");
//   - tab is taken as a space; ESC sequences (arrow and function keys: CSI
//     and SS3 forms) are swallowed whole, ESC followed by any other
//     printable byte drops both (Alt-key chords); every other control
//     character, Ctrl-D included, is
//     ignored: the console is permanent, there is no session to end;
//   - a line is capped at `max_line_bytes`; bytes past the cap are neither
//     stored nor echoed, and Enter then reports kOverlong instead of handing
//     out a line that is not what was typed.
//
// Thread-safety: not thread-safe; one editor per session.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace cairn {

// What a keystroke completed.
struct LineEvent {
  enum class Kind : uint8_t {
    kLine,       // Enter on a line within the cap; `line` holds it (may be empty)
    kOverlong,   // Enter on a line that went past the cap; the line is dropped
    kCancelled,  // Ctrl-C; the line is dropped
  };
  Kind kind = Kind::kLine;
  std::string line;
};

class LineEditor {
 public:
  // Precondition: max_line_bytes > 0.
  explicit LineEditor(size_t max_line_bytes);

  // Takes one input byte. Appends what must be written back to the terminal
  // to `echo`, and returns an event when the byte ended the line (the editor
  // is then empty again).
  std::optional<LineEvent> Feed(char byte, std::string* echo);

  // The line typed so far.
  const std::string& line() const { return line_; }
  size_t max_line_bytes() const { return max_line_bytes_; }

 private:
  enum class EscapeState : uint8_t { kNone, kEscape, kControlSequence, kSingleShift };

  void Append(char byte, std::string* echo);
  void EraseLastCharacter(std::string* echo);
  LineEvent TakeLine(LineEvent::Kind kind);

  const size_t max_line_bytes_;
  std::string line_;
  bool overlong_ = false;
  bool after_carriage_return_ = false;
  EscapeState escape_ = EscapeState::kNone;
  size_t escape_length_ = 0;
};

}  // namespace cairn
