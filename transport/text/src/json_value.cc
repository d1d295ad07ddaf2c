#include "cairn/text/json_value.h"

#include <charconv>
#include <cmath>

#include "cairn/util/json_escape.h"
#include "cairn/util/utf8.h"

namespace cairn {

// Recursive-descent parser over RFC 8259 JSON.
class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : text_(text) {}

  Result<JsonValue> ParseDocument() {
    SkipWhitespace();
    JsonValue value;
    CAIRN_RETURN_IF_ERROR(ParseValue(0, &value));
    SkipWhitespace();
    if (position_ != text_.size()) return Error("trailing characters after the value");
    return value;
  }

 private:
  static constexpr int kMaxDepth = 64;

  Status Error(std::string_view what) const {
    return Status::InvalidArgument("JSON offset " + std::to_string(position_) + ": " + std::string(what));
  }

  void SkipWhitespace() {
    while (position_ < text_.size() && (text_[position_] == ' ' || text_[position_] == '\t' ||
                                        text_[position_] == '\n' || text_[position_] == '\r')) {
      ++position_;
    }
  }

  bool ConsumeLiteral(std::string_view literal) {
    if (text_.substr(position_, literal.size()) != literal) return false;
    position_ += literal.size();
    return true;
  }

  Status ParseValue(int depth, JsonValue* out) {
    if (depth > kMaxDepth) return Error("nesting deeper than 64 levels");
    if (position_ >= text_.size()) return Error("unexpected end of input");
    const char c = text_[position_];
    if (c == '{') return ParseObject(depth, out);
    if (c == '[') return ParseArray(depth, out);
    if (c == '"') {
      std::string text;
      CAIRN_RETURN_IF_ERROR(ParseString(&text));
      *out = JsonValue::String(std::move(text));
      return Status::Ok();
    }
    if (ConsumeLiteral("true")) {
      *out = JsonValue::Bool(true);
      return Status::Ok();
    }
    if (ConsumeLiteral("false")) {
      *out = JsonValue::Bool(false);
      return Status::Ok();
    }
    if (ConsumeLiteral("null")) {
      *out = JsonValue();
      return Status::Ok();
    }
    return ParseNumber(out);
  }

  Status ParseObject(int depth, JsonValue* out) {
    ++position_;  // '{'
    JsonValue object = JsonValue::Object();
    SkipWhitespace();
    if (position_ < text_.size() && text_[position_] == '}') {
      ++position_;
      *out = std::move(object);
      return Status::Ok();
    }
    while (true) {
      SkipWhitespace();
      if (position_ >= text_.size() || text_[position_] != '"') return Error("expected a member name");
      std::string key;
      CAIRN_RETURN_IF_ERROR(ParseString(&key));
      SkipWhitespace();
      if (position_ >= text_.size() || text_[position_] != ':') return Error("expected ':'");
      ++position_;
      SkipWhitespace();
      JsonValue member;
      CAIRN_RETURN_IF_ERROR(ParseValue(depth + 1, &member));
      if (object.Find(key) != nullptr) return Error("duplicate member \"" + key + "\"");
      object.Set(key, std::move(member));
      SkipWhitespace();
      if (position_ >= text_.size()) return Error("unterminated object");
      if (text_[position_] == ',') {
        ++position_;
        continue;
      }
      if (text_[position_] == '}') {
        ++position_;
        *out = std::move(object);
        return Status::Ok();
      }
      return Error("expected ',' or '}'");
    }
  }

  Status ParseArray(int depth, JsonValue* out) {
    ++position_;  // '['
    JsonValue array = JsonValue::Array();
    SkipWhitespace();
    if (position_ < text_.size() && text_[position_] == ']') {
      ++position_;
      *out = std::move(array);
      return Status::Ok();
    }
    while (true) {
      SkipWhitespace();
      JsonValue element;
      CAIRN_RETURN_IF_ERROR(ParseValue(depth + 1, &element));
      array.Append(std::move(element));
      SkipWhitespace();
      if (position_ >= text_.size()) return Error("unterminated array");
      if (text_[position_] == ',') {
        ++position_;
        continue;
      }
      if (text_[position_] == ']') {
        ++position_;
        *out = std::move(array);
        return Status::Ok();
      }
      return Error("expected ',' or ']'");
    }
  }

  Status ParseHex4(uint32_t* out) {
    if (text_.size() - position_ < 4) return Error("truncated \\u escape");
    size_t bad_at = 0;
    const bool parsed = util::ParseJsonHex4(text_.substr(position_), out, &bad_at);
    position_ += parsed ? 4 : bad_at + 1;
    if (!parsed) return Error("bad hex digit in \\u escape");
    return Status::Ok();
  }

  Status ParseString(std::string* out) {
    ++position_;  // opening quote
    while (true) {
      if (position_ >= text_.size()) return Error("unterminated string");
      const char c = text_[position_++];
      if (c == '"') return Status::Ok();
      if (static_cast<unsigned char>(c) < 0x20) return Error("control character in string");
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (position_ >= text_.size()) return Error("unterminated escape");
      const char escape = text_[position_++];
      switch (escape) {
        case '"':
          out->push_back('"');
          break;
        case '\\':
          out->push_back('\\');
          break;
        case '/':
          out->push_back('/');
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'u': {
          uint32_t code_point = 0;
          CAIRN_RETURN_IF_ERROR(ParseHex4(&code_point));
          if (util::IsLowSurrogate(code_point)) return Error("lone low surrogate");
          if (util::IsHighSurrogate(code_point)) {
            if (!ConsumeLiteral("\\u")) return Error("high surrogate without its low half");
            uint32_t low = 0;
            CAIRN_RETURN_IF_ERROR(ParseHex4(&low));
            if (!util::IsLowSurrogate(low)) return Error("high surrogate without its low half");
            code_point = util::CombineSurrogates(code_point, low);
          }
          util::AppendUtf8(out, code_point);
          break;
        }
        default:
          return Error("unknown escape");
      }
    }
  }

  Status ParseNumber(JsonValue* out) {
    const size_t start = position_;
    auto digits = [this] {
      size_t count = 0;
      while (position_ < text_.size() && text_[position_] >= '0' && text_[position_] <= '9') {
        ++position_;
        ++count;
      }
      return count;
    };
    if (position_ < text_.size() && text_[position_] == '-') ++position_;
    const size_t integer_start = position_;
    const size_t integer_digits = digits();
    if (integer_digits == 0) return Error("expected a value");
    if (integer_digits > 1 && text_[integer_start] == '0') return Error("leading zero in number");
    if (position_ < text_.size() && text_[position_] == '.') {
      ++position_;
      if (digits() == 0) return Error("expected digits after '.'");
    }
    if (position_ < text_.size() && (text_[position_] == 'e' || text_[position_] == 'E')) {
      ++position_;
      if (position_ < text_.size() && (text_[position_] == '+' || text_[position_] == '-')) ++position_;
      if (digits() == 0) return Error("expected exponent digits");
    }
    const std::string_view literal = text_.substr(start, position_ - start);
    double value = 0;
    const auto [end, error] = std::from_chars(literal.data(), literal.data() + literal.size(), value);
    if (error != std::errc() || end != literal.data() + literal.size() || !std::isfinite(value)) {
      return Error("number out of range");
    }
    *out = JsonValue::Number(value);
    out->text_ = std::string(literal);
    return Status::Ok();
  }

  std::string_view text_;
  size_t position_ = 0;
};

JsonValue JsonValue::Bool(bool value) {
  JsonValue v;
  v.kind_ = Kind::kBool;
  v.boolean_ = value;
  return v;
}

JsonValue JsonValue::Number(double value) {
  JsonValue v;
  if (!std::isfinite(value)) return v;
  v.kind_ = Kind::kNumber;
  v.number_ = value;
  // Whole numbers print as integers ("2000000", not "2e+06") for readers.
  if (std::trunc(value) == value && std::fabs(value) < 1e15) {
    v.text_ = std::to_string(static_cast<int64_t>(value));
    return v;
  }
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  v.text_.assign(buffer, result.ptr);
  return v;
}

JsonValue JsonValue::Integer(int64_t value) {
  JsonValue v;
  v.kind_ = Kind::kNumber;
  v.number_ = static_cast<double>(value);
  v.text_ = std::to_string(value);
  return v;
}

JsonValue JsonValue::Unsigned(uint64_t value) {
  JsonValue v;
  v.kind_ = Kind::kNumber;
  v.number_ = static_cast<double>(value);
  v.text_ = std::to_string(value);
  return v;
}

JsonValue JsonValue::String(std::string value) {
  JsonValue v;
  v.kind_ = Kind::kString;
  v.text_ = std::move(value);
  return v;
}

JsonValue JsonValue::Array() {
  JsonValue v;
  v.kind_ = Kind::kArray;
  return v;
}

JsonValue JsonValue::Object() {
  JsonValue v;
  v.kind_ = Kind::kObject;
  return v;
}

const JsonValue* JsonValue::Find(std::string_view key) const {
  for (const auto& [name, value] : members_) {
    if (name == key) return &value;
  }
  return nullptr;
}

JsonValue& JsonValue::Set(std::string_view key, JsonValue value) {
  for (auto& [name, existing] : members_) {
    if (name == key) {
      existing = std::move(value);
      return *this;
    }
  }
  members_.emplace_back(std::string(key), std::move(value));
  return *this;
}

JsonValue& JsonValue::Append(JsonValue value) {
  elements_.push_back(std::move(value));
  return *this;
}

std::string JsonValue::Serialize() const {
  std::string out;
  SerializeTo(&out);
  return out;
}

void JsonValue::SerializeTo(std::string* out) const {
  switch (kind_) {
    case Kind::kNull:
      out->append("null");
      break;
    case Kind::kBool:
      out->append(boolean_ ? "true" : "false");
      break;
    case Kind::kNumber:
      out->append(text_);
      break;
    case Kind::kString:
      util::AppendJsonString(text_, out);
      break;
    case Kind::kArray: {
      out->push_back('[');
      for (size_t i = 0; i < elements_.size(); ++i) {
        if (i > 0) out->push_back(',');
        elements_[i].SerializeTo(out);
      }
      out->push_back(']');
      break;
    }
    case Kind::kObject: {
      out->push_back('{');
      for (size_t i = 0; i < members_.size(); ++i) {
        if (i > 0) out->push_back(',');
        util::AppendJsonString(members_[i].first, out);
        out->push_back(':');
        members_[i].second.SerializeTo(out);
      }
      out->push_back('}');
      break;
    }
  }
}

Result<JsonValue> JsonValue::Parse(std::string_view text) { return JsonParser(text).ParseDocument(); }

}  // namespace cairn
