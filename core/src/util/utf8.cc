#include "cairn/util/utf8.h"

namespace cairn::util {

namespace {

bool IsContinuation(unsigned char byte) { return (byte & 0xC0) == 0x80; }

}  // namespace

Utf8Unit DecodeUtf8(std::string_view text, size_t pos) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  if (lead < 0x80) return Utf8Unit{lead, 1, true};

  // The ranges of Unicode's table of well-formed byte sequences: the lead
  // byte fixes the length and the allowed range of the second byte, which is
  // how overlong forms, surrogates and code points above U+10FFFF are refused.
  size_t length;
  unsigned char second_low = 0x80, second_high = 0xBF;
  uint32_t code_point;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    code_point = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    code_point = lead & 0x0F;
    if (lead == 0xE0) second_low = 0xA0;
    if (lead == 0xED) second_high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    code_point = lead & 0x07;
    if (lead == 0xF0) second_low = 0x90;
    if (lead == 0xF4) second_high = 0x8F;
  } else {
    return Utf8Unit{0, 1, false};
  }

  for (size_t i = 1; i < length; ++i) {
    if (pos + i >= text.size()) return Utf8Unit{0, i, false};
    const auto byte = static_cast<unsigned char>(text[pos + i]);
    const bool in_range = i == 1 ? (byte >= second_low && byte <= second_high) : IsContinuation(byte);
    if (!in_range) return Utf8Unit{0, i, false};
    code_point = (code_point << 6) | (byte & 0x3F);
  }
  return Utf8Unit{code_point, length, true};
}

bool IsValidUtf8(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const Utf8Unit unit = DecodeUtf8(text, pos);
    if (!unit.valid) return false;
    pos += unit.length;
  }
  return true;
}

void AppendUtf8(std::string* out, uint32_t code_point) {
  if (code_point < 0x80) {
    out->push_back(static_cast<char>(code_point));
  } else if (code_point < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (code_point >> 6)));
    out->push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else if (code_point < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (code_point >> 12)));
    out->push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (code_point >> 18)));
    out->push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  }
}

}  // namespace cairn::util
