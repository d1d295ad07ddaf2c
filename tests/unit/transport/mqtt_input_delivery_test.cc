// MqttInput with a real engine over the in-memory broker (fake_mqtt_link.h):
// bad payloads counted and logged beside the good ones, duplicated messages
// stored once, and a pause while the engine refuses writes, during which the
// broker keeps what is published for the input's session. The wire is
// tests/integration/mqtt_input_test.cc's.
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/mqtt/mqtt_input.h"

#include "eventually.h"
#include "fake_mqtt_link.h"
#include "forwarding_engine.h"
#include "log_lines.h"
#include "test_dirs.h"

namespace cairn {
namespace {

constexpr int kWaitMs = 10'000;
constexpr int64_t kSecond = 1'000'000'000;

// Refuses WriteReceived with Unavailable while `refusing` is set.
class RefusingEngine : public ForwardingEngine {
 public:
  using ForwardingEngine::ForwardingEngine;
  Result<WriteResult> WriteReceived(const std::string& table, const std::vector<Record>& records) override {
    ++calls;
    if (refusing.load()) return Status::Unavailable("the engine refuses writes for now");
    return ForwardingEngine::WriteReceived(table, records);
  }
  std::atomic<bool> refusing{false};
  std::atomic<int> calls{0};
};

class MqttInputDeliveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::unique_ptr<Engine>> engine = Engine::Open(Env::Default(), dir_.PathOf("data"), EngineOptions());
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    engine_ = std::move(*engine);
    ASSERT_TRUE(engine_->CreateTable("readings", TableOptions()).ok());
    refusing_ = std::make_unique<RefusingEngine>(engine_.get());
  }

  void TearDown() override {
    if (input_) input_->Stop();
  }

  void StartInput(std::vector<MqttInputRoute> routes = {{"sensors/#", "readings"}}) {
    MqttInputOptions options;
    options.link.server_uri = "tcp://broker:1883";
    options.link.client_id = "cairn-input";
    options.link_factory = broker_.factory();
    options.routes = std::move(routes);
    options.retry_min_ms = 1;
    options.retry_max_ms = 5;
    options.log = log_.Sink();
    Result<std::unique_ptr<MqttInput>> input = MqttInput::Create(Env::Default(), refusing_.get(), options);
    ASSERT_TRUE(input.ok()) << input.status().ToString();
    input_ = std::move(*input);
    ASSERT_TRUE(input_->Start().ok());
    ASSERT_TRUE(input_->WaitConnected(kWaitMs));
  }

  // A line-protocol line for device `device` at `seconds_ago`.
  static std::string Line(const std::string& device, int seconds_ago, double value) {
    const int64_t at = Env::Default()->NowUnixNanos() - seconds_ago * kSecond;
    return "env,device=" + device + " t=" + std::to_string(value) + " " + std::to_string(at);
  }

  size_t Rows(const std::string& device) {
    RangeQuery query;
    query.table = "readings";
    query.device_id = device;
    Result<RangeResult> result = engine_->Range(query);
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    return result.ok() ? result->rows.size() : 0;
  }

  std::string Log() const { return log_.Text(); }

  FakeMqttBroker broker_;
  ScopedTempDir dir_{"mqtt-input-delivery-test"};
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<RefusingEngine> refusing_;
  std::unique_ptr<MqttInput> input_;
  LogLines log_;
};

TEST_F(MqttInputDeliveryTest, BadPayloadsAreCountedAndLoggedBesideTheGoodOnes) {
  StartInput({{"sensors/#", "readings"}, {"elsewhere/#", "no_such_table"}});
  // A good line and a bad one in one message: the good one is stored.
  broker_.Publish("sensors/a", Line("a", 2, 1.5) + "\nnot line protocol at all");
  // JSON that does not parse: the message fails as a whole.
  broker_.Publish("sensors/b", "{\"device\": ");
  // A reading the engine refuses (no fields).
  broker_.Publish("sensors/c", "[{\"device\":\"c\",\"measure\":\"env\",\"fields\":{}}]");
  // A route to a table that does not exist.
  broker_.Publish("elsewhere/d", Line("d", 1, 2.0));
  broker_.WaitIdle();
  ASSERT_TRUE(Eventually([&] { return input_->stats().messages >= 4; }, kWaitMs)) << Log();
  const MqttInputStats stats = input_->stats();
  EXPECT_EQ(stats.messages, 4u);
  EXPECT_EQ(stats.records_stored, 1u);
  EXPECT_EQ(stats.records_rejected, 2u) << Log();
  EXPECT_EQ(stats.messages_failed, 2u) << Log();
  EXPECT_EQ(stats.pauses, 0u);
  EXPECT_EQ(Rows("a"), 1u);
  const std::string log = Log();
  EXPECT_NE(log.find("MQTT input sensors/a -> readings: line 2:"), std::string::npos) << log;
  EXPECT_NE(log.find("MQTT input sensors/b -> readings: "), std::string::npos) << log;
  EXPECT_NE(log.find("MQTT input sensors/c -> readings: reading 1:"), std::string::npos) << log;
  EXPECT_NE(log.find("MQTT input elsewhere/d -> no_such_table: "), std::string::npos) << log;
}

// QoS 1 may deliver a message twice: the engine keeps its records once.
TEST_F(MqttInputDeliveryTest, ADuplicatedMessageIsStoredOnce) {
  StartInput();
  broker_.DuplicateMessages("sensors/#", 1);
  broker_.Publish("sensors/a", Line("a", 3, 1.0) + "\n" + Line("a", 2, 2.0));
  broker_.WaitIdle();
  const MqttInputStats stats = input_->stats();
  EXPECT_EQ(stats.messages, 2u);
  // Stored, then had: both count as stored.
  EXPECT_EQ(stats.records_stored, 4u);
  EXPECT_EQ(stats.records_rejected, 0u);
  EXPECT_EQ(stats.link.received, 2u);
  EXPECT_EQ(Rows("a"), 2u);
}

// The engine refuses: the input holds the message, stops its link so that
// the broker keeps what follows in the session, and once the engine takes
// the held message it connects a new link (same client id), which receives
// what was kept, in order.
TEST_F(MqttInputDeliveryTest, APauseLeavesLaterMessagesWithTheBrokerUntilTheEngineTakesWritesAgain) {
  StartInput();
  refusing_->refusing = true;
  broker_.Publish("sensors/a", Line("a", 5, 1.0));
  ASSERT_TRUE(Eventually([&] { return input_->stats().paused; }, kWaitMs)) << Log();
  broker_.Publish("sensors/a", Line("a", 4, 2.0));
  broker_.Publish("sensors/a", Line("a", 3, 3.0));
  broker_.WaitIdle();
  MqttInputStats stats = input_->stats();
  EXPECT_EQ(stats.pauses, 1u);
  EXPECT_EQ(stats.messages_held, 1u);
  EXPECT_FALSE(stats.link.connected);
  EXPECT_EQ(Rows("a"), 0u);

  refusing_->refusing = false;
  ASSERT_TRUE(Eventually([&] { return input_->stats().messages >= 3; }, kWaitMs)) << Log();
  EXPECT_TRUE(input_->WaitConnected(kWaitMs));
  broker_.WaitIdle();
  stats = input_->stats();
  EXPECT_FALSE(stats.paused);
  EXPECT_EQ(stats.messages_held, 0u);
  EXPECT_EQ(stats.records_stored, 3u);
  EXPECT_GE(stats.write_retries, 1u);
  EXPECT_EQ(broker_.connects("cairn-input"), 2u);
  EXPECT_EQ(Rows("a"), 3u);
}

}  // namespace
}  // namespace cairn
