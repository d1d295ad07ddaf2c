#include "json_reading.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

namespace cairn {
namespace mqtt_internal {
namespace {

Result<int64_t> ParseInteger(const JsonValue& value, std::string_view what) {
  std::string_view text = value.text();
  if (!value.is_number() && !value.is_string()) {
    return Status::InvalidArgument(std::string(what) + " must be an integer");
  }
  int64_t parsed = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), parsed);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
    return Status::InvalidArgument(std::string(what) + " must be an integer within int64, got " +
                                   std::string(text));
  }
  return parsed;
}

// A JSON number without fraction or exponent, or a string of digits, within
// uint64 (versions use all of it).
Result<uint64_t> ParseUnsigned(const JsonValue& value, std::string_view what) {
  std::string_view text = value.text();
  if (!value.is_number() && !value.is_string()) {
    return Status::InvalidArgument(std::string(what) + " must be an integer");
  }
  if (!text.empty() && text[0] == '-')
    return Status::InvalidArgument(std::string(what) + " must not be negative");
  uint64_t parsed = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), parsed);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
    return Status::InvalidArgument(std::string(what) + " must be an integer within uint64, got " +
                                   std::string(text));
  }
  return parsed;
}

Result<Value> FieldValue(const std::string& name, const JsonValue& value,
                         const LineProtocolOptions& options) {
  switch (value.kind()) {
    case JsonValue::Kind::kNumber: {
      const double number = value.number();
      if (!std::isfinite(number))
        return Status::InvalidArgument("field '" + name + "' is not a finite number");
      return Value(number);
    }
    case JsonValue::Kind::kBool:
      return Value(value.boolean());
    case JsonValue::Kind::kString:
      return Value(value.text());
    case JsonValue::Kind::kObject: {
      const JsonValue* integer = value.Find("int");
      if (integer != nullptr && value.members().size() == 1) {
        Result<int64_t> parsed = ParseInteger(*integer, "field '" + name + "' {\"int\": ...}");
        if (!parsed.ok()) return parsed.status();
        return Value(*parsed);
      }
      // A point in time, in the input's precision like "time".
      const JsonValue* timestamp = value.Find("timestamp");
      if (timestamp != nullptr && value.members().size() == 1) {
        const std::string what = "field '" + name + "' {\"timestamp\": ...}";
        Result<int64_t> parsed = ParseInteger(*timestamp, what);
        if (!parsed.ok()) return parsed.status();
        int64_t nanos = 0;
        if (__builtin_mul_overflow(*parsed, NanosPerUnit(options.precision), &nanos)) {
          return Status::InvalidArgument(what + " " + timestamp->text() + " is out of range for precision " +
                                         std::string(TimestampPrecisionName(options.precision)));
        }
        return Value(Timestamp{nanos});
      }
      break;
    }
    default:
      break;
  }
  return Status::InvalidArgument("field '" + name +
                                 "' must be a number, a boolean, a string, {\"int\": integer} or "
                                 "{\"timestamp\": integer}");
}

}  // namespace

Result<Record> JsonReadingToRecord(const JsonValue& reading, const LineProtocolOptions& options) {
  if (!reading.is_object()) return Status::InvalidArgument("a reading must be a JSON object");
  Record record;
  bool has_device = false, has_measure = false, has_fields = false, has_time = false;
  const int64_t unit = NanosPerUnit(options.precision);
  for (const auto& [key, value] : reading.members()) {
    if (key == "device" || key == "measure") {
      if (!value.is_string()) return Status::InvalidArgument("\"" + key + "\" must be a string");
      (key == "device" ? record.device_id : record.measure_name) = value.text();
      (key == "device" ? has_device : has_measure) = true;
    } else if (key == "time") {
      Result<int64_t> time = ParseInteger(value, "\"time\"");
      if (!time.ok()) return time.status();
      if (__builtin_mul_overflow(*time, unit, &record.timestamp)) {
        return Status::InvalidArgument("\"time\" " + value.text() + " is out of range for precision " +
                                       std::string(TimestampPrecisionName(options.precision)));
      }
      has_time = true;
    } else if (key == "fields") {
      if (!value.is_object()) return Status::InvalidArgument("\"fields\" must be an object");
      for (const auto& [name, field_value] : value.members()) {
        // As in line protocol, where _ttl and _version are reserved: a field
        // named so would read as one thing here and another there.
        if (!name.empty() && name[0] == '_') {
          return Status::InvalidArgument(
              "field names starting with '_' are reserved ('" + name +
              "'); a reading's expiry and version are its \"ttl\" and \"version\"");
        }
        Result<Value> converted = FieldValue(name, field_value, options);
        if (!converted.ok()) return converted.status();
        record.fields.push_back(Field{name, std::move(*converted)});
      }
      has_fields = true;
    } else if (key == "tags") {
      if (!value.is_object()) return Status::InvalidArgument("\"tags\" must be an object of strings");
      for (const auto& [name, tag] : value.members()) {
        if (!tag.is_string()) return Status::InvalidArgument("tag '" + name + "' must be a string");
        record.dimensions[name] = tag.text();
      }
    } else if (key == "version") {
      Result<uint64_t> version = ParseUnsigned(value, "\"version\"");
      if (!version.ok()) return version.status();
      record.version = *version;
    } else if (key == "ttl") {
      Result<uint64_t> ttl = ParseUnsigned(value, "\"ttl\"");
      if (!ttl.ok()) return ttl.status();
      if (*ttl > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Status::InvalidArgument("\"ttl\" " + value.text() + " is beyond int64 seconds");
      }
      record.ttl = static_cast<int64_t>(*ttl);
    } else {
      return Status::InvalidArgument("unknown member \"" + key + "\"");
    }
  }
  if (!has_device) return Status::InvalidArgument("no \"device\"");
  if (!has_measure) return Status::InvalidArgument("no \"measure\"");
  if (!has_fields || record.fields.empty()) return Status::InvalidArgument("no \"fields\"");
  if (!has_time) {
    // As line protocol: the receiver's clock, truncated to the precision.
    record.timestamp = options.default_timestamp - options.default_timestamp % unit;
    record.receiver_time = true;  // the engine stamps or holds it by its trusted clock
  }
  // As line protocol's _ttl: an expiry not after the record's own time would
  // expire it as it is written, most likely a duration sent for a time.
  if (record.ttl != 0) {
    const int64_t seconds = record.timestamp / 1'000'000'000 - (record.timestamp % 1'000'000'000 < 0 ? 1 : 0);
    if (record.ttl <= seconds) {
      return Status::InvalidArgument("\"ttl\" " + std::to_string(record.ttl) +
                                     " is not after the record's time (" + std::to_string(seconds) +
                                     " s): \"ttl\" is an absolute Unix time in seconds, not a duration");
    }
  }
  CAIRN_RETURN_IF_ERROR(ValidateRecord(record));
  return record;
}

}  // namespace mqtt_internal
}  // namespace cairn
