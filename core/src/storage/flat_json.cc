#include "storage/flat_json.h"

#include <limits>

#include "cairn/util/utf8.h"

namespace cairn {
namespace {

class FlatJsonParser {
 public:
  explicit FlatJsonParser(std::string_view text) : text_(text) {}

  Result<std::vector<FlatJsonMember>> Parse() {
    std::vector<FlatJsonMember> members;
    SkipWhitespace();
    if (!Consume('{')) return Error("expected '{'");
    SkipWhitespace();
    if (!Consume('}')) {
      for (;;) {
        FlatJsonMember member;
        SkipWhitespace();
        CAIRN_ASSIGN_OR_RETURN(member.key, ParseString());
        SkipWhitespace();
        if (!Consume(':')) return Error("expected ':'");
        SkipWhitespace();
        if (Peek() == '"') {
          CAIRN_ASSIGN_OR_RETURN(std::string value, ParseString());
          member.value = std::move(value);
        } else {
          CAIRN_ASSIGN_OR_RETURN(int64_t value, ParseInteger());
          member.value = value;
        }
        members.push_back(std::move(member));
        SkipWhitespace();
        if (Consume('}')) break;
        if (!Consume(',')) return Error("expected ',' or '}'");
      }
    }
    SkipWhitespace();
    if (position_ != text_.size()) return Error("unexpected bytes after the object");
    return members;
  }

 private:
  char Peek() const { return position_ < text_.size() ? text_[position_] : '\0'; }

  bool Consume(char expected) {
    if (position_ < text_.size() && text_[position_] == expected) {
      ++position_;
      return true;
    }
    return false;
  }

  void SkipWhitespace() {
    while (position_ < text_.size() && (text_[position_] == ' ' || text_[position_] == '\t' ||
                                        text_[position_] == '\n' || text_[position_] == '\r')) {
      ++position_;
    }
  }

  Status Error(std::string_view what) const {
    return Status::Corruption("JSON object at offset " + std::to_string(position_) + ": " +
                              std::string(what));
  }

  Result<uint32_t> ParseHex4() {
    if (text_.size() - position_ < 4) return Error("truncated \\u escape");
    uint32_t value = 0;
    size_t bad_at = 0;
    const bool parsed = util::ParseJsonHex4(text_.substr(position_), &value, &bad_at);
    position_ += parsed ? 4 : bad_at + 1;
    if (!parsed) return Error("bad hex digit in \\u escape");
    return value;
  }

  Result<std::string> ParseString() {
    if (!Consume('"')) return Error("expected a string");
    std::string out;
    for (;;) {
      if (position_ >= text_.size()) return Error("unterminated string");
      char c = text_[position_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) return Error("raw control character in string");
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (position_ >= text_.size()) return Error("unterminated escape");
      char escape = text_[position_++];
      switch (escape) {
        case '"':
          out.push_back('"');
          break;
        case '\\':
          out.push_back('\\');
          break;
        case '/':
          out.push_back('/');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'u': {
          CAIRN_ASSIGN_OR_RETURN(uint32_t unit, ParseHex4());
          if (util::IsLowSurrogate(unit)) return Error("lone low surrogate");
          if (util::IsHighSurrogate(unit)) {
            if (!Consume('\\') || !Consume('u')) return Error("high surrogate without its pair");
            CAIRN_ASSIGN_OR_RETURN(uint32_t low, ParseHex4());
            if (!util::IsLowSurrogate(low)) return Error("high surrogate without its pair");
            unit = util::CombineSurrogates(unit, low);
          }
          util::AppendUtf8(&out, unit);
          break;
        }
        default:
          return Error("unknown escape");
      }
    }
  }

  Result<int64_t> ParseInteger() {
    bool negative = Consume('-');
    size_t digits_start = position_;
    // Accumulated as a negative number so that INT64_MIN fits.
    int64_t value = 0;
    while (position_ < text_.size() && text_[position_] >= '0' && text_[position_] <= '9') {
      int digit = text_[position_] - '0';
      if (value < (std::numeric_limits<int64_t>::min() + digit) / 10) return Error("integer out of range");
      value = value * 10 - digit;
      ++position_;
    }
    if (position_ == digits_start) return Error("expected a string or an integer");
    if (Peek() == '.' || Peek() == 'e' || Peek() == 'E') return Error("expected an integer");
    if (!negative) {
      if (value == std::numeric_limits<int64_t>::min()) return Error("integer out of range");
      return -value;
    }
    return value;
  }

  std::string_view text_;
  size_t position_ = 0;
};

}  // namespace

Result<std::vector<FlatJsonMember>> ParseFlatJsonObject(std::string_view text) {
  return FlatJsonParser(text).Parse();
}

}  // namespace cairn
