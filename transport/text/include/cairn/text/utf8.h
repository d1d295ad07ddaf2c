// Terminal-safe text for the text renderer and the serial line editor, over
// the UTF-8 decoding of cairn/util/utf8.h (ill-formed input is handled unit by
// unit as described there: "\xE2\x82" followed by "A" is one U+FFFD and then
// "A", never two replacements nor a swallowed "A").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cairn/util/utf8.h"

namespace cairn::shell {

using util::AppendUtf8;
using util::DecodeUtf8;
using util::kReplacementCharacter;
using util::Utf8Unit;

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
