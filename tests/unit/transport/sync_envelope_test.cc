// Sync envelopes: lane names, round trips in both encodings, batches written
// by hand after sync_envelope.md, rejected batches and keys, and compression.
#include "cairn/sync/sync_envelope.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sync_envelope_test_util.h"

namespace cairn::envelope_testing {
namespace {

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

}  // namespace
}  // namespace cairn::envelope_testing
