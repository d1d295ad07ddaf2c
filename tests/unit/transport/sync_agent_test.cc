// SyncAgent and IngestService together over the in-memory broker
// (fake_mqtt_link.h): a reading is sent, stored by the ingest service's
// SQLite sink and confirmed by its receipt, also when the broker loses the
// receipt, drops the agent's connection mid-batch, or duplicates messages.
// The wire (Paho, mosquitto, TLS, PostgreSQL, the processes) is
// tests/integration/sync_test.cc's.
#include "cairn/sync/sync_agent.h"

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/ingest/ingest_service.h"
#include "cairn/ingest/ingest_sink.h"

#include "eventually.h"
#include "fake_mqtt_link.h"
#include "test_dirs.h"

namespace cairn {
namespace {

constexpr std::string_view kKey = "the sync key of gw-7, 32 bytes!!";
constexpr int kWaitMs = 10'000;
constexpr int64_t kSecond = 1'000'000'000;
const std::string kEnvelopes = "cairn/v1/gw-7/readings/+";
const std::string kReceipts = "cairn/v1/gw-7/receipts";
const std::string kAgentClient = "cairn-gw-7";

class SyncAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::unique_ptr<Engine>> engine = Engine::Open(Env::Default(), dir_.PathOf("data"), EngineOptions());
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    engine_ = std::move(*engine);
    ASSERT_TRUE(engine_->CreateTable("readings", TableOptions()).ok());

    Result<std::unique_ptr<IngestSink>> sink = OpenSqliteSink(Env::Default(), dir_.PathOf("ingest.db"));
    ASSERT_TRUE(sink.ok()) << sink.status().ToString();
    sink_ = sink->get();
    IngestServiceOptions ingest;
    ingest.link.server_uri = "tcp://broker:1883";
    ingest.link.client_id = "ingest";
    ingest.link_factory = broker_.factory();
    ingest.ingest.keys = {{"gw-7", std::string(kKey)}};
    Result<std::unique_ptr<IngestService>> service =
        IngestService::Create(Env::Default(), std::move(ingest), std::move(*sink));
    ASSERT_TRUE(service.ok()) << service.status().ToString();
    ingest_ = std::move(*service);
    ASSERT_TRUE(ingest_->Start().ok());
    ASSERT_TRUE(ingest_->WaitConnected(kWaitMs));
  }

  void TearDown() override {
    if (agent_) agent_->Stop();
    if (ingest_) ingest_->Stop();
  }

  void StartAgent() {
    SyncAgentOptions options;
    options.gateway_id = "gw-7";
    options.key = std::string(kKey);
    options.link.server_uri = "tcp://broker:1883";
    options.link_factory = broker_.factory();
    options.live_interval_ms = 20;
    options.poll_interval_ms = 5;
    options.receipt_timeout_ms = 300;
    options.ledger_flush_ms = 0;
    Result<std::unique_ptr<SyncAgent>> agent = SyncAgent::Create(Env::Default(), engine_.get(), options);
    ASSERT_TRUE(agent.ok()) << agent.status().ToString();
    agent_ = std::move(*agent);
    ASSERT_TRUE(agent_->Start().ok());
  }

  uint64_t Write(int count) {
    const int64_t now = Env::Default()->NowUnixNanos();
    std::vector<Record> records;
    for (int i = 0; i < count; ++i) {
      Record record;
      record.device_id = "pump-7";
      record.measure_name = "env";
      record.timestamp = now - (count - i) * kSecond;
      record.fields = {{"t", 20.0 + i}};
      records.push_back(std::move(record));
    }
    Result<WriteResult> written = engine_->Write("readings", records);
    EXPECT_TRUE(written.ok()) << written.status().ToString();
    agent_->Notify();
    return engine_->Stats().last_lsn;
  }

  SyncTableStatus Table() {
    Result<SyncStatus> status = agent_->GetStatus();
    EXPECT_TRUE(status.ok()) << status.status().ToString();
    if (!status.ok() || status->tables.empty()) return {};
    return status->tables.front();
  }

  // Waits until everything through `lsn` is confirmed and nothing is in
  // flight, then for the broker to finish what follows (receipts, PUBACKs).
  bool WaitConfirmed(uint64_t lsn) {
    const bool confirmed = Eventually(
        [&] {
          SyncTableStatus table = Table();
          return table.confirmed_through >= lsn && table.in_flight.empty();
        },
        kWaitMs);
    broker_.WaitIdle();
    return confirmed;
  }

  uint64_t LiveBatchesConfirmed() {
    for (const SyncLaneStatus& lane : Table().lanes) {
      if (lane.lane == SyncLane::kLive) return lane.batches_confirmed;
    }
    return 0;
  }

  std::vector<StoredBatch> Batches() {
    Result<std::vector<StoredBatch>> batches = sink_->ReadBatches();
    EXPECT_TRUE(batches.ok()) << batches.status().ToString();
    return batches.ok() ? *batches : std::vector<StoredBatch>{};
  }

  size_t Readings() {
    Result<std::vector<StoredReading>> readings = sink_->ReadReadings();
    EXPECT_TRUE(readings.ok()) << readings.status().ToString();
    return readings.ok() ? readings->size() : 0;
  }

  // What every resent or duplicated batch must come to: `readings` stored
  // once, from one batch the sink saw twice, confirmed once on the live lane.
  void ExpectOneBatchDeliveredTwice(size_t readings) {
    EXPECT_EQ(Readings(), readings);
    std::vector<StoredBatch> batches = Batches();
    ASSERT_EQ(batches.size(), 1u);
    EXPECT_EQ(batches[0].deliveries, 2u);
    EXPECT_EQ(LiveBatchesConfirmed(), 1u);
  }

  // Declared first: it outlives the links of the agent and the service.
  FakeMqttBroker broker_;
  ScopedTempDir dir_{"sync-agent-test"};
  std::unique_ptr<Engine> engine_;
  IngestSink* sink_ = nullptr;  // owned by ingest_
  std::unique_ptr<IngestService> ingest_;
  std::unique_ptr<SyncAgent> agent_;
};

TEST_F(SyncAgentTest, AReadingIsStoredAndConfirmedByItsReceipt) {
  StartAgent();
  const uint64_t lsn = Write(3);
  ASSERT_TRUE(WaitConfirmed(lsn));
  EXPECT_EQ(Readings(), 3u);
  EXPECT_EQ(broker_.published(kEnvelopes).size(), 1u);
  EXPECT_EQ(broker_.published(kReceipts).size(), 1u);
  EXPECT_EQ(LiveBatchesConfirmed(), 1u);
  Result<SyncStatus> status = agent_->GetStatus();
  ASSERT_TRUE(status.ok());
  EXPECT_TRUE(status->connected);
  EXPECT_EQ(status->receipts_accepted, 1u);
  EXPECT_EQ(status->receipts_invalid, 0u);
  EXPECT_EQ(status->link.acknowledged, 1u);
}

// The receipt never reaches the agent: after receipt_timeout_ms it sends the
// batch again, the ingest service counts a second delivery of a batch it
// has, and the second receipt confirms it once.
TEST_F(SyncAgentTest, ALostReceiptMakesTheAgentResendAndTheBatchIsConfirmedOnce) {
  broker_.DropMessages(kReceipts, 1);
  StartAgent();
  const uint64_t lsn = Write(2);
  ASSERT_TRUE(WaitConfirmed(lsn));
  EXPECT_EQ(broker_.published(kEnvelopes).size(), 2u);
  EXPECT_EQ(broker_.published(kReceipts).size(), 2u);
  ASSERT_NO_FATAL_FAILURE(ExpectOneBatchDeliveredTwice(2));
  EXPECT_EQ(Batches()[0].counts.inserted, 2u);
  EXPECT_EQ(ingest_->stats().ingest.records_duplicate, 2u);
}

// The agent's connection drops while its batch awaits PUBACK and its
// receipt is lost: the publish fails, the agent sends the batch again on
// the new connection, and it is stored and confirmed once.
TEST_F(SyncAgentTest, ADisconnectMidBatchMakesTheAgentResend) {
  broker_.WithholdAcks(kEnvelopes, 1);
  broker_.DropMessages(kReceipts, 1);
  StartAgent();
  const uint64_t lsn = Write(4);
  ASSERT_TRUE(broker_.WaitForPublished(kEnvelopes, 1, kWaitMs));
  broker_.WaitIdle();
  EXPECT_EQ(Table().in_flight.size(), 1u);
  broker_.DisconnectClient(kAgentClient);
  ASSERT_TRUE(WaitConfirmed(lsn));
  EXPECT_EQ(broker_.published(kEnvelopes).size(), 2u);
  EXPECT_EQ(broker_.connects(kAgentClient), 2u);
  ASSERT_NO_FATAL_FAILURE(ExpectOneBatchDeliveredTwice(4));
  Result<SyncStatus> status = agent_->GetStatus();
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->link.connection_losses, 1u);
  EXPECT_EQ(status->link.publish_failures, 1u);
}

// The broker delivers the envelope and the receipt twice: the sink stores
// the records once, and the second receipt finds nothing left to confirm.
TEST_F(SyncAgentTest, DuplicatedEnvelopesAndReceiptsAreIdempotent) {
  broker_.DuplicateMessages(kEnvelopes, 1);
  StartAgent();
  const uint64_t lsn = Write(3);
  ASSERT_TRUE(WaitConfirmed(lsn));
  EXPECT_EQ(broker_.published(kEnvelopes).size(), 1u);
  // One receipt per delivery.
  EXPECT_EQ(broker_.published(kReceipts).size(), 2u);
  ASSERT_NO_FATAL_FAILURE(ExpectOneBatchDeliveredTwice(3));
  Result<SyncStatus> status = agent_->GetStatus();
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->receipts_accepted, 1u);
  EXPECT_EQ(status->receipts_invalid, 0u);
}

}  // namespace
}  // namespace cairn
