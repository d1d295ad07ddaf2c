#include "cairn/core/range_columns.h"

#include <variant>

namespace cairn {

void ValueColumn::Reserve(size_t rows) {
  present.reserve(rows);
  switch (type) {
    case FieldType::kDouble: doubles.reserve(rows); break;
    case FieldType::kInt64:
    case FieldType::kTimestamp: integers.reserve(rows); break;
    case FieldType::kBool: bools.reserve(rows); break;
    case FieldType::kString: strings.reserve(rows); break;
  }
}

void ValueColumn::AppendAbsent() {
  present.push_back(0);
  switch (type) {
    case FieldType::kDouble: doubles.push_back(0); break;
    case FieldType::kInt64:
    case FieldType::kTimestamp: integers.push_back(0); break;
    case FieldType::kBool: bools.push_back(0); break;
    case FieldType::kString: strings.emplace_back(); break;
  }
}

void ValueColumn::Append(const Value& value) {
  if (std::holds_alternative<std::monostate>(value)) return AppendAbsent();
  present.push_back(1);
  switch (type) {
    case FieldType::kDouble: doubles.push_back(std::get<double>(value)); break;
    case FieldType::kInt64: integers.push_back(std::get<int64_t>(value)); break;
    case FieldType::kTimestamp: integers.push_back(std::get<Timestamp>(value).unix_nanos); break;
    case FieldType::kBool: bools.push_back(std::get<bool>(value) ? 1 : 0); break;
    case FieldType::kString: strings.push_back(std::get<std::string>(value)); break;
  }
}

void ValueColumn::AppendFrom(const ValueColumn& other, size_t row) {
  present.push_back(other.present[row]);
  switch (type) {
    case FieldType::kDouble: doubles.push_back(other.doubles[row]); break;
    case FieldType::kInt64:
    case FieldType::kTimestamp: integers.push_back(other.integers[row]); break;
    case FieldType::kBool: bools.push_back(other.bools[row]); break;
    case FieldType::kString: strings.push_back(other.strings[row]); break;
  }
}

Value ValueColumn::ValueAt(size_t row) const {
  if (!present[row]) return Value();
  switch (type) {
    case FieldType::kDouble: return doubles[row];
    case FieldType::kInt64: return integers[row];
    case FieldType::kTimestamp: return Timestamp{integers[row]};
    case FieldType::kBool: return bools[row] != 0;
    case FieldType::kString: return strings[row];
  }
  return Value();
}

}  // namespace cairn
