// JsonValue: a small JSON document model. The HTTP API parses request
// bodies with it; the benchmark prints its report with it; tests parse
// cairn's JSON output with it. Parsing is bounded (64 levels of nesting) so
// that hostile input cannot exhaust the stack.
//
// Objects keep their members in insertion order so that the printed report
// reads in the order it was built. Numbers keep the literal they were built
// from or parsed as, so that 64-bit integers (digests, byte counts) survive a
// round trip exactly even though number() is a double.
//
// Thread-safety: a plain value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cairn/platform/status.h"

namespace cairn {

class JsonValue {
 public:
  enum class Kind : uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };

  JsonValue() = default;  // null
  static JsonValue Bool(bool value);
  // A finite double; NaN and infinities become null (JSON has no literal for them).
  static JsonValue Number(double value);
  static JsonValue Integer(int64_t value);
  static JsonValue Unsigned(uint64_t value);
  static JsonValue String(std::string value);
  static JsonValue Array();
  static JsonValue Object();

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool is_number() const { return kind_ == Kind::kNumber; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_object() const { return kind_ == Kind::kObject; }

  // Accessors: preconditions are the matching kind.
  bool boolean() const { return boolean_; }
  double number() const { return number_; }
  // The literal of a number, or the text of a string.
  const std::string& text() const { return text_; }
  const std::vector<JsonValue>& elements() const { return elements_; }
  const std::vector<std::pair<std::string, JsonValue>>& members() const { return members_; }

  // Object member `key`, or nullptr (also when this is not an object).
  const JsonValue* Find(std::string_view key) const;
  // Sets member `key` of an object, replacing an existing one in place.
  // Precondition: is_object(). Returns *this for chaining.
  JsonValue& Set(std::string_view key, JsonValue value);
  // Precondition: kind() == kArray.
  JsonValue& Append(JsonValue value);

  // Compact single-line JSON.
  std::string Serialize() const;

  // Parses exactly one JSON value (surrounding whitespace allowed).
  // InvalidArgument naming the offset on malformed input.
  static Result<JsonValue> Parse(std::string_view text);

 private:
  friend class JsonParser;

  void SerializeTo(std::string* out) const;

  Kind kind_ = Kind::kNull;
  bool boolean_ = false;
  double number_ = 0;
  std::string text_;
  std::vector<JsonValue> elements_;
  std::vector<std::pair<std::string, JsonValue>> members_;
};

}  // namespace cairn
