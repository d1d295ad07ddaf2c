// Shared fixture of the sync end-to-end tests: a mosquitto with TLS and
// client certificates, a PostgreSQL cluster, cairnd and cairn-ingest as
// child processes, and what the test wrote and cairnd acknowledged.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

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

namespace cairn::sync_test {

inline constexpr int kTimeoutMs = 60000;
inline constexpr const char* kKeyHex = "00112233445566778899aabbccddeeff0123456789abcdef";
inline constexpr const char* kGateway = "gw-test-1";
inline constexpr const char* kAllowEverything = "topic readwrite #\n";

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

}  // namespace cairn::sync_test
