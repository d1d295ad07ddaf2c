#include "chunk/chunk_codec.h"

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <numbers>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "chunk_records.h"
#include "chunk/coding.h"
#include "chunk/crc32c.h"

namespace cairn {
namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kMillisecond = 1'000'000;

std::string Describe(const Value& value) {
  std::ostringstream out;
  switch (value.index()) {
    case 0:
      return "absent";
    case 1:
      out.precision(17);
      out << "double " << std::get<double>(value) << " (0x" << std::hex
          << std::bit_cast<uint64_t>(std::get<double>(value)) << ")";
      break;
    case 2:
      out << "int64 " << std::get<int64_t>(value);
      break;
    case 3:
      out << "bool " << std::get<bool>(value);
      break;
    case 4:
      out << "string of " << std::get<std::string>(value).size() << " bytes";
      break;
    case 5:
      out << "timestamp " << std::get<Timestamp>(value).unix_nanos;
      break;
  }
  return out.str();
}

// Value equality that tells -0.0 from 0.0.
bool SameValue(const Value& a, const Value& b) {
  if (a.index() != b.index()) return false;
  if (const double* x = std::get_if<double>(&a)) {
    return std::bit_cast<uint64_t>(*x) == std::bit_cast<uint64_t>(std::get<double>(b));
  }
  return a == b;
}

void ExpectMatches(const DecodedChunk& decoded, const std::vector<ChunkField>& schema,
                   const std::vector<ChunkRecord>& records) {
  ASSERT_EQ(decoded.size(), records.size());
  ASSERT_EQ(decoded.versions.size(), records.size());
  ASSERT_EQ(decoded.ttls.size(), records.size());
  EXPECT_EQ(decoded.Schema(), schema);
  for (size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(decoded.timestamps[i], records[i].timestamp) << "record " << i;
    EXPECT_EQ(decoded.versions[i], records[i].version) << "record " << i;
    EXPECT_EQ(decoded.ttls[i], records[i].ttl) << "record " << i;
  }
  for (size_t f = 0; f < decoded.columns.size(); ++f) {
    const ChunkColumn& column = decoded.columns[f];
    ASSERT_EQ(column.present.size(), records.size());
    ASSERT_EQ(column.values.size(), records.size());
    for (size_t i = 0; i < records.size(); ++i) {
      const Value& expected = records[i].values[f];
      EXPECT_EQ(column.present[i] != 0, !std::holds_alternative<std::monostate>(expected))
          << "field " << column.field.name << " record " << i;
      EXPECT_TRUE(SameValue(column.values[i], expected))
          << "field " << column.field.name << " record " << i << ": " << Describe(column.values[i]) << " vs "
          << Describe(expected);
    }
  }
}

std::string EncodeOrDie(const std::vector<ChunkField>& schema, const std::vector<ChunkRecord>& records) {
  Result<std::string> encoded = EncodeChunk(schema, records, nullptr);
  EXPECT_TRUE(encoded.ok()) << encoded.status().ToString();
  return encoded.ok() ? *encoded : std::string();
}

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

using test_chunks::MakeRecord;

const std::vector<ChunkField> kAllTypes = {{"temperature", FieldType::kDouble},
                                           {"count", FieldType::kInt64},
                                           {"alarm", FieldType::kBool},
                                           {"state", FieldType::kString},
                                           {"seen", FieldType::kTimestamp}};

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

// Random chunks over every type, presence pattern and value distribution.
class RandomChunkGenerator {
 public:
  explicit RandomChunkGenerator(uint64_t seed) : random_(seed) {}

  std::vector<ChunkField> Schema() {
    std::vector<ChunkField> schema;
    size_t fields = Below(7);
    for (size_t f = 0; f < fields; ++f) {
      schema.push_back({"field_" + std::to_string(f), static_cast<FieldType>(1 + Below(5))});
    }
    return schema;
  }

  std::vector<ChunkRecord> Records(const std::vector<ChunkField>& schema) {
    size_t count = 1 + Below(Below(4) == 0 ? 2000 : 200);
    std::vector<ChunkRecord> records(count);
    int64_t timestamp = Timestamp0();
    const int timestamp_style = static_cast<int>(Below(4));
    for (size_t i = 0; i < count; ++i) {
      if (i > 0) {
        int64_t step;
        switch (timestamp_style) {
          case 0:
            step = kSecond;
            break;
          case 1:
            step = kSecond + (static_cast<int64_t>(Below(41)) - 20) * kMillisecond;
            break;
          case 2:
            step = 1 + static_cast<int64_t>(Below(1000));
            break;
          default:
            step = static_cast<int64_t>(1 + Below(uint64_t{1} << Below(50)));
            break;
        }
        if (timestamp > kMax - step) {
          records.resize(i);
          break;
        }
        timestamp += step;
      }
      records[i].timestamp = timestamp;
    }
    const int version_style = static_cast<int>(Below(3));
    const int ttl_style = static_cast<int>(Below(3));
    for (size_t i = 0; i < records.size(); ++i) {
      records[i].version = version_style == 0 ? 0 : version_style == 1 ? 5 : random_();
      records[i].ttl = ttl_style == 0   ? 0
                       : ttl_style == 1 ? 2'000'000'000
                                        : static_cast<int64_t>(Below(3)) * 1000;
      records[i].values.resize(schema.size());
    }
    for (size_t f = 0; f < schema.size(); ++f) FillColumn(schema[f].type, f, &records);
    return records;
  }

 private:
  uint64_t Below(uint64_t bound) { return bound == 0 ? 0 : random_() % bound; }

  int64_t Timestamp0() {
    switch (Below(4)) {
      case 0:
        return 1'700'000'000 * kSecond;
      case 1:
        return -static_cast<int64_t>(Below(uint64_t{1} << 62));
      case 2:
        return kMax - static_cast<int64_t>(Below(1'000'000));
      default:
        return static_cast<int64_t>(random_());
    }
  }

  void FillColumn(FieldType type, size_t field, std::vector<ChunkRecord>* records) {
    const int presence_style = static_cast<int>(Below(4));  // all, none, sparse, random
    const int value_style = static_cast<int>(Below(4));
    int64_t walk = static_cast<int64_t>(Below(100000));
    for (size_t i = 0; i < records->size(); ++i) {
      bool present = presence_style == 0 || (presence_style == 2 && Below(50) == 0) ||
                     (presence_style == 3 && Below(2) == 0);
      if (!present) continue;
      walk += static_cast<int64_t>(Below(5)) - 2;
      Value& value = (*records)[i].values[field];
      switch (type) {
        case FieldType::kDouble:
          value = RandomDouble(value_style, walk);
          break;
        case FieldType::kInt64:
          value = RandomInteger(value_style, walk);
          break;
        case FieldType::kTimestamp:
          value = Timestamp{RandomInteger(value_style, walk)};
          break;
        case FieldType::kBool:
          value = value_style == 0 ? true : Below(2) == 0;
          break;
        case FieldType::kString:
          value = RandomString(value_style);
          break;
      }
    }
  }

  double RandomDouble(int style, int64_t walk) {
    switch (style) {
      case 0:
        return static_cast<double>(walk) / 100.0;
      case 1: {
        const double specials[] = {-0.0, std::numeric_limits<double>::denorm_min(), DBL_MAX, -DBL_MIN, 1e-300,
                                   0.1};
        return Below(10) == 0 ? specials[Below(6)] : static_cast<double>(walk) / 10.0;
      }
      case 2:
        while (true) {
          double v = std::bit_cast<double>(static_cast<uint64_t>(random_()));
          if (std::isfinite(v)) return v;
        }
      default:
        return std::sin(static_cast<double>(walk) * 0.001) * 1000.0;
    }
  }

  int64_t RandomInteger(int style, int64_t walk) {
    switch (style) {
      case 0:
        return walk;
      case 1:
        return 42;
      case 2:
        return static_cast<int64_t>(random_());
      default: {
        const int64_t extremes[] = {kMin, kMax, 0, -1, 1};
        return extremes[Below(5)];
      }
    }
  }

  std::string RandomString(int style) {
    switch (style) {
      case 0:
        return "state-" + std::to_string(Below(3));
      case 1: {
        std::string s(Below(20), '\0');
        for (char& c : s) c = static_cast<char>(Below(256));
        return s;
      }
      case 2:
        return std::string(Below(2) ? "" : std::string(1, '\0'));
      default: {
        size_t length = Below(300);
        return std::string(length, static_cast<char>('a' + Below(26)));
      }
    }
  }

  std::mt19937_64 random_;
};

TEST(ChunkCodecTest, RandomChunksRoundTrip) {
  RandomChunkGenerator generator(20240601);
  for (int round = 0; round < 150; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::vector<ChunkField> schema = generator.Schema();
    std::vector<ChunkRecord> records = generator.Records(schema);
    ChunkStats stats;
    Result<std::string> encoded = EncodeChunk(schema, records, &stats);
    ASSERT_TRUE(encoded.ok()) << encoded.status().ToString();
    Result<DecodedChunk> decoded = DecodeChunk(*encoded);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    ExpectMatches(*decoded, schema, records);
    // Re-encoding the decoded chunk gives the same bytes: the writer is deterministic.
    std::vector<ChunkRecord> again;
    for (size_t i = 0; i < decoded->size(); ++i) again.push_back(decoded->RecordAt(i));
    Result<std::string> reencoded = EncodeChunk(decoded->Schema(), again, nullptr);
    ASSERT_TRUE(reencoded.ok());
    EXPECT_EQ(*reencoded, *encoded);
    EXPECT_EQ(EncodeChunkStats(stats, schema), EncodeChunkStats(ComputeChunkStats(schema, again), schema));
    if (!schema.empty()) {
      Result<DecodedChunk> partial = DecodeChunkFields(*encoded, {schema.back().name});
      ASSERT_TRUE(partial.ok());
      ASSERT_EQ(partial->columns.size(), 1u);
      for (size_t i = 0; i < records.size(); ++i) {
        EXPECT_TRUE(SameValue(partial->columns[0].values[i], records[i].values.back()));
      }
    }
  }
}

// 1 Hz readings with +-20 ms jitter at millisecond precision and three
// random walks as real sensors report them (two decimals for temperature, one
// for humidity and pressure).
std::vector<ChunkRecord> SensorRecords(std::mt19937_64* random, int64_t start, size_t count) {
  int64_t centi_celsius = 2150;
  int64_t deci_percent = 450;
  int64_t deci_hectopascal = 10132;
  std::vector<ChunkRecord> records;
  records.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    int64_t jitter_ms = static_cast<int64_t>((*random)() % 41) - 20;
    int64_t timestamp = start + static_cast<int64_t>(i) * kSecond + jitter_ms * kMillisecond;
    centi_celsius += static_cast<int64_t>((*random)() % 3) - 1;
    deci_percent += static_cast<int64_t>((*random)() % 3) - 1;
    deci_hectopascal += static_cast<int64_t>((*random)() % 3) - 1;
    records.push_back(
        MakeRecord(timestamp,
                   {static_cast<double>(centi_celsius) / 100.0, static_cast<double>(deci_percent) / 10.0,
                    static_cast<double>(deci_hectopascal) / 10.0},
                   1, 0));
  }
  return records;
}

TEST(ChunkCodecTest, SensorDataStaysWellUnderOneAndAHalfBytesPerReading) {
  const std::vector<ChunkField> schema = {{"temperature", FieldType::kDouble},
                                          {"humidity", FieldType::kDouble},
                                          {"pressure", FieldType::kDouble}};
  std::mt19937_64 random(42);
  size_t total_bytes = 0;
  size_t total_readings = 0;
  size_t timestamp_only_bytes = 0;
  constexpr size_t kChunks = 10;
  constexpr size_t kRecordsPerChunk = 1000;
  for (size_t c = 0; c < kChunks; ++c) {
    std::vector<ChunkRecord> records =
        SensorRecords(&random, 1'700'000'000 * kSecond + static_cast<int64_t>(c * kRecordsPerChunk) * kSecond,
                      kRecordsPerChunk);
    std::string encoded = EncodeOrDie(schema, records);
    total_bytes += encoded.size();
    total_readings += records.size() * schema.size();
    Result<DecodedChunk> decoded = DecodeChunk(encoded);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    ExpectMatches(*decoded, schema, records);

    std::vector<ChunkRecord> timestamps_only = records;
    for (ChunkRecord& record : timestamps_only) record.values.clear();
    timestamp_only_bytes += EncodeOrDie({}, timestamps_only).size();
  }
  const double bytes_per_reading = static_cast<double>(total_bytes) / static_cast<double>(total_readings);
  const double bytes_per_timestamp =
      static_cast<double>(timestamp_only_bytes) / static_cast<double>(kChunks * kRecordsPerChunk);
  std::cout << "sensor chunks: " << total_bytes << " bytes for " << total_readings
            << " readings = " << bytes_per_reading << " bytes per reading; timestamps alone "
            << bytes_per_timestamp << " bytes each" << std::endl;
  RecordProperty("bytes_per_reading", std::to_string(bytes_per_reading));
  EXPECT_LE(bytes_per_reading, 1.5);
  EXPECT_LE(bytes_per_timestamp, 1.0);
}

// ---------------------------------------------------------------------------
// Corruption

std::vector<ChunkRecord> SmallMixedRecords() {
  std::vector<ChunkRecord> records;
  for (int i = 0; i < 40; ++i) {
    Value state;
    if (i % 3 == 0) state = i % 2 ? std::string("idle") : std::string("r\0un", 4);
    double temperature = i == 7 ? -0.0 : i == 9 ? std::numbers::pi : 20.0 + i * 0.01;
    records.push_back(
        MakeRecord(1'700'000'000 * kSecond + i * kSecond + (i % 5) * kMillisecond,
                   {temperature, int64_t{i * i - 100}, i % 4 == 0, state, Timestamp{i * kSecond}},
                   i < 20 ? 1 : 2, i % 2 == 0 ? 0 : 1'800'000'000));
  }
  return records;
}

// Re-computes the trailing checksum so that a mutation reaches the parser.
void FixChecksum(std::string* chunk) {
  uint32_t crc = Crc32c(std::string_view(*chunk).substr(0, chunk->size() - 4));
  for (int i = 0; i < 4; ++i) (*chunk)[chunk->size() - 4 + i] = static_cast<char>(crc >> (8 * i));
}

// A decode that succeeds must yield a valid chunk: re-encodable and stable.
void ExpectValidIfDecoded(const Result<DecodedChunk>& decoded) {
  if (!decoded.ok()) {
    EXPECT_TRUE(decoded.status().Is(StatusCode::kCorruption)) << decoded.status().ToString();
    return;
  }
  std::vector<ChunkRecord> records;
  for (size_t i = 0; i < decoded->size(); ++i) records.push_back(decoded->RecordAt(i));
  std::vector<ChunkField> schema = decoded->Schema();
  Result<std::string> reencoded = EncodeChunk(schema, records, nullptr);
  ASSERT_TRUE(reencoded.ok()) << reencoded.status().ToString();
  Result<DecodedChunk> again = DecodeChunk(*reencoded);
  ASSERT_TRUE(again.ok());
  ExpectMatches(*again, schema, records);
}

TEST(ChunkCorruptionTest, EveryByteFlipIsRejectedByTheChecksum) {
  const std::string encoded = EncodeOrDie(kAllTypes, SmallMixedRecords());
  for (size_t i = 0; i < encoded.size(); ++i) {
    for (int mask : {0x01, 0x80, 0xFF}) {
      std::string damaged = encoded;
      damaged[i] = static_cast<char>(damaged[i] ^ mask);
      Result<DecodedChunk> decoded = DecodeChunk(damaged);
      ASSERT_FALSE(decoded.ok()) << "byte " << i << " mask " << mask;
      EXPECT_TRUE(decoded.status().Is(StatusCode::kCorruption));
    }
  }
}

TEST(ChunkCorruptionTest, EveryTruncationAndExtensionIsRejected) {
  const std::string encoded = EncodeOrDie(kAllTypes, SmallMixedRecords());
  for (size_t size = 0; size < encoded.size(); ++size) {
    Result<DecodedChunk> decoded = DecodeChunk(std::string_view(encoded).substr(0, size));
    ASSERT_FALSE(decoded.ok()) << "size " << size;
    EXPECT_TRUE(decoded.status().Is(StatusCode::kCorruption));
  }
  std::string extended = encoded + "x";
  EXPECT_FALSE(DecodeChunk(extended).ok());
}

// With the checksum fixed up, every mutation reaches the parser: it must
// reject or decode to a valid chunk, never crash or read out of bounds
// (ASan/UBSan builds check the latter).
TEST(ChunkCorruptionTest, MutationsPastTheChecksumNeverCrash) {
  const std::string encoded = EncodeOrDie(kAllTypes, SmallMixedRecords());
  size_t rejected = 0;
  for (size_t i = 0; i + 4 < encoded.size(); ++i) {
    for (int mask : {0x01, 0x40, 0xFF}) {
      std::string damaged = encoded;
      damaged[i] = static_cast<char>(damaged[i] ^ mask);
      FixChecksum(&damaged);
      Result<DecodedChunk> decoded = DecodeChunk(damaged);
      rejected += !decoded.ok();
      ExpectValidIfDecoded(decoded);
      ExpectValidIfDecoded(DecodeChunkFields(damaged, {"state", "count"}));
    }
  }
  EXPECT_GT(rejected, 0u);
  for (size_t size = 5; size < encoded.size(); ++size) {
    std::string truncated = encoded.substr(0, size);
    FixChecksum(&truncated);
    Result<DecodedChunk> decoded = DecodeChunk(truncated);
    EXPECT_FALSE(decoded.ok()) << "size " << size;
  }
}

// Builds a chunk by hand, for forged headers a real encoder never writes.
class ForgedChunk {
 public:
  ForgedChunk() { bytes_ = std::string("CK\x01", 3); }
  ForgedChunk& Varint(uint64_t v) {
    chunk_coding::PutVarint(&bytes_, v);
    return *this;
  }
  ForgedChunk& Bytes(std::string_view b) {
    bytes_.append(b);
    return *this;
  }
  std::string Finish() const {
    std::string out = bytes_;
    chunk_coding::PutFixed32(&out, Crc32c(out));
    return out;
  }

 private:
  std::string bytes_;
};

void ExpectCorruption(const std::string& chunk, std::string_view fragment) {
  Result<DecodedChunk> decoded = DecodeChunk(chunk);
  ASSERT_FALSE(decoded.ok());
  EXPECT_TRUE(decoded.status().Is(StatusCode::kCorruption));
  EXPECT_NE(decoded.status().message().find(fragment), std::string::npos) << decoded.status().ToString();
}

TEST(ChunkCorruptionTest, ForgedHeadersNameTheProblem) {
  ExpectCorruption("", "too short");
  std::string bad_crc = EncodeOrDie({}, {MakeRecord(1, {})});
  bad_crc.back() ^= 1;
  ExpectCorruption(bad_crc, "checksum mismatch");
  std::string bad_magic("XK\x01\x01\x00\x00", 6);
  chunk_coding::PutFixed32(&bad_magic, Crc32c(bad_magic));
  ExpectCorruption(bad_magic, "bad magic");
  std::string bad_version("CK\x02\x01\x00\x00", 6);
  chunk_coding::PutFixed32(&bad_version, Crc32c(bad_version));
  ExpectCorruption(bad_version, "format version 2");
  ExpectCorruption(ForgedChunk().Varint(0).Finish(), "record count 0");
  ExpectCorruption(ForgedChunk().Varint(kMaxChunkRecords + 1).Finish(), "record count");
  ExpectCorruption(ForgedChunk().Varint(1).Varint(kMaxChunkFields + 1).Finish(), "field count");
  ExpectCorruption(ForgedChunk().Varint(kMaxChunkRecords).Varint(5).Finish(), "cells");
  ExpectCorruption(ForgedChunk().Varint(1).Varint(1000).Bytes("x").Finish(), "bytes left");
  ExpectCorruption(ForgedChunk().Varint(1).Varint(1).Varint(1).Bytes("a").Bytes("\x09").Finish(),
                   "type code");
  ExpectCorruption(ForgedChunk().Varint(1).Varint(1).Varint(0).Bytes("\x01\x01\x01").Finish(), "name length");
  ExpectCorruption(
      ForgedChunk().Varint(1).Varint(2).Varint(1).Bytes("a\x01").Varint(1).Bytes("a\x02\x00").Finish(),
      "twice");
  ExpectCorruption(ForgedChunk().Varint(1).Varint(0).Bytes("\x04").Finish(), "flags");
  // Timestamps section longer than what is left.
  ExpectCorruption(ForgedChunk().Varint(1).Varint(0).Bytes(std::string(1, '\0')).Varint(100).Finish(),
                   "section");
  // Two records, second delta 0: not ascending.
  ExpectCorruption(ForgedChunk()
                       .Varint(2)
                       .Varint(0)
                       .Bytes(std::string(1, '\0'))
                       .Varint(6)
                       .Bytes(std::string("\x00\x02\x00\x01\x00\x01", 6))
                       .Finish(),
                   "ascending");
  // Two records: t0 = INT64_MAX - 1 then a step of 2.
  std::string overflow_body(1, '\0');
  chunk_coding::PutSignedVarint(&overflow_body, kMax - 1);
  overflow_body.append(std::string("\x00\x01\x04\x01", 4));  // one run: step 2
  ExpectCorruption(ForgedChunk()
                       .Varint(2)
                       .Varint(0)
                       .Bytes(std::string(1, '\0'))
                       .Varint(overflow_body.size())
                       .Bytes(overflow_body)
                       .Finish(),
                   "int64 range");
  // Scale 10^18 times a delta of 19 overflows 64 bits.
  std::string scaled_body("\x12", 1);
  chunk_coding::PutSignedVarint(&scaled_body, 0);
  scaled_body.append(std::string("\x00\x01\x26\x01", 4));
  ExpectCorruption(ForgedChunk()
                       .Varint(2)
                       .Varint(0)
                       .Bytes(std::string(1, '\0'))
                       .Varint(scaled_body.size())
                       .Bytes(scaled_body)
                       .Finish(),
                   "overflows");
}

TEST(ChunkCorruptionTest, ForgedColumnsNameTheProblem) {
  // One record, one string field; the column section is appended by each case.
  auto chunk_with_column = [](FieldType type, std::string_view column) {
    return ForgedChunk()
        .Varint(1)
        .Varint(1)
        .Varint(1)
        .Bytes("f")
        .Bytes(std::string(1, static_cast<char>(type)))
        .Bytes(std::string(1, '\0'))  // flags
        .Varint(2)
        .Bytes(std::string("\x00\x02", 2))  // timestamps: exponent 0, t0 = 1
        .Varint(column.size())
        .Bytes(column)
        .Finish();
  };
  ExpectCorruption(chunk_with_column(FieldType::kString, std::string("\x07", 1)), "presence mode");
  ExpectCorruption(chunk_with_column(FieldType::kString, std::string("\x00\x02\x00\x00", 4)),
                   "dictionary size");
  ExpectCorruption(chunk_with_column(FieldType::kString, std::string("\x00\x01\x80\x40", 4)), "exceeds 4096");
  ExpectCorruption(chunk_with_column(FieldType::kBool, std::string("\x00\x03", 2)), "padding");
  ExpectCorruption(chunk_with_column(FieldType::kBool, std::string("\x02\x03", 2)), "padding");
  ExpectCorruption(chunk_with_column(FieldType::kInt64, std::string("\x01\x00", 2)), "trailing");
  ExpectCorruption(chunk_with_column(FieldType::kInt64, std::string("\x03\x02\x00\x02", 4)), "presence run");
  ExpectCorruption(chunk_with_column(FieldType::kInt64, std::string("\x00\x01\x00\x41", 4)), "bit width 65");
  ExpectCorruption(chunk_with_column(FieldType::kDouble, std::string("\x00\x00\x13", 3)), "exponent 19");
  EXPECT_TRUE(DecodeChunk(chunk_with_column(FieldType::kBool, std::string("\x00\x01", 2))).ok());
  EXPECT_TRUE(DecodeChunk(chunk_with_column(FieldType::kBool, std::string("\x01", 1))).ok());
  EXPECT_TRUE(DecodeChunk(chunk_with_column(FieldType::kString, std::string("\x00\x01\x00", 3))).ok());
}

TEST(ChunkCorruptionTest, ForgedHugeExpansionsAreBounded) {
  // One run of a 4096-byte string repeated across the maximal record count
  // would decode to gigabytes; the string limit stops it.
  constexpr size_t kRecords = kMaxChunkCells;  // one field: cells == records
  static_assert(kRecords <= kMaxChunkRecords * 4);
  const size_t records = std::min(kMaxChunkRecords, kRecords);
  std::string column("\x00", 1);
  chunk_coding::PutVarint(&column, 1);
  chunk_coding::PutVarint(&column, kMaxStringValueBytes);
  column.append(kMaxStringValueBytes, 's');
  std::string timestamps(1, '\0');
  chunk_coding::PutSignedVarint(&timestamps, 0);
  timestamps.append(std::string("\x00\x01\x02", 3));  // one run of step 1
  chunk_coding::PutVarint(&timestamps, records - 1);
  std::string chunk = ForgedChunk()
                          .Varint(records)
                          .Varint(1)
                          .Varint(1)
                          .Bytes("s")
                          .Bytes(std::string(1, static_cast<char>(FieldType::kString)))
                          .Bytes(std::string(1, '\0'))
                          .Varint(timestamps.size())
                          .Bytes(timestamps)
                          .Varint(column.size())
                          .Bytes(column)
                          .Finish();
  ExpectCorruption(chunk, "string values exceed");
}

}  // namespace
}  // namespace cairn
