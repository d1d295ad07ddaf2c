// Sync end to end when the cloud is away for long: backpressure refusing
// writes, the ingest side killed between commit and receipt, local sensors
// delivering over budget, and drop_oldest and downsample accounting for
// every reading. The parts are real, as in sync_test.cc.
//
// Every wait is bounded; every child is killed and reaped by its guard.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sync_test_util.h"

namespace cairn::sync_test {
namespace {

TEST_F(SyncTest, BackpressureRefusesWritesDuringAnOutageAndLosesNothingAcknowledged) {
  // The ingest side is away: nothing is confirmed, the backlog grows until
  // the budget refuses writes with 507.
  StartDaemon({"--sync-quota-bytes", "48K", "--sync-quota-policy", "backpressure"});
  int status = 204;
  for (int i = 0; i < 400 && status == 204; ++i) {
    status = WriteStatus(100);
    if (status == 204) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(status, 507) << "never refused after " << acknowledged_.size() << " readings";
  EXPECT_NE(last_refusal_.find("sync quota reached"), std::string::npos) << last_refusal_;
  EXPECT_EQ(Metric("cairn_sync_quota_refusing_writes"), 1);
  EXPECT_GE(Metric("cairn_sync_quota_writes_refused_total"), 1);
  EXPECT_EQ(Metric("cairn_sync_quota_budget_bytes"), 48 * 1024);
  Result<HttpTestResponse> quota = Get("/v1/sync?view=quota");
  ASSERT_TRUE(quota.ok());
  EXPECT_NE(quota->body.find("\"refusing_writes\":true"), std::string::npos) << quota->body;
  Result<HttpTestResponse> sync = Get("/v1/sync");
  ASSERT_TRUE(sync.ok());
  EXPECT_NE(sync->body.find("\"quota_refusing_writes\":true"), std::string::npos) << sync->body;

  // The cloud comes back: the backlog drains and writes are taken again.
  StartIngest();
  bool accepted = false;
  for (int attempt = 0; attempt < 600 && !accepted; ++attempt) {
    accepted = WriteStatus(100) == 204;
    if (!accepted) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(accepted) << last_refusal_;
  ExpectPostgresHoldsEveryAcknowledgedReading();
  EXPECT_EQ(Metric("cairn_sync_quota_dropped_records_total"), 0);
  StopDaemon();
}

// The ingest side commits a batch and dies before its receipt reaches
// cairnd (here the broker drops every receipt, then cairn-ingest is killed):
// cairnd sends the batch again, the ingest side stores nothing twice and
// confirms it.
TEST_F(SyncTest, IngestKilledBetweenCommitAndReceiptGetsTheBatchAgainAndStoresItOnce) {
  // Batches may go to the ingest side, receipts may not come back.
  ASSERT_TRUE(broker_.SetAcl("topic readwrite cairn/v1/+/+/+\ntopic read cairn/v1/+/receipts\n").ok());
  StartIngest();
  StartDaemon();
  ASSERT_TRUE(Write(500));
  ExpectPostgresHoldsEveryAcknowledgedReading();  // committed
  // Committed, yet unconfirmed on the gateway: the receipts were lost.
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  EXPECT_GT(Metric("cairn_sync_unsynced_records{table=\"sensors\"}"), 0);
  EXPECT_EQ(Metric("cairn_sync_receipts_total{outcome=\"accepted\"}"), 0);
  StopIngest(SIGKILL);

  ASSERT_TRUE(broker_.SetAcl(kAllowEverything).ok());
  StartIngest();
  // Sent again after the receipt timeout (3 s here), stored once, confirmed.
  int64_t unsynced = -1;
  for (int attempt = 0; attempt < 600 && unsynced != 0; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    unsynced = Metric("cairn_sync_unsynced_records{table=\"sensors\"}");
  }
  ASSERT_EQ(unsynced, 0) << daemon_->Stderr();
  ExpectPostgresHoldsEveryAcknowledgedReading();
  Result<std::unique_ptr<IngestSink>> sink = OpenPostgresSink(postgres_.connection_string());
  ASSERT_TRUE(sink.ok());
  Result<std::vector<StoredBatch>> batches = (*sink)->ReadBatches();
  ASSERT_TRUE(batches.ok()) << batches.status().ToString();
  uint64_t delivered_again = 0;
  for (const StoredBatch& batch : *batches) delivered_again += batch.deliveries > 1 ? 1 : 0;
  EXPECT_GT(delivered_again, 0u) << "no batch was delivered twice";
  StopDaemon();
}

// The gateway's own sensors publish to a local broker while the cloud is
// away and a backpressure quota refuses HTTP writes: the readings the local
// input received (acknowledged to the broker on receipt) are stored over
// budget, the sync link keeps working in the same process, and once the
// cloud is back every published reading arrives once.
TEST_F(SyncTest, BackpressureRefusesHttpButKeepsWhatLocalSensorsDelivered) {
  MosquittoBroker local;
  Status started = local.Start(MosquittoBrokerOptions{});
  ASSERT_TRUE(started.ok()) << started.ToString();
  const std::string local_uri = "tcp://127.0.0.1:" + std::to_string(local.port());
  StartDaemon({"--sync-quota-bytes", "48K", "--mqtt-input-broker", local_uri, "--mqtt-input",
               "site/+/readings=sensors"});
  MqttLinkOptions sensor_options;
  sensor_options.server_uri = local_uri;
  sensor_options.client_id = "sensor-gateway-bus";
  Result<std::unique_ptr<MqttLink>> sensor = MqttLink::Create(Env::Default(), sensor_options);
  ASSERT_TRUE(sensor.ok()) << sensor.status().ToString();
  ASSERT_TRUE((*sensor)->Start().ok());
  ASSERT_TRUE((*sensor)->WaitConnected(kTimeoutMs));

  // The input subscribes after cairnd starts listening: until it has, the
  // broker has no session to keep readings for. A probe reading, published
  // until it is stored, says when it has.
  Written probe{"probe", base_ns_ - 1'000'000, 1.5, -1};
  bool probe_stored = false;
  for (int attempt = 0; attempt < 100 && !probe_stored; ++attempt) {
    (void)(*sensor)->Publish(
        "site/probe/readings",
        "env,device=probe temperature=1.500000,count=-1i " + std::to_string(probe.timestamp),
        [](const Status&) {});
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    Result<HttpTestResponse> latest = Get("/v1/tables/sensors/devices/probe/latest");
    probe_stored =
        latest.ok() && latest->status == 200 && latest->body.find("temperature") != std::string::npos;
  }
  ASSERT_TRUE(probe_stored);
  acknowledged_.push_back(probe);

  // 40 messages of 100 readings, each acknowledged by the local broker.
  std::atomic<int> acknowledged{0}, failed{0};
  bool refused_seen = false;
  for (int m = 0; m < 40; ++m) {
    std::string body;
    for (int i = 0; i < 100; ++i) acknowledged_.push_back(NextReading(&body));
    Status published = Status::Unavailable("not tried");
    for (int attempt = 0; attempt < 500 && !published.ok(); ++attempt) {
      published = (*sensor)->Publish("site/" + std::to_string(m % 3) + "/readings", body,
                                     [&](const Status& s) { (s.ok() ? acknowledged : failed).fetch_add(1); });
      if (!published.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_TRUE(published.ok()) << published.ToString();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    refused_seen = refused_seen || Metric("cairn_sync_quota_refusing_writes") == 1;
  }
  for (int attempt = 0; attempt < 500 && acknowledged.load() + failed.load() < 40; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(acknowledged.load(), 40);
  for (int attempt = 0; attempt < 300 && !refused_seen; ++attempt) {
    refused_seen = Metric("cairn_sync_quota_refusing_writes") == 1;
    if (!refused_seen) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(refused_seen) << "the quota never refused";
  EXPECT_EQ(WriteStatus(10), 507) << "HTTP writers are pushed back";
  // While the input is held back, the sync link is still alive in the same
  // process (Paho's shared network thread is not blocked): connected.
  EXPECT_EQ(Metric("cairn_sync_connected"), 1);

  StartIngest();
  ExpectPostgresHoldsEveryAcknowledgedReading(240000);
  EXPECT_EQ(Metric("cairn_sync_quota_dropped_records_total"), 0);
  (*sensor)->Stop();
  StopDaemon();
}

}  // namespace

// drop_oldest and downsample through the whole pipeline: what cairnd
// reports as dropped or downsampled is exactly what PostgreSQL lacks, the
// rest arrives exactly once, and downsampling's aggregates arrive too.
void SyncTest::ExpectReclaimAccountsForEveryReading(const std::string& policy) {
  {
    StartDaemon({"--sync-quota-bytes", "32K", "--sync-quota-policy", policy, "--seal-records", "16",
                 "--sync-downsample-step", "10"});
    for (int i = 0; i < 30; ++i) ASSERT_TRUE(Write(200)) << last_refusal_;
    // Wait until the quota has acted on the sealed backlog and is done (the
    // counters hold still over more than one check interval).
    const char* acted = policy == "drop_oldest" ? "cairn_sync_quota_dropped_records_total"
                                                : "cairn_sync_quota_downsampled_records_total";
    int64_t dropped = -1, downsampled = -1, aggregates_written = -1;
    for (int attempt = 0; attempt < 20; ++attempt) {
      std::this_thread::sleep_for(std::chrono::milliseconds(6000));
      const int64_t d = Metric("cairn_sync_quota_dropped_records_total");
      const int64_t s = Metric("cairn_sync_quota_downsampled_records_total");
      const int64_t a = Metric("cairn_sync_quota_aggregates_written_total");
      if (Metric(acted) > 0 && d == dropped && s == downsampled && a == aggregates_written) break;
      dropped = d;
      downsampled = s;
      aggregates_written = a;
    }
    ASSERT_GT(Metric(acted), 0) << daemon_->Stderr();
    // Batches still in the agent's memory would carry dropped records
    // anyway; a restart (without the quota) leaves only what the store holds.
    StopDaemon();
    StartIngest();
    StartDaemon();
    Result<std::unique_ptr<IngestSink>> sink = OpenPostgresSink(postgres_.connection_string());
    ASSERT_TRUE(sink.ok()) << sink.status().ToString();
    std::vector<StoredReading> raw, aggregates;
    bool converged = false;
    for (int attempt = 0; attempt < 600 && !converged; ++attempt) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      Result<std::vector<StoredReading>> readings = (*sink)->ReadReadings();
      ASSERT_TRUE(readings.ok()) << readings.status().ToString();
      raw.clear();
      aggregates.clear();
      for (StoredReading& r : *readings)
        (r.row.measure_name == "env" ? raw : aggregates).push_back(std::move(r));
      converged = Metric("cairn_sync_unsynced_records{table=\"sensors\"}") == 0 &&
                  static_cast<int64_t>(raw.size()) ==
                      static_cast<int64_t>(acknowledged_.size()) - dropped - downsampled;
    }
    ASSERT_TRUE(converged) << raw.size() << " raw readings in PostgreSQL, " << acknowledged_.size()
                           << " acknowledged, " << dropped << " dropped, " << downsampled << " downsampled";
    std::map<std::pair<std::string, int64_t>, const Written*> written;
    for (const Written& w : acknowledged_) written[{w.device, w.timestamp}] = &w;
    std::set<std::pair<std::string, int64_t>> seen;
    for (const StoredReading& r : raw) {
      auto it = written.find({r.row.device_id, r.row.timestamp});
      ASSERT_NE(it, written.end()) << "never written: " << r.row.device_id << " " << r.row.timestamp;
      EXPECT_TRUE(seen.insert(it->first).second) << "stored twice";
      ASSERT_EQ(r.row.fields.size(), 2u);
      EXPECT_DOUBLE_EQ(std::get<double>(r.row.fields[1].value), it->second->value);
    }
    if (policy == "drop_oldest") {
      EXPECT_GT(dropped, 0);
      EXPECT_EQ(downsampled, 0);
      EXPECT_TRUE(aggregates.empty());
    } else {
      EXPECT_GT(downsampled, 0);
      EXPECT_EQ(dropped, 0);  // aggregates took less room than the readings: no fallback
      ASSERT_FALSE(aggregates.empty());
      EXPECT_LE(static_cast<int64_t>(aggregates.size()), aggregates_written);
      int64_t counted = 0;
      for (const StoredReading& a : aggregates) {
        EXPECT_EQ(a.row.measure_name, "env@10s");
        for (const Field& f : a.row.fields) {
          if (f.name == "temperature.count") counted += std::get<int64_t>(f.value);
        }
      }
      // Every downsampled reading is counted in exactly one aggregate
      // (the newest version of its step).
      EXPECT_EQ(counted, downsampled);
    }
    StopDaemon();
  }
}

namespace {

TEST_F(SyncTest, DropOldestAccountsForEveryReading) { ExpectReclaimAccountsForEveryReading("drop_oldest"); }

TEST_F(SyncTest, DownsampleAccountsForEveryReading) { ExpectReclaimAccountsForEveryReading("downsample"); }

}  // namespace
}  // namespace cairn::sync_test
