#include "cairn/ingest/ingest_handler.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/ingest/ingest_sink.h"
#include "cairn/platform/crypto.h"
#include "cairn/util/hex.h"

#include "ingest_batches.h"
#include "test_dirs.h"

namespace cairn::ingest_test {
namespace {

constexpr std::string_view kOtherKey = "the key of gateway gw-8, 32 bytes";

class IngestHandlerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::unique_ptr<IngestSink>> sink = OpenSqliteSink(Env::Default(), dir_.path() + "/ingest.db");
    ASSERT_TRUE(sink.ok()) << sink.status().ToString();
    sink_ = std::move(sink).value();
    failing_ = std::make_unique<FailingSink>(sink_.get());
    IngestHandlerOptions options;
    options.topic_prefix = "site-3/cairn";
    options.keys = {{"gw-7", std::string(kGatewayKey)}, {"gw-8", std::string(kOtherKey)}};
    options.retry_min_ms = 1;
    options.retry_max_ms = 4;
    handler_ = std::make_unique<IngestHandler>(Env::Default(), options, failing_.get());
  }

  static std::string Envelope(const EnvelopeHeader& header, const std::vector<RecordRow>& rows,
                              std::string_view key = kGatewayKey,
                              EnvelopeEncoding encoding = EnvelopeEncoding::kBinary) {
    Result<std::string> payload = EncodeEnvelope(header, rows, key, encoding);
    EXPECT_TRUE(payload.ok()) << payload.status().ToString();
    return payload.ok() ? *payload : "";
  }

  static std::string Topic(const EnvelopeHeader& header) {
    return *SyncTopic("site-3/cairn", header.gateway_id, header.table, header.lane);
  }

  std::vector<StoredReading> Readings() { return StoredReadings(sink_.get()); }

  ScopedTempDir dir_;
  std::unique_ptr<IngestSink> sink_;
  std::unique_ptr<FailingSink> failing_;
  std::unique_ptr<IngestHandler> handler_;
};

const std::vector<RecordRow> kRows = {Row("pump-7", "env", kStart, {{"t", 21.5}, {"ok", true}}),
                                      Row("pump-7", "env", kStart + kSecond, {{"t", -0.0}, {"ok", false}})};

// A gateway of the previous release sends JSON envelopes whose dimensions
// sit in a top-level list: they are stored as the identity of the series'
// readings, so the same gateway after its upgrade (dimensions in each record,
// its catalog migrated the same way) re-sends them as duplicates.
TEST_F(IngestHandlerTest, StoresAnOlderGatewaysDimensionsAsIdentity) {
  const EnvelopeHeader header = HeaderFor(1, 2);
  std::string text =
      "{\"type\":\"cairn.sync.envelope\",\"version\":1,\"gateway_id\":\"gw-7\",\"table\":\"sensors\","
      "\"lane\":\"live\",\"batch_sequence\":1,\"first_lsn\":1000,\"last_lsn\":1001,\"record_count\":2,"
      "\"records\":[{\"device_id\":\"pump-7\",\"measure_name\":\"env\",\"shard\":0,"
      "\"timestamp\":1700000000000000000,\"version\":0,\"ttl\":0,\"fields\":{\"t\":{\"double\":21.5}}},"
      "{\"device_id\":\"pump-8\",\"measure_name\":\"env\",\"shard\":0,"
      "\"timestamp\":1700000000000000000,\"version\":0,\"ttl\":0,\"fields\":{\"t\":{\"double\":3}}}],"
      "\"dimensions\":[{\"device_id\":\"pump-7\",\"measure_name\":\"env\",\"shard\":0,"
      "\"dimensions\":{\"site\":\"north\"}}]}";
  text.pop_back();
  const Sha256Digest mac = HmacSha256(kGatewayKey, text);
  text += ",\"mac\":\"" + util::HexEncode(mac) + "\"}";
  HandledMessage handled = handler_->Handle(Topic(header), text);
  ASSERT_EQ(handled.outcome, IngestOutcome::kStored) << handled.detail;
  const std::vector<RecordRow> rows = {
      Tagged(Row("pump-7", "env", kStart, {{"t", 21.5}}), {{"site", "north"}}),
      Row("pump-8", "env", kStart, {{"t", 3.0}})};
  EXPECT_EQ(CompareReadings(Expected("sensors", rows), Readings()), "");

  const EnvelopeHeader upgraded = HeaderFor(2, rows.size());
  handled = handler_->Handle(Topic(upgraded), Envelope(upgraded, rows));
  ASSERT_EQ(handled.outcome, IngestOutcome::kStored) << handled.detail;
  EXPECT_EQ(CompareReadings(Expected("sensors", rows), Readings()), "");
  Result<std::vector<StoredBatch>> batches = sink_->ReadBatches();
  ASSERT_TRUE(batches.ok()) << batches.status().ToString();
  ASSERT_EQ(batches->size(), 2u);
  EXPECT_EQ((*batches)[1].counts, (SinkCounts{0, 0, 2, 0}));
}

TEST_F(IngestHandlerTest, StoresBatchAndReturnsSignedReceiptInTheEnvelopesEncoding) {
  for (EnvelopeEncoding encoding : {EnvelopeEncoding::kBinary, EnvelopeEncoding::kJson}) {
    const EnvelopeHeader header = HeaderFor(encoding == EnvelopeEncoding::kBinary ? 1 : 2, kRows.size());
    const std::string payload = Envelope(header, kRows, kGatewayKey, encoding);
    HandledMessage handled = handler_->Handle(Topic(header), payload);
    ASSERT_EQ(handled.outcome, IngestOutcome::kStored) << handled.detail;
    ASSERT_TRUE(handled.receipt.has_value());
    EXPECT_EQ(handled.receipt->topic, "site-3/cairn/gw-7/receipts");
    EXPECT_EQ(handled.receipt->payload[0] == '{', encoding == EnvelopeEncoding::kJson);
    Result<SyncReceipt> receipt = DecodeReceipt(handled.receipt->payload, kGatewayKey);
    ASSERT_TRUE(receipt.ok()) << receipt.status().ToString();
    EXPECT_EQ(receipt->batch, header);
    EXPECT_EQ(receipt->status, ReceiptStatus::kOk);
    // Only gw-7's key verifies it.
    EXPECT_EQ(DecodeReceipt(handled.receipt->payload, kOtherKey).status().code(),
              StatusCode::kPermissionDenied);
  }
  EXPECT_EQ(CompareReadings(Expected("sensors", kRows), Readings()), "");
  const IngestStats stats = handler_->stats();
  EXPECT_EQ(stats.batches_stored, 2u);
  EXPECT_EQ(stats.records_inserted, 2u);
  EXPECT_EQ(stats.records_duplicate, 2u);
}

TEST_F(IngestHandlerTest, RefusesUnattributableMessagesWithoutReceiptOrWrites) {
  const EnvelopeHeader header = HeaderFor(1, kRows.size());
  const std::string good = Envelope(header, kRows);

  // A flipped bit under the MAC, a payload signed with another gateway's
  // key, a truncated payload, noise.
  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 0x01;
  const std::string foreign_key = Envelope(header, kRows, kOtherKey);
  struct Case {
    std::string topic;
    std::string payload;
    IngestOutcome outcome;
  };
  EnvelopeHeader other_table = header;
  other_table.table = "other";
  EnvelopeHeader other_lane = header;
  other_lane.lane = SyncLane::kAlarm;
  EnvelopeHeader unknown = header;
  unknown.gateway_id = "gw-99";
  const Case cases[] = {
      {Topic(header), flipped, IngestOutcome::kForged},
      {Topic(header), foreign_key, IngestOutcome::kForged},
      {Topic(header), good.substr(0, good.size() - 1), IngestOutcome::kForged},
      {Topic(header), good.substr(0, 20), IngestOutcome::kMalformed},
      {Topic(header), "not an envelope", IngestOutcome::kMalformed},
      {Topic(header), "", IngestOutcome::kMalformed},
      // Authentic, but moved: to gw-8's topic (verified with gw-8's key, so
      // the MAC fails), to another table, to another lane.
      {"site-3/cairn/gw-8/sensors/live", good, IngestOutcome::kForged},
      {Topic(other_table), good, IngestOutcome::kForged},
      {Topic(other_lane), good, IngestOutcome::kForged},
      {Topic(unknown), good, IngestOutcome::kUnknownGateway},
      {"site-3/cairn/gw-7/sensors/nolane", good, IngestOutcome::kMalformed},
      {"elsewhere/gw-7/sensors/live", good, IngestOutcome::kMalformed},
  };
  for (const Case& c : cases) {
    HandledMessage handled = handler_->Handle(c.topic, c.payload);
    EXPECT_EQ(handled.outcome, c.outcome) << c.topic << ": " << handled.detail;
    EXPECT_FALSE(handled.receipt.has_value()) << c.topic;
    EXPECT_FALSE(handled.detail.empty());
  }
  EXPECT_TRUE(Readings().empty());
  EXPECT_EQ(failing_->apply_calls(), 0);
  const IngestStats stats = handler_->stats();
  EXPECT_EQ(stats.forged, 6u);
  EXPECT_EQ(stats.malformed, 5u);
  EXPECT_EQ(stats.unknown_gateway, 1u);
  EXPECT_EQ(stats.batches_stored, 0u);
}

TEST_F(IngestHandlerTest, EnvelopeMovedToAnotherGatewaysTopicUnderItsKeyIsForged) {
  // gw-8 signs a batch that claims to be gw-7's and publishes it on its own
  // topic: its MAC verifies with gw-8's key, but the header names gw-7.
  EnvelopeHeader header = HeaderFor(1, kRows.size());
  const std::string payload = Envelope(header, kRows, kOtherKey);
  HandledMessage handled = handler_->Handle("site-3/cairn/gw-8/sensors/live", payload);
  EXPECT_EQ(handled.outcome, IngestOutcome::kForged) << handled.detail;
  EXPECT_FALSE(handled.receipt.has_value());
  EXPECT_TRUE(Readings().empty());
}

TEST_F(IngestHandlerTest, RetriesTransientSinkFailuresUntilTheBatchIsStored) {
  failing_->FailNext(Status::Unavailable("connection lost"));
  failing_->FailNext(Status::Busy("database is locked"));
  failing_->FailNext(Status::IOError("disk full"));
  const EnvelopeHeader header = HeaderFor(1, kRows.size());
  HandledMessage handled = handler_->Handle(Topic(header), Envelope(header, kRows));
  ASSERT_EQ(handled.outcome, IngestOutcome::kStored) << handled.detail;
  ASSERT_TRUE(handled.receipt.has_value());
  EXPECT_EQ(failing_->apply_calls(), 4);
  EXPECT_EQ(failing_->reconnects(), 3);
  EXPECT_EQ(handler_->stats().sink_failures, 3u);
  EXPECT_NE(handler_->stats().last_error.find("disk full"), std::string::npos);
  EXPECT_EQ(CompareReadings(Expected("sensors", kRows), Readings()), "");
}

TEST_F(IngestHandlerTest, PermanentSinkRefusalGetsRejectedReceiptWithReason) {
  failing_->FailNext(Status::InvalidArgument("value out of range:\nline two \xe2\x80\x94 quoted"));
  const EnvelopeHeader header = HeaderFor(1, kRows.size());
  HandledMessage handled = handler_->Handle(Topic(header), Envelope(header, kRows));
  ASSERT_EQ(handled.outcome, IngestOutcome::kRejected) << handled.detail;
  ASSERT_TRUE(handled.receipt.has_value());
  Result<SyncReceipt> receipt = DecodeReceipt(handled.receipt->payload, kGatewayKey);
  ASSERT_TRUE(receipt.ok()) << receipt.status().ToString();
  EXPECT_EQ(receipt->status, ReceiptStatus::kRejected);
  EXPECT_EQ(receipt->batch, header);
  EXPECT_NE(receipt->reason.find("value out of range"), std::string::npos) << receipt->reason;
  EXPECT_EQ(handler_->stats().batches_rejected, 1u);
  EXPECT_TRUE(Readings().empty());
}

TEST_F(IngestHandlerTest, RequestStopEndsRetriesWithoutReceipt) {
  failing_->FailAlways(Status::Unavailable("database down"));
  const EnvelopeHeader header = HeaderFor(1, kRows.size());
  const std::string payload = Envelope(header, kRows);
  HandledMessage handled;
  std::thread handling([&] { handled = handler_->Handle(Topic(header), payload); });
  // Stop once the handler is known to be retrying.
  while (failing_->apply_calls() < 3) std::this_thread::yield();
  handler_->RequestStop();
  handling.join();
  EXPECT_EQ(handled.outcome, IngestOutcome::kStopped);
  EXPECT_FALSE(handled.receipt.has_value());
  EXPECT_TRUE(Readings().empty());
}

}  // namespace
}  // namespace cairn::ingest_test
