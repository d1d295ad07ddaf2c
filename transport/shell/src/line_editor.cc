#include "cairn/shell/line_editor.h"

#include <cassert>

#include "cairn/text/utf8.h"

namespace cairn {

namespace {

constexpr char kCtrlC = 0x03;
constexpr char kBackspace = 0x08;
constexpr char kCtrlU = 0x15;
constexpr char kEscape = 0x1b;
constexpr char kDelete = 0x7f;

// Longest control sequence the editor waits out; terminals send far shorter
// ones, so anything longer is noise and editing resumes.
constexpr size_t kMaxEscapeSequenceBytes = 32;

}  // namespace

LineEditor::LineEditor(size_t max_line_bytes) : max_line_bytes_(max_line_bytes) {
  assert(max_line_bytes > 0);
}

std::optional<LineEvent> LineEditor::Feed(char byte, std::string* echo) {
  const auto b = static_cast<unsigned char>(byte);
  const bool swallow_line_feed = after_carriage_return_ && byte == '\n';
  after_carriage_return_ = byte == '\r';
  if (swallow_line_feed) return std::nullopt;

  switch (escape_) {
    case EscapeState::kNone:
      break;
    case EscapeState::kEscape:
      escape_ = byte == '['   ? EscapeState::kControlSequence
                : byte == 'O' ? EscapeState::kSingleShift
                              : EscapeState::kNone;
      escape_length_ = 2;
      if (b < 0x20) break;  // a control character still acts (Enter, Ctrl-C, ESC)
      return std::nullopt;
    case EscapeState::kSingleShift:
      escape_ = EscapeState::kNone;
      return std::nullopt;
    case EscapeState::kControlSequence:
      // Parameter and intermediate bytes are 0x20-0x3f; a final byte
      // 0x40-0x7e ends the sequence; anything else aborts it.
      ++escape_length_;
      if (b >= 0x20 && b <= 0x3f && escape_length_ < kMaxEscapeSequenceBytes) return std::nullopt;
      escape_ = EscapeState::kNone;
      if (b >= 0x40 && b <= 0x7e) return std::nullopt;
      if (b < 0x20) break;  // a control character still acts (Enter, Ctrl-C)
      return std::nullopt;
  }

  switch (byte) {
    case '\r':
    case '\n':
      *echo += "\r\n";
      return TakeLine(overlong_ ? LineEvent::Kind::kOverlong : LineEvent::Kind::kLine);
    case kCtrlC:
      *echo += "^C\r\n";
      return TakeLine(LineEvent::Kind::kCancelled);
    case kBackspace:
    case kDelete:
      EraseLastCharacter(echo);
      return std::nullopt;
    case kCtrlU:
      while (!line_.empty()) EraseLastCharacter(echo);
      return std::nullopt;
    case kEscape:
      escape_ = EscapeState::kEscape;
      return std::nullopt;
    case '\t':
      Append(' ', echo);
      return std::nullopt;
    default:
      break;
  }
  if (b < 0x20) return std::nullopt;
  Append(byte, echo);
  return std::nullopt;
}

void LineEditor::Append(char byte, std::string* echo) {
  if (line_.size() >= max_line_bytes_) {
    overlong_ = true;
    return;
  }
  line_.push_back(byte);
  echo->push_back(byte);
}

void LineEditor::EraseLastCharacter(std::string* echo) {
  if (line_.empty()) return;
  // The last character starts at the nearest lead byte within the last four
  // bytes, if a well-formed sequence from there reaches exactly the end;
  // otherwise the last byte is a stray and goes alone.
  size_t erase = 1;
  const size_t lookback = line_.size() < 4 ? line_.size() : 4;
  for (size_t back = 1; back <= lookback; ++back) {
    const size_t start = line_.size() - back;
    const auto byte = static_cast<unsigned char>(line_[start]);
    if ((byte & 0xC0) == 0x80) continue;
    const shell::Utf8Unit unit = shell::DecodeUtf8(line_, start);
    if (unit.valid && unit.length == back) erase = back;
    break;
  }
  line_.resize(line_.size() - erase);
  *echo += "\b \b";
}

LineEvent LineEditor::TakeLine(LineEvent::Kind kind) {
  LineEvent event;
  event.kind = kind;
  if (kind == LineEvent::Kind::kLine) event.line = std::move(line_);
  line_.clear();
  overlong_ = false;
  escape_ = EscapeState::kNone;
  return event;
}

}  // namespace cairn
