#include "engine/reclaim/quota_aggregates.h"

#include <variant>

#include "model/exact_sum.h"

namespace cairn {

namespace {

bool IsNumeric(FieldType type) { return type == FieldType::kDouble || type == FieldType::kInt64; }

double AsDouble(const Value& v) {
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  return 0;
}

bool Less(const Value& a, const Value& b) {
  if (const auto* x = std::get_if<int64_t>(&a)) return *x < std::get<int64_t>(b);
  return std::get<double>(a) < std::get<double>(b);
}

// One raw field's values within one step. An int64 field's sum is exact
// (ExactSum): its aggregate keeps it in `f.sum`, and `f.avg` is rounded
// once from it.
struct FieldAccumulator {
  int64_t count = 0;
  double sum = 0;        // double fields
  ExactSum integer_sum;  // int64 fields
  Value min, max, last;
  int64_t last_timestamp = INT64_MIN;

  void Add(const Value& v, int64_t timestamp, bool numeric) {
    if (std::holds_alternative<std::monostate>(v)) return;
    ++count;
    if (numeric) {
      if (const auto* i = std::get_if<int64_t>(&v)) {
        integer_sum.Add(*i);
      } else {
        sum += AsDouble(v);
      }
      if (std::holds_alternative<std::monostate>(min) || Less(v, min)) min = v;
      if (std::holds_alternative<std::monostate>(max) || Less(max, v)) max = v;
    } else if (timestamp >= last_timestamp) {
      last = v;
      last_timestamp = timestamp;
    }
  }
};

}  // namespace

std::vector<ChunkField> AggregateFieldsOf(const ChunkField& raw) {
  if (raw.type == FieldType::kInt64) {
    return {{raw.name + ".min", raw.type},
            {raw.name + ".max", raw.type},
            {raw.name + ".avg", FieldType::kDouble},
            {raw.name + ".count", FieldType::kInt64},
            {raw.name + ".sum", FieldType::kInt64}};
  }
  if (IsNumeric(raw.type)) {
    return {{raw.name + ".min", raw.type},
            {raw.name + ".max", raw.type},
            {raw.name + ".avg", FieldType::kDouble},
            {raw.name + ".count", FieldType::kInt64}};
  }
  return {{raw.name + ".last", raw.type}, {raw.name + ".count", FieldType::kInt64}};
}

bool FillStepAggregate(const std::vector<ChunkField>& raw_schema,
                       const std::unordered_map<std::string, size_t>& target_index, const ChunkRecord* old,
                       const std::vector<std::pair<ChunkRecord, uint64_t>>& members, ChunkRecord* aggregate) {
  // An int64 field's aggregate must hold its exact sum: a step whose
  // sum leaves int64, or whose earlier aggregate has no `f.sum` (one
  // written before sums were kept), stays raw.
  bool exact = true;
  for (size_t f = 0; f < raw_schema.size() && exact; ++f) {
    const bool numeric = IsNumeric(raw_schema[f].type);
    const bool integer = raw_schema[f].type == FieldType::kInt64;
    FieldAccumulator acc;
    const std::vector<ChunkField> names = AggregateFieldsOf(raw_schema[f]);
    auto old_value = [&](size_t which) -> Value {
      if (old == nullptr) return Value{};
      auto i = target_index.find(names[which].name);
      if (i == target_index.end() || i->second >= old->values.size()) return Value{};
      return old->values[i->second];
    };
    if (old != nullptr) {
      const Value count = old_value(numeric ? 3 : 1);
      if (const auto* n = std::get_if<int64_t>(&count); n != nullptr && *n > 0) {
        acc.count = *n;
        if (integer) {
          acc.min = old_value(0);
          acc.max = old_value(1);
          const Value old_sum = old_value(4);
          if (const auto* total = std::get_if<int64_t>(&old_sum)) {
            acc.integer_sum.Add(*total);
          } else {
            exact = false;
          }
        } else if (numeric) {
          acc.min = old_value(0);
          acc.max = old_value(1);
          acc.sum = AsDouble(old_value(2)) * static_cast<double>(*n);
        } else {
          acc.last = old_value(0);
        }
      }
    }
    for (const auto& entry : members) acc.Add(entry.first.values[f], entry.first.timestamp, numeric);
    if (integer && !acc.integer_sum.FitsInt64()) exact = false;
    if (acc.count == 0 || !exact) continue;
    auto put = [&](size_t which, Value v) {
      auto i = target_index.find(names[which].name);
      if (i != target_index.end() && i->second < aggregate->values.size()) aggregate->values[i->second] = v;
    };
    if (integer) {
      put(0, acc.min);
      put(1, acc.max);
      put(2, acc.integer_sum.DividedBy(static_cast<uint64_t>(acc.count)));
      put(3, acc.count);
      put(4, acc.integer_sum.ToInt64());
    } else if (numeric) {
      put(0, acc.min);
      put(1, acc.max);
      put(2, acc.sum / static_cast<double>(acc.count));
      put(3, acc.count);
    } else {
      put(0, acc.last);
      put(1, acc.count);
    }
  }
  return exact;
}

}  // namespace cairn
