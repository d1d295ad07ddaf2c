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

}  // namespace

void AppendJsonString(std::string_view text, std::string* out) {
  out->push_back('"');
  for (char c : text) {
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          AppendUnicodeEscape(static_cast<unsigned char>(c), out);
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

void AppendJsonStringForDisplay(std::string_view text, std::string* out) {
  out->push_back('"');
  size_t pos = 0;
  while (pos < text.size()) {
    const Utf8Unit unit = DecodeUtf8(text, pos);
    if (!unit.valid) {
      out->append("\\ufffd");
      pos += unit.length;
      continue;
    }
    const uint32_t c = unit.code_point;
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        // DEL is legal raw JSON, but escaping it keeps the text inert on a
        // terminal, where the serial shell's JSON output is read.
        if (c < 0x20 || c == 0x7F) {
          AppendUnicodeEscape(c, out);
        } else {
          out->append(text.substr(pos, unit.length));
        }
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
