#include "cairn/text/json_writer.h"

#include <cassert>
#include <charconv>
#include <cmath>

#include "cairn/text/utf8.h"
#include "cairn/util/json_escape.h"

namespace cairn {

void AppendJsonString(std::string* out, std::string_view value) {
  util::AppendJsonStringForDisplay(value, out);
}

void JsonWriter::BeforeValue() {
  if (scopes_.empty()) {
    assert(text_.empty() && "JsonWriter: more than one top-level value");
    return;
  }
  if (scopes_.back() == Scope::kObject) {
    assert(after_key_ && "JsonWriter: object member without Key()");
    after_key_ = false;
    return;
  }
  if (scope_has_items_.back()) text_.push_back(',');
  scope_has_items_.back() = true;
}

void JsonWriter::BeginObject() {
  BeforeValue();
  text_.push_back('{');
  scopes_.push_back(Scope::kObject);
  scope_has_items_.push_back(false);
}

void JsonWriter::EndObject() {
  assert(!scopes_.empty() && scopes_.back() == Scope::kObject && !after_key_);
  text_.push_back('}');
  scopes_.pop_back();
  scope_has_items_.pop_back();
}

void JsonWriter::BeginArray() {
  BeforeValue();
  text_.push_back('[');
  scopes_.push_back(Scope::kArray);
  scope_has_items_.push_back(false);
}

void JsonWriter::EndArray() {
  assert(!scopes_.empty() && scopes_.back() == Scope::kArray);
  text_.push_back(']');
  scopes_.pop_back();
  scope_has_items_.pop_back();
}

void JsonWriter::Key(std::string_view name) {
  assert(!scopes_.empty() && scopes_.back() == Scope::kObject && !after_key_);
  if (scope_has_items_.back()) text_.push_back(',');
  scope_has_items_.back() = true;
  AppendJsonString(&text_, name);
  text_.push_back(':');
  after_key_ = true;
}

void JsonWriter::String(std::string_view value) {
  BeforeValue();
  AppendJsonString(&text_, value);
}

void JsonWriter::Int(int64_t value) {
  BeforeValue();
  text_ += std::to_string(value);
}

void JsonWriter::Uint(uint64_t value) {
  BeforeValue();
  text_ += std::to_string(value);
}

void JsonWriter::Double(double value) {
  BeforeValue();
  if (!std::isfinite(value)) {
    text_ += "null";
    return;
  }
  char buffer[32];
  // Shortest round-trip form; its grammar ("-1.5e+300", "0.1", "42") is a
  // subset of JSON's number grammar.
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  assert(error == std::errc());
  text_.append(buffer, end);
}

void JsonWriter::Bool(bool value) {
  BeforeValue();
  text_ += value ? "true" : "false";
}

void JsonWriter::Null() {
  BeforeValue();
  text_ += "null";
}

}  // namespace cairn
