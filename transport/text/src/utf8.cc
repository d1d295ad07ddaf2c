#include "cairn/text/utf8.h"

#include <cstdio>

namespace cairn::shell {

namespace {

bool IsContinuation(unsigned char byte) { return (byte & 0xC0) == 0x80; }

}  // namespace

std::string MakeTerminalSafe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const Utf8Unit unit = DecodeUtf8(text, pos);
    pos += unit.length;
    if (!unit.valid) {
      out += kReplacementCharacter;
      continue;
    }
    const uint32_t c = unit.code_point;
    char escape[8];
    switch (c) {
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      default:
        break;
    }
    if (c < 0x20 || c == 0x7F) {
      std::snprintf(escape, sizeof(escape), "\\x%02x", static_cast<unsigned>(c));
      out += escape;
    } else if (c >= 0x80 && c <= 0x9F) {
      std::snprintf(escape, sizeof(escape), "\\u%04x", static_cast<unsigned>(c));
      out += escape;
    } else {
      AppendUtf8(&out, c);
    }
  }
  return out;
}

size_t CountCodePoints(std::string_view text) {
  size_t count = 0;
  for (char c : text) {
    if (!IsContinuation(static_cast<unsigned char>(c))) ++count;
  }
  return count;
}

}  // namespace cairn::shell
