// The ingest service against real peers: the handler through a database
// outage, IngestService over mosquitto answering with receipts after commit,
// and the cairn-ingest binary end to end.
//
// Every wait is bounded. The cluster and the broker are shared by the tests
// of IngestTest; each test starts from empty tables.
#include "cairn/ingest/ingest_service.h"

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include "cairn/platform/env.h"
#include "cairn/util/hex.h"

#include "cairn_ingest_location.h"
#include "ingest_test_util.h"
#include "test_dirs.h"

namespace cairn::ingest_test {
namespace {

TEST_F(IngestTest, HandlerWaitsOutADatabaseOutage) {
  std::unique_ptr<IngestSink> sink = OpenSink();
  ASSERT_NE(sink, nullptr);
  IngestHandlerOptions options;
  options.keys = Keys();
  options.retry_min_ms = 20;
  options.retry_max_ms = 200;
  IngestHandler handler(Env::Default(), options, sink.get());
  const std::vector<RecordRow> rows = {Row("pump-7", "env", kStart, {{"t", 1.0}})};
  const EnvelopeHeader header = HeaderFor(1, rows.size());
  const std::string payload = Envelope(header, rows);

  ASSERT_TRUE(cluster_->Stop().ok());
  HandledMessage handled;
  std::thread handling([&] { handled = handler.Handle(Topic(header), payload); });
  // Bring the server back once the handler has seen it fail.
  for (int i = 0; i < 6000 && handler.stats().sink_failures == 0; ++i) {
    Env::Default()->SleepForMicros(10'000);
  }
  EXPECT_GT(handler.stats().sink_failures, 0u);
  Status restarted = cluster_->Start();
  // Without a server the handler would retry forever.
  if (!restarted.ok()) handler.RequestStop();
  handling.join();
  ASSERT_TRUE(restarted.ok()) << restarted.ToString();
  ASSERT_EQ(handled.outcome, IngestOutcome::kStored) << handled.detail;
  EXPECT_TRUE(handled.receipt.has_value());
  EXPECT_EQ(CompareReadings(Expected("sensors", rows), Readings()), "");
}

TEST_F(IngestTest, ServiceAnswersOnlyAuthenticBatchesAfterCommit) {
  IngestServiceOptions options;
  options.link.server_uri = broker_->server_uri();
  options.link.client_id = "ingest-under-test";
  options.ingest.keys = Keys();
  std::unique_ptr<IngestSink> sink = OpenSink();
  ASSERT_NE(sink, nullptr);
  Result<std::unique_ptr<IngestService>> service =
      IngestService::Create(Env::Default(), options, std::move(sink));
  ASSERT_TRUE(service.ok()) << service.status().ToString();
  ASSERT_TRUE((*service)->Start().ok());
  ASSERT_TRUE((*service)->WaitConnected(kWaitMs));
  EXPECT_EQ((*service)->subscription(), "cairn/v1/+/+/+");

  // What the database holds at the moment each receipt arrives.
  std::mutex seen_mutex;
  std::vector<size_t> rows_at_receipt;
  TestGateway gateway(broker_->server_uri(), "gw-7", [&](const std::string&) {
    const size_t rows = Readings().size();
    std::lock_guard<std::mutex> lock(seen_mutex);
    rows_at_receipt.push_back(rows);
  });

  const std::vector<RecordRow> rows = AllTypesRows();
  const EnvelopeHeader header = HeaderFor(1, rows.size());
  const std::string good = Envelope(header, rows);
  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 0x20;
  EnvelopeHeader other_table = header;
  other_table.table = "other";
  // Refused first: forged, truncated, moved to gw-8's topic and to another
  // table, an unknown gateway, noise. Messages are handled in order, so once the
  // good batch's receipt is in, all of these have been handled.
  ASSERT_TRUE(gateway.Publish(Topic(header), flipped));
  ASSERT_TRUE(gateway.Publish(Topic(header), good.substr(0, good.size() / 2)));
  ASSERT_TRUE(gateway.Publish("cairn/v1/gw-8/sensors/live", good));
  ASSERT_TRUE(gateway.Publish(Topic(other_table), good));
  ASSERT_TRUE(gateway.Publish("cairn/v1/gw-99/sensors/live", good));
  ASSERT_TRUE(gateway.Publish(Topic(header), "noise, not an envelope"));
  ASSERT_TRUE(gateway.Publish(Topic(header), good));

  const std::string receipt_payload = gateway.NextReceipt();
  ASSERT_FALSE(receipt_payload.empty()) << "no receipt";
  Result<SyncReceipt> receipt = DecodeReceipt(receipt_payload, kGatewayKey);
  ASSERT_TRUE(receipt.ok()) << receipt.status().ToString();
  EXPECT_EQ(receipt->batch, header);
  EXPECT_EQ(receipt->status, ReceiptStatus::kOk);
  EXPECT_EQ(CompareReadings(Expected("sensors", rows), Readings()), "");
  {
    std::lock_guard<std::mutex> lock(seen_mutex);
    ASSERT_EQ(rows_at_receipt.size(), 1u);
    EXPECT_EQ(rows_at_receipt[0], rows.size()) << "the receipt came before the commit";
  }

  // The same batch again (a gateway that missed the receipt): a second
  // receipt, still one copy.
  ASSERT_TRUE(gateway.Publish(Topic(header), good));
  ASSERT_FALSE(gateway.NextReceipt().empty());
  EXPECT_EQ(gateway.pending_receipts(), 0u);
  EXPECT_EQ(CompareReadings(Expected("sensors", rows), Readings()), "");

  const IngestServiceStats stats = (*service)->stats();
  // The truncated envelope fails its MAC (its last 32 bytes are not one),
  // like the flipped and the moved ones; the noise is not an envelope.
  EXPECT_EQ(stats.ingest.forged, 4u);
  EXPECT_EQ(stats.ingest.malformed, 1u);
  EXPECT_EQ(stats.ingest.unknown_gateway, 1u);
  EXPECT_EQ(stats.ingest.batches_stored, 2u);
  EXPECT_EQ(stats.ingest.records_duplicate, rows.size());
  EXPECT_EQ(stats.receipts_published, 2u);
  (*service)->Stop();
}

TEST_F(IngestTest, BatchPublishedWhileTheServiceIsDownIsStoredWhenItReturns) {
  IngestServiceOptions options;
  options.link.server_uri = broker_->server_uri();
  options.link.client_id = "ingest-persistent-session";
  options.ingest.keys = Keys();
  const auto start_service = [&]() -> std::unique_ptr<IngestService> {
    std::unique_ptr<IngestSink> sink = OpenSink();
    if (sink == nullptr) return nullptr;
    Result<std::unique_ptr<IngestService>> service =
        IngestService::Create(Env::Default(), options, std::move(sink));
    EXPECT_TRUE(service.ok()) << service.status().ToString();
    if (!service.ok()) return nullptr;
    EXPECT_TRUE((*service)->Start().ok());
    EXPECT_TRUE((*service)->WaitConnected(kWaitMs));
    return std::move(service).value();
  };
  // The first run leaves a persistent session with its subscription.
  std::unique_ptr<IngestService> service = start_service();
  ASSERT_NE(service, nullptr);
  service->Stop();
  service.reset();

  TestGateway gateway(broker_->server_uri(), "gw-7");
  const std::vector<RecordRow> rows = {Row("pump-7", "env", kStart, {{"t", 1.0}})};
  const EnvelopeHeader header = HeaderFor(5, rows.size(), SyncLane::kAlarm);
  ASSERT_TRUE(gateway.Publish(Topic(header), Envelope(header, rows)));
  EXPECT_TRUE(Readings().empty());

  service = start_service();
  ASSERT_NE(service, nullptr);
  const std::string payload = gateway.NextReceipt();
  ASSERT_FALSE(payload.empty()) << "the queued batch was not delivered";
  Result<SyncReceipt> receipt = DecodeReceipt(payload, kGatewayKey);
  ASSERT_TRUE(receipt.ok()) << receipt.status().ToString();
  EXPECT_EQ(receipt->batch, header);
  EXPECT_EQ(CompareReadings(Expected("sensors", rows), Readings()), "");
  service->Stop();
}

// cairn-ingest as deployed: spawned with a keys file, it logs the
// subscription, stores what a gateway publishes and answers with receipts;
// SIGTERM stops it cleanly.
class CairnIngestBinaryTest : public IngestTest {
 protected:
  void SetUp() override {
    IngestTest::SetUp();
    keys_path_ = dir_.path() + "/keys";
    const std::string keys = "# test gateways\ngw-7 " + util::HexEncode(kGatewayKey) + "\ngw-8 " +
                             util::HexEncode(kOtherKey) + "\n";
    ASSERT_TRUE(Env::Default()->WriteFileAtomically(keys_path_, keys).ok());
    output_path_ = dir_.path() + "/cairn-ingest.out";
  }
  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      WaitForChild(pid_, 10'000);
    }
  }

  // Starts cairn-ingest with `store` ("--postgres=..." or "--sqlite=...")
  // and waits for its subscription line.
  void StartBinary(const std::string& store) {
    Result<pid_t> pid = SpawnChild({kCairnIngestPath, "--broker", broker_->server_uri(), "--keys", keys_path_,
                                    "--client-id", "cairn-ingest-binary", store, "--progress-every", "1"},
                                   output_path_, TruncatingOutput());
    ASSERT_TRUE(pid.ok()) << pid.status().ToString();
    pid_ = *pid;
    const std::string expected = "cairn-ingest: subscribed to cairn/v1/+/+/+ on " + broker_->server_uri();
    for (int i = 0; i < 6000; ++i) {
      if (ReadFileFrom(output_path_, 0).find(expected) != std::string::npos) return;
      if (WaitForChild(pid_, 10).has_value()) {
        pid_ = -1;
        FAIL() << "cairn-ingest exited:\n" << ReadFileFrom(output_path_, 0);
      }
    }
    FAIL() << "cairn-ingest did not subscribe:\n" << ReadFileFrom(output_path_, 0);
  }

  // SIGTERM, then the exit status must be 0.
  void StopBinary() {
    ASSERT_EQ(::kill(pid_, SIGTERM), 0);
    std::optional<int> status = WaitForChild(pid_, 60'000);
    ASSERT_TRUE(status.has_value()) << "cairn-ingest ignored SIGTERM";
    pid_ = -1;
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << DescribeExit(*status) << "\n"
                                                                 << ReadFileFrom(output_path_, 0);
  }

  // Publishes one batch of gw-7 and checks its receipt.
  void PublishAndExpectReceipt(const std::vector<RecordRow>& rows, EnvelopeEncoding encoding) {
    TestGateway gateway(broker_->server_uri(), "gw-7");
    const EnvelopeHeader header = HeaderFor(9, rows.size(), SyncLane::kBackfill);
    ASSERT_TRUE(gateway.Publish(Topic(header), Envelope(header, rows, kGatewayKey, encoding)));
    const std::string payload = gateway.NextReceipt();
    ASSERT_FALSE(payload.empty()) << "no receipt\n" << ReadFileFrom(output_path_, 0);
    Result<SyncReceipt> receipt = DecodeReceipt(payload, kGatewayKey);
    ASSERT_TRUE(receipt.ok()) << receipt.status().ToString();
    EXPECT_EQ(receipt->batch, header);
    EXPECT_EQ(receipt->status, ReceiptStatus::kOk) << receipt->reason;
  }

  ScopedTempDir dir_;
  std::string keys_path_;
  std::string output_path_;
  pid_t pid_ = -1;
};

TEST_F(CairnIngestBinaryTest, StoresInPostgresAndAnswersWithReceipts) {
  ASSERT_NO_FATAL_FAILURE(StartBinary("--postgres=" + cluster_->connection_string()));
  const std::vector<RecordRow> rows = AllTypesRows();
  ASSERT_NO_FATAL_FAILURE(PublishAndExpectReceipt(rows, EnvelopeEncoding::kJson));
  EXPECT_EQ(CompareReadings(Expected("sensors", rows), Readings()), "");
  Result<QueryRows> batches =
      cluster_->Query("SELECT gateway_id, table_name, lane, batch_sequence FROM cairn_batches");
  ASSERT_TRUE(batches.ok()) << batches.status().ToString();
  EXPECT_EQ(*batches, (QueryRows{{"gw-7", "sensors", "backfill", "9"}}));
  ASSERT_NO_FATAL_FAILURE(StopBinary());
  EXPECT_NE(ReadFileFrom(output_path_, 0).find("1 batches stored"), std::string::npos)
      << ReadFileFrom(output_path_, 0);
}

TEST_F(CairnIngestBinaryTest, StoresInSqlite) {
  const std::string database = dir_.path() + "/ingest.db";
  ASSERT_NO_FATAL_FAILURE(StartBinary("--sqlite=" + database));
  const std::vector<RecordRow> rows = AllTypesRows();
  ASSERT_NO_FATAL_FAILURE(PublishAndExpectReceipt(rows, EnvelopeEncoding::kBinary));
  ASSERT_NO_FATAL_FAILURE(StopBinary());
  Result<std::unique_ptr<IngestSink>> sink = OpenSqliteSink(Env::Default(), database);
  ASSERT_TRUE(sink.ok()) << sink.status().ToString();
  Result<std::vector<StoredReading>> readings = (*sink)->ReadReadings();
  ASSERT_TRUE(readings.ok()) << readings.status().ToString();
  EXPECT_EQ(CompareReadings(Expected("sensors", rows), *readings), "");
}

TEST_F(CairnIngestBinaryTest, RefusesBadKeysFileNamingTheLine) {
  ASSERT_TRUE(Env::Default()
                  ->WriteFileAtomically(keys_path_, "gw-7 " + util::HexEncode(kGatewayKey) + "\ngw-8 abc\n")
                  .ok());
  Result<pid_t> pid = SpawnChild({kCairnIngestPath, "--broker", broker_->server_uri(), "--keys", keys_path_,
                                  "--sqlite", dir_.path() + "/x.db"},
                                 output_path_, TruncatingOutput());
  ASSERT_TRUE(pid.ok());
  std::optional<int> status = WaitForChild(*pid, 60'000);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 1) << DescribeExit(*status);
  EXPECT_NE(ReadFileFrom(output_path_, 0).find(keys_path_ + " line 2: the key of gateway 'gw-8'"),
            std::string::npos)
      << ReadFileFrom(output_path_, 0);
}

}  // namespace
}  // namespace cairn::ingest_test
