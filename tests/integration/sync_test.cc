// Sync end to end with every part real: cairnd (a child process) writes to
// its engine over HTTP and syncs over MQTT with TLS and a client certificate
// to a mosquitto started by the test; cairn-ingest (a child process)
// verifies the envelopes, stores them in a PostgreSQL cluster started by the
// test and publishes receipts. Each test compares what PostgreSQL holds with
// what cairnd acknowledged: every reading, exactly once, equal.
//
// Every wait is bounded; every child is killed and reaped by its guard.
#include <atomic>
#include <chrono>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include "cairn/core/engine.h"
#include "cairn/ingest/postgres_sink.h"
#include "cairn/platform/env.h"
#include "cairn/mqtt/mqtt_link.h"

#include "cairnd_process.h"
#include "child_process.h"
#include "http_test_client.h"
#include "mosquitto_broker.h"
#include "postgres_cluster.h"
#include "sync_test_locations.h"
#include "test_dirs.h"
#include "test_pki.h"

namespace cairn {
namespace {

constexpr int kTimeoutMs = 60000;
constexpr const char* kKeyHex = "00112233445566778899aabbccddeeff0123456789abcdef";
constexpr const char* kGateway = "gw-test-1";
constexpr const char* kAllowEverything = "topic readwrite #\n";

// One acknowledged reading, as the test wrote it.
struct Written {
  std::string device;
  int64_t timestamp = 0;
  double value = 0;
  int64_t count = 0;
};

class SyncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<TestPki> pki = GenerateTestPki(dir_.PathOf("pki"));
    ASSERT_TRUE(pki.ok()) << pki.status().ToString();
    pki_ = *pki;
    MosquittoBrokerOptions broker_options;
    broker_options.tls = true;
    broker_options.pki = pki_;
    broker_options.require_client_certificate = true;
    broker_options.persistence = true;
    // Everything allowed; a test narrows it with SetAcl.
    broker_options.acl = kAllowEverything;
    Status started = broker_.Start(broker_options);
    ASSERT_TRUE(started.ok()) << started.ToString();
    started = postgres_.Start();
    ASSERT_TRUE(started.ok()) << started.ToString();
    ASSERT_TRUE(
        Env::Default()->WriteFileAtomically(dir_.PathOf("key.hex"), std::string(kKeyHex) + "\n").ok());
    ASSERT_TRUE(Env::Default()
                    ->WriteFileAtomically(dir_.PathOf("keys"), std::string(kGateway) + " " + kKeyHex + "\n")
                    .ok());
  }

  void TearDown() override {
    daemon_.reset();
    StopIngest();
  }

  std::string BrokerUri() const { return "ssl://localhost:" + std::to_string(broker_.port()); }

  void StartIngest() {
    ++ingest_starts_;
    const std::string log = dir_.PathOf("ingest" + std::to_string(ingest_starts_) + ".log");
    Result<pid_t> pid =
        SpawnChild({kCairnIngestPath, "--broker", BrokerUri(), "--tls-ca", pki_.ca_certificate_path,
                    "--tls-cert", pki_.client_certificate_path, "--tls-key", pki_.client_key_path, "--keys",
                    dir_.PathOf("keys"), "--postgres", postgres_.connection_string()},
                   log, {});
    ASSERT_TRUE(pid.ok()) << pid.status().ToString();
    ingest_pid_ = *pid;
    ingest_log_ = log;
    WaitForText([&] { return ReadFileFrom(ingest_log_, 0); }, "subscribed to",
                "cairn-ingest did not subscribe");
  }

  void StopIngest(int signal_number = SIGTERM) {
    if (ingest_pid_ <= 0) return;
    ::kill(ingest_pid_, signal_number);
    EXPECT_TRUE(WaitForChild(ingest_pid_, kTimeoutMs).has_value());
    ingest_pid_ = 0;
  }

  void StartDaemon(std::vector<std::string> extra = {}) {
    std::vector<std::string> flags = {"--data-dir",
                                      dir_.PathOf("data"),
                                      "--http-listen",
                                      "127.0.0.1:0",
                                      "--http-plain",
                                      "--sync-broker",
                                      BrokerUri(),
                                      "--gateway-id",
                                      kGateway,
                                      "--sync-key-file",
                                      dir_.PathOf("key.hex"),
                                      "--sync-tls-ca",
                                      pki_.ca_certificate_path,
                                      "--sync-tls-cert",
                                      pki_.client_certificate_path,
                                      "--sync-tls-key",
                                      pki_.client_key_path,
                                      "--sync-receipt-timeout-ms",
                                      "3000"};
    flags.insert(flags.end(), extra.begin(), extra.end());
    ++starts_;
    daemon_ =
        std::make_unique<CairndProcess>(flags, dir_.PathOf("cairnd" + std::to_string(starts_) + ".log"));
    ASSERT_TRUE(daemon_->started());
    const std::regex listening("listening on http://127\\.0\\.0\\.1:([0-9]+)");
    const std::regex shown("created the admin token \\(shown once; store it now\\): (cairn_[A-Za-z0-9_-]+)");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTimeoutMs);
    std::smatch match;
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string log = daemon_->Stderr();
      if (std::regex_search(log, match, listening)) {
        port_ = static_cast<uint16_t>(std::stoi(match[1].str()));
        if (std::regex_search(log, match, shown)) token_ = match[1].str();
        return;
      }
      if (daemon_->WaitForExit(0)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    FAIL() << "cairnd did not start: " << daemon_->Stderr();
  }

  void StopDaemon() {
    ASSERT_TRUE(daemon_->Signal(SIGTERM));
    const std::optional<int> status = daemon_->WaitForExit(kTimeoutMs);
    EXPECT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << daemon_->Stderr();
    daemon_.reset();
  }

  void KillDaemon() {
    ASSERT_TRUE(daemon_->Signal(SIGKILL));
    EXPECT_TRUE(daemon_->WaitForExit(kTimeoutMs).has_value());
    daemon_.reset();
  }

  // The next reading of the test's sequence, appended to `body` as a line
  // of line protocol.
  Written NextReading(std::string* body) {
    Written w;
    w.device = "dev-" + std::to_string(next_ % 7);
    w.timestamp = base_ns_ + next_ * 1'000'000;
    // Noisy like field data, so chunks compress as they would.
    w.value = 20.0 + static_cast<double>((next_ * 2654435761u) % 1000) / 8;
    w.count = next_;
    ++next_;
    *body += "env,device=" + w.device + " temperature=" + std::to_string(w.value) +
             ",count=" + std::to_string(w.count) + "i " + std::to_string(w.timestamp) + "\n";
    return w;
  }

  // Writes `count` readings over HTTP; records them once cairnd answered 204.
  bool Write(int count) { return WriteStatus(count) == 204; }

  // As Write; returns the HTTP status (0 when there was no answer). Readings
  // of a refused batch are not acknowledged and are not expected anywhere.
  int WriteStatus(int count) {
    std::string body;
    std::vector<Written> batch;
    const int64_t first = next_;
    for (int i = 0; i < count; ++i) batch.push_back(NextReading(&body));
    Result<HttpTestClient> client = HttpTestClient::Connect("127.0.0.1", port_);
    if (!client.ok()) return 0;
    Result<HttpTestResponse> response =
        client->Request("POST", "/write?db=sensors", {{"Authorization", "Bearer " + token_}}, body);
    if (!response.ok()) return 0;
    if (response->status == 204) {
      acknowledged_.insert(acknowledged_.end(), batch.begin(), batch.end());
    } else {
      next_ = first;  // the same identities are written again later
      last_refusal_ = response->body;
    }
    return response->status;
  }

  // The value of one sample line of /metrics ("name{labels} value"); -1 if
  // absent.
  int64_t Metric(const std::string& sample) {
    Result<HttpTestResponse> metrics = Get("/metrics");
    if (!metrics.ok() || metrics->status != 200) return -1;
    const std::string& body = metrics->body;
    const size_t at = body.find("\n" + sample + " ");
    if (at == std::string::npos) return -1;
    return std::stoll(body.substr(at + sample.size() + 2));
  }

  Result<HttpTestResponse> Get(const std::string& target) {
    CAIRN_ASSIGN_OR_RETURN(HttpTestClient client, HttpTestClient::Connect("127.0.0.1", port_));
    return client.Request("GET", target, {{"Authorization", "Bearer " + token_}});
  }

  // Waits until PostgreSQL holds as many readings as were acknowledged, then
  // checks them one by one: each exactly once and equal.
  void ExpectPostgresHoldsEveryAcknowledgedReading(int timeout_ms = 120000) {
    Result<std::unique_ptr<IngestSink>> sink = OpenPostgresSink(postgres_.connection_string());
    ASSERT_TRUE(sink.ok()) << sink.status().ToString();
    std::vector<StoredReading> stored;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < deadline) {
      Result<std::vector<StoredReading>> readings = (*sink)->ReadReadings();
      ASSERT_TRUE(readings.ok()) << readings.status().ToString();
      stored = std::move(readings).value();
      if (stored.size() >= acknowledged_.size()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    ASSERT_EQ(stored.size(), acknowledged_.size()) << "cairnd log:\n"
                                                   << (daemon_ ? daemon_->Stderr() : "") << "\ningest log:\n"
                                                   << ReadFileFrom(ingest_log_, 0);
    std::map<std::pair<std::string, int64_t>, const StoredReading*> by_identity;
    for (const StoredReading& reading : stored) {
      EXPECT_EQ(reading.table, "sensors");
      EXPECT_TRUE(
          by_identity.emplace(std::make_pair(reading.row.device_id, reading.row.timestamp), &reading).second)
          << "stored twice: " << reading.row.device_id << " " << reading.row.timestamp;
    }
    for (const Written& w : acknowledged_) {
      auto it = by_identity.find({w.device, w.timestamp});
      ASSERT_NE(it, by_identity.end()) << "missing: " << w.device << " " << w.timestamp;
      const RecordRow& row = it->second->row;
      EXPECT_EQ(row.measure_name, "env");
      ASSERT_EQ(row.fields.size(), 2u);
      EXPECT_EQ(row.fields[0].name, "count");
      EXPECT_EQ(std::get<int64_t>(row.fields[0].value), w.count);
      EXPECT_EQ(row.fields[1].name, "temperature");
      EXPECT_DOUBLE_EQ(std::get<double>(row.fields[1].value), w.value);
    }
  }

  // Runs cairnd with the quota `policy` (drop_oldest or downsample) while the
  // ingest side is away, then lets the backlog through: what cairnd reports
  // as dropped or downsampled is exactly what PostgreSQL lacks.
  void ExpectReclaimAccountsForEveryReading(const std::string& policy);

  template <typename Read>
  void WaitForText(Read read, const std::string& text, const std::string& failure) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTimeoutMs);
    while (std::chrono::steady_clock::now() < deadline) {
      if (read().find(text) != std::string::npos) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    FAIL() << failure << ": " << read();
  }

  ScopedTempDir dir_{"cairn-sync"};
  TestPki pki_;
  MosquittoBroker broker_;
  PostgresCluster postgres_;
  std::unique_ptr<CairndProcess> daemon_;
  pid_t ingest_pid_ = 0;
  std::string ingest_log_;
  int ingest_starts_ = 0;
  int starts_ = 0;
  uint16_t port_ = 0;
  std::string token_;
  std::string last_refusal_;
  std::vector<Written> acknowledged_;
  int64_t next_ = 0;
  const int64_t base_ns_ = Env::Default()->NowUnixNanos() - int64_t{3600} * 1'000'000'000;
};

TEST_F(SyncTest, WrittenReadingsReachPostgresExactlyOnceAndSyncShowsIt) {
  StartIngest();
  StartDaemon();
  ASSERT_FALSE(token_.empty());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(Write(200));
  ExpectPostgresHoldsEveryAcknowledgedReading();
  // `sync` over HTTP: connected, nothing unsynced once the ledger caught up.
  std::string body;
  for (int attempt = 0; attempt < 300; ++attempt) {
    Result<HttpTestResponse> sync = Get("/v1/sync");
    ASSERT_TRUE(sync.ok());
    ASSERT_EQ(sync->status, 200) << sync->body;
    body = sync->body;
    if (body.find("\"unsynced_records\":0") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(body.find("\"connected\":true"), std::string::npos) << body;
  EXPECT_NE(body.find("\"unsynced_records\":0"), std::string::npos) << body;
  EXPECT_EQ(body.find("\"unsynced_records\":2000"), std::string::npos) << body;
  Result<HttpTestResponse> metrics = Get("/metrics");
  ASSERT_TRUE(metrics.ok());
  EXPECT_NE(metrics->body.find("cairn_sync_connected 1"), std::string::npos);
  EXPECT_NE(metrics->body.find("cairn_sync_confirmed_records_total{table=\"sensors\",lane=\"live\"} 2000"),
            std::string::npos)
      << metrics->body;
  StopDaemon();
}

// Readings of one device, measure and timestamp told apart by a tag are
// series of their own on the gateway and rows of their own in the cloud:
// none replaces another on the way.
TEST_F(SyncTest, ReadingsToldApartByATagAllReachPostgres) {
  StartIngest();
  StartDaemon();
  const std::string t = std::to_string(base_ns_);
  const std::string body = "env,device=gw1,sensor=a temperature=1.5 " + t + "\n" +
                           "env,device=gw1,sensor=b temperature=2.5 " + t + "\n" +
                           "env,device=gw1,sensor=a,site=north temperature=3.5 " + t + "\n" +
                           "env,device=gw1 temperature=4.5 " + t + "\n";
  Result<HttpTestClient> client = HttpTestClient::Connect("127.0.0.1", port_);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  Result<HttpTestResponse> response =
      client->Request("POST", "/write?db=sensors", {{"Authorization", "Bearer " + token_}}, body);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  ASSERT_EQ(response->status, 204) << response->body;

  Result<std::unique_ptr<IngestSink>> sink = OpenPostgresSink(postgres_.connection_string());
  ASSERT_TRUE(sink.ok()) << sink.status().ToString();
  std::vector<StoredReading> stored;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTimeoutMs);
  while (std::chrono::steady_clock::now() < deadline && stored.size() < 4) {
    Result<std::vector<StoredReading>> readings = (*sink)->ReadReadings();
    ASSERT_TRUE(readings.ok()) << readings.status().ToString();
    stored = std::move(readings).value();
    if (stored.size() < 4) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_EQ(stored.size(), 4u) << "cairnd log:\n"
                               << daemon_->Stderr() << "\ningest log:\n"
                               << ReadFileFrom(ingest_log_, 0);
  // ReadReadings order: by the dimensions' canonical text, bytewise (","
  // sorts before "}", and "{}" last).
  const std::vector<std::pair<TagMap, double>> expected = {{{{"sensor", "a"}, {"site", "north"}}, 3.5},
                                                           {{{"sensor", "a"}}, 1.5},
                                                           {{{"sensor", "b"}}, 2.5},
                                                           {{}, 4.5}};
  for (size_t i = 0; i < expected.size(); ++i) {
    const RecordRow& row = stored[i].row;
    EXPECT_EQ(row.device_id, "gw1");
    EXPECT_EQ(row.measure_name, "env");
    EXPECT_EQ(row.timestamp, base_ns_);
    EXPECT_EQ(row.dimensions, expected[i].first) << "reading " << i;
    ASSERT_EQ(row.fields.size(), 1u);
    EXPECT_EQ(std::get<double>(row.fields[0].value), expected[i].second) << "reading " << i;
  }
  Result<std::vector<StoredSeries>> series = (*sink)->ReadSeries();
  ASSERT_TRUE(series.ok()) << series.status().ToString();
  EXPECT_EQ(series->size(), 4u);
  StopDaemon();
}

TEST_F(SyncTest, ABrokerOutageLosesNothing) {
  StartIngest();
  StartDaemon();
  ASSERT_TRUE(Write(300));
  ExpectPostgresHoldsEveryAcknowledgedReading();
  ASSERT_TRUE(broker_.Stop().ok());
  // Writes go on while the cloud is unreachable.
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(Write(400));
  Result<HttpTestResponse> sync = Get("/v1/sync");
  ASSERT_TRUE(sync.ok());
  EXPECT_NE(sync->body.find("\"connected\":false"), std::string::npos) << sync->body;
  ASSERT_TRUE(broker_.Restart().ok());
  ExpectPostgresHoldsEveryAcknowledgedReading();
  StopDaemon();
}

TEST_F(SyncTest, KillNineAtRandomMomentsNeverLosesOrDuplicatesAReading) {
  StartIngest();
  std::mt19937 random(20261121);
  for (int round = 0; round < 20; ++round) {
    StartDaemon();
    if (round == 0) {
      ASSERT_FALSE(token_.empty());
    }
    ASSERT_TRUE(Write(150));
    std::this_thread::sleep_for(std::chrono::milliseconds(random() % 400));
    ASSERT_TRUE(Write(50));
    std::this_thread::sleep_for(std::chrono::milliseconds(random() % 200));
    KillDaemon();
    // Now and then the ingest side dies too, between its commit and its
    // receipt or anywhere else: the batch comes again and is deduplicated.
    if (round % 5 == 4) {
      StopIngest(SIGKILL);
      StartIngest();
    }
  }
  StartDaemon();
  ExpectPostgresHoldsEveryAcknowledgedReading();
  StopDaemon();
}

TEST_F(SyncTest, LiveBatchesKeepFlowingWhileABacklogDrainsOldestFirst) {
  // A backlog builds up while the ingest side is away.
  StartDaemon({"--sync-backfill-rate", "4000"});
  for (int i = 0; i < 12; ++i) ASSERT_TRUE(Write(2000));
  StopDaemon();
  StartIngest();
  StartDaemon({"--sync-backfill-rate", "4000"});
  const size_t backlog = acknowledged_.size();
  // Live writes while the backlog (24000 readings at 4000/s) drains.
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(Write(10));
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  ExpectPostgresHoldsEveryAcknowledgedReading();
  StopDaemon();
  Result<std::unique_ptr<IngestSink>> sink = OpenPostgresSink(postgres_.connection_string());
  ASSERT_TRUE(sink.ok());
  Result<std::vector<StoredBatch>> batches = (*sink)->ReadBatches();
  ASSERT_TRUE(batches.ok()) << batches.status().ToString();
  std::sort(batches->begin(), batches->end(), [](const StoredBatch& a, const StoredBatch& b) {
    return a.received_at_unix_nanos < b.received_at_unix_nanos;
  });
  int64_t last_backfill_received = 0, first_live_received = 0;
  uint64_t previous_backfill_first_lsn = 0;
  size_t backfill_records = 0;
  for (const StoredBatch& batch : *batches) {
    if (batch.header.lane == SyncLane::kBackfill) {
      // Oldest first.
      EXPECT_GT(batch.header.first_lsn, previous_backfill_first_lsn);
      previous_backfill_first_lsn = batch.header.first_lsn;
      last_backfill_received = batch.received_at_unix_nanos;
      backfill_records += batch.records;
    } else if (batch.header.lane == SyncLane::kLive && first_live_received == 0) {
      first_live_received = batch.received_at_unix_nanos;
    }
  }
  std::string lanes;
  for (const StoredBatch& batch : *batches) {
    lanes += std::string(SyncLaneName(batch.header.lane)) + " " + std::to_string(batch.header.first_lsn) +
             ".." + std::to_string(batch.header.last_lsn) + " " + std::to_string(batch.records) + "\n";
  }
  EXPECT_EQ(backfill_records, backlog) << lanes;
  // Fresh data did not wait for the backlog.
  ASSERT_NE(first_live_received, 0);
  EXPECT_LT(first_live_received, last_backfill_received);
}

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

TEST_F(SyncTest, DropOldestAccountsForEveryReading) { ExpectReclaimAccountsForEveryReading("drop_oldest"); }

TEST_F(SyncTest, DownsampleAccountsForEveryReading) { ExpectReclaimAccountsForEveryReading("downsample"); }

}  // namespace
}  // namespace cairn
