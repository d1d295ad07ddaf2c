// Shared helpers of the ingest service tests: the gateway's side of the
// wire over MQTT, envelope and topic makers, and the fixture that starts one
// PostgreSQL cluster and one mosquitto broker for a whole suite.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/ingest/ingest_handler.h"
#include "cairn/ingest/ingest_service.h"
#include "cairn/ingest/ingest_sink.h"
#include "cairn/ingest/postgres_sink.h"
#include "cairn/mqtt/mqtt_link.h"
#include "cairn/platform/env.h"

#include "child_process.h"
#include "ingest_batches.h"
#include "mosquitto_broker.h"
#include "postgres_cluster.h"

namespace cairn::ingest_test {

inline constexpr int64_t kWaitMs = 60'000;
inline constexpr char kPrefix[] = "cairn/v1";
inline constexpr std::string_view kOtherKey = "the key of gateway gw-8, 32 bytes";

inline ChildOptions TruncatingOutput() {
  ChildOptions options;
  options.truncate_output = true;
  return options;
}

inline GatewayKeys Keys() { return {{"gw-7", std::string(kGatewayKey)}, {"gw-8", std::string(kOtherKey)}}; }

inline std::string Topic(const EnvelopeHeader& header) {
  return *SyncTopic(kPrefix, header.gateway_id, header.table, header.lane);
}

inline std::string Envelope(const EnvelopeHeader& header, const std::vector<RecordRow>& rows,
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

  static inline PostgresCluster* cluster_ = nullptr;
  static inline MosquittoBroker* broker_ = nullptr;
};

}  // namespace cairn::ingest_test
