// JSON string literals: writing text as a quoted JSON string, and the pieces
// of reading one back that the two JSON parsers (the flat objects of period
// files, the transport's JSON values) share.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cairn::util {

// Appends `text` as a quoted JSON string, keeping its bytes: '"' and '\\'
// are escaped, so are the C0 controls (\n, \r and \t by their short forms,
// the others as \u00XX); every other byte, DEL, U+2028 and ill-formed UTF-8
// included, is copied as it is. Well-formed UTF-8 in gives valid JSON out, and
// parsing that JSON gives back `text` exactly. The form stored in period
// files and answered by the ingest service; never change it.
void AppendJsonString(std::string_view text, std::string* out);

// Appends `text` as a quoted JSON string that is valid UTF-8 and inert on a
// terminal whatever `text` holds: '"', '\\' and \b \f \n \r \t by their
// short forms, the other C0 controls and DEL as \u00XX, each ill-formed UTF-8
// unit (see utf8.h) as \ufffd; well-formed characters, U+2028 and U+2029
// included (valid in JSON), are copied. The form of the shell's and the HTTP
// API's JSON output.
void AppendJsonStringForDisplay(std::string_view text, std::string* out);

// Reads the four hex digits (either case) of a \u escape, the first four
// characters of `digits`, into `*code_unit`. False if one is not a hex digit;
// `*bad_at` is then its index. Precondition: digits.size() >= 4.
bool ParseJsonHex4(std::string_view digits, uint32_t* code_unit, size_t* bad_at);

// The code point of a UTF-16 surrogate pair: `high` in D800..DBFF, `low` in
// DC00..DFFF.
inline uint32_t CombineSurrogates(uint32_t high, uint32_t low) {
  return 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
}

inline bool IsHighSurrogate(uint32_t unit) { return unit >= 0xD800 && unit <= 0xDBFF; }
inline bool IsLowSurrogate(uint32_t unit) { return unit >= 0xDC00 && unit <= 0xDFFF; }

}  // namespace cairn::util
