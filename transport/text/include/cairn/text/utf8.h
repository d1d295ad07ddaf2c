// UTF-8 decoding and terminal-safe text, shared by the JSON writer, the text
// renderer and the serial line editor.
//
// Ill-formed input is handled the way Unicode recommends ("maximal subpart"
// substitution): each maximal prefix of a would-be sequence that cannot be
// completed counts as one invalid unit, so "\xE2\x82" followed by "A" is one
// U+FFFD and then "A", never two replacements nor a swallowed "A".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace cairn::shell {

// The outcome of decoding at one position.
struct Utf8Unit {
  uint32_t code_point = 0;  // meaningful only when valid
  size_t length = 1;        // bytes consumed, always >= 1 for a non-empty input
  bool valid = false;
};

// Decodes the unit starting at `text[pos]`. Precondition: pos < text.size().
Utf8Unit DecodeUtf8(std::string_view text, size_t pos);

// Appends `code_point` (<= 0x10FFFF, not a surrogate) encoded as UTF-8.
void AppendUtf8(std::string* out, uint32_t code_point);

// The UTF-8 encoding of U+FFFD REPLACEMENT CHARACTER.
inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

// Copies `text` so that printing it on a terminal shows it instead of acting
// on it: C0 and C1 control characters and DEL become visible escapes ("\n",
// "\t", "\x1b", "\u0085"), ill-formed UTF-8 becomes U+FFFD; everything else,
// including backslashes, is kept.
std::string MakeTerminalSafe(std::string_view text);

// Number of code points in well-formed UTF-8 `text`: the width in terminal
// columns for the text cairn prints (no East Asian wide characters are
// treated specially).
size_t CountCodePoints(std::string_view text);

}  // namespace cairn::shell
