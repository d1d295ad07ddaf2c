#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "chunk_records.h"
#include "chunk/chunk_codec.h"
#include "chunk/coding.h"
#include "chunk/crc32c.h"

namespace cairn {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

using test_chunks::MakeRecord;

const std::vector<ChunkField> kSchema = {{"temperature", FieldType::kDouble}, {"count", FieldType::kInt64},
                                         {"alarm", FieldType::kBool},         {"state", FieldType::kString},
                                         {"seen", FieldType::kTimestamp},     {"unused", FieldType::kDouble}};

std::vector<ChunkRecord> SampleRecords() {
  return {
      MakeRecord(10 * kSecond, {21.5, int64_t{5}, false, std::string("idle"), Timestamp{300}, Value()}, 1, 0),
      MakeRecord(11 * kSecond, {Value(), int64_t{-7}, Value(), std::string("run"), Timestamp{100}, Value()},
                 4, 2'000'000'000),
      MakeRecord(12 * kSecond, {-3.25, Value(), true, Value(), Timestamp{200}, Value()}, 2, 1'900'000'000),
      MakeRecord(13 * kSecond, {30.0, int64_t{9}, Value(), std::string("idle"), Value(), Value()}, 3, 0),
  };
}

TEST(ChunkStatsTest, ComputesEveryStatistic) {
  ChunkStats stats = ComputeChunkStats(kSchema, SampleRecords());
  EXPECT_EQ(stats.count, 4u);
  EXPECT_EQ(stats.min_timestamp, 10 * kSecond);
  EXPECT_EQ(stats.max_timestamp, 13 * kSecond);
  EXPECT_EQ(stats.max_version, 4u);
  EXPECT_EQ(stats.min_ttl, 1'900'000'000);
  EXPECT_FALSE(stats.all_have_ttl);
  ASSERT_EQ(stats.fields.size(), kSchema.size());

  const FieldStats& temperature = stats.fields[0];
  EXPECT_EQ(temperature.count, 3u);
  EXPECT_EQ(temperature.min, Value(-3.25));
  EXPECT_EQ(temperature.max, Value(30.0));
  EXPECT_DOUBLE_EQ(temperature.sum, 21.5 - 3.25 + 30.0);
  EXPECT_EQ(temperature.first, Value(21.5));
  EXPECT_EQ(temperature.last, Value(30.0));

  const FieldStats& count = stats.fields[1];
  EXPECT_EQ(count.count, 3u);
  EXPECT_EQ(count.min, Value(int64_t{-7}));
  EXPECT_EQ(count.max, Value(int64_t{9}));
  EXPECT_DOUBLE_EQ(count.sum, 7.0);
  ASSERT_TRUE(count.integer_sum.has_value());
  EXPECT_EQ(count.integer_sum->ToInt64(), 7);
  EXPECT_EQ(count.first, Value(int64_t{5}));
  EXPECT_EQ(count.last, Value(int64_t{9}));

  const FieldStats& alarm = stats.fields[2];
  EXPECT_EQ(alarm.count, 2u);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(alarm.min));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(alarm.max));
  EXPECT_EQ(alarm.sum, 0.0);
  EXPECT_FALSE(alarm.integer_sum.has_value());
  EXPECT_EQ(alarm.first, Value(false));
  EXPECT_EQ(alarm.last, Value(true));

  const FieldStats& state = stats.fields[3];
  EXPECT_EQ(state.count, 3u);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(state.min));
  EXPECT_EQ(state.first, Value(std::string("idle")));
  EXPECT_EQ(state.last, Value(std::string("idle")));

  const FieldStats& seen = stats.fields[4];
  EXPECT_EQ(seen.count, 3u);
  EXPECT_EQ(seen.min, Value(Timestamp{100}));
  EXPECT_EQ(seen.max, Value(Timestamp{300}));
  EXPECT_EQ(seen.sum, 0.0);
  EXPECT_EQ(seen.first, Value(Timestamp{300}));
  EXPECT_EQ(seen.last, Value(Timestamp{200}));

  const FieldStats& unused = stats.fields[5];
  EXPECT_EQ(unused.count, 0u);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(unused.min));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(unused.max));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(unused.first));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(unused.last));
}

TEST(ChunkStatsTest, TtlSummaryAndExactInt64Sum) {
  const std::vector<ChunkField> schema = {{"n", FieldType::kInt64}};
  const int64_t big = std::numeric_limits<int64_t>::max();
  ChunkStats stats = ComputeChunkStats(
      schema, std::vector<ChunkRecord>{MakeRecord(1, {big}, 0, 50), MakeRecord(2, {big}, 0, 40)});
  EXPECT_TRUE(stats.all_have_ttl);
  EXPECT_EQ(stats.min_ttl, 40);
  EXPECT_DOUBLE_EQ(stats.fields[0].sum, 2.0 * static_cast<double>(big));  // no int64 overflow
  EXPECT_EQ(stats.fields[0].integer_sum->ToString(), "18446744073709551614");

  ChunkStats no_ttl = ComputeChunkStats(schema, std::vector<ChunkRecord>{MakeRecord(1, {int64_t{1}})});
  EXPECT_FALSE(no_ttl.all_have_ttl);
  EXPECT_EQ(no_ttl.min_ttl, 0);
}

TEST(ChunkStatsTest, FirstAndLastFollowTimestampsNotInputOrder) {
  const std::vector<ChunkField> schema = {{"d", FieldType::kDouble}};
  ChunkStats stats =
      ComputeChunkStats(schema, std::vector<ChunkRecord>{MakeRecord(5, {2.0}), MakeRecord(1, {1.0}),
                                                         MakeRecord(9, {3.0}), MakeRecord(7, {4.0})});
  EXPECT_EQ(stats.fields[0].first, Value(1.0));
  EXPECT_EQ(stats.fields[0].last, Value(3.0));
  EXPECT_EQ(stats.min_timestamp, 1);
  EXPECT_EQ(stats.max_timestamp, 9);
}

TEST(ChunkStatsTest, EmptyRecordsAndMismatchedValues) {
  ChunkStats empty = ComputeChunkStats(kSchema, {});
  EXPECT_EQ(empty.count, 0u);
  EXPECT_EQ(empty.fields.size(), kSchema.size());
  EXPECT_FALSE(empty.all_have_ttl);
  ASSERT_TRUE(empty.fields[1].integer_sum.has_value());  // int64: an exact sum of nothing
  EXPECT_EQ(empty.fields[1].integer_sum->ToString(), "0");
  EXPECT_EQ(EncodeChunkStats(empty, kSchema)[0], 2);

  // A value of the wrong type is ignored, not counted.
  const std::vector<ChunkField> schema = {{"d", FieldType::kDouble}};
  ChunkStats stats = ComputeChunkStats(
      schema, std::vector<ChunkRecord>{MakeRecord(1, {int64_t{3}}), MakeRecord(2, {}), MakeRecord(3, {4.5})});
  EXPECT_EQ(stats.fields[0].count, 1u);
  EXPECT_EQ(stats.fields[0].first, Value(4.5));
}

TEST(ChunkStatsTest, EncodeChunkReportsTheSameStats) {
  std::vector<ChunkRecord> records = SampleRecords();
  ChunkStats from_encoder;
  Result<std::string> encoded = EncodeChunk(kSchema, records, &from_encoder);
  ASSERT_TRUE(encoded.ok()) << encoded.status().ToString();
  EXPECT_EQ(EncodeChunkStats(from_encoder, kSchema),
            EncodeChunkStats(ComputeChunkStats(kSchema, records), kSchema));
}

void ExpectSameStats(const ChunkStats& actual, const ChunkStats& expected) {
  EXPECT_EQ(actual.count, expected.count);
  EXPECT_EQ(actual.min_timestamp, expected.min_timestamp);
  EXPECT_EQ(actual.max_timestamp, expected.max_timestamp);
  EXPECT_EQ(actual.max_version, expected.max_version);
  EXPECT_EQ(actual.min_ttl, expected.min_ttl);
  EXPECT_EQ(actual.all_have_ttl, expected.all_have_ttl);
  ASSERT_EQ(actual.fields.size(), expected.fields.size());
  for (size_t f = 0; f < actual.fields.size(); ++f) {
    SCOPED_TRACE("field " + std::to_string(f));
    EXPECT_EQ(actual.fields[f].count, expected.fields[f].count);
    EXPECT_EQ(actual.fields[f].min, expected.fields[f].min);
    EXPECT_EQ(actual.fields[f].max, expected.fields[f].max);
    EXPECT_EQ(std::bit_cast<uint64_t>(actual.fields[f].sum), std::bit_cast<uint64_t>(expected.fields[f].sum));
    EXPECT_EQ(actual.fields[f].integer_sum, expected.fields[f].integer_sum);
    EXPECT_EQ(actual.fields[f].first, expected.fields[f].first);
    EXPECT_EQ(actual.fields[f].last, expected.fields[f].last);
  }
}

TEST(ChunkStatsTest, SerialisationRoundTrips) {
  ChunkStats stats = ComputeChunkStats(kSchema, SampleRecords());
  std::string encoded = EncodeChunkStats(stats, kSchema);
  Result<ChunkStats> decoded = DecodeChunkStats(encoded, kSchema);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ExpectSameStats(*decoded, stats);

  ChunkStats extremes;
  extremes.count = std::numeric_limits<uint32_t>::max();
  extremes.min_timestamp = std::numeric_limits<int64_t>::min();
  extremes.max_timestamp = std::numeric_limits<int64_t>::max();
  extremes.max_version = std::numeric_limits<uint64_t>::max();
  extremes.min_ttl = 1;
  extremes.all_have_ttl = true;
  extremes.fields.resize(kSchema.size());
  extremes.fields[0] = {7, -0.0, 1e300, std::numeric_limits<double>::infinity(), 5e-324, -0.0, std::nullopt};
  // The most negative sum 2^32 - 1 int64 values can have.
  const ExactSum lowest = ExactSum::Product(std::numeric_limits<int64_t>::min(), extremes.count);
  extremes.fields[1] = {extremes.count, Value(), Value(), lowest.ToDouble(), Value(), Value(), lowest};
  extremes.fields[3] = {2, Value(), Value(), 0, std::string("a\0b", 3), std::string(4096, 'z'), std::nullopt};
  Result<ChunkStats> decoded_extremes = DecodeChunkStats(EncodeChunkStats(extremes, kSchema), kSchema);
  ASSERT_TRUE(decoded_extremes.ok()) << decoded_extremes.status().ToString();
  ExpectSameStats(*decoded_extremes, extremes);
  EXPECT_TRUE(std::signbit(std::get<double>(decoded_extremes->fields[0].min)));
}

TEST(ChunkStatsTest, DecodeRejectsDamageAndSchemaMismatch) {
  std::string encoded = EncodeChunkStats(ComputeChunkStats(kSchema, SampleRecords()), kSchema);
  for (size_t i = 0; i < encoded.size(); ++i) {
    std::string damaged = encoded;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x10);
    Result<ChunkStats> decoded = DecodeChunkStats(damaged, kSchema);
    ASSERT_FALSE(decoded.ok()) << "byte " << i;
    EXPECT_TRUE(decoded.status().Is(StatusCode::kCorruption));
  }
  for (size_t size = 0; size < encoded.size(); ++size) {
    EXPECT_FALSE(DecodeChunkStats(std::string_view(encoded).substr(0, size), kSchema).ok())
        << "size " << size;
  }
  std::vector<ChunkField> shorter(kSchema.begin(), kSchema.end() - 1);
  Result<ChunkStats> mismatch = DecodeChunkStats(encoded, shorter);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.status().message().find("schema has 5"), std::string::npos)
      << mismatch.status().ToString();
}

// Int64 sums at the edges of what a double holds exactly and of int64
// itself are stored and read back exactly (format version 2).
TEST(ChunkStatsTest, Int64SumsAreExactAtTheExtremes) {
  const std::vector<ChunkField> schema = {{"n", FieldType::kInt64}};
  const int64_t p53 = int64_t{1} << 53;
  const int64_t max = std::numeric_limits<int64_t>::max(), min = std::numeric_limits<int64_t>::min();
  struct Case {
    std::vector<int64_t> values;
    std::string sum;
  };
  const std::vector<Case> cases = {
      {{p53 + 1, 1}, "9007199254740994"},
      {{-(p53 + 1), -1}, "-9007199254740994"},
      {{p53, 1, -p53}, "1"},
      {{max, max}, "18446744073709551614"},
      {{min, min, min}, "-27670116110564327424"},
      {{max, min, max, min, 5}, "3"},
  };
  for (const Case& c : cases) {
    std::vector<ChunkRecord> records;
    for (size_t i = 0; i < c.values.size(); ++i) {
      records.push_back(MakeRecord(static_cast<int64_t>(i + 1), {c.values[i]}));
    }
    ChunkStats stats = ComputeChunkStats(schema, records);
    ASSERT_TRUE(stats.fields[0].integer_sum.has_value());
    EXPECT_EQ(stats.fields[0].integer_sum->ToString(), c.sum);
    const std::string encoded = EncodeChunkStats(stats, schema);
    EXPECT_EQ(encoded[0], 2) << "exact sums are format version 2";
    Result<ChunkStats> decoded = DecodeChunkStats(encoded, schema);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    ASSERT_TRUE(decoded->fields[0].integer_sum.has_value());
    EXPECT_EQ(decoded->fields[0].integer_sum->ToString(), c.sum);
    EXPECT_EQ(decoded->fields[0].min, stats.fields[0].min);
    EXPECT_EQ(decoded->fields[0].max, stats.fields[0].max);
  }
}

// Statistics written by releases before format version 2, built here byte
// by byte from chunk_format.md §5: their int64 sum is a double, read as
// such and flagged inexact (no integer_sum), and they re-encode unchanged.
TEST(ChunkStatsTest, ReadsVersion1StatisticsAsInexactInt64Sums) {
  using namespace chunk_coding;
  const std::vector<ChunkField> schema = {{"n", FieldType::kInt64}, {"d", FieldType::kDouble}};
  const int64_t p53 = int64_t{1} << 53;
  std::string v1;
  PutByte(&v1, 1);                                                         // version
  PutVarint(&v1, 2);                                                       // count
  PutSignedVarint(&v1, 100);                                               // min_timestamp
  PutSignedVarint(&v1, 200);                                               // max_timestamp
  PutVarint(&v1, 0);                                                       // max_version
  PutSignedVarint(&v1, 0);                                                 // min_ttl
  PutByte(&v1, 0);                                                         // all_have_ttl
  PutVarint(&v1, 2);                                                       // field_count
  PutVarint(&v1, 2);                                                       // n: count
  PutByte(&v1, 0x0f);                                                      // min, max, first, last
  PutFixed64(&v1, std::bit_cast<uint64_t>(static_cast<double>(p53 + 2)));  // the inexact double sum
  PutSignedVarint(&v1, 1);
  PutSignedVarint(&v1, p53 + 1);
  PutSignedVarint(&v1, p53 + 1);
  PutSignedVarint(&v1, 1);
  PutVarint(&v1, 1);  // d: count
  PutByte(&v1, 0x0f);
  PutFixed64(&v1, std::bit_cast<uint64_t>(2.5));
  for (int i = 0; i < 4; ++i) PutFixed64(&v1, std::bit_cast<uint64_t>(2.5));
  PutFixed32(&v1, Crc32c(v1));

  Result<ChunkStats> decoded = DecodeChunkStats(v1, schema);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_FALSE(decoded->fields[0].integer_sum.has_value());
  EXPECT_EQ(decoded->fields[0].sum, static_cast<double>(p53 + 2));
  EXPECT_EQ(decoded->fields[0].max, Value(p53 + 1));
  EXPECT_EQ(decoded->fields[1].sum, 2.5);
  EXPECT_EQ(EncodeChunkStats(*decoded, schema), v1);
}

TEST(ChunkStatsTest, DecodeRejectsAnInt64SumNoCountOfValuesCanReach) {
  const std::vector<ChunkField> schema = {{"n", FieldType::kInt64}};
  ChunkStats stats = ComputeChunkStats(
      schema, std::vector<ChunkRecord>{MakeRecord(1, {int64_t{-1}}), MakeRecord(2, {int64_t{-2}})});
  ASSERT_TRUE(DecodeChunkStats(EncodeChunkStats(stats, schema), schema).ok());
  const int64_t max = std::numeric_limits<int64_t>::max(), min = std::numeric_limits<int64_t>::min();
  for (const ExactSum& impossible : {ExactSum::FromWords(1, 0), ExactSum::FromWords(-2, UINT64_MAX),
                                     ExactSum::Product(max, 3), ExactSum::Product(min, 3)}) {
    stats.fields[0].integer_sum = impossible;
    Result<ChunkStats> decoded = DecodeChunkStats(EncodeChunkStats(stats, schema), schema);
    ASSERT_FALSE(decoded.ok()) << impossible.ToString();
    EXPECT_NE(decoded.status().message().find("impossible for 2 int64 values"), std::string::npos)
        << decoded.status().ToString();
  }
  for (const ExactSum& possible : {ExactSum::Product(max, 2), ExactSum::Product(min, 2)}) {
    stats.fields[0].integer_sum = possible;
    EXPECT_TRUE(DecodeChunkStats(EncodeChunkStats(stats, schema), schema).ok()) << possible.ToString();
  }
}

}  // namespace
}  // namespace cairn
