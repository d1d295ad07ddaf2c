// UTF-8 decoding and encoding, the one implementation every layer uses
// (record validation, the line protocol, MQTT topics, the shell's JSON and
// text output, the JSON parsers).
//
// Well-formed means Unicode's table of well-formed byte sequences (RFC 3629):
// no overlong forms, no surrogates (U+D800..U+DFFF), nothing above U+10FFFF,
// no truncated sequence.
//
// Ill-formed input is reported the way Unicode recommends ("maximal subpart"):
// each maximal prefix of a would-be sequence that cannot be completed counts
// as one invalid unit, so "\xE2\x82" followed by "A" is one invalid unit of two
// bytes and then "A", never two invalid units nor a swallowed "A".
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace cairn::util {

// The outcome of decoding at one position.
struct Utf8Unit {
  uint32_t code_point = 0;  // meaningful only when valid
  size_t length = 1;        // bytes consumed, always >= 1 for a non-empty input
  bool valid = false;
};

// Decodes the unit starting at `text[pos]`: a valid code point and its length,
// or an invalid unit whose length is the maximal subpart described above.
// Precondition: pos < text.size().
Utf8Unit DecodeUtf8(std::string_view text, size_t pos);

// True if all of `text` is well-formed UTF-8 (the empty string is).
bool IsValidUtf8(std::string_view text);

// Appends `code_point` encoded as UTF-8 (1 to 4 bytes).
// Precondition: code_point <= 0x10FFFF and is not a surrogate.
void AppendUtf8(std::string* out, uint32_t code_point);

// The UTF-8 encoding of U+FFFD REPLACEMENT CHARACTER.
inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

}  // namespace cairn::util
