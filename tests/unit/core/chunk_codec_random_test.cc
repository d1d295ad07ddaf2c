#include "chunk/chunk_codec.h"

// Chunk codec over random chunks of every type and presence pattern, and the
// encoded size of realistic sensor data.

#include <bit>
#include <cfloat>
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "chunk_codec_test_util.h"

namespace cairn::chunk_codec_testing {
namespace {

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

}  // namespace
}  // namespace cairn::chunk_codec_testing
