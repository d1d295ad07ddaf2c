#include "field_json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <system_error>

#include "cairn/text/json_value.h"
#include "cairn/text/json_writer.h"

namespace cairn::ingest {
namespace {

void AppendDouble(std::string* out, double value) {
  if (value == 0 && std::signbit(value)) {
    *out += "\"-0\"";
    return;
  }
  char buffer[64];
  const std::to_chars_result written = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out->append(buffer, written.ptr);
}

void AppendInteger(std::string* out, int64_t value) {
  char buffer[32];
  const std::to_chars_result written = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out->append(buffer, written.ptr);
}

Result<int64_t> ParseInteger(const JsonValue& value, std::string_view what) {
  if (!value.is_number()) return Status::Corruption(std::string(what) + " is not a number");
  const std::string& text = value.text();
  int64_t parsed = 0;
  const std::from_chars_result read = std::from_chars(text.data(), text.data() + text.size(), parsed);
  if (read.ec != std::errc() || read.ptr != text.data() + text.size()) {
    return Status::Corruption(std::string(what) + " is not a 64-bit integer: " + text);
  }
  return parsed;
}

Result<double> ParseDouble(const JsonValue& value, std::string_view what) {
  // A number, or the one string "-0".
  if (value.is_string() && value.text() == "-0") return -0.0;
  if (!value.is_number()) return Status::Corruption(std::string(what) + " is not a number");
  const std::string& text = value.text();
  double parsed = 0;
  const std::from_chars_result read = std::from_chars(text.data(), text.data() + text.size(), parsed);
  if (read.ec != std::errc() || read.ptr != text.data() + text.size() || !std::isfinite(parsed)) {
    return Status::Corruption(std::string(what) + " is not a finite double: " + text);
  }
  return parsed;
}

Result<Value> ParseTypedValue(const std::string& name, const JsonValue& typed) {
  const std::string what = "field '" + name + "'";
  if (!typed.is_object() || typed.members().size() != 1) {
    return Status::Corruption(what + " is not an object with one typed member");
  }
  const auto& [type, value] = typed.members()[0];
  if (type == "double") {
    CAIRN_ASSIGN_OR_RETURN(double parsed, ParseDouble(value, what));
    return Value(parsed);
  }
  if (type == "int64") {
    CAIRN_ASSIGN_OR_RETURN(int64_t parsed, ParseInteger(value, what));
    return Value(parsed);
  }
  if (type == "bool") {
    if (value.kind() != JsonValue::Kind::kBool) return Status::Corruption(what + " is not a boolean");
    return Value(value.boolean());
  }
  if (type == "string") {
    if (!value.is_string()) return Status::Corruption(what + " is not a string");
    return Value(value.text());
  }
  if (type == "timestamp") {
    CAIRN_ASSIGN_OR_RETURN(int64_t parsed, ParseInteger(value, what));
    return Value(Timestamp{parsed});
  }
  return Status::Corruption(what + " has unknown type '" + type + "'");
}

}  // namespace

std::string FieldsToJson(const std::vector<Field>& fields) {
  std::string out = "{";
  bool first = true;
  for (const Field& field : fields) {
    if (!first) out.push_back(',');
    first = false;
    AppendJsonString(&out, field.name);
    out += ":{";
    if (const auto* d = std::get_if<double>(&field.value)) {
      out += "\"double\":";
      AppendDouble(&out, *d);
    } else if (const auto* i = std::get_if<int64_t>(&field.value)) {
      out += "\"int64\":";
      AppendInteger(&out, *i);
    } else if (const auto* b = std::get_if<bool>(&field.value)) {
      out += *b ? "\"bool\":true" : "\"bool\":false";
    } else if (const auto* s = std::get_if<std::string>(&field.value)) {
      out += "\"string\":";
      AppendJsonString(&out, *s);
    } else if (const auto* t = std::get_if<Timestamp>(&field.value)) {
      out += "\"timestamp\":";
      AppendInteger(&out, t->unix_nanos);
    }
    out.push_back('}');
  }
  out.push_back('}');
  return out;
}

Result<std::vector<Field>> FieldsFromJson(std::string_view json) {
  Result<JsonValue> parsed = JsonValue::Parse(json);
  if (!parsed.ok()) return Status::Corruption("stored fields are not JSON: " + parsed.status().message());
  if (!parsed->is_object()) return Status::Corruption("stored fields are not a JSON object");
  std::vector<Field> fields;
  fields.reserve(parsed->members().size());
  for (const auto& [name, typed] : parsed->members()) {
    CAIRN_ASSIGN_OR_RETURN(Value value, ParseTypedValue(name, typed));
    fields.push_back(Field{name, std::move(value)});
  }
  std::sort(fields.begin(), fields.end(), [](const Field& a, const Field& b) { return a.name < b.name; });
  return fields;
}

std::string TagsToJson(const TagMap& tags) {
  std::string out = "{";
  bool first = true;
  for (const auto& [name, value] : tags) {
    if (!first) out.push_back(',');
    first = false;
    AppendJsonString(&out, name);
    out.push_back(':');
    AppendJsonString(&out, value);
  }
  out.push_back('}');
  return out;
}

Result<TagMap> TagsFromJson(std::string_view json) {
  Result<JsonValue> parsed = JsonValue::Parse(json);
  if (!parsed.ok()) return Status::Corruption("stored tags are not JSON: " + parsed.status().message());
  if (!parsed->is_object()) return Status::Corruption("stored tags are not a JSON object");
  TagMap tags;
  for (const auto& [name, value] : parsed->members()) {
    if (!value.is_string()) return Status::Corruption("tag '" + name + "' is not a string");
    tags[name] = value.text();
  }
  return tags;
}

}  // namespace cairn::ingest
