// AggregateBucket's arithmetic: what one bucket of EngineImpl::Aggregate
// has seen of a double or int64 field, from single readings and from whole
// chunks' statistics, and the value each AggregateFunction answers.
//
// Int64 fields are exact: the sum is kept in 128 bits (ExactSum), `sum`
// answers an int64 when the total fits and an error naming the bucket when
// it does not, `avg` is the exact sum divided by the count rounded once to
// double, and min/max/first/last stay the stored int64 values, compared as
// integers (doubles would tie 2^53 and 2^53 + 1).
#pragma once

#include <cstdint>
#include <string>

#include "cairn/core/engine.h"

#include "chunk/chunk_codec.h"
#include "model/exact_sum.h"

namespace cairn {

class BucketAccumulator {
 public:
  // One reading's value (double or int64; anything else is ignored).
  void Add(const Value& value, int64_t timestamp);

  // A chunk's statistics for the field, the chunk spanning [first, last].
  // Precondition: an int64 field's stats carry integer_sum (else its sum
  // would be inexact: the caller decodes such a chunk instead).
  void AddStats(const FieldStats& stats, int64_t first, int64_t last);

  uint64_t count() const { return count_; }

  // What `fn` answers for this bucket, which starts at `bucket_start` (ns).
  // InvalidArgument when an int64 sum does not fit int64.
  Result<Value> Answer(AggregateFunction fn, int64_t bucket_start) const;

 private:
  void AddExtremes(const Value& min, const Value& max);

  uint64_t count_ = 0;
  ExactSum integer_sum_;     // int64 values
  double double_sum_ = 0;    // double values
  bool saw_double_ = false;  // a double field (its sum answers a double)
  Value min_, max_, first_, last_;
  int64_t first_timestamp_ = INT64_MAX, last_timestamp_ = INT64_MIN;
};

}  // namespace cairn
