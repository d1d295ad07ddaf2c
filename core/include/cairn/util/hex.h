// Hexadecimal text for bytes: page tokens, MACs and keys in the sync
// envelope, keys in configuration files, percent escapes and JSON \u escapes.
//
// Encoding always writes lowercase digits; decoding accepts both cases unless
// the function says otherwise.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace cairn::util {

// The value of hex digit `c` (0-9, a-f, A-F), or -1 if `c` is not one.
int HexDigitValue(char c);

// True if every character of `text` is 0-9 or a-f (true for the empty text).
bool IsLowerHex(std::string_view text);

// Appends two lowercase hex digits per byte of `bytes` to `out`.
void AppendHex(std::string_view bytes, std::string* out);

// `bytes` as lowercase hex, two digits per byte.
std::string HexEncode(std::string_view bytes);
std::string HexEncode(std::span<const uint8_t> bytes);

// The bytes that `hex` spells, two digits (either case) per byte; nullopt if
// `hex` has an odd number of characters or a character that is not a digit.
std::optional<std::string> HexDecode(std::string_view hex);

}  // namespace cairn::util
