#include "chunk/chunk_codec.h"

// Chunk codec round trips: every type, edge values, absent fields, versions
// and ttls, invalid input, and decoding only some columns.

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "chunk_codec_test_util.h"

namespace cairn::chunk_codec_testing {
namespace {

void ExpectRoundTrip(const std::vector<ChunkField>& schema, const std::vector<ChunkRecord>& records) {
  std::string encoded = EncodeOrDie(schema, records);
  Result<DecodedChunk> decoded = DecodeChunk(encoded);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ExpectMatches(*decoded, schema, records);
  for (size_t i = 0; i < records.size(); ++i) {
    ChunkRecord record = decoded->RecordAt(i);
    EXPECT_EQ(record.timestamp, records[i].timestamp);
    ASSERT_EQ(record.values.size(), records[i].values.size());
    for (size_t f = 0; f < record.values.size(); ++f)
      EXPECT_TRUE(SameValue(record.values[f], records[i].values[f]));
  }
}

TEST(ChunkCodecTest, SingleRecordOfEveryType) {
  ExpectRoundTrip(
      kAllTypes, {MakeRecord(1'700'000'000 * kSecond,
                             {21.5, int64_t{7}, true, std::string("ok"), Timestamp{123}}, 3, 1'800'000'000)});
}

TEST(ChunkCodecTest, EmptySchema) {
  ExpectRoundTrip({}, {MakeRecord(1, {}), MakeRecord(2, {}), MakeRecord(10, {})});
}

TEST(ChunkCodecTest, Int64Extremes) {
  const std::vector<ChunkField> schema = {{"n", FieldType::kInt64}, {"t", FieldType::kTimestamp}};
  std::vector<ChunkRecord> records;
  const int64_t pattern[] = {kMin, kMax, 0, -1, kMin, kMin + 1, kMax, kMax - 1, 1, kMin};
  for (int i = 0; i < 300; ++i) {
    int64_t v = pattern[i % 10];
    records.push_back(MakeRecord(i, {v, Timestamp{-v - 1}}));
  }
  ExpectRoundTrip(schema, records);
}

TEST(ChunkCodecTest, TimestampsAroundTheEpochAndNegative) {
  const std::vector<ChunkField> schema = {{"v", FieldType::kInt64}};
  ExpectRoundTrip(
      schema, {MakeRecord(-3 * kSecond, {int64_t{1}}), MakeRecord(-kMillisecond, {int64_t{2}}),
               MakeRecord(0, {int64_t{3}}), MakeRecord(1, {int64_t{4}}), MakeRecord(kSecond, {int64_t{5}})});
  ExpectRoundTrip(schema, {MakeRecord(0, {int64_t{1}})});
  ExpectRoundTrip(schema, {MakeRecord(-1, {int64_t{1}})});
}

TEST(ChunkCodecTest, TimestampsNearTheInt64Limits) {
  const std::vector<ChunkField> schema = {{"v", FieldType::kInt64}};
  // 2262-04-11, the last representable nanosecond.
  ExpectRoundTrip(schema,
                  {MakeRecord(kMax - 2 * kSecond, {int64_t{1}}), MakeRecord(kMax - kSecond, {int64_t{2}}),
                   MakeRecord(kMax - 1, {int64_t{3}}), MakeRecord(kMax, {int64_t{4}})});
  ExpectRoundTrip(schema, {MakeRecord(kMin, {int64_t{1}}), MakeRecord(kMax, {int64_t{2}})});
  ExpectRoundTrip(schema, {MakeRecord(kMin, {int64_t{1}}), MakeRecord(kMin + 1, {int64_t{2}}),
                           MakeRecord(0, {int64_t{3}}), MakeRecord(kMax, {int64_t{4}})});
  ExpectRoundTrip(schema, {MakeRecord(kMax, {int64_t{1}})});
}

TEST(ChunkCodecTest, RegularTimestampsCostAlmostNothing) {
  const std::vector<ChunkField> schema = {{"v", FieldType::kInt64}};
  std::vector<ChunkRecord> records;
  for (int i = 0; i < 1000; ++i)
    records.push_back(MakeRecord(1'700'000'000 * kSecond + i * kSecond, {int64_t{5}}));
  std::string encoded = EncodeOrDie(schema, records);
  EXPECT_LT(encoded.size(), 40u);
  ExpectRoundTrip(schema, records);
}

TEST(ChunkCodecTest, AbsentFieldsInEveryPattern) {
  const std::vector<ChunkField> schema = {{"always", FieldType::kDouble},
                                          {"never", FieldType::kInt64},
                                          {"sparse", FieldType::kString},
                                          {"alternating", FieldType::kBool},
                                          {"tail", FieldType::kTimestamp}};
  std::vector<ChunkRecord> records;
  for (int i = 0; i < 500; ++i) {
    Value sparse, alternating, tail;
    if (i % 97 == 5) sparse = std::string("escalated");
    if (i % 2 == 0) alternating = i % 4 == 0;
    if (i >= 480) tail = Timestamp{i * kSecond};
    records.push_back(MakeRecord(i * kSecond, {i * 0.5, Value(), sparse, alternating, tail}));
  }
  ExpectRoundTrip(schema, records);
  // First record lacking the field (a leading empty present run).
  records[0].values[2] = Value();
  records[1].values[2] = Value();
  ExpectRoundTrip(schema, records);
}

TEST(ChunkCodecTest, StringsWithNulAndBinaryBytes) {
  const std::vector<ChunkField> schema = {{"s", FieldType::kString}};
  std::string binary;
  for (int i = 0; i < 256; ++i) binary.push_back(static_cast<char>(i));
  std::vector<ChunkRecord> records = {
      MakeRecord(1, {std::string("a\0b", 3)}),
      MakeRecord(2, {std::string()}),
      MakeRecord(3, {std::string(1, '\0')}),
      MakeRecord(4, {binary}),
      MakeRecord(5, {std::string(kMaxStringValueBytes, 'x')}),
      MakeRecord(6, {std::string("a\0b", 3)}),
      MakeRecord(7, {std::string("a\0c", 3)}),
      MakeRecord(8, {std::string()}),
  };
  ExpectRoundTrip(schema, records);
  // Many distinct strings widen the dictionary indexes.
  std::vector<ChunkRecord> distinct;
  for (int i = 0; i < 700; ++i) distinct.push_back(MakeRecord(i, {"device-" + std::to_string(i % 300)}));
  ExpectRoundTrip(schema, distinct);
}

TEST(ChunkCodecTest, SpecialDoubles) {
  const std::vector<ChunkField> schema = {{"d", FieldType::kDouble}};
  const double values[] = {-0.0,
                           0.0,
                           std::numeric_limits<double>::denorm_min(),
                           -std::numeric_limits<double>::denorm_min(),
                           DBL_MIN,
                           DBL_MAX,
                           -DBL_MAX,
                           1e-300,
                           1e300,
                           std::numbers::pi,
                           21.53,
                           1013.2,
                           -40.0,
                           1e18,
                           -9.3e18};
  std::vector<ChunkRecord> records;
  int64_t t = 0;
  for (double v : values) records.push_back(MakeRecord(++t, {v}));
  ExpectRoundTrip(schema, records);
  for (double v : values) ExpectRoundTrip(schema, {MakeRecord(1, {v})});
  // Mostly decimals with scattered exceptions.
  records.clear();
  for (int i = 0; i < 400; ++i) {
    double v = static_cast<double>(2000 + i % 37) / 100.0;
    if (i % 50 == 3) v = values[(i / 50) % 10];
    records.push_back(MakeRecord(i, {v}));
  }
  ExpectRoundTrip(schema, records);
}

TEST(ChunkCodecTest, VersionsAndTtls) {
  const std::vector<ChunkField> schema = {{"v", FieldType::kInt64}};
  std::vector<ChunkRecord> records;
  for (int i = 0; i < 200; ++i) records.push_back(MakeRecord(i, {int64_t{i}}));
  std::string without = EncodeOrDie(schema, records);
  ExpectRoundTrip(schema, records);

  for (auto& record : records) {
    record.version = 7;
    record.ttl = 1'900'000'000;
  }
  std::string constant = EncodeOrDie(schema, records);
  EXPECT_LE(constant.size(), without.size() + 16);  // two runs of one value each
  ExpectRoundTrip(schema, records);

  for (int i = 0; i < 200; ++i) {
    records[i].version = i % 3 == 0 ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(i) * 1000;
    records[i].ttl = i % 5 == 0 ? 0 : kMax - i;
  }
  ExpectRoundTrip(schema, records);
}

TEST(ChunkCodecTest, RejectsInvalidInputWithoutCrashing) {
  auto rejects = [](const std::vector<ChunkField>& schema, const std::vector<ChunkRecord>& records) {
    ChunkStats stats;
    Result<std::string> result = EncodeChunk(schema, records, &stats);
    EXPECT_FALSE(result.ok());
    EXPECT_TRUE(result.status().Is(StatusCode::kInvalidArgument)) << result.status().ToString();
  };
  const std::vector<ChunkField> schema = {{"d", FieldType::kDouble}, {"s", FieldType::kString}};
  rejects(schema, {});
  rejects(schema, {MakeRecord(2, {1.0, Value()}), MakeRecord(1, {1.0, Value()})});
  rejects(schema, {MakeRecord(2, {1.0, Value()}), MakeRecord(2, {1.0, Value()})});
  rejects(schema, {MakeRecord(1, {int64_t{1}, Value()})});
  rejects(schema, {MakeRecord(1, {1.0, true})});
  rejects(schema, {MakeRecord(1, {std::numeric_limits<double>::quiet_NaN(), Value()})});
  rejects(schema, {MakeRecord(1, {std::numeric_limits<double>::infinity(), Value()})});
  rejects(schema, {MakeRecord(1, {-std::numeric_limits<double>::infinity(), Value()})});
  rejects(schema, {MakeRecord(1, {1.0})});
  rejects(schema, {MakeRecord(1, {1.0, Value(), Value()})});
  rejects(schema, {MakeRecord(1, {1.0, std::string(kMaxStringValueBytes + 1, 'x')})});
  rejects({{"d", FieldType::kDouble}, {"d", FieldType::kInt64}}, {MakeRecord(1, {Value(), Value()})});
  rejects({{"", FieldType::kDouble}}, {MakeRecord(1, {Value()})});
  rejects({{std::string(kMaxFieldNameBytes + 1, 'n'), FieldType::kDouble}}, {MakeRecord(1, {Value()})});
  rejects({{"x", static_cast<FieldType>(9)}}, {MakeRecord(1, {Value()})});
  rejects({{"x", static_cast<FieldType>(0)}}, {MakeRecord(1, {Value()})});
  std::vector<ChunkField> too_many_fields;
  for (size_t i = 0; i <= kMaxChunkFields; ++i)
    too_many_fields.push_back({"f" + std::to_string(i), FieldType::kBool});
  rejects(too_many_fields, {MakeRecord(1, std::vector<Value>(too_many_fields.size()))});
  // Cells: the limit is checked before any record is looked at.
  std::vector<ChunkField> wide(kMaxChunkFields);
  for (size_t i = 0; i < wide.size(); ++i) wide[i] = {"f" + std::to_string(i), FieldType::kBool};
  std::vector<ChunkRecord> many(kMaxChunkCells / kMaxChunkFields + 1);
  rejects(wide, many);
}

TEST(ChunkCodecTest, DecodeChunkFieldsDecodesOnlyTheRequestedColumns) {
  std::vector<ChunkRecord> records;
  for (int i = 0; i < 50; ++i) {
    records.push_back(MakeRecord(
        i * kSecond, {i * 0.25, int64_t{i}, i % 2 == 0, std::to_string(i % 4), Timestamp{i * kMillisecond}},
        static_cast<uint64_t>(i), 100 + i));
  }
  std::string encoded = EncodeOrDie(kAllTypes, records);
  Result<DecodedChunk> partial = DecodeChunkFields(encoded, {"seen", "missing", "temperature"});
  ASSERT_TRUE(partial.ok()) << partial.status().ToString();
  ASSERT_EQ(partial->columns.size(), 2u);
  EXPECT_EQ(partial->columns[0].field.name, "temperature");  // schema order, not request order
  EXPECT_EQ(partial->columns[1].field.name, "seen");
  ASSERT_EQ(partial->size(), records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(partial->timestamps[i], records[i].timestamp);
    EXPECT_EQ(partial->versions[i], records[i].version);
    EXPECT_EQ(partial->ttls[i], records[i].ttl);
    EXPECT_TRUE(SameValue(partial->columns[0].values[i], records[i].values[0]));
    EXPECT_TRUE(SameValue(partial->columns[1].values[i], records[i].values[4]));
  }
  Result<DecodedChunk> none = DecodeChunkFields(encoded, {});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->columns.empty());
  EXPECT_EQ(none->size(), records.size());

  Result<std::vector<ChunkField>> schema = DecodeChunkSchema(encoded);
  ASSERT_TRUE(schema.ok());
  EXPECT_EQ(*schema, kAllTypes);
}

}  // namespace
}  // namespace cairn::chunk_codec_testing
