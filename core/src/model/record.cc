#include "cairn/core/record.h"

#include <cmath>
#include <set>

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

// Returns the length of the UTF-8 sequence starting at s[i] and its code
// point, or 0 when the bytes there are not well-formed UTF-8 (RFC 3629:
// no overlong forms, no surrogates, nothing above U+10FFFF).
size_t DecodeUtf8(std::string_view s, size_t i, uint32_t* code_point) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t b0 = byte(i);
  if (b0 < 0x80) {
    *code_point = b0;
    return 1;
  }
  size_t length;
  uint32_t cp, min;
  if ((b0 & 0xE0) == 0xC0) {
    length = 2, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    length = 3, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    length = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + length > s.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  *code_point = cp;
  return length;
}

// Checks well-formed UTF-8; with `forbid_control` also rejects C0, DEL and
// C1 control characters (NUL included).
Status CheckUtf8(std::string_view what, std::string_view s, bool forbid_control) {
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    size_t n = DecodeUtf8(s, i, &cp);
    if (n == 0) {
      return Status::InvalidArgument(std::string(what) + " is not valid UTF-8 (byte " + std::to_string(i) +
                                     ")");
    }
    if (forbid_control && (cp < 0x20 || (cp >= 0x7F && cp < 0xA0))) {
      return Status::InvalidArgument(std::string(what) + " contains a control character (byte " +
                                     std::to_string(i) + ")");
    }
    i += n;
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
