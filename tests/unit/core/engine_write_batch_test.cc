#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "engine/write/write_batch.h"

namespace cairn {
namespace {

uint64_t Bits(double d) {
  uint64_t b;
  std::memcpy(&b, &d, sizeof b);
  return b;
}

std::vector<DecodedWriteRecord> RoundTrip(const std::vector<std::string>& tables,
                                          const std::vector<Record>& records) {
  std::vector<LoggedRecord> logged;
  for (size_t i = 0; i < records.size(); ++i) logged.push_back({&tables[i], &records[i], records[i].ttl});
  auto decoded = DecodeWriteBatch(EncodeWriteBatch(logged));
  EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
  return decoded.ok() ? std::move(decoded).value() : std::vector<DecodedWriteRecord>{};
}

TEST(WriteBatchTest, EveryTypeAndExtremeRoundTrips) {
  const std::vector<double> doubles = {0.0,
                                       -0.0,
                                       21.53,
                                       -3.7,
                                       1013.2,
                                       0.1,
                                       1.0 / 3.0,
                                       1e-300,
                                       std::numeric_limits<double>::denorm_min(),
                                       std::numeric_limits<double>::max(),
                                       std::numeric_limits<double>::lowest(),
                                       9007199254740993.0,
                                       123456789.123456789};
  std::vector<Record> records;
  std::vector<std::string> tables;
  int64_t ts = INT64_MIN;
  for (double d : doubles) {
    Record r;
    r.device_id = "dev";
    r.measure_name = "m#x";
    r.timestamp = ts;
    ts = ts == INT64_MIN ? INT64_MAX : ts / 2;
    r.version = UINT64_MAX;
    r.ttl = 1'800'000'000;
    r.fields = {{"d", d},
                {"i", INT64_MIN},
                {"j", INT64_MAX},
                {"b", true},
                {"s", std::string("x\0y", 3)},
                {"t", Timestamp{-1}}};
    r.dimensions = {{"site", "north"}, {"rack", ""}};
    records.push_back(r);
    tables.push_back("table_" + std::to_string(records.size() % 2));
  }
  auto decoded = RoundTrip(tables, records);
  ASSERT_EQ(decoded.size(), records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    const Record& want = records[i];
    const Record& got = decoded[i].record;
    EXPECT_EQ(decoded[i].table, tables[i]);
    EXPECT_EQ(got.device_id, want.device_id);
    EXPECT_EQ(got.measure_name, want.measure_name);
    EXPECT_EQ(got.timestamp, want.timestamp);
    EXPECT_EQ(got.version, want.version);
    EXPECT_EQ(got.ttl, want.ttl);
    EXPECT_EQ(got.dimensions, want.dimensions);
    ASSERT_EQ(got.fields.size(), want.fields.size());
    EXPECT_EQ(Bits(std::get<double>(got.fields[0].value)), Bits(doubles[i])) << doubles[i];
    for (size_t f = 1; f < want.fields.size(); ++f) EXPECT_EQ(got.fields[f].value, want.fields[f].value);
  }
}

TEST(WriteBatchTest, RandomDoublesRoundTripBitExactly) {
  std::mt19937_64 random(7);
  std::vector<Record> records;
  std::vector<std::string> tables;
  for (int i = 0; i < 2000; ++i) {
    double d;
    if (i % 3 == 0) {
      uint64_t bits = random();
      std::memcpy(&d, &bits, sizeof d);
      if (!std::isfinite(d)) d = 1.5;
    } else {
      d = static_cast<double>(static_cast<int64_t>(random() % 2000001) - 1000000) /
          (i % 3 == 1 ? 100.0 : 1e6);
    }
    Record r;
    r.device_id = "d" + std::to_string(i % 10);
    r.measure_name = "env";
    r.timestamp = 1'700'000'000'000'000'000 + i * 1'000'000'000LL;
    r.fields = {{"v", d}};
    records.push_back(r);
    tables.push_back("t");
  }
  auto decoded = RoundTrip(tables, records);
  ASSERT_EQ(decoded.size(), records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(Bits(std::get<double>(decoded[i].record.fields[0].value)),
              Bits(std::get<double>(records[i].fields[0].value)));
  }
}

TEST(WriteBatchTest, SensorRecordsStayCompact) {
  std::vector<Record> records;
  std::vector<std::string> tables(1000, "sensors");
  for (int i = 0; i < 1000; ++i) {
    Record r;
    r.device_id = "device-" + std::to_string(i % 200);
    r.measure_name = "env";
    r.timestamp = 1'700'000'000'000'000'000 + (i / 200) * 1'000'000'000LL + (i % 200) * 3'000'000LL;
    r.fields = {{"temperature", 21.5 + (i % 7) * 0.01},
                {"humidity", 40.0 + (i % 5) * 0.1},
                {"pressure", 1013.2 + (i % 3) * 0.1}};
    records.push_back(r);
  }
  std::vector<LoggedRecord> logged;
  for (size_t i = 0; i < records.size(); ++i) logged.push_back({&tables[i], &records[i], 0});
  const std::string payload = EncodeWriteBatch(logged);
  // Three readings per record: under the 8 bytes a raw double alone needs,
  // timestamp, series and field names included.
  const double bytes_per_reading = payload.size() / 3000.0;
  std::printf("write batch: %.2f bytes per reading\n", bytes_per_reading);
  EXPECT_LT(bytes_per_reading, 8.0);
}

TEST(WriteBatchTest, EveryTruncationAndTrailingGarbageIsCorruption) {
  std::vector<std::string> tables = {"t", "t"};
  std::vector<Record> records(2);
  for (Record& r : records) {
    r.device_id = "d";
    r.measure_name = "m";
    r.timestamp = 5;
    r.fields = {{"v", 0.5}, {"s", std::string("hello")}};
  }
  std::vector<LoggedRecord> logged = {{&tables[0], &records[0], 0}, {&tables[1], &records[1], 0}};
  const std::string payload = EncodeWriteBatch(logged);
  for (size_t n = 0; n < payload.size(); ++n) {
    auto decoded = DecodeWriteBatch(payload.substr(0, n));
    ASSERT_FALSE(decoded.ok()) << n;
    EXPECT_EQ(decoded.status().code(), StatusCode::kCorruption);
  }
  EXPECT_FALSE(DecodeWriteBatch(payload + "x").ok());
  std::string wrong_version = payload;
  wrong_version[0] = 9;
  EXPECT_FALSE(DecodeWriteBatch(wrong_version).ok());
}

}  // namespace
}  // namespace cairn
