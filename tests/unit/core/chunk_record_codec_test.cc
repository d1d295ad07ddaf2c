// The record codec's round trips and refusals: block order, extreme and
// bit-exact values, identifiers, LSNs, dimensions and attributes, invalid
// records and tags, and the limits of encoder and decoder.
#include "cairn/core/record_codec.h"

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "chunk_record_codec_test_util.h"

namespace cairn::record_codec_testing {
namespace {

constexpr int64_t kMinInt64 = std::numeric_limits<int64_t>::min();
constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();

using SeriesKey = std::tuple<std::string, std::string, int, TagMap>;

SeriesKey SeriesOf(const RecordRow& row) {
  return SeriesKey(row.device_id, row.measure_name, row.shard, row.dimensions);
}

// The order record_codec.h promises: series (device, measure, shard,
// dimensions) by first appearance, records by timestamp (ties in input
// order), fields by name; every record with its series' last attributes.
std::vector<RecordRow> InBlockOrder(std::vector<RecordRow> rows) {
  std::map<SeriesKey, size_t> first_seen;
  std::map<SeriesKey, TagMap> attributes;
  for (const RecordRow& row : rows) {
    first_seen.emplace(SeriesOf(row), first_seen.size());
    attributes[SeriesOf(row)] = row.attributes;
  }
  for (RecordRow& row : rows) {
    row.attributes = attributes.at(SeriesOf(row));
    std::stable_sort(row.fields.begin(), row.fields.end(),
                     [](const Field& a, const Field& b) { return a.name < b.name; });
  }
  std::stable_sort(rows.begin(), rows.end(), [&](const RecordRow& a, const RecordRow& b) {
    const size_t series_a = first_seen.at(SeriesOf(a));
    const size_t series_b = first_seen.at(SeriesOf(b));
    if (series_a != series_b) return series_a < series_b;
    return a.timestamp < b.timestamp;
  });
  return rows;
}

RecordBlock RoundTrip(const std::vector<RecordRow>& rows) {
  Result<std::string> bytes = EncodeRecordBlock(rows);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  if (!bytes.ok()) return {};
  Result<RecordBlock> block = DecodeRecordBlock(*bytes);
  EXPECT_TRUE(block.ok()) << block.status().ToString();
  if (!block.ok()) return {};
  return std::move(block).value();
}

TEST(RecordCodecTest, MixedSeriesRoundTripInBlockOrder) {
  std::vector<RecordRow> rows;
  for (int i = 0; i < 50; ++i) {
    const int64_t t = kStart + i * kSecond;
    rows.push_back(
        Row("pump-1", "env", t, {{"temperature", 20.0 + i * 0.25}, {"humidity", int64_t{40 + i % 3}}}));
    rows.push_back(Row("pump-2", "env", t + 7, {{"temperature", -5.5 + i * 0.125}}, 0, 1'800'000'000));
    rows.push_back(
        Row("pump-1", "state", t, {{"open", i % 2 == 0}, {"mode", std::string(i % 5 ? "auto" : "manual")}}));
    rows.push_back(Row("pump-1", "env", t, {{"temperature", 1.0}}, 0, 0, /*shard=*/3));
  }
  // Out of order arrivals within a series.
  rows.push_back(Row("pump-2", "env", kStart - kSecond, {{"temperature", 3.5}}, 9));
  rows.push_back(Row("pump-1", "state", kStart + 1, {{"seen", Timestamp{kStart}}}));

  RecordBlock block = RoundTrip(rows);
  ExpectSameTaggedRows(InBlockOrder(rows), block.records);
}

TEST(RecordCodecTest, EmptyInputIsAnEmptyBlock) {
  Result<std::string> bytes = EncodeRecordBlock({});
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  Result<RecordBlock> block = DecodeRecordBlock(*bytes);
  ASSERT_TRUE(block.ok()) << block.status().ToString();
  EXPECT_TRUE(block->records.empty());
}

TEST(RecordCodecTest, ExtremeIntegersAndTimestamps) {
  std::vector<RecordRow> rows = {
      Row("d", "m", kMinInt64, {{"i", kMinInt64}, {"t", Timestamp{kMaxInt64}}},
          std::numeric_limits<uint64_t>::max(), kMaxInt64),
      Row("d", "m", kMinInt64 + 1, {{"i", kMaxInt64}, {"t", Timestamp{kMinInt64}}}, 0, 0),
      Row("d", "m", -1, {{"i", int64_t{-1}}}, 1, 1),
      Row("d", "m", 0, {{"i", int64_t{0}}}),
      // 1677-09-21 and 2262-04-11, the ends of int64 nanoseconds.
      Row("d", "m", kMaxInt64 - 1, {{"i", int64_t{1}}}, 2),
      Row("d", "m", kMaxInt64, {{"t", Timestamp{0}}}, 3, 4'102'444'800),
  };
  ExpectSameRows(InBlockOrder(rows), RoundTrip(rows).records);
}

TEST(RecordCodecTest, DoublesAreBitExact) {
  const std::vector<double> values = {0.0,
                                      -0.0,
                                      0.1,
                                      -273.15,
                                      DBL_MAX,
                                      -DBL_MAX,
                                      DBL_MIN,
                                      DBL_TRUE_MIN,
                                      -DBL_TRUE_MIN,
                                      1e300,
                                      3.141592653589793,
                                      1.0 / 3,
                                      123456.789012,
                                      2.5e-10,
                                      9007199254740993.0};
  std::vector<RecordRow> rows;
  for (size_t i = 0; i < values.size(); ++i) {
    rows.push_back(Row("d", "m", kStart + static_cast<int64_t>(i), {{"v", values[i]}}));
  }
  ExpectSameRows(rows, RoundTrip(rows).records);
}

TEST(RecordCodecTest, UnicodeIdentifiersAndStringBytes) {
  std::string with_controls = std::string("line1\nline2\ttab") + '\0' + "nul \x7f del";
  std::vector<RecordRow> rows = {
      Row("Gerät-ü-7", "温度#室内", kStart, {{"état", with_controls}, {"📈", 1.5}}),
      Row("Gerät-ü-7", "温度#室内", kStart + 1, {{"état", std::string(kMaxStringValueBytes, 'x')}}),
      Row(std::string(kMaxDeviceIdBytes, 'd'), std::string(kMaxMeasureNameBytes, 'm'), kStart,
          {{std::string(kMaxFieldNameBytes, 'f'), std::string()}}),
  };
  ExpectSameRows(InBlockOrder(rows), RoundTrip(rows).records);
}

TEST(RecordCodecTest, RepeatedIdentitiesAreKeptInInputOrder) {
  // A rewrite with a higher version and a retried duplicate in one batch.
  std::vector<RecordRow> rows = {
      Row("d", "m", kStart + 2, {{"v", 1.0}}, 1), Row("d", "m", kStart, {{"v", 2.0}}, 1),
      Row("d", "m", kStart + 2, {{"v", 3.0}}, 2), Row("d", "m", kStart + 1, {{"v", 4.0}}),
      Row("d", "m", kStart + 2, {{"v", 3.0}}, 2), Row("d", "m", kStart, {{"w", int64_t{5}}}, 0),
  };
  RecordBlock block = RoundTrip(rows);
  ExpectSameRows(InBlockOrder(rows), block.records);
  ASSERT_EQ(block.records.size(), 6u);
  EXPECT_EQ(block.records[3].version, 1u);
  EXPECT_EQ(block.records[4].version, 2u);
}

TEST(RecordCodecTest, EveryRecordKeepsItsLsnThroughLayersAndChunks) {
  // Equal versions of one timestamp told apart by their LSN only (a merge
  // under on_conflict overwrite), in two layers.
  std::vector<RecordRow> rows = {Row("d", "m", kStart, {{"v", 1.0}}), Row("d", "m", kStart + 1, {{"v", 2.0}}),
                                 Row("d", "m", kStart, {{"v", 3.0}}), Row("e", "m", kStart, {{"v", 4.0}})};
  const uint64_t lsns[] = {7, 9, 1'000'000'000'000, 8};
  for (size_t i = 0; i < rows.size(); ++i) rows[i].lsn = lsns[i];
  RecordBlock block = RoundTrip(rows);
  ASSERT_EQ(block.records.size(), 4u);
  // Block order: series d by timestamp (equal ones in input order), then e.
  EXPECT_EQ(block.records[0].lsn, 7u);
  EXPECT_EQ(block.records[1].lsn, 1'000'000'000'000u);
  EXPECT_EQ(std::get<double>(block.records[1].fields[0].value), 3.0);
  EXPECT_EQ(block.records[2].lsn, 9u);
  EXPECT_EQ(block.records[3].lsn, 8u);
}

TEST(RecordCodecTest, FieldsComeBackSortedByName) {
  std::vector<RecordRow> rows = {
      Row("d", "m", kStart, {{"zeta", 1.0}, {"alpha", int64_t{2}}, {"mid", true}})};
  RecordBlock block = RoundTrip(rows);
  ASSERT_EQ(block.records.size(), 1u);
  ASSERT_EQ(block.records[0].fields.size(), 3u);
  EXPECT_EQ(block.records[0].fields[0].name, "alpha");
  EXPECT_EQ(block.records[0].fields[1].name, "mid");
  EXPECT_EQ(block.records[0].fields[2].name, "zeta");
}

TEST(RecordCodecTest, AFieldMayHaveDifferentTypesInDifferentSeries) {
  std::vector<RecordRow> rows = {Row("a", "m", kStart, {{"x", 1.0}}),
                                 Row("b", "m", kStart, {{"x", int64_t{1}}}),
                                 Row("a", "m", kStart, {{"x", std::string("s")}}, 0, 0, 1)};
  ExpectSameRows(InBlockOrder(rows), RoundTrip(rows).records);
}

TEST(RecordCodecTest, DimensionsAndAttributesRoundTrip) {
  std::vector<RecordRow> rows = {
      Tagged(Row("a", "m", kStart, {{"x", 1.0}}), {{"firmware", "1.2.3"}, {"ort", "Zürich"}}),
      Tagged(Row("b", "m", kStart, {{"x", 2.0}}), {{"site", "north"}, {"rack", ""}}, {{"owner", "ops"}}),
      Tagged(Row("a", "m", kStart + 1, {{"x", 3.0}}), {{"firmware", "1.2.3"}, {"ort", "Zürich"}},
             {{"model", "X1"}}),
      Row("c", "m", kStart, {{"x", 4.0}}, 0, 0, 2)};
  RecordBlock block = RoundTrip(rows);
  ExpectSameTaggedRows(InBlockOrder(rows), block.records);
  // The series' attributes as its last record carried them, on every record.
  ASSERT_EQ(block.records.size(), 4u);
  EXPECT_EQ(block.records[0].attributes, (TagMap{{"model", "X1"}}));
  EXPECT_EQ(block.records[1].attributes, (TagMap{{"model", "X1"}}));
}

TEST(RecordCodecTest, SeriesDifferingOnlyInADimensionStayApart) {
  // One device, measure, shard and timestamp; the sensor tells them apart.
  std::vector<RecordRow> rows = {Tagged(Row("gw1", "env", kStart, {{"t", 1.0}}), {{"sensor", "a"}}),
                                 Tagged(Row("gw1", "env", kStart, {{"t", 2.0}}), {{"sensor", "b"}}),
                                 Row("gw1", "env", kStart, {{"t", 3.0}}),
                                 Tagged(Row("gw1", "env", kStart + 1, {{"t", 4.0}}), {{"sensor", "a"}})};
  RecordBlock block = RoundTrip(rows);
  ExpectSameTaggedRows(InBlockOrder(rows), block.records);
  ASSERT_EQ(block.records.size(), 4u);
  EXPECT_EQ(block.records[0].dimensions, (TagMap{{"sensor", "a"}}));
  EXPECT_EQ(block.records[1].dimensions, (TagMap{{"sensor", "a"}}));
  EXPECT_EQ(block.records[2].dimensions, (TagMap{{"sensor", "b"}}));
  EXPECT_TRUE(block.records[3].dimensions.empty());
}

TEST(RecordCodecTest, RejectsInvalidTags) {
  const RecordRow row = Row("a", "m", kStart, {{"x", 1.0}});
  EXPECT_TRUE(EncodeRecordBlock(std::vector<RecordRow>{Tagged(row, {{"site", "a\nb"}})})
                  .status()
                  .Is(StatusCode::kInvalidArgument));
  EXPECT_TRUE(EncodeRecordBlock(
                  std::vector<RecordRow>{Tagged(row, {{"site", std::string(kMaxDimensionBytes + 1, 'v')}})})
                  .status()
                  .Is(StatusCode::kInvalidArgument));
  EXPECT_TRUE(EncodeRecordBlock(std::vector<RecordRow>{Tagged(row, {}, {{"", "x"}})})
                  .status()
                  .Is(StatusCode::kInvalidArgument));
  TagMap many;
  for (size_t i = 0; i <= kMaxDimensionsPerSeries; ++i) many["t" + std::to_string(i)] = "v";
  EXPECT_TRUE(
      EncodeRecordBlock(std::vector<RecordRow>{Tagged(row, many)}).status().Is(StatusCode::kInvalidArgument));
  EXPECT_TRUE(EncodeRecordBlock(std::vector<RecordRow>{Tagged(row, {}, many)})
                  .status()
                  .Is(StatusCode::kInvalidArgument));
}

TEST(RecordCodecTest, RejectsInvalidRecords) {
  struct Case {
    const char* what;
    RecordRow row;
  };
  const std::vector<Case> cases = {
      {"NaN", Row("d", "m", kStart, {{"v", std::nan("")}})},
      {"infinity", Row("d", "m", kStart, {{"v", -HUGE_VAL}})},
      {"no fields", Row("d", "m", kStart, {})},
      {"empty device", Row("", "m", kStart, {{"v", 1.0}})},
      {"device with NUL", Row(std::string("d\0x", 3), "m", kStart, {{"v", 1.0}})},
      {"overlong measure", Row("d", std::string(kMaxMeasureNameBytes + 1, 'm'), kStart, {{"v", 1.0}})},
      {"invalid UTF-8 string", Row("d", "m", kStart, {{"v", std::string("\xc3\x28")}})},
      {"overlong string", Row("d", "m", kStart, {{"v", std::string(kMaxStringValueBytes + 1, 's')}})},
      {"duplicate field", Row("d", "m", kStart, {{"v", 1.0}, {"v", 2.0}})},
      {"absent value", Row("d", "m", kStart, {{"v", std::monostate{}}})},
      {"negative ttl", Row("d", "m", kStart, {{"v", 1.0}}, 0, -1)},
      {"negative shard", Row("d", "m", kStart, {{"v", 1.0}}, 0, 0, -1)},
  };
  for (const Case& c : cases) {
    std::vector<RecordRow> rows = {Row("ok", "m", kStart, {{"v", 1.0}}), c.row};
    Status status = EncodeRecordBlock(rows).status();
    EXPECT_TRUE(status.Is(StatusCode::kInvalidArgument)) << c.what << ": " << status.ToString();
    EXPECT_NE(status.message().find("record 1"), std::string::npos) << c.what << ": " << status.ToString();
    EXPECT_EQ(ValidateRecordBlock(rows, {}).code(), status.code()) << c.what;
  }
}

TEST(RecordCodecTest, RejectsAFieldChangingTypeWithinASeries) {
  std::vector<RecordRow> rows = {Row("d", "m", kStart, {{"v", 1.0}}),
                                 Row("d", "m", kStart + 1, {{"v", int64_t{1}}})};
  Status status = EncodeRecordBlock(rows).status();
  EXPECT_TRUE(status.Is(StatusCode::kInvalidArgument)) << status.ToString();
  EXPECT_NE(status.message().find("'v'"), std::string::npos) << status.ToString();
}

TEST(RecordCodecTest, EncoderEnforcesLimits) {
  std::vector<RecordRow> rows;
  for (int i = 0; i < 10; ++i) {
    rows.push_back(Row("d", "m", kStart + i, {{"a", 1.0}, {"b", std::string("0123456789")}}));
  }
  RecordBlockLimits limits;
  limits.max_records = 9;
  EXPECT_TRUE(EncodeRecordBlock(rows, limits).status().Is(StatusCode::kResourceExhausted));
  limits = {};
  limits.max_cells = 19;  // 10 records x 2 fields
  EXPECT_TRUE(EncodeRecordBlock(rows, limits).status().Is(StatusCode::kResourceExhausted));
  limits.max_cells = 20;
  EXPECT_TRUE(EncodeRecordBlock(rows, limits).ok());
  limits = {};
  limits.max_string_bytes = 99;
  EXPECT_TRUE(EncodeRecordBlock(rows, limits).status().Is(StatusCode::kResourceExhausted));
}

TEST(RecordCodecTest, DecoderEnforcesLimitsBeforeExpandingAChunk) {
  std::vector<RecordRow> rows;
  for (int i = 0; i < 60; ++i) {
    rows.push_back(Row("d", "m", kStart + i * kSecond, {{"a", 1.0}, {"b", std::string(100, 'q')}}));
  }
  Result<std::string> bytes = EncodeRecordBlock(rows);
  ASSERT_TRUE(bytes.ok());
  // Runs make the block far smaller than its strings.
  EXPECT_LT(bytes->size(), 400u);

  RecordBlockLimits limits;
  limits.max_records = 59;
  EXPECT_TRUE(DecodeRecordBlock(*bytes, limits).status().Is(StatusCode::kResourceExhausted));
  limits = {};
  limits.max_cells = 119;
  EXPECT_TRUE(DecodeRecordBlock(*bytes, limits).status().Is(StatusCode::kResourceExhausted));
  limits = {};
  limits.max_string_bytes = 5999;
  EXPECT_TRUE(DecodeRecordBlock(*bytes, limits).status().Is(StatusCode::kResourceExhausted));
  limits.max_string_bytes = 6000;
  EXPECT_TRUE(DecodeRecordBlock(*bytes, limits).ok());
}

}  // namespace
}  // namespace cairn::record_codec_testing
