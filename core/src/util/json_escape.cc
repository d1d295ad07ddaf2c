#include "cairn/util/json_escape.h"

#include "cairn/util/hex.h"
#include "cairn/util/utf8.h"

namespace cairn::util {

namespace {

constexpr char kDigits[] = "0123456789abcdef";

void AppendUnicodeEscape(uint32_t code_unit, std::string* out) {
  out->append("\\u");
  for (int shift = 12; shift >= 0; shift -= 4) out->push_back(kDigits[(code_unit >> shift) & 0xF]);
}

// The short escapes both forms use, or nullptr for any other character.
const char* ShortEscape(uint32_t c) {
  switch (c) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default:
      return nullptr;
  }
}

}  // namespace

void AppendJsonString(std::string_view text, std::string* out) {
  out->push_back('"');
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (const char* escape = ShortEscape(byte)) {
      out->append(escape);
    } else if (byte < 0x20) {
      AppendUnicodeEscape(byte, out);
    } else {
      out->push_back(c);
    }
  }
  out->push_back('"');
}

void AppendJsonStringForDisplay(std::string_view text, std::string* out) {
  out->push_back('"');
  size_t pos = 0;
  while (pos < text.size()) {
    // Printable ASCII other than the quote and the backslash stands for
    // itself: copy such runs whole (names, tags and most values are all of
    // it), and decode only where something else begins.
    size_t plain = pos;
    while (plain < text.size()) {
      const auto byte = static_cast<unsigned char>(text[plain]);
      if (byte < 0x20 || byte >= 0x7F || byte == '"' || byte == '\\') break;
      ++plain;
    }
    out->append(text.data() + pos, plain - pos);
    pos = plain;
    if (pos == text.size()) break;
    const Utf8Unit unit = DecodeUtf8(text, pos);
    const uint32_t c = unit.code_point;
    if (!unit.valid) {
      out->append("\\ufffd");
    } else if (c == '\b') {
      out->append("\\b");
    } else if (c == '\f') {
      out->append("\\f");
    } else if (const char* escape = ShortEscape(c)) {
      out->append(escape);
    } else if (c < 0x20 || c == 0x7F) {
      // DEL is legal raw JSON, but escaping it keeps the text inert on a
      // terminal, where the serial shell's JSON output is read.
      AppendUnicodeEscape(c, out);
    } else {
      out->append(text.substr(pos, unit.length));
    }
    pos += unit.length;
  }
  out->push_back('"');
}

bool ParseJsonHex4(std::string_view digits, uint32_t* code_unit, size_t* bad_at) {
  uint32_t value = 0;
  for (size_t i = 0; i < 4; ++i) {
    const int digit = HexDigitValue(digits[i]);
    if (digit < 0) {
      *bad_at = i;
      return false;
    }
    value = (value << 4) | static_cast<uint32_t>(digit);
  }
  *code_unit = value;
  return true;
}

}  // namespace cairn::util
