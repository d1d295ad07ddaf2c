// Sync receipts (round trips, their binary layout, rejections) and the
// sync topics the gateway and the ingest service agree on.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/sync/sync_envelope.h"

#include "sync_envelope_test_util.h"

namespace cairn::envelope_testing {
namespace {

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
}  // namespace cairn::envelope_testing
