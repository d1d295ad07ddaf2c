#include "engine/query/aggregate_bucket.h"

#include <variant>

namespace cairn {

namespace {

// Integers compare as integers; a double field's values (or, never in one
// series, a mix) compare as doubles.
bool Less(const Value& a, const Value& b) {
  const int64_t* x = std::get_if<int64_t>(&a);
  const int64_t* y = std::get_if<int64_t>(&b);
  if (x != nullptr && y != nullptr) return *x < *y;
  const auto as_double = [](const Value& v) {
    const int64_t* i = std::get_if<int64_t>(&v);
    return i != nullptr ? static_cast<double>(*i) : std::get<double>(v);
  };
  return as_double(a) < as_double(b);
}

bool IsNumber(const Value& v) {
  return std::holds_alternative<int64_t>(v) || std::holds_alternative<double>(v);
}

}  // namespace

void BucketAccumulator::AddExtremes(const Value& min, const Value& max) {
  if (IsNumber(min) && (!IsNumber(min_) || Less(min, min_))) min_ = min;
  if (IsNumber(max) && (!IsNumber(max_) || Less(max_, max))) max_ = max;
}

void BucketAccumulator::Add(const Value& value, int64_t timestamp) {
  if (const int64_t* i = std::get_if<int64_t>(&value)) {
    integer_sum_.Add(*i);
  } else if (const double* d = std::get_if<double>(&value)) {
    double_sum_ += *d;
    saw_double_ = true;
  } else {
    return;
  }
  ++count_;
  AddExtremes(value, value);
  if (timestamp < first_timestamp_) first_timestamp_ = timestamp, first_ = value;
  if (timestamp > last_timestamp_) last_timestamp_ = timestamp, last_ = value;
}

void BucketAccumulator::AddStats(const FieldStats& stats, int64_t first, int64_t last) {
  if (stats.count == 0) return;
  if (stats.integer_sum) {
    integer_sum_.Add(*stats.integer_sum);
  } else {
    double_sum_ += stats.sum;
    saw_double_ = true;
  }
  count_ += stats.count;
  AddExtremes(stats.min, stats.max);
  if (first < first_timestamp_) first_timestamp_ = first, first_ = stats.first;
  if (last > last_timestamp_) last_timestamp_ = last, last_ = stats.last;
}

Result<Value> BucketAccumulator::Answer(AggregateFunction fn, int64_t bucket_start) const {
  switch (fn) {
    case AggregateFunction::kMin:
      return min_;
    case AggregateFunction::kMax:
      return max_;
    case AggregateFunction::kAvg:
      if (count_ == 0) return Value{};
      if (saw_double_) return Value{(double_sum_ + integer_sum_.ToDouble()) / static_cast<double>(count_)};
      return Value{integer_sum_.DividedBy(count_)};
    case AggregateFunction::kSum:
      if (saw_double_) return Value{double_sum_ + integer_sum_.ToDouble()};
      if (!integer_sum_.FitsInt64()) {
        return Status::InvalidArgument("sum overflows int64 in the bucket starting at " +
                                       std::to_string(bucket_start) + " ns (the exact sum is " +
                                       integer_sum_.ToString() + "); avg is still exact, or narrow the step");
      }
      return Value{integer_sum_.ToInt64()};
    case AggregateFunction::kCount:
      return Value{static_cast<int64_t>(count_)};
    case AggregateFunction::kFirst:
      return first_;
    case AggregateFunction::kLast:
      return last_;
  }
  return Status::Internal("unknown aggregate function");
}

}  // namespace cairn
