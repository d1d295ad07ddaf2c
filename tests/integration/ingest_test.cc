// The ingest service against real peers: PostgreSQL (a cluster made by the
// test) through the PostgreSQL sink, mosquitto (started by the test) through
// IngestService, and the cairn-ingest binary end to end.
//
// Every wait is bounded. The cluster and the broker are shared by the tests
// of this file; each test starts from empty tables.
#include <condition_variable>
#include <deque>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include "cairn/ingest/ingest_handler.h"
#include "cairn/ingest/ingest_service.h"
#include "cairn/ingest/ingest_sink.h"
#include "cairn/ingest/postgres_sink.h"
#include "cairn/platform/env.h"
#include "cairn/mqtt/mqtt_link.h"
#include "cairn/util/hex.h"

#include "cairn_ingest_location.h"
#include "child_process.h"
#include "ingest_batches.h"
#include "mosquitto_broker.h"
#include "postgres_cluster.h"
#include "test_dirs.h"

namespace cairn::ingest_test {
namespace {

constexpr int64_t kWaitMs = 60'000;
constexpr char kPrefix[] = "cairn/v1";
constexpr std::string_view kOtherKey = "the key of gateway gw-8, 32 bytes";

ChildOptions TruncatingOutput() {
  ChildOptions options;
  options.truncate_output = true;
  return options;
}

GatewayKeys Keys() { return {{"gw-7", std::string(kGatewayKey)}, {"gw-8", std::string(kOtherKey)}}; }

std::string Topic(const EnvelopeHeader& header) {
  return *SyncTopic(kPrefix, header.gateway_id, header.table, header.lane);
}

std::string Envelope(const EnvelopeHeader& header, const std::vector<RecordRow>& rows,
                     std::string_view key = kGatewayKey,
                     EnvelopeEncoding encoding = EnvelopeEncoding::kBinary) {
  Result<std::string> payload = EncodeEnvelope(header, rows, key, encoding);
  EXPECT_TRUE(payload.ok()) << payload.status().ToString();
  return payload.ok() ? *payload : "";
}

// A gateway's side of the wire: publishes envelopes and collects the
// receipts on its receipt topic. `on_receipt` runs on the MQTT thread for
// each receipt before it is queued.
class TestGateway {
 public:
  TestGateway(const std::string& server_uri, const std::string& gateway_id,
              std::function<void(const std::string&)> on_receipt = {})
      : on_receipt_(std::move(on_receipt)) {
    MqttLinkOptions options;
    options.server_uri = server_uri;
    options.client_id = "test-" + gateway_id;
    options.clean_session = true;
    options.reconnect_min_ms = 50;
    options.reconnect_max_ms = 500;
    options.subscriptions.push_back(*ReceiptTopic(kPrefix, gateway_id));
    Result<std::unique_ptr<MqttLink>> link =
        MqttLink::Create(Env::Default(), options, [this](std::string_view, std::string_view payload) {
          std::string receipt(payload);
          if (on_receipt_) on_receipt_(receipt);
          std::lock_guard<std::mutex> lock(mutex_);
          receipts_.push_back(std::move(receipt));
          changed_.notify_all();
        });
    EXPECT_TRUE(link.ok()) << link.status().ToString();
    if (!link.ok()) return;
    link_ = std::move(link).value();
    EXPECT_TRUE(link_->Start().ok());
    EXPECT_TRUE(link_->WaitConnected(kWaitMs));
  }
  ~TestGateway() {
    if (link_ != nullptr) link_->Stop();
  }

  // Publishes with QoS 1 and waits for the PUBACK.
  bool Publish(const std::string& topic, const std::string& payload) {
    if (link_ == nullptr) return false;
    std::mutex mutex;
    std::condition_variable done_changed;
    bool done = false;
    Status result;
    Status accepted = link_->Publish(topic, payload, [&](const Status& status) {
      std::lock_guard<std::mutex> lock(mutex);
      result = status;
      done = true;
      done_changed.notify_all();
    });
    EXPECT_TRUE(accepted.ok()) << accepted.ToString();
    if (!accepted.ok()) return false;
    std::unique_lock<std::mutex> lock(mutex);
    if (!done_changed.wait_for(lock, std::chrono::milliseconds(kWaitMs), [&] { return done; })) return false;
    EXPECT_TRUE(result.ok()) << result.ToString();
    return result.ok();
  }

  // The next receipt, or "" when none came in time.
  std::string NextReceipt() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!changed_.wait_for(lock, std::chrono::milliseconds(kWaitMs), [&] { return !receipts_.empty(); })) {
      return "";
    }
    std::string receipt = std::move(receipts_.front());
    receipts_.pop_front();
    return receipt;
  }

  size_t pending_receipts() {
    std::lock_guard<std::mutex> lock(mutex_);
    return receipts_.size();
  }

 private:
  std::function<void(const std::string&)> on_receipt_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::string> receipts_;
  std::unique_ptr<MqttLink> link_;
};

class IngestTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new PostgresCluster();
    Status started = cluster_->Start();
    ASSERT_TRUE(started.ok()) << started.ToString();
    broker_ = new MosquittoBroker();
    started = broker_->Start(MosquittoBrokerOptions{});
    ASSERT_TRUE(started.ok()) << started.ToString();
  }
  static void TearDownTestSuite() {
    delete broker_;
    broker_ = nullptr;
    delete cluster_;
    cluster_ = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(cluster_, nullptr);
    ASSERT_TRUE(cluster_->running());
    Result<QueryRows> dropped = cluster_->Query(
        "SET client_min_messages = warning; DROP TABLE IF EXISTS cairn_readings, cairn_series, "
        "cairn_batches");
    ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
  }

  static std::unique_ptr<IngestSink> OpenSink() {
    Result<std::unique_ptr<IngestSink>> sink = OpenPostgresSink(cluster_->connection_string());
    EXPECT_TRUE(sink.ok()) << sink.status().ToString();
    return sink.ok() ? std::move(sink).value() : nullptr;
  }

  static std::vector<StoredReading> Readings() {
    std::unique_ptr<IngestSink> sink = OpenSink();
    if (sink == nullptr) return {};
    return StoredReadings(sink.get());
  }

  static SinkCounts Apply(IngestSink* sink, const DecodedEnvelope& batch) {
    Result<SinkCounts> counts = sink->ApplyBatch(batch, 7);
    EXPECT_TRUE(counts.ok()) << counts.status().ToString();
    return counts.ok() ? *counts : SinkCounts{};
  }

  static PostgresCluster* cluster_;
  static MosquittoBroker* broker_;
};

PostgresCluster* IngestTest::cluster_ = nullptr;
MosquittoBroker* IngestTest::broker_ = nullptr;

TEST_F(IngestTest, PostgresStoresEveryFieldTypeBitExactly) {
  std::unique_ptr<IngestSink> sink = OpenSink();
  ASSERT_NE(sink, nullptr);
  const std::vector<RecordRow> rows = AllTypesRows();
  Result<DecodedEnvelope> binary = MakeBatch(HeaderFor(1, rows.size()), rows);
  ASSERT_TRUE(binary.ok()) << binary.status().ToString();
  EXPECT_EQ(Apply(sink.get(), *binary), (SinkCounts{rows.size(), 0, 0, 0}));
  // The JSON encoding of the same records changes nothing.
  Result<DecodedEnvelope> json = MakeBatch(HeaderFor(2, rows.size()), rows, EnvelopeEncoding::kJson);
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  EXPECT_EQ(Apply(sink.get(), *json), (SinkCounts{0, 0, rows.size(), 0}));

  // Read back through a new connection.
  EXPECT_EQ(CompareReadings(Expected("sensors", rows), Readings()), "");
  // The stored columns are what ingest_schema.md says.
  Result<QueryRows> stored = cluster_->Query(
      "SELECT partition_key, version::text, fields->'negative_zero'->>'double', (fields->'count'->>'int64') "
      "FROM cairn_readings WHERE device_id = 'pump-7' ORDER BY timestamp_ns LIMIT 3");
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  ASSERT_EQ(stored->size(), 3u);
  EXPECT_EQ((*stored)[0], (std::vector<std::string>{"pump-7#00", "0", "-0", "-3"}));
  EXPECT_EQ((*stored)[1][3], "-9223372036854775808");
  EXPECT_EQ((*stored)[2][1], "18446744073709551615");
  stored = cluster_->Query("SELECT partition_key FROM cairn_readings WHERE device_id = 'valve-3' LIMIT 1");
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ((*stored)[0][0], "valve-3#13");
}

TEST_F(IngestTest, PostgresSameBatchTwiceIsOneCopyAndVersionsDecide) {
  std::unique_ptr<IngestSink> sink = OpenSink();
  ASSERT_NE(sink, nullptr);
  const auto [first, second] = VersionRuleRows();
  Result<DecodedEnvelope> batch = MakeBatch(HeaderFor(1, first.size()), first);
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(Apply(sink.get(), *batch), (SinkCounts{2, 0, 0, 0}));
  EXPECT_EQ(Apply(sink.get(), *batch), (SinkCounts{0, 0, 2, 0}));
  Result<std::vector<StoredBatch>> batches = sink->ReadBatches();
  ASSERT_TRUE(batches.ok()) << batches.status().ToString();
  ASSERT_EQ(batches->size(), 1u);
  EXPECT_EQ((*batches)[0].header, batch->header);
  EXPECT_EQ((*batches)[0].deliveries, 2u);
  EXPECT_EQ((*batches)[0].counts, (SinkCounts{2, 0, 0, 0}));

  batch = MakeBatch(HeaderFor(2, second.size()), second);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_EQ(Apply(sink.get(), *batch), (SinkCounts{1, 1, 1, 2}));
  std::vector<RecordRow> all = first;
  all.insert(all.end(), second.begin(), second.end());
  const std::vector<StoredReading> readings = Readings();
  EXPECT_EQ(CompareReadings(Expected("sensors", all), readings), "");
  ASSERT_EQ(readings.size(), 3u);
  EXPECT_EQ(std::get<double>(readings[2].row.fields[0].value), 31.0);

  // Attributes: latest wins; a batch without them leaves them alone.
  batch = MakeBatch(HeaderFor(3, 1),
                    {Tagged(Row("pump-7", "env", kStart + 3 * kSecond, {{"t", 4.0}}), {}, {{"fw", "1.0"}})});
  ASSERT_TRUE(batch.ok());
  Apply(sink.get(), *batch);
  batch = MakeBatch(HeaderFor(4, 1),
                    {Tagged(Row("pump-7", "env", kStart + 4 * kSecond, {{"t", 5.0}}), {}, {{"fw", "1.1"}})});
  ASSERT_TRUE(batch.ok());
  Apply(sink.get(), *batch);
  batch = MakeBatch(HeaderFor(5, 1), {Row("pump-7", "env", kStart + 5 * kSecond, {{"t", 6.0}})});
  ASSERT_TRUE(batch.ok());
  Apply(sink.get(), *batch);
  Result<std::vector<StoredSeries>> series = sink->ReadSeries();
  ASSERT_TRUE(series.ok()) << series.status().ToString();
  ASSERT_EQ(series->size(), 1u);
  EXPECT_EQ((*series)[0], (StoredSeries{"sensors", "pump-7", "env", {}, 0, {{"fw", "1.1"}}}));
  Result<QueryRows> stored = cluster_->Query("SELECT attributes->>'fw' FROM cairn_series");
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ((*stored)[0][0], "1.1");
}

TEST_F(IngestTest, PostgresReadingsToldApartByADimensionAreTwoRows) {
  std::unique_ptr<IngestSink> sink = OpenSink();
  ASSERT_NE(sink, nullptr);
  // One device, measure and timestamp, three sensors, across encodings; then
  // a rewrite of one sensor's reading leaves the others alone.
  const std::vector<RecordRow> rows = {
      Tagged(Row("gw1", "env", kStart, {{"t", 1.0}}), {{"sensor", "a"}, {"site", "x"}}, {{"fw", "1"}}),
      Tagged(Row("gw1", "env", kStart, {{"t", 2.0}}), {{"sensor", "b"}, {"site", "x"}}),
      Row("gw1", "env", kStart, {{"t", 3.0}})};
  Result<DecodedEnvelope> batch = MakeBatch(HeaderFor(1, rows.size()), rows);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_EQ(Apply(sink.get(), *batch), (SinkCounts{3, 0, 0, 0}));
  batch = MakeBatch(HeaderFor(2, rows.size()), rows, EnvelopeEncoding::kJson);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_EQ(Apply(sink.get(), *batch), (SinkCounts{0, 0, 3, 0}));
  const std::vector<RecordRow> rewrite = {
      Tagged(Row("gw1", "env", kStart, {{"t", 20.0}}, 1), {{"sensor", "b"}, {"site", "x"}})};
  batch = MakeBatch(HeaderFor(3, rewrite.size()), rewrite);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_EQ(Apply(sink.get(), *batch), (SinkCounts{0, 1, 0, 0}));

  std::vector<RecordRow> all = rows;
  all.insert(all.end(), rewrite.begin(), rewrite.end());
  EXPECT_EQ(CompareReadings(Expected("sensors", all), Readings()), "");
  Result<QueryRows> stored = cluster_->Query(
      "SELECT dimensions, dimensions::jsonb->>'sensor', fields->'t'->>'double' FROM cairn_readings "
      "ORDER BY dimensions COLLATE \"C\"");
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  ASSERT_EQ(stored->size(), 3u);
  EXPECT_EQ((*stored)[0], (std::vector<std::string>{"{\"sensor\":\"a\",\"site\":\"x\"}", "a", "1"}));
  EXPECT_EQ((*stored)[1], (std::vector<std::string>{"{\"sensor\":\"b\",\"site\":\"x\"}", "b", "20"}));
  EXPECT_EQ((*stored)[2][0], "{}");
}

// A database of schema version 1 (ingest_schema.md §5), its changed tables
// made with that version's own CREATE statements
// (tests/fixtures/ingest_schema_v1_postgres.sql), is migrated when the sink
// connects.
TEST_F(IngestTest, PostgresMigratesASchemaVersion1Database) {
  ASSERT_NE(OpenSink(), nullptr);  // the tables version 1 shares with today's
  Result<std::string> fixture =
      Env::Default()->ReadFileToString(std::string(CAIRN_TEST_FIXTURES) + "/ingest_schema_v1_postgres.sql");
  ASSERT_TRUE(fixture.ok()) << fixture.status().ToString();
  Result<QueryRows> created = cluster_->Query(*fixture);
  ASSERT_TRUE(created.ok()) << created.status().ToString();

  const TagMap old_dimensions = {{"ort", "Zürich"}, {"q", "a\"b\\c"}, {"site", "north"}};
  std::vector<RecordRow> old = {
      Tagged(Row("pump-7", "env", kStart, {{"t", 1.5}}, std::numeric_limits<uint64_t>::max()),
             old_dimensions),
      Tagged(Row("pump-7", "env", kStart + kSecond, {{"t", 2.5}}), old_dimensions),
      Row("pump-8", "env", kStart, {{"n", int64_t{7}}})};
  {
    std::unique_ptr<IngestSink> sink = OpenSink();
    ASSERT_NE(sink, nullptr);
    EXPECT_EQ(CompareReadings(Expected("sensors", old), Readings()), "");
    // The text the sink itself would key this series by: a re-sent reading
    // meets the migrated row, another sensor's is a new row.
    const std::vector<RecordRow> again = {
        Tagged(Row("pump-7", "env", kStart, {{"t", 1.5}}, std::numeric_limits<uint64_t>::max()),
               old_dimensions),
        Tagged(Row("pump-7", "env", kStart, {{"t", 9.5}}), {{"site", "south"}}, {{"fw", "2"}})};
    Result<DecodedEnvelope> batch = MakeBatch(HeaderFor(2, again.size()), again);
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    EXPECT_EQ(Apply(sink.get(), *batch), (SinkCounts{1, 0, 1, 0}));
  }
  old.push_back(Tagged(Row("pump-7", "env", kStart, {{"t", 9.5}}), {{"site", "south"}}, {{"fw", "2"}}));
  // A second start finds version 2 and changes nothing.
  std::unique_ptr<IngestSink> sink = OpenSink();
  ASSERT_NE(sink, nullptr);
  EXPECT_EQ(CompareReadings(Expected("sensors", old), Readings()), "");
  Result<std::vector<StoredSeries>> series = sink->ReadSeries();
  ASSERT_TRUE(series.ok()) << series.status().ToString();
  ASSERT_EQ(series->size(), 3u);
  EXPECT_EQ((*series)[0], (StoredSeries{"sensors", "pump-7", "env", old_dimensions, 0, {}}));
  EXPECT_EQ((*series)[1], (StoredSeries{"sensors", "pump-7", "env", {{"site", "south"}}, 0, {{"fw", "2"}}}));
  EXPECT_EQ((*series)[2], (StoredSeries{"sensors", "pump-8", "env", {}, 0, {}}));
  Result<std::vector<StoredBatch>> batches = sink->ReadBatches();
  ASSERT_TRUE(batches.ok()) << batches.status().ToString();
  ASSERT_EQ(batches->size(), 2u);
  EXPECT_EQ((*batches)[0].counts, (SinkCounts{3, 0, 0, 0}));
  // The canonical text, and the schema of a new database, primary keys by
  // their usual names.
  Result<QueryRows> stored = cluster_->Query(
      "SELECT DISTINCT dimensions FROM cairn_readings WHERE device_id = "
      "'pump-7' AND dimensions LIKE '%ort%'");
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_EQ((*stored)[0][0], "{\"ort\":\"Zürich\",\"q\":\"a\\\"b\\\\c\",\"site\":\"north\"}");
  stored = cluster_->Query(
      "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
      "WHERE contype = 'p' AND conrelid::regclass::text IN ('cairn_readings', 'cairn_series') ORDER BY 1");
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  ASSERT_EQ(stored->size(), 2u);
  EXPECT_EQ((*stored)[0],
            (std::vector<std::string>{
                "cairn_readings", "cairn_readings_pkey",
                "PRIMARY KEY (table_name, device_id, measure_name, dimensions, timestamp_ns)"}));
  EXPECT_EQ((*stored)[1], (std::vector<std::string>{"cairn_series", "cairn_series_pkey",
                                                    "PRIMARY KEY (table_name, device_id, measure_name, "
                                                    "dimensions, shard)"}));
  stored = cluster_->Query(
      "SELECT string_agg(column_name || ' ' || data_type, ', ' ORDER BY ordinal_position) FROM "
      "information_schema.columns WHERE table_name = 'cairn_readings'");
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ((*stored)[0][0],
            "table_name text, device_id text, measure_name text, dimensions text, timestamp_ns bigint, "
            "shard integer, partition_key text, version numeric, ttl bigint, fields jsonb, lsn numeric");
}

// Equal versions are ordered by the gateway's LSN (on_conflict overwrite
// stores a merged rewrite under a later LSN), whatever order batches arrive in.
TEST_F(IngestTest, PostgresKeepsTheLaterLsnOfEqualVersions) {
  std::unique_ptr<IngestSink> sink = OpenSink();
  ASSERT_NE(sink, nullptr);
  RecordRow original = Row("pump-7", "env", kStart, {{"t", 1.0}});
  RecordRow merged = Row("pump-7", "env", kStart, {{"h", int64_t{40}}, {"t", 2.0}});
  original.lsn = 1000;
  merged.lsn = 2000;
  Result<DecodedEnvelope> later = MakeBatch(HeaderFor(2, 1), {merged});
  Result<DecodedEnvelope> earlier = MakeBatch(HeaderFor(1, 1), {original});
  Result<DecodedEnvelope> both = MakeBatch(HeaderFor(3, 2), {merged, original}, EnvelopeEncoding::kJson);
  ASSERT_TRUE(later.ok() && earlier.ok() && both.ok());
  EXPECT_EQ(Apply(sink.get(), *later), (SinkCounts{1, 0, 0, 0}));
  EXPECT_EQ(Apply(sink.get(), *earlier), (SinkCounts{0, 0, 0, 1}));
  EXPECT_EQ(Apply(sink.get(), *both), (SinkCounts{0, 0, 1, 1}));
  merged.lsn = 2001;  // the same version merged once more
  Result<DecodedEnvelope> again = MakeBatch(HeaderFor(4, 1), {merged});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(Apply(sink.get(), *again), (SinkCounts{0, 1, 0, 0}));
  const std::vector<StoredReading> readings = Readings();
  ASSERT_EQ(readings.size(), 1u);
  EXPECT_EQ(readings[0].row.lsn, 2001u);
  EXPECT_EQ(CompareReadings(Expected("sensors", {merged}), readings), "");
}

TEST_F(IngestTest, PostgresManyRecordsSpanSeveralStatements) {
  std::unique_ptr<IngestSink> sink = OpenSink();
  ASSERT_NE(sink, nullptr);
  std::vector<RecordRow> rows;
  for (int i = 0; i < 1234; ++i) {
    // 7 devices x 5 sensors, whose readings of one timestamp are told apart
    // by their sensor alone; attributes alternate, the last sent wins.
    rows.push_back(Tagged(
        Row("dev-" + std::to_string(i % 7), "env", kStart + (i / 5) * kSecond, {{"n", int64_t{i}}}, i % 3),
        {{"sensor", std::to_string(i % 5)}}, {{"fw", std::to_string(i % 2)}}));
  }
  Result<DecodedEnvelope> batch = MakeBatch(HeaderFor(1, rows.size()), rows);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_EQ(Apply(sink.get(), *batch), (SinkCounts{rows.size(), 0, 0, 0}));
  EXPECT_EQ(Apply(sink.get(), *batch), (SinkCounts{0, 0, rows.size(), 0}));
  EXPECT_EQ(CompareReadings(Expected("sensors", rows), Readings()), "");
}

TEST_F(IngestTest, ValuePostgresCannotHoldIsRejectedWithReasonAndNothingStored) {
  std::unique_ptr<IngestSink> sink = OpenSink();
  ASSERT_NE(sink, nullptr);
  IngestHandlerOptions options;
  options.keys = Keys();
  IngestHandler handler(Env::Default(), options, sink.get());
  // jsonb cannot hold U+0000, which a cairn string field may contain.
  const std::vector<RecordRow> rows = {
      Row("pump-7", "env", kStart, {{"t", 1.0}}),
      Row("pump-7", "env", kStart + kSecond, {{"s", std::string("a\0b", 3)}})};
  const EnvelopeHeader header = HeaderFor(1, rows.size());
  HandledMessage handled = handler.Handle(Topic(header), Envelope(header, rows));
  ASSERT_EQ(handled.outcome, IngestOutcome::kRejected) << handled.detail;
  ASSERT_TRUE(handled.receipt.has_value());
  Result<SyncReceipt> receipt = DecodeReceipt(handled.receipt->payload, kGatewayKey);
  ASSERT_TRUE(receipt.ok()) << receipt.status().ToString();
  EXPECT_EQ(receipt->status, ReceiptStatus::kRejected);
  EXPECT_NE(receipt->reason.find("SQLSTATE 22"), std::string::npos) << receipt->reason;
  EXPECT_TRUE(Readings().empty());
  // The sink is still usable.
  Result<DecodedEnvelope> good = MakeBatch(HeaderFor(2, 1), {rows[0]});
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(Apply(sink.get(), *good), (SinkCounts{1, 0, 0, 0}));
}

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
