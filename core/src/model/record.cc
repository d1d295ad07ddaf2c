#include "cairn/core/record.h"

#include <cmath>
#include <set>

#include "cairn/util/utf8.h"

namespace cairn {

std::string_view FieldTypeName(FieldType type) {
  switch (type) {
    case FieldType::kDouble:
      return "double";
    case FieldType::kInt64:
      return "int64";
    case FieldType::kBool:
      return "bool";
    case FieldType::kString:
      return "string";
    case FieldType::kTimestamp:
      return "timestamp";
  }
  return "unknown";
}

FieldType TypeOf(const Value& value) {
  switch (value.index()) {
    case 1:
      return FieldType::kDouble;
    case 2:
      return FieldType::kInt64;
    case 3:
      return FieldType::kBool;
    case 4:
      return FieldType::kString;
    case 5:
      return FieldType::kTimestamp;
  }
  assert(false && "TypeOf(monostate)");
  return FieldType::kDouble;
}

namespace {

// Checks well-formed UTF-8; with `forbid_control` also rejects C0, DEL and
// C1 control characters (NUL included).
Status CheckUtf8(std::string_view what, std::string_view s, bool forbid_control) {
  for (size_t i = 0; i < s.size();) {
    const util::Utf8Unit unit = util::DecodeUtf8(s, i);
    if (!unit.valid) {
      return Status::InvalidArgument(std::string(what) + " is not valid UTF-8 (byte " + std::to_string(i) +
                                     ")");
    }
    const uint32_t cp = unit.code_point;
    if (forbid_control && (cp < 0x20 || (cp >= 0x7F && cp < 0xA0))) {
      return Status::InvalidArgument(std::string(what) + " contains a control character (byte " +
                                     std::to_string(i) + ")");
    }
    i += unit.length;
  }
  return Status::Ok();
}

}  // namespace

Status ValidateIdentifier(std::string_view what, std::string_view value, size_t max_bytes) {
  if (value.empty()) return Status::InvalidArgument(std::string(what) + " is empty");
  if (value.size() > max_bytes) {
    return Status::InvalidArgument(std::string(what) + " is " + std::to_string(value.size()) +
                                   " bytes long; the limit is " + std::to_string(max_bytes));
  }
  return CheckUtf8(what, value, /*forbid_control=*/true);
}

Status ValidateRecord(const Record& record) {
  CAIRN_RETURN_IF_ERROR(ValidateIdentifier("device_id", record.device_id, kMaxDeviceIdBytes));
  CAIRN_RETURN_IF_ERROR(ValidateIdentifier("measure_name", record.measure_name, kMaxMeasureNameBytes));
  if (record.fields.empty()) return Status::InvalidArgument("record has no fields");
  if (record.fields.size() > kMaxFieldsPerRecord) {
    return Status::InvalidArgument("record has " + std::to_string(record.fields.size()) +
                                   " fields; the limit is " + std::to_string(kMaxFieldsPerRecord));
  }
  if (record.ttl < 0) return Status::InvalidArgument("ttl is negative");
  std::set<std::string_view> names;
  for (const Field& field : record.fields) {
    CAIRN_RETURN_IF_ERROR(ValidateIdentifier("field name", field.name, kMaxFieldNameBytes));
    if (!names.insert(field.name).second) {
      return Status::InvalidArgument("field '" + field.name + "' appears twice");
    }
    if (std::holds_alternative<std::monostate>(field.value)) {
      return Status::InvalidArgument("field '" + field.name + "' has no value");
    }
    if (const double* d = std::get_if<double>(&field.value)) {
      if (std::isnan(*d)) return Status::InvalidArgument("field '" + field.name + "' is NaN");
      if (std::isinf(*d)) return Status::InvalidArgument("field '" + field.name + "' is infinite");
    }
    if (const std::string* s = std::get_if<std::string>(&field.value)) {
      if (s->size() > kMaxStringValueBytes) {
        return Status::InvalidArgument("field '" + field.name + "' is " + std::to_string(s->size()) +
                                       " bytes long; the limit is " + std::to_string(kMaxStringValueBytes));
      }
      CAIRN_RETURN_IF_ERROR(CheckUtf8("field '" + field.name + "'", *s, /*forbid_control=*/false));
    }
  }
  if (record.dimensions.size() > kMaxDimensionsPerSeries) {
    return Status::InvalidArgument("record has " + std::to_string(record.dimensions.size()) +
                                   " dimensions; the limit is " + std::to_string(kMaxDimensionsPerSeries));
  }
  for (const auto& [name, value] : record.dimensions) {
    CAIRN_RETURN_IF_ERROR(ValidateIdentifier("dimension name", name, kMaxFieldNameBytes));
    if (value.size() > kMaxDimensionBytes) {
      return Status::InvalidArgument("dimension '" + name + "' value is longer than " +
                                     std::to_string(kMaxDimensionBytes) + " bytes");
    }
    CAIRN_RETURN_IF_ERROR(CheckUtf8("dimension '" + name + "'", value, /*forbid_control=*/true));
  }
  return Status::Ok();
}

}  // namespace cairn
