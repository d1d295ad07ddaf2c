#include "cairn/sync/sync_envelope.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/platform/crypto.h"

#include "record_rows.h"

namespace cairn {
namespace {

using test_rows::DescribeRow;
using test_rows::ExpectSameRows;
using test_rows::Row;
using test_rows::SameRow;
using test_rows::SameValue;

constexpr int64_t kMinInt64 = std::numeric_limits<int64_t>::min();
constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kMillisecond = 1'000'000;
constexpr int64_t kStart = 1'700'000'000 * kSecond;
constexpr std::string_view kKey = "gateway-7 secret key, 32 bytes!!";
constexpr std::string_view kOtherKey = "another gateway's key, 32 bytes!";

EnvelopeHeader Header(uint64_t first_lsn = 1000, uint64_t last_lsn = 1999, SyncLane lane = SyncLane::kLive) {
  return EnvelopeHeader{"gw-7", "sensors", lane, 42, first_lsn, last_lsn};
}

std::vector<RecordRow> WithSortedFields(std::vector<RecordRow> rows) {
  for (RecordRow& row : rows) {
    std::stable_sort(row.fields.begin(), row.fields.end(),
                     [](const Field& a, const Field& b) { return a.name < b.name; });
  }
  return rows;
}

// `row` with these dimensions and attributes.
RecordRow Tagged(RecordRow row, TagMap dimensions, TagMap attributes = {}) {
  row.dimensions = std::move(dimensions);
  row.attributes = std::move(attributes);
  return row;
}

// ExpectSameRows, dimensions and attributes included.
void ExpectSameTaggedRows(const std::vector<RecordRow>& expected, const std::vector<RecordRow>& actual) {
  ExpectSameRows(expected, actual);
  for (size_t i = 0; i < std::min(expected.size(), actual.size()); ++i) {
    EXPECT_EQ(expected[i].dimensions, actual[i].dimensions) << "row " << i << " " << DescribeRow(expected[i]);
    EXPECT_EQ(expected[i].attributes, actual[i].attributes) << "row " << i << " " << DescribeRow(expected[i]);
  }
}

// The binary order (record_codec.h): series (device, measure, shard,
// dimensions) by first appearance, then by timestamp, ties in input order;
// every record with its series' last attributes.
std::vector<RecordRow> InBlockOrder(std::vector<RecordRow> rows) {
  using SeriesKey = std::tuple<std::string, std::string, int, TagMap>;
  std::map<SeriesKey, size_t> first_seen;
  std::map<SeriesKey, TagMap> attributes;
  for (const RecordRow& row : rows) {
    const SeriesKey key(row.device_id, row.measure_name, row.shard, row.dimensions);
    first_seen.emplace(key, first_seen.size());
    attributes[key] = row.attributes;
  }
  for (RecordRow& row : rows)
    row.attributes = attributes.at({row.device_id, row.measure_name, row.shard, row.dimensions});
  rows = WithSortedFields(std::move(rows));
  std::stable_sort(rows.begin(), rows.end(), [&](const RecordRow& a, const RecordRow& b) {
    const size_t series_a = first_seen.at(SeriesKey(a.device_id, a.measure_name, a.shard, a.dimensions));
    const size_t series_b = first_seen.at(SeriesKey(b.device_id, b.measure_name, b.shard, b.dimensions));
    if (series_a != series_b) return series_a < series_b;
    return a.timestamp < b.timestamp;
  });
  return rows;
}

// Every field type, the extremes of each, and identifiers beyond ASCII.
std::vector<RecordRow> AllTypesBatch() {
  return {
      Row("pump-7", "env#temperature", kStart, {{"value", 21.5}, {"ok", true}}, 0, 1'800'000'000),
      Tagged(Row("Gerät-ü", "温度#室内", kStart + 1,
                 {{"état", std::string("fermé\n\"quoted\" \\ \x01")}, {"📈", -0.0}}),
             {{"ort", "Zürich"}}, {{"firmware", "2.1 \"beta\""}}),
      Row("pump-7", "env#temperature", kStart + kSecond, {{"value", 21.25}, {"label", std::string()}}),
      // 1677-09-21 and 2262-04-11: the ends of int64 nanoseconds.
      Row("edge", "time", kMinInt64, {{"min", kMinInt64}, {"at", Timestamp{kMaxInt64}}},
          std::numeric_limits<uint64_t>::max(), kMaxInt64),
      Row("edge", "time", kMaxInt64, {{"max", kMaxInt64}, {"at", Timestamp{kMinInt64}}}, 1),
      Row("edge", "doubles", 0,
          {{"max", DBL_MAX},
           {"lowest", -DBL_MAX},
           {"tiny", DBL_TRUE_MIN},
           {"tenth", 0.1},
           {"third", 1.0 / 3},
           {"big", 1e300},
           {"integral", 42.0}}),
      Tagged(Row("pump-7", "env#temperature", kStart, {{"value", 99.0}}, 3, 0, /*shard=*/13),
             {{"site", "north"}, {"rack", ""}}, {{"owner", "ops"}}),
      Row("pump-7", "env#temperature", kStart, {{"value", 21.75}}, 1),  // a rewrite of the first record
      // The first record's identity but another sensor: another series.
      Tagged(Row("pump-7", "env#temperature", kStart, {{"value", 5.5}}), {{"sensor", "b"}}),
      // The same series as the Gerät-ü record, with newer attributes.
      Tagged(Row("Gerät-ü", "温度#室内", kStart + 2, {{"état", std::string("ouvert")}}), {{"ort", "Zürich"}},
             {{"firmware", "2.2"}}),
  };
}

Result<DecodedEnvelope> EncodeDecode(const std::vector<RecordRow>& rows, EnvelopeEncoding encoding) {
  Result<std::string> payload = EncodeEnvelope(Header(), rows, kKey, encoding);
  if (!payload.ok()) return payload.status();
  return DecodeEnvelope(*payload, kKey);
}

std::string MustEncode(const std::vector<RecordRow>& rows, EnvelopeEncoding encoding,
                       const EnvelopeHeader& header = Header()) {
  Result<std::string> payload = EncodeEnvelope(header, rows, kKey, encoding);
  EXPECT_TRUE(payload.ok()) << payload.status().ToString();
  return payload.ok() ? *payload : std::string();
}

std::string Sign(std::string_view bytes, std::string_view key = kKey) {
  const Sha256Digest mac = HmacSha256(key, bytes);
  return std::string(bytes) + std::string(reinterpret_cast<const char*>(mac.data()), mac.size());
}

std::string LowerHex(const Sha256Digest& digest) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  for (uint8_t byte : digest) {
    text.push_back(kDigits[byte >> 4]);
    text.push_back(kDigits[byte & 0xF]);
  }
  return text;
}

// Signs a complete JSON object as envelope_format.md §5 says.
std::string SignJson(std::string object, std::string_view key = kKey) {
  object.pop_back();
  return object + ",\"mac\":\"" + LowerHex(HmacSha256(key, object)) + "\"}";
}

// The JSON text of a signed JSON message, without its signature trailer.
std::string Unsigned(const std::string& payload) { return payload.substr(0, payload.size() - 74) + "}"; }

void PutLittleEndian(std::string* out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>(value >> (8 * i)));
}

// A binary envelope written from envelope_format.md §3 alone.
struct RawEnvelope {
  std::string magic = "CSYN";
  uint8_t version = 1;
  uint8_t codec = 0;
  uint8_t lane = 0;
  uint8_t flags = 0;
  uint64_t batch_sequence = 42;
  uint64_t first_lsn = 1000;
  uint64_t last_lsn = 1999;
  uint32_t record_count = 1;
  std::string gateway_id = "gw-7";
  std::string table = "sensors";
  std::string stored;
  int64_t stored_size = -1;  // -1: stored.size()
  int64_t block_size = -1;   // -1: stored.size()

  std::string Bytes() const {
    std::string out = magic;
    for (uint8_t byte : {version, codec, lane, flags}) out.push_back(static_cast<char>(byte));
    PutLittleEndian(&out, batch_sequence, 8);
    PutLittleEndian(&out, first_lsn, 8);
    PutLittleEndian(&out, last_lsn, 8);
    PutLittleEndian(&out, record_count, 4);
    PutLittleEndian(&out, stored_size < 0 ? stored.size() : static_cast<uint64_t>(stored_size), 4);
    PutLittleEndian(&out, block_size < 0 ? stored.size() : static_cast<uint64_t>(block_size), 4);
    out.push_back(static_cast<char>(gateway_id.size()));
    out += gateway_id;
    out.push_back(static_cast<char>(table.size()));
    out += table;
    return out + stored;
  }
  std::string Signed(std::string_view key = kKey) const { return Sign(Bytes(), key); }
};

// zstd frames written from RFC 8878 alone: a frame header declaring
// `content_size` (single segment, 8-byte content size field) or none, then
// raw or RLE blocks.
class ZstdFrame {
 public:
  static ZstdFrame WithContentSize(uint64_t content_size) {
    ZstdFrame frame;
    frame.bytes_.push_back(static_cast<char>(0xE0));  // 8-byte content size, single segment
    PutLittleEndian(&frame.bytes_, content_size, 8);
    return frame;
  }
  static ZstdFrame WithoutContentSize() {
    ZstdFrame frame;
    frame.bytes_.push_back(0);                          // no content size, windowed
    frame.bytes_.push_back(static_cast<char>(7 << 3));  // window 2^17
    return frame;
  }
  ZstdFrame& Raw(std::string_view data, bool last) {
    Block(0, data.size(), last);
    bytes_.append(data);
    return *this;
  }
  ZstdFrame& Rle(char byte, size_t count, bool last) {
    Block(1, count, last);
    bytes_.push_back(byte);
    return *this;
  }
  std::string bytes() const { return std::string("\x28\xB5\x2F\xFD", 4) + bytes_; }

 private:
  void Block(uint32_t type, size_t size, bool last) {
    PutLittleEndian(&bytes_, (static_cast<uint32_t>(size) << 3) | (type << 1) | (last ? 1 : 0), 3);
  }
  std::string bytes_;
};

// A zstd frame holding `data` in raw blocks.
std::string RawZstdFrame(std::string_view data) {
  ZstdFrame frame = ZstdFrame::WithContentSize(data.size());
  constexpr size_t kMaxBlock = 128 * 1024;
  size_t position = 0;
  do {
    const size_t size = std::min(kMaxBlock, data.size() - position);
    frame.Raw(data.substr(position, size), position + size == data.size());
    position += size;
  } while (position < data.size());
  return frame.bytes();
}

// ---------------------------------------------------------------------------

TEST(SyncEnvelopeTest, LaneNames) {
  for (SyncLane lane : {SyncLane::kLive, SyncLane::kAlarm, SyncLane::kBackfill, SyncLane::kArchive}) {
    Result<SyncLane> parsed = ParseSyncLane(SyncLaneName(lane));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, lane);
  }
  EXPECT_EQ(SyncLaneName(SyncLane::kBackfill), "backfill");
  EXPECT_TRUE(ParseSyncLane("LIVE").status().Is(StatusCode::kInvalidArgument));
  EXPECT_TRUE(ParseSyncLane("").status().Is(StatusCode::kInvalidArgument));
}

TEST(SyncEnvelopeTest, BinaryRoundTrip) {
  const std::vector<RecordRow> rows = AllTypesBatch();
  Result<DecodedEnvelope> decoded = EncodeDecode(rows, EnvelopeEncoding::kBinary);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->encoding, EnvelopeEncoding::kBinary);
  EXPECT_EQ(decoded->header, Header());
  ExpectSameTaggedRows(InBlockOrder(rows), decoded->records);
  // Two series told apart by a dimension alone: pump-7 shard 0 without
  // dimensions comes first, its sensor=b twin last.
  ASSERT_EQ(decoded->records.size(), rows.size());
  EXPECT_TRUE(decoded->records.front().dimensions.empty());
  EXPECT_EQ(decoded->records.back().dimensions, (TagMap{{"sensor", "b"}}));
  EXPECT_EQ(decoded->records.back().timestamp, decoded->records.front().timestamp);
  // A series' attributes travel once, as its last record had them.
  EXPECT_EQ(decoded->records[3].device_id, "Gerät-ü");
  EXPECT_EQ(decoded->records[3].attributes, (TagMap{{"firmware", "2.2"}}));
  EXPECT_EQ(decoded->records[4].attributes, (TagMap{{"firmware", "2.2"}}));
}

TEST(SyncEnvelopeTest, JsonRoundTripKeepsPayloadOrder) {
  const std::vector<RecordRow> rows = AllTypesBatch();
  Result<DecodedEnvelope> decoded = EncodeDecode(rows, EnvelopeEncoding::kJson);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->encoding, EnvelopeEncoding::kJson);
  EXPECT_EQ(decoded->header, Header());
  ExpectSameTaggedRows(WithSortedFields(rows), decoded->records);
}

TEST(SyncEnvelopeTest, JsonRecordsCarryTheirTags) {
  const std::string payload = MustEncode({Tagged(Row("gw1", "env", kStart, {{"t", 1.0}}),
                                                 {{"site", "a"}, {"sensor", "x"}}, {{"firmware", "1.2"}})},
                                         EnvelopeEncoding::kJson, Header(7, 7));
  EXPECT_EQ(Unsigned(payload),
            "{\"type\":\"cairn.sync.envelope\",\"version\":1,\"gateway_id\":\"gw-7\",\"table\":\"sensors\","
            "\"lane\":\"live\",\"batch_sequence\":42,\"first_lsn\":7,\"last_lsn\":7,\"record_count\":1,"
            "\"records\":[{\"device_id\":\"gw1\",\"measure_name\":\"env\",\"shard\":0,"
            "\"dimensions\":{\"sensor\":\"x\",\"site\":\"a\"},\"attributes\":{\"firmware\":\"1.2\"},"
            "\"timestamp\":1700000000000000000,\"version\":0,\"ttl\":0,\"lsn\":0,"
            "\"fields\":{\"t\":{\"double\":1}}}]}");
}

// What a gateway of the previous release sends: JSON with the dimensions in
// a top-level list per (device, measure, shard), metadata in its eyes. They
// arrive as the identity of the series' records.
TEST(SyncEnvelopeTest, JsonOfAnOlderGatewayGivesItsDimensionsAsIdentity) {
  const std::string text =
      "{\"type\":\"cairn.sync.envelope\",\"version\":1,\"gateway_id\":\"gw-7\",\"table\":\"sensors\","
      "\"lane\":\"live\",\"batch_sequence\":42,\"first_lsn\":1000,\"last_lsn\":1002,\"record_count\":3,"
      "\"records\":[{\"device_id\":\"pump-7\",\"measure_name\":\"env\",\"shard\":0,"
      "\"timestamp\":1700000000000000000,\"version\":0,\"ttl\":0,\"fields\":{\"t\":{\"double\":21.5}}},"
      "{\"device_id\":\"pump-7\",\"measure_name\":\"env\",\"shard\":0,"
      "\"timestamp\":1700000001000000000,\"version\":0,\"ttl\":0,\"fields\":{\"t\":{\"double\":21.25}}},"
      "{\"device_id\":\"pump-8\",\"measure_name\":\"env\",\"shard\":0,"
      "\"timestamp\":1700000000000000000,\"version\":0,\"ttl\":0,\"fields\":{\"t\":{\"double\":3}}}],"
      "\"dimensions\":[{\"device_id\":\"pump-7\",\"measure_name\":\"env\",\"shard\":0,"
      "\"dimensions\":{\"site\":\"north\"}}]}";
  Result<DecodedEnvelope> decoded = DecodeEnvelope(SignJson(text), kKey);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ExpectSameTaggedRows({Tagged(Row("pump-7", "env", kStart, {{"t", 21.5}}), {{"site", "north"}}),
                        Tagged(Row("pump-7", "env", kStart + kSecond, {{"t", 21.25}}), {{"site", "north"}}),
                        Row("pump-8", "env", kStart, {{"t", 3.0}})},
                       decoded->records);
}

// A gateway of the previous release sends version 1 record blocks.
TEST(SyncEnvelopeTest, BinaryWithAVersion1BlockGivesItsDimensionsAsIdentity) {
  const std::vector<RecordRow> rows = {Tagged(Row("d", "m", kStart, {{"v", 1.5}}), {{"site", "n"}}),
                                       Tagged(Row("d", "m", kStart + 1, {{"v", 2.5}}), {{"site", "n"}})};
  Result<std::string> block = EncodeRecordBlock(rows);
  ASSERT_TRUE(block.ok()) << block.status().ToString();
  // Version 2 to 1: the version byte, and no attribute count after the
  // dimensions ("CR", version, 1 series, "d", "m", shard 0, 1 dimension
  // "site"="n", then the attribute count 0).
  const size_t attribute_count_at = 3 + 1 + 2 + 2 + 1 + 1 + 5 + 2;
  ASSERT_EQ((*block)[2], '\x02');
  ASSERT_EQ((*block)[attribute_count_at], '\x00');
  // Nor LSNs after the chunk (both records have LSN 0): the integer sequence
  // {0, 0} (core/src/chunk/chunk_format.md §2) as its shortest form, one
  // frame of base 0 and width 0.
  const std::string lsns("\x01\x00\x00", 3);
  ASSERT_EQ(block->substr(block->size() - lsns.size()), lsns);
  std::string v1 = block->substr(0, block->size() - lsns.size());
  v1[2] = '\x01';
  v1.erase(attribute_count_at, 1);
  RawEnvelope raw;
  raw.record_count = 2;
  raw.stored = v1;
  Result<DecodedEnvelope> decoded = DecodeEnvelope(raw.Signed(), kKey);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ExpectSameTaggedRows(rows, decoded->records);
}

TEST(SyncEnvelopeTest, JsonIsReadableAndTyped) {
  const std::string payload =
      MustEncode({Row("pump-7", "env", kStart, {{"temperature", 21.5}, {"count", int64_t{3}}})},
                 EnvelopeEncoding::kJson, Header(7, 7));
  EXPECT_EQ(Unsigned(payload),
            "{\"type\":\"cairn.sync.envelope\",\"version\":1,\"gateway_id\":\"gw-7\",\"table\":\"sensors\","
            "\"lane\":\"live\",\"batch_sequence\":42,\"first_lsn\":7,\"last_lsn\":7,\"record_count\":1,"
            "\"records\":[{\"device_id\":\"pump-7\",\"measure_name\":\"env\",\"shard\":0,"
            "\"timestamp\":1700000000000000000,\"version\":0,\"ttl\":0,\"lsn\":0,"
            "\"fields\":{\"temperature\":{\"double\":21.5},\"count\":{\"int64\":3}}}]}");
  EXPECT_EQ(payload, SignJson(Unsigned(payload)));
}

TEST(SyncEnvelopeTest, HandWrittenJsonFollowingTheFormatDecodes) {
  // Whitespace between tokens, members in another order, optional members left out.
  const std::string text =
      "{ \"version\": 1, \"type\": \"cairn.sync.envelope\", \"table\": \"sensors\", \"gateway_id\": "
      "\"gw-7\",\n"
      "  \"lane\": \"archive\", \"first_lsn\": 5, \"last_lsn\": 9, \"batch_sequence\": "
      "18446744073709551615,\n"
      "  \"record_count\": 2, \"records\": [\n"
      "    {\"fields\": {\"v\": {\"double\": 1e-7}, \"s\": {\"string\": \"caf\\u00e9 \\ud83d\\ude00\"}},\n"
      "     \"timestamp\": -9223372036854775808, \"measure_name\": \"m\", \"device_id\": \"d\"},\n"
      "    {\"device_id\": \"d\", \"measure_name\": \"m\", \"timestamp\": 1, \"shard\": 4, \"version\": 2,\n"
      "     \"ttl\": 60, \"fields\": {\"at\": {\"timestamp\": 5}, \"b\": {\"bool\": false}}}]}";
  Result<DecodedEnvelope> decoded = DecodeEnvelope(SignJson(text), kKey);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->header, (EnvelopeHeader{"gw-7", "sensors", SyncLane::kArchive,
                                             std::numeric_limits<uint64_t>::max(), 5, 9}));
  ExpectSameTaggedRows({Row("d", "m", kMinInt64, {{"s", std::string("café 😀")}, {"v", 1e-7}}),
                        Row("d", "m", 1, {{"at", Timestamp{5}}, {"b", false}}, 2, 60, 4)},
                       decoded->records);
}

TEST(SyncEnvelopeTest, HandWrittenBinaryFollowingTheFormatDecodes) {
  const std::vector<RecordRow> rows = {Row("d", "m", kStart, {{"v", 1.5}}),
                                       Row("d", "m", kStart + 1, {{"v", 2.5}})};
  Result<std::string> block = EncodeRecordBlock(rows);
  ASSERT_TRUE(block.ok());
  RawEnvelope raw;
  raw.record_count = 2;
  raw.lane = 2;
  raw.stored = *block;
  Result<DecodedEnvelope> stored = DecodeEnvelope(raw.Signed(), kKey);
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ(stored->header, Header(1000, 1999, SyncLane::kBackfill));
  ExpectSameRows(rows, stored->records);

  // The same block in a zstd frame of raw blocks, as any zstd encoder may write.
  raw.codec = 1;
  raw.stored = RawZstdFrame(*block);
  raw.block_size = static_cast<int64_t>(block->size());
  Result<DecodedEnvelope> framed = DecodeEnvelope(raw.Signed(), kKey);
  ASSERT_TRUE(framed.ok()) << framed.status().ToString();
  ExpectSameRows(rows, framed->records);
}

TEST(SyncEnvelopeTest, EncodingsCarryTheSameContent) {
  const std::vector<RecordRow> rows = AllTypesBatch();
  Result<DecodedEnvelope> binary = EncodeDecode(rows, EnvelopeEncoding::kBinary);
  Result<DecodedEnvelope> json = EncodeDecode(rows, EnvelopeEncoding::kJson);
  ASSERT_TRUE(binary.ok() && json.ok());
  EXPECT_EQ(binary->header, json->header);
  ExpectSameTaggedRows(binary->records, InBlockOrder(json->records));
}

TEST(SyncEnvelopeTest, RejectsInvalidBatches) {
  const std::vector<RecordRow> one = {Row("d", "m", kStart, {{"v", 1.0}})};
  const std::vector<RecordRow> three = {Row("d", "m", kStart, {{"v", 1.0}}),
                                        Row("d", "m", kStart + 1, {{"v", 1.0}}),
                                        Row("d", "m", kStart + 2, {{"v", 1.0}})};
  for (EnvelopeEncoding encoding : {EnvelopeEncoding::kBinary, EnvelopeEncoding::kJson}) {
    auto code = [&](const EnvelopeHeader& header, const std::vector<RecordRow>& rows,
                    std::string_view key = kKey) {
      return EncodeEnvelope(header, rows, key, encoding).status().code();
    };
    EXPECT_EQ(code(Header(), {}), StatusCode::kInvalidArgument) << "empty batch";
    EXPECT_EQ(code(Header(10, 11), three), StatusCode::kInvalidArgument) << "more records than LSNs";
    EXPECT_EQ(code(Header(10, 12), three), StatusCode::kOk);
    EXPECT_EQ(code(Header(12, 10), one), StatusCode::kInvalidArgument) << "reversed LSN range";
    EXPECT_EQ(code(Header(0, std::numeric_limits<uint64_t>::max()), one), StatusCode::kOk);
    EXPECT_EQ(code(Header(), one, kKey.substr(0, kMinSyncKeyBytes - 1)), StatusCode::kInvalidArgument)
        << "short key";
    EXPECT_EQ(code(Header(), {Row("d", "m", kStart, {{"v", std::nan("")}})}), StatusCode::kInvalidArgument)
        << "NaN";
    for (std::string gateway :
         {std::string(""), std::string("a/b"), std::string("a#b"), std::string("a+b"), std::string("a\0b", 3),
          std::string("a\nb"), std::string(kMaxGatewayIdBytes + 1, 'g')}) {
      EnvelopeHeader header = Header();
      header.gateway_id = gateway;
      EXPECT_EQ(code(header, one), StatusCode::kInvalidArgument) << "gateway '" << gateway << "'";
    }
    for (std::string table : {std::string(""), std::string("a/b"), std::string("-x"), std::string(65, 't')}) {
      EnvelopeHeader header = Header();
      header.table = table;
      EXPECT_EQ(code(header, one), StatusCode::kInvalidArgument) << "table '" << table << "'";
    }
    EnvelopeHeader unknown_lane = Header();
    unknown_lane.lane = static_cast<SyncLane>(9);
    EXPECT_EQ(code(unknown_lane, one), StatusCode::kInvalidArgument);
  }
  EnvelopeHeader longest = Header();
  longest.gateway_id = std::string(kMaxGatewayIdBytes, 'g');
  longest.table = std::string(64, 't');
  Result<std::string> payload = EncodeEnvelope(longest, one, kKey, EnvelopeEncoding::kBinary);
  ASSERT_TRUE(payload.ok()) << payload.status().ToString();
  Result<DecodedEnvelope> decoded = DecodeEnvelope(*payload, kKey);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->header, longest);
}

TEST(SyncEnvelopeTest, WrongKeyIsPermissionDenied) {
  for (EnvelopeEncoding encoding : {EnvelopeEncoding::kBinary, EnvelopeEncoding::kJson}) {
    const std::string payload = MustEncode(AllTypesBatch(), encoding);
    EXPECT_TRUE(DecodeEnvelope(payload, kOtherKey).status().Is(StatusCode::kPermissionDenied));
    EXPECT_TRUE(DecodeEnvelope(payload, kKey.substr(0, 8)).status().Is(StatusCode::kInvalidArgument));
    EXPECT_TRUE(DecodeEnvelope(payload, kKey).ok());
  }
}

TEST(SyncEnvelopeTest, ForgedMacsArePermissionDenied) {
  const std::vector<RecordRow> rows = {Row("d", "m", kStart, {{"v", 1.0}})};
  // Binary: the right bytes under a MAC made with another key, or zeros.
  const std::string binary = MustEncode(rows, EnvelopeEncoding::kBinary);
  const std::string body = binary.substr(0, binary.size() - 32);
  EXPECT_TRUE(DecodeEnvelope(Sign(body, kOtherKey), kKey).status().Is(StatusCode::kPermissionDenied));
  EXPECT_TRUE(DecodeEnvelope(body + std::string(32, '\0'), kKey).status().Is(StatusCode::kPermissionDenied));
  // A forger who changes a value and cannot re-sign.
  const std::string json = MustEncode(rows, EnvelopeEncoding::kJson);
  std::string tampered = json;
  const size_t value = tampered.find("{\"double\":1}");
  ASSERT_NE(value, std::string::npos) << json;
  tampered.replace(value, 12, "{\"double\":9}");
  EXPECT_TRUE(DecodeEnvelope(tampered, kKey).status().Is(StatusCode::kPermissionDenied));
  EXPECT_TRUE(DecodeEnvelope(SignJson(Unsigned(tampered), kOtherKey), kKey)
                  .status()
                  .Is(StatusCode::kPermissionDenied));
  // The MAC of the JSON must be lowercase hex.
  std::string upper = json;
  for (size_t i = upper.size() - 66; i < upper.size() - 2; ++i)
    upper[i] = static_cast<char>(std::toupper(upper[i]));
  ASSERT_NE(upper, json);  // 64 hex digits without a letter: odds of 10^-13
  EXPECT_TRUE(DecodeEnvelope(upper, kKey).status().Is(StatusCode::kCorruption));
}

// Flips every bit of `payload` in turn; each flipped copy must fail to decode.
template <typename Decode>
void ExpectEveryBitFlipRejected(const std::string& payload, Decode decode) {
  for (size_t bit = 0; bit < payload.size() * 8; ++bit) {
    std::string flipped = payload;
    flipped[bit / 8] = static_cast<char>(flipped[bit / 8] ^ (1 << (bit % 8)));
    Status status = decode(flipped);
    ASSERT_FALSE(status.ok()) << "bit " << bit << " of " << payload.size() * 8;
    ASSERT_TRUE(status.Is(StatusCode::kPermissionDenied) || status.Is(StatusCode::kCorruption) ||
                status.Is(StatusCode::kInvalidArgument))
        << "bit " << bit << ": " << status.ToString();
  }
}

template <typename Decode>
void ExpectEveryTruncationRejected(const std::string& payload, Decode decode) {
  for (size_t size = 0; size < payload.size(); ++size) {
    Status status = decode(payload.substr(0, size));
    ASSERT_FALSE(status.ok()) << "size " << size;
    ASSERT_TRUE(status.Is(StatusCode::kPermissionDenied) || status.Is(StatusCode::kCorruption))
        << "size " << size << ": " << status.ToString();
  }
  EXPECT_FALSE(decode(payload + " ").ok());
  EXPECT_FALSE(decode(payload + std::string(1, '\0')).ok());
}

TEST(SyncEnvelopeTest, EveryBitFlipAndTruncationIsRejected) {
  const std::vector<RecordRow> rows = {Row("pump-1", "env", kStart, {{"t", 21.5}, {"ok", true}}),
                                       Row("pump-1", "env", kStart + kSecond, {{"t", 21.25}})};
  auto decode = [](const std::string& payload) { return DecodeEnvelope(payload, kKey).status(); };
  for (EnvelopeEncoding encoding : {EnvelopeEncoding::kBinary, EnvelopeEncoding::kJson}) {
    const std::string payload = MustEncode(rows, encoding);
    ASSERT_TRUE(DecodeEnvelope(payload, kKey).ok());
    ExpectEveryBitFlipRejected(payload, decode);
    ExpectEveryTruncationRejected(payload, decode);
  }
}

TEST(SyncEnvelopeTest, AuthenticButMalformedBinaryIsCorruption) {
  Result<std::string> block = EncodeRecordBlock(std::vector<RecordRow>{Row("d", "m", kStart, {{"v", 1.0}})});
  ASSERT_TRUE(block.ok());
  struct Case {
    const char* what;
    RawEnvelope raw;
    StatusCode code;
  };
  std::vector<Case> cases;
  auto add = [&](const char* what, StatusCode code, auto change) {
    RawEnvelope raw;
    raw.stored = *block;
    change(raw);
    cases.push_back({what, raw, code});
  };
  add("valid", StatusCode::kOk, [](RawEnvelope&) {});
  add("unknown version", StatusCode::kInvalidArgument, [](RawEnvelope& r) { r.version = 2; });
  add("unknown codec", StatusCode::kInvalidArgument, [](RawEnvelope& r) { r.codec = 2; });
  add("unknown lane", StatusCode::kCorruption, [](RawEnvelope& r) { r.lane = 4; });
  add("flags set", StatusCode::kCorruption, [](RawEnvelope& r) { r.flags = 1; });
  add("reversed LSNs", StatusCode::kCorruption, [](RawEnvelope& r) { r.first_lsn = 2000; });
  add("no records", StatusCode::kCorruption, [](RawEnvelope& r) { r.record_count = 0; });
  add("count above the block's", StatusCode::kCorruption, [](RawEnvelope& r) { r.record_count = 2; });
  add("count above the LSN range", StatusCode::kCorruption, [](RawEnvelope& r) { r.record_count = 1001; });
  add("stored size too small", StatusCode::kCorruption, [](RawEnvelope& r) { r.stored_size = 3; });
  add("stored size too large", StatusCode::kCorruption, [](RawEnvelope& r) { r.stored_size = 1 << 20; });
  add("block size differs when stored", StatusCode::kCorruption, [](RawEnvelope& r) { r.block_size = 3; });
  add("gateway with a slash", StatusCode::kCorruption, [](RawEnvelope& r) { r.gateway_id = "a/b"; });
  add("empty table", StatusCode::kCorruption, [](RawEnvelope& r) { r.table = ""; });
  add("table with a space", StatusCode::kCorruption, [](RawEnvelope& r) { r.table = "a b"; });
  add("empty block", StatusCode::kCorruption, [](RawEnvelope& r) { r.stored = ""; });
  add("not a block", StatusCode::kCorruption, [](RawEnvelope& r) { r.stored = std::string("CR\1junk"); });
  add("a receipt's magic", StatusCode::kCorruption, [](RawEnvelope& r) { r.magic = "CRCP"; });
  add("records beyond the limit", StatusCode::kResourceExhausted, [](RawEnvelope& r) {
    r.record_count = 100'001;
    r.last_lsn = 1'000'000;
  });
  for (const Case& c : cases) {
    Status status = DecodeEnvelope(c.raw.Signed(), kKey).status();
    EXPECT_EQ(status.code(), c.code) << c.what << ": " << status.ToString();
  }
}

TEST(SyncEnvelopeTest, ZstdBombsAreRefusedBeforeAllocation) {
  // A frame claiming 1 GiB made of RLE blocks: a few bytes that would expand
  // into a gigabyte. The declared size is refused before anything is allocated.
  ZstdFrame bomb = ZstdFrame::WithContentSize(uint64_t{1} << 30);
  for (int i = 0; i < 8; ++i) bomb.Rle('\0', 128 * 1024, i == 7);
  RawEnvelope raw;
  raw.codec = 1;
  raw.stored = bomb.bytes();
  raw.block_size = int64_t{1} << 30;
  Status status = DecodeEnvelope(raw.Signed(), kKey).status();
  EXPECT_TRUE(status.Is(StatusCode::kResourceExhausted)) << status.ToString();

  // The header understates the size: the frame's own declaration disagrees.
  raw.block_size = 1000;
  status = DecodeEnvelope(raw.Signed(), kKey).status();
  EXPECT_TRUE(status.Is(StatusCode::kCorruption)) << status.ToString();

  // A 4 MiB expansion against a 1 MiB limit, and within an 8 MiB one (where
  // the zeros then fail as a record block).
  ZstdFrame zeros = ZstdFrame::WithContentSize(4 << 20);
  for (int i = 0; i < 32; ++i) zeros.Rle('\0', 128 * 1024, i == 31);
  raw.stored = zeros.bytes();
  raw.block_size = 4 << 20;
  EnvelopeLimits limits;
  limits.max_decoded_bytes = 1 << 20;
  status = DecodeEnvelope(raw.Signed(), kKey, limits).status();
  EXPECT_TRUE(status.Is(StatusCode::kResourceExhausted)) << status.ToString();
  limits.max_decoded_bytes = 8 << 20;
  status = DecodeEnvelope(raw.Signed(), kKey, limits).status();
  EXPECT_TRUE(status.Is(StatusCode::kCorruption)) << status.ToString();
  EXPECT_NE(status.message().find("record block"), std::string::npos) << status.ToString();
}

TEST(SyncEnvelopeTest, MalformedZstdFramesAreCorruption) {
  Result<std::string> block = EncodeRecordBlock(std::vector<RecordRow>{Row("d", "m", kStart, {{"v", 1.0}})});
  ASSERT_TRUE(block.ok());
  const std::string good = RawZstdFrame(*block);
  struct Case {
    const char* what;
    std::string frame;
    int64_t block_size;
  };
  const int64_t size = static_cast<int64_t>(block->size());
  const std::vector<Case> cases = {
      {"no content size", ZstdFrame::WithoutContentSize().Raw(*block, true).bytes(), size},
      {"trailing byte after the frame", good + '\0', size},
      {"two frames", good + good, size},
      {"truncated frame", good.substr(0, good.size() - 1), size},
      {"more output than declared", ZstdFrame::WithContentSize(100).Rle('x', 200, true).bytes(), 100},
      {"less output than declared", ZstdFrame::WithContentSize(300).Rle('x', 200, true).bytes(), 300},
      {"skippable frame", std::string("\x50\x2A\x4D\x18\x00\x00\x00\x00", 8) + good, size},
      {"not zstd", *block, size},
  };
  for (const Case& c : cases) {
    RawEnvelope raw;
    raw.codec = 1;
    raw.stored = c.frame;
    raw.block_size = c.block_size;
    Status status = DecodeEnvelope(raw.Signed(), kKey).status();
    EXPECT_TRUE(status.Is(StatusCode::kCorruption)) << c.what << ": " << status.ToString();
  }
}

TEST(SyncEnvelopeTest, AuthenticButMalformedJsonIsCorruption) {
  const std::string valid =
      Unsigned(MustEncode({Row("d", "m", kStart, {{"v", 1.0}})}, EnvelopeEncoding::kJson));
  ASSERT_TRUE(DecodeEnvelope(SignJson(valid), kKey).ok());
  auto replaced = [&](std::string_view from, std::string_view to) {
    std::string text = valid;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
    return text;
  };
  struct Case {
    const char* what;
    std::string text;
    StatusCode code;
  };
  const std::vector<Case> cases = {
      {"unknown member", replaced("\"table\"", "\"extra\":1,\"table\""), StatusCode::kCorruption},
      {"unknown record member", replaced("\"ttl\":0", "\"ttl\":0,\"tll\":0"), StatusCode::kCorruption},
      {"missing member", replaced("\"table\":\"sensors\",", ""), StatusCode::kCorruption},
      {"a receipt's type", replaced("cairn.sync.envelope", "cairn.sync.receipt"), StatusCode::kCorruption},
      {"unknown version", replaced("\"version\":1", "\"version\":2"), StatusCode::kInvalidArgument},
      {"unknown lane", replaced("\"live\"", "\"fast\""), StatusCode::kCorruption},
      {"count mismatch", replaced("\"record_count\":1", "\"record_count\":2"), StatusCode::kCorruption},
      {"fraction in an integer", replaced("\"timestamp\":1700000000000000000", "\"timestamp\":1.5"),
       StatusCode::kCorruption},
      {"exponent in an integer", replaced("\"first_lsn\":1000", "\"first_lsn\":1e3"),
       StatusCode::kCorruption},
      {"negative unsigned", replaced("\"version\":0", "\"version\":-1"), StatusCode::kCorruption},
      {"int64 overflow", replaced("\"timestamp\":1700000000000000000", "\"timestamp\":9223372036854775808"),
       StatusCode::kCorruption},
      {"untyped value", replaced("{\"double\":1}", "1"), StatusCode::kCorruption},
      {"unknown value type", replaced("{\"double\":1}", "{\"float\":1}"), StatusCode::kCorruption},
      {"two types", replaced("{\"double\":1}", "{\"double\":1,\"int64\":1}"), StatusCode::kCorruption},
      {"type mismatch", replaced("{\"double\":1}", "{\"bool\":1}"), StatusCode::kCorruption},
      {"no fields", replaced("{\"v\":{\"double\":1}}", "{}"), StatusCode::kCorruption},
      {"control character in device", replaced("\"device_id\":\"d\"", "\"device_id\":\"d\\u0001\""),
       StatusCode::kCorruption},
      {"negative ttl", replaced("\"ttl\":0", "\"ttl\":-1"), StatusCode::kCorruption},
      {"duplicate member", replaced("\"ttl\":0", "\"ttl\":0,\"ttl\":0"), StatusCode::kCorruption},
      {"not JSON", replaced("\"records\":[", "\"records\":[[[}"), StatusCode::kCorruption},
      {"older gateway's dimensions of a series without records",
       replaced("\"record_count\"",
                "\"dimensions\":[{\"device_id\":\"x\",\"measure_name\":\"m\",\"dimensions\":{\"a\":\"b\"}}],"
                "\"record_count\""),
       StatusCode::kCorruption},
      {"older gateway's empty dimensions object",
       replaced("\"record_count\"",
                "\"dimensions\":[{\"device_id\":\"d\",\"measure_name\":\"m\",\"dimensions\":{}}],\"record_"
                "count\""),
       StatusCode::kCorruption},
      {"record dimensions not an object", replaced("\"shard\":0", "\"shard\":0,\"dimensions\":[]"),
       StatusCode::kCorruption},
      {"record dimension not a string", replaced("\"shard\":0", "\"shard\":0,\"dimensions\":{\"a\":1}"),
       StatusCode::kCorruption},
      {"control character in an attribute",
       replaced("\"shard\":0", "\"shard\":0,\"attributes\":{\"a\":\"x\\u0001\"}"), StatusCode::kCorruption},
  };
  for (const Case& c : cases) {
    Status status = DecodeEnvelope(SignJson(c.text), kKey).status();
    EXPECT_EQ(status.code(), c.code) << c.what << ": " << status.ToString();
  }
  // An older gateway's dimensions list for records that carry their own.
  std::string both = replaced("\"shard\":0", "\"shard\":0,\"dimensions\":{\"a\":\"c\"}");
  both.replace(both.find("\"record_count\""), 0,
               "\"dimensions\":[{\"device_id\":\"d\",\"measure_name\":\"m\",\"dimensions\":{\"a\":\"b\"}}],");
  ASSERT_TRUE(
      DecodeEnvelope(SignJson(replaced("\"shard\":0", "\"shard\":0,\"dimensions\":{\"a\":\"c\"}")), kKey)
          .ok());
  EXPECT_TRUE(DecodeEnvelope(SignJson(both), kKey).status().Is(StatusCode::kCorruption));
  // A JSON message must end with the trailer, exactly.
  EXPECT_TRUE(DecodeEnvelope(SignJson(valid) + "\n", kKey).status().Is(StatusCode::kCorruption));
  EXPECT_TRUE(DecodeEnvelope(valid, kKey).status().Is(StatusCode::kCorruption));
}

TEST(SyncEnvelopeTest, LimitsApplyToPayloadAndRecords) {
  std::vector<RecordRow> rows;
  for (int i = 0; i < 100; ++i) rows.push_back(Row("d", "m", kStart + i * kSecond, {{"v", 1.0 * i}}));
  for (EnvelopeEncoding encoding : {EnvelopeEncoding::kBinary, EnvelopeEncoding::kJson}) {
    const std::string payload = MustEncode(rows, encoding);
    EnvelopeLimits limits;
    limits.max_payload_bytes = payload.size() - 1;
    EXPECT_TRUE(DecodeEnvelope(payload, kKey, limits).status().Is(StatusCode::kResourceExhausted));
    EXPECT_TRUE(
        EncodeEnvelope(Header(), rows, kKey, encoding, limits).status().Is(StatusCode::kResourceExhausted));
    limits = {};
    limits.records.max_records = 99;
    EXPECT_TRUE(DecodeEnvelope(payload, kKey, limits).status().Is(StatusCode::kResourceExhausted));
    EXPECT_TRUE(
        EncodeEnvelope(Header(), rows, kKey, encoding, limits).status().Is(StatusCode::kResourceExhausted));
  }
  EnvelopeLimits limits;
  limits.max_decoded_bytes = 16;
  EXPECT_TRUE(EncodeEnvelope(Header(), rows, kKey, EnvelopeEncoding::kBinary, limits)
                  .status()
                  .Is(StatusCode::kResourceExhausted));
}

// 10 devices reporting a slowly varying temperature once a second, with
// millisecond clocks and arrival jitter, as a gateway's live lane sees them.
std::vector<RecordRow> SensorBatch(int devices, int readings_per_device) {
  std::mt19937 random(7);
  std::vector<double> temperature(devices);
  std::vector<RecordRow> rows;
  for (int d = 0; d < devices; ++d) temperature[d] = 18.0 + d * 0.5;
  for (int i = 0; i < readings_per_device; ++i) {
    for (int d = 0; d < devices; ++d) {
      // A random walk in steps of 0.01 degrees, printed with two decimals.
      temperature[d] += (static_cast<int>(random() % 5) - 2) * 0.01;
      const double value = std::round(temperature[d] * 100) / 100;
      const int64_t jitter = static_cast<int64_t>(random() % 20) * kMillisecond;
      rows.push_back(Row("sensor-" + std::to_string(d), "env#temperature", kStart + i * kSecond + jitter,
                         {{"celsius", value}}));
    }
  }
  return rows;
}

TEST(SyncEnvelopeTest, SensorDataCompressesWell) {
  const std::vector<RecordRow> rows = SensorBatch(10, 100);
  const EnvelopeHeader header = Header(1, 1000);
  Result<std::string> binary = EncodeEnvelope(header, rows, kKey, EnvelopeEncoding::kBinary);
  Result<std::string> json = EncodeEnvelope(header, rows, kKey, EnvelopeEncoding::kJson);
  Result<std::string> block = EncodeRecordBlock(rows);
  ASSERT_TRUE(binary.ok() && json.ok() && block.ok());
  const double bytes_per_record = static_cast<double>(binary->size()) / static_cast<double>(rows.size());
  std::cout << "1000 readings of 10 devices: record block " << block->size() << " bytes, binary envelope "
            << binary->size() << " bytes (" << bytes_per_record << " per reading), JSON envelope "
            << json->size() << " bytes\n";
  // Measured: 1.5 bytes per reading, every header and the MAC included.
  EXPECT_LE(bytes_per_record, 2.0);
  EXPECT_LT(binary->size() * 20, json->size());
  Result<DecodedEnvelope> decoded = DecodeEnvelope(*binary, kKey);
  ASSERT_TRUE(decoded.ok());
  ExpectSameRows(InBlockOrder(rows), decoded->records);
}

TEST(SyncEnvelopeTest, IncompressibleBlocksAreStoredAsIs) {
  // One short record: a zstd frame would be larger than the block.
  const std::string payload = MustEncode({Row("d", "m", kStart, {{"v", 1.0}})}, EnvelopeEncoding::kBinary);
  ASSERT_GT(payload.size(), 5u);
  EXPECT_EQ(payload[5], 0) << "codec";
  // A long, repetitive one compresses.
  std::vector<RecordRow> rows;
  for (int i = 0; i < 50; ++i) {
    rows.push_back(
        Row("device-with-a-long-name-" + std::to_string(i), "env#temperature", kStart, {{"v", 1.0}}));
  }
  const std::string compressed = MustEncode(rows, EnvelopeEncoding::kBinary);
  ASSERT_GT(compressed.size(), 5u);
  EXPECT_EQ(compressed[5], 1) << "codec";
}

// ---------------------------------------------------------------------------
// Receipts

SyncReceipt Receipt(ReceiptStatus status = ReceiptStatus::kOk, std::string reason = "") {
  return SyncReceipt{Header(), status, std::move(reason)};
}

TEST(SyncReceiptTest, RoundTripsInBothEncodings) {
  const std::vector<SyncReceipt> receipts = {
      Receipt(), Receipt(ReceiptStatus::kRejected, "record 3: field 'v' is int64, the table has double"),
      Receipt(ReceiptStatus::kOk, "2 duplicates"), Receipt(ReceiptStatus::kRejected, std::string(1024, 'r')),
      SyncReceipt{EnvelopeHeader{"Gerät", "t", SyncLane::kAlarm, 0, 0, 0}, ReceiptStatus::kOk, "ünïcode"}};
  for (EnvelopeEncoding encoding : {EnvelopeEncoding::kBinary, EnvelopeEncoding::kJson}) {
    for (const SyncReceipt& receipt : receipts) {
      Result<std::string> payload = EncodeReceipt(receipt, kKey, encoding);
      ASSERT_TRUE(payload.ok()) << payload.status().ToString();
      Result<SyncReceipt> decoded = DecodeReceipt(*payload, kKey);
      ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
      EXPECT_EQ(*decoded, receipt);
      EXPECT_TRUE(DecodeReceipt(*payload, kOtherKey).status().Is(StatusCode::kPermissionDenied));
    }
  }
}

TEST(SyncReceiptTest, BinaryLayoutFollowsTheFormat) {
  Result<std::string> payload =
      EncodeReceipt(Receipt(ReceiptStatus::kRejected, "no"), kKey, EnvelopeEncoding::kBinary);
  ASSERT_TRUE(payload.ok());
  std::string expected = "CRCP";
  for (char byte : {'\1', '\0', '\1', '\0'}) expected.push_back(byte);  // version, lane, status, flags
  PutLittleEndian(&expected, 42, 8);
  PutLittleEndian(&expected, 1000, 8);
  PutLittleEndian(&expected, 1999, 8);
  expected += std::string("\4gw-7\7sensors\2\0no", 17);
  EXPECT_EQ(*payload, Sign(expected));

  const std::string json_text =
      "{\"type\":\"cairn.sync.receipt\",\"version\":1,\"gateway_id\":\"gw-7\",\"table\":\"sensors\",\"lane\":"
      "\"live\","
      "\"batch_sequence\":42,\"first_lsn\":1000,\"last_lsn\":1999,\"status\":\"rejected\",\"reason\":\"no\"}";
  Result<std::string> json =
      EncodeReceipt(Receipt(ReceiptStatus::kRejected, "no"), kKey, EnvelopeEncoding::kJson);
  ASSERT_TRUE(json.ok());
  EXPECT_EQ(*json, SignJson(json_text));
}

TEST(SyncReceiptTest, RejectsInvalidReceipts) {
  for (EnvelopeEncoding encoding : {EnvelopeEncoding::kBinary, EnvelopeEncoding::kJson}) {
    EXPECT_TRUE(EncodeReceipt(Receipt(ReceiptStatus::kRejected, ""), kKey, encoding)
                    .status()
                    .Is(StatusCode::kInvalidArgument));
    EXPECT_TRUE(EncodeReceipt(Receipt(ReceiptStatus::kOk, "a\nb"), kKey, encoding)
                    .status()
                    .Is(StatusCode::kInvalidArgument));
    EXPECT_TRUE(EncodeReceipt(Receipt(ReceiptStatus::kOk, std::string(1025, 'r')), kKey, encoding)
                    .status()
                    .Is(StatusCode::kInvalidArgument));
    EXPECT_TRUE(EncodeReceipt(Receipt(static_cast<ReceiptStatus>(2), "x"), kKey, encoding)
                    .status()
                    .Is(StatusCode::kInvalidArgument));
    EXPECT_TRUE(EncodeReceipt(Receipt(), "short", encoding).status().Is(StatusCode::kInvalidArgument));
    SyncReceipt bad_gateway = Receipt();
    bad_gateway.batch.gateway_id = "gw/7";
    EXPECT_TRUE(EncodeReceipt(bad_gateway, kKey, encoding).status().Is(StatusCode::kInvalidArgument));
  }
}

TEST(SyncReceiptTest, EveryBitFlipAndTruncationIsRejected) {
  auto decode = [](const std::string& payload) { return DecodeReceipt(payload, kKey).status(); };
  for (EnvelopeEncoding encoding : {EnvelopeEncoding::kBinary, EnvelopeEncoding::kJson}) {
    Result<std::string> payload = EncodeReceipt(Receipt(ReceiptStatus::kRejected, "bad"), kKey, encoding);
    ASSERT_TRUE(payload.ok());
    ExpectEveryBitFlipRejected(*payload, decode);
    ExpectEveryTruncationRejected(*payload, decode);
  }
}

TEST(SyncReceiptTest, EnvelopesAndReceiptsNeverPassForEachOther) {
  for (EnvelopeEncoding encoding : {EnvelopeEncoding::kBinary, EnvelopeEncoding::kJson}) {
    const std::string envelope = MustEncode({Row("d", "m", kStart, {{"v", 1.0}})}, encoding);
    Result<std::string> receipt = EncodeReceipt(Receipt(), kKey, encoding);
    ASSERT_TRUE(receipt.ok());
    EXPECT_TRUE(DecodeReceipt(envelope, kKey).status().Is(StatusCode::kCorruption));
    EXPECT_TRUE(DecodeEnvelope(*receipt, kKey).status().Is(StatusCode::kCorruption));
  }
  EXPECT_TRUE(DecodeReceipt(std::string(kMaxReceiptPayloadBytes + 1, '{'), kKey)
                  .status()
                  .Is(StatusCode::kResourceExhausted));
  EXPECT_TRUE(DecodeReceipt("", kKey).status().Is(StatusCode::kCorruption));
  EXPECT_TRUE(DecodeEnvelope("", kKey).status().Is(StatusCode::kCorruption));
  EXPECT_TRUE(DecodeEnvelope("hello", kKey).status().Is(StatusCode::kCorruption));
}

// ---------------------------------------------------------------------------
// Topics

TEST(SyncTopicTest, BuildsAndParsesTopics) {
  Result<std::string> topic = SyncTopic("site-3/cairn", "gw-7", "sensors", SyncLane::kBackfill);
  ASSERT_TRUE(topic.ok()) << topic.status().ToString();
  EXPECT_EQ(*topic, "site-3/cairn/gw-7/sensors/backfill");
  Result<SyncTopicParts> parts = ParseSyncTopic("site-3/cairn", *topic);
  ASSERT_TRUE(parts.ok()) << parts.status().ToString();
  EXPECT_EQ(*parts, (SyncTopicParts{"gw-7", "sensors", SyncLane::kBackfill}));

  Result<std::string> receipts = ReceiptTopic("cairn", "Gerät-7");
  ASSERT_TRUE(receipts.ok());
  EXPECT_EQ(*receipts, "cairn/Gerät-7/receipts");
  EXPECT_FALSE(ParseSyncTopic("cairn", *receipts).ok());
}

TEST(SyncTopicTest, RejectsWildcardsAndEmptyLevels) {
  for (std::string_view prefix : {"", "/cairn", "cairn/", "a//b", "cairn/#", "cai+rn", "a\nb"}) {
    EXPECT_TRUE(SyncTopic(prefix, "gw", "t", SyncLane::kLive).status().Is(StatusCode::kInvalidArgument))
        << prefix;
    EXPECT_TRUE(ReceiptTopic(prefix, "gw").status().Is(StatusCode::kInvalidArgument)) << prefix;
  }
  EXPECT_TRUE(SyncTopic("cairn", std::string("g\0w", 3), "t", SyncLane::kLive)
                  .status()
                  .Is(StatusCode::kInvalidArgument));
  for (std::string_view gateway : {"", "g/w", "g#w", "g+w"}) {
    EXPECT_TRUE(SyncTopic("cairn", gateway, "t", SyncLane::kLive).status().Is(StatusCode::kInvalidArgument))
        << gateway;
    EXPECT_TRUE(ReceiptTopic("cairn", gateway).status().Is(StatusCode::kInvalidArgument)) << gateway;
  }
  EXPECT_TRUE(SyncTopic("cairn", "gw", "t#1", SyncLane::kLive).status().Is(StatusCode::kInvalidArgument));
  EXPECT_TRUE(
      SyncTopic("cairn", "gw", "t", static_cast<SyncLane>(7)).status().Is(StatusCode::kInvalidArgument));
  for (std::string_view topic : {"cairn/gw/t", "cairn/gw/t/live/x", "other/gw/t/live", "cairn/gw/t/fast",
                                 "cairn/g+w/t/live", "cairn//t/live", "cairnx/gw/t/live", "cairn"}) {
    EXPECT_TRUE(ParseSyncTopic("cairn", topic).status().Is(StatusCode::kInvalidArgument)) << topic;
  }
}

TEST(SyncTopicTest, PartitionKeysCarryTheShard) {
  EXPECT_EQ(PartitionKey("pump-7", 0), "pump-7#00");
  EXPECT_EQ(PartitionKey("pump-7", 13), "pump-7#13");
  EXPECT_EQ(PartitionKey("pump-7", 128), "pump-7#128");
}

}  // namespace
}  // namespace cairn
