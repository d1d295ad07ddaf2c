// IngestService over the in-memory broker (fake_mqtt_link.h) with its SQLite
// sink: batches reordered or duplicated by the broker are stored once, with
// one receipt per delivery, and receipts of messages the session kept wait
// for the connection. The wire and PostgreSQL are
// tests/integration/ingest_test.cc's.
#include "cairn/ingest/ingest_service.h"

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/ingest/ingest_sink.h"

#include "eventually.h"
#include "fake_mqtt_link.h"
#include "ingest_batches.h"
#include "test_dirs.h"

namespace cairn::ingest_test {
namespace {

constexpr int kWaitMs = 10'000;
const std::string kReceipts = "cairn/v1/gw-7/receipts";

class IngestServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::unique_ptr<IngestSink>> sink = OpenSqliteSink(Env::Default(), dir_.PathOf("ingest.db"));
    ASSERT_TRUE(sink.ok()) << sink.status().ToString();
    sink_ = sink->get();
    IngestServiceOptions options;
    options.link.server_uri = "tcp://broker:1883";
    options.link.client_id = "ingest";
    options.link_factory = broker_.factory();
    options.ingest.keys = {{"gw-7", std::string(kGatewayKey)}};
    Result<std::unique_ptr<IngestService>> service =
        IngestService::Create(Env::Default(), std::move(options), std::move(*sink));
    ASSERT_TRUE(service.ok()) << service.status().ToString();
    service_ = std::move(*service);
    ASSERT_TRUE(service_->Start().ok());
    ASSERT_TRUE(service_->WaitConnected(kWaitMs));
  }

  // Publishes batch `sequence` of gw-7's "sensors" as the gateway would.
  void Send(uint64_t sequence, const std::vector<RecordRow>& rows) {
    const EnvelopeHeader header = HeaderFor(sequence, rows.size());
    Result<std::string> payload = EncodeEnvelope(header, rows, kGatewayKey, EnvelopeEncoding::kBinary);
    ASSERT_TRUE(payload.ok()) << payload.status().ToString();
    broker_.Publish(*SyncTopic("cairn/v1", "gw-7", "sensors", SyncLane::kLive), std::move(*payload));
  }

  std::vector<StoredReading> Readings() { return StoredReadings(sink_); }

  std::vector<StoredBatch> Batches() {
    Result<std::vector<StoredBatch>> batches = sink_->ReadBatches();
    EXPECT_TRUE(batches.ok()) << batches.status().ToString();
    return batches.ok() ? *batches : std::vector<StoredBatch>{};
  }

  // The receipts published so far, decoded, in order.
  std::vector<SyncReceipt> Receipts() {
    std::vector<SyncReceipt> receipts;
    for (const FakeMqttMessage& message : broker_.published(kReceipts)) {
      Result<SyncReceipt> receipt = DecodeReceipt(message.payload, kGatewayKey);
      EXPECT_TRUE(receipt.ok()) << receipt.status().ToString();
      if (receipt.ok()) receipts.push_back(*receipt);
    }
    return receipts;
  }

  FakeMqttBroker broker_;
  ScopedTempDir dir_{"ingest-service-test"};
  IngestSink* sink_ = nullptr;  // owned by service_
  std::unique_ptr<IngestService> service_;
};

// Three batches that each carry a reading of their own and a new version of
// one shared reading arrive newest first: every reading is stored once, and
// the shared one keeps the highest version whatever the order.
TEST_F(IngestServiceTest, ReorderedBatchesAreStoredOnceWithTheHighestVersion) {
  broker_.ReorderMessages("cairn/v1/gw-7/#", 3);
  std::vector<RecordRow> all;
  for (uint64_t sequence = 1; sequence <= 3; ++sequence) {
    const std::vector<RecordRow> rows = {
        Row("pump-7", "env", kStart + static_cast<int64_t>(sequence) * kSecond, {{"t", 20.0 + sequence}}),
        Row("pump-7", "env", kStart, {{"t", 10.0 * sequence}}, /*version=*/sequence)};
    all.insert(all.end(), rows.begin(), rows.end());
    Send(sequence, rows);
  }
  broker_.WaitIdle();
  EXPECT_EQ(CompareReadings(Expected("sensors", all), Readings()), "");
  std::vector<SyncReceipt> receipts = Receipts();
  ASSERT_EQ(receipts.size(), 3u);
  EXPECT_EQ(receipts[0].batch.batch_sequence, 3u);
  EXPECT_EQ(receipts[2].batch.batch_sequence, 1u);
  for (const SyncReceipt& receipt : receipts) EXPECT_EQ(receipt.status, ReceiptStatus::kOk);
  const IngestServiceStats stats = service_->stats();
  EXPECT_EQ(stats.ingest.batches_stored, 3u);
  // Batch 3 inserted the shared reading; 2 and 1 came with lower versions.
  EXPECT_EQ(stats.ingest.records_inserted, 4u);
  EXPECT_EQ(stats.ingest.records_older, 2u);
  EXPECT_EQ(stats.receipts_acknowledged, 3u);
}

// The broker delivers a batch twice: its records are stored once, the batch
// row counts two deliveries, and each delivery is answered.
TEST_F(IngestServiceTest, ADuplicatedBatchIsStoredOnceAndAnsweredTwice) {
  broker_.DuplicateMessages("cairn/v1/gw-7/#", 1);
  const std::vector<RecordRow> rows = {Row("pump-7", "env", kStart, {{"t", 21.5}}),
                                       Row("pump-7", "env", kStart + kSecond, {{"t", 22.5}})};
  Send(1, rows);
  broker_.WaitIdle();
  EXPECT_EQ(CompareReadings(Expected("sensors", rows), Readings()), "");
  std::vector<StoredBatch> batches = Batches();
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].deliveries, 2u);
  EXPECT_EQ(batches[0].counts.inserted, 2u);
  EXPECT_EQ(Receipts().size(), 2u);
  EXPECT_EQ(service_->stats().ingest.records_duplicate, 2u);
}

// A batch published while the service is away waits in its session and
// arrives right after the next connect, before the link takes publishes:
// its receipt waits for the connection and is published then.
TEST_F(IngestServiceTest, TheReceiptOfAKeptMessageWaitsForTheConnection) {
  broker_.SetAcceptingConnects(false);
  broker_.DisconnectClient("ingest");
  ASSERT_TRUE(Eventually([&] { return !service_->stats().link.connected; }, kWaitMs));
  const std::vector<RecordRow> rows = {Row("pump-7", "env", kStart, {{"t", 1.0}})};
  Send(1, rows);
  broker_.WaitIdle();
  EXPECT_TRUE(Readings().empty());
  broker_.SetAcceptingConnects(true);
  ASSERT_TRUE(service_->WaitConnected(kWaitMs));
  broker_.WaitIdle();
  EXPECT_EQ(CompareReadings(Expected("sensors", rows), Readings()), "");
  const IngestServiceStats stats = service_->stats();
  EXPECT_EQ(stats.receipts_deferred, 1u);
  EXPECT_EQ(stats.receipts_published, 1u);
  EXPECT_EQ(stats.receipt_failures, 0u);
  EXPECT_EQ(stats.link.connection_losses, 1u);
  EXPECT_EQ(Receipts().size(), 1u);
}

}  // namespace
}  // namespace cairn::ingest_test
