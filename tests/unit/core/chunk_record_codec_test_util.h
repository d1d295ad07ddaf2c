// Shared helpers of the record codec tests: row makers and comparisons
// with dimensions and attributes, and the time base of the sample rows.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/core/record_codec.h"

#include "record_rows.h"

namespace cairn::record_codec_testing {

using test_rows::ExpectSameRows;
using test_rows::Row;

inline constexpr int64_t kSecond = 1'000'000'000;
inline constexpr int64_t kStart = 1'700'000'000 * kSecond;

// `row` with these dimensions and attributes.
inline RecordRow Tagged(RecordRow row, TagMap dimensions, TagMap attributes = {}) {
  row.dimensions = std::move(dimensions);
  row.attributes = std::move(attributes);
  return row;
}

// ExpectSameRows, dimensions and attributes included.
inline void ExpectSameTaggedRows(const std::vector<RecordRow>& expected, const std::vector<RecordRow>& actual) {
  ExpectSameRows(expected, actual);
  for (size_t i = 0; i < std::min(expected.size(), actual.size()); ++i) {
    EXPECT_EQ(expected[i].dimensions, actual[i].dimensions) << "row " << i;
    EXPECT_EQ(expected[i].attributes, actual[i].attributes) << "row " << i;
  }
}

}  // namespace cairn::record_codec_testing
