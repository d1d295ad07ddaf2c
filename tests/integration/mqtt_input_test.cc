// MqttInput with a real mosquitto and a real engine: readings published in
// line protocol and JSON are stored and read back equal, bad payloads are
// counted without blocking the ones behind them, routes pick tables, an
// unknown table is an error, and a refusing engine is retried.
//
// Every wait is bounded (kWaitMs).
#include "cairn/transport/mqtt_input.h"

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/core/engine.h"
#include "cairn/platform/env.h"
#include "cairn/transport/mqtt_link.h"

#include "forwarding_engine.h"
#include "mosquitto_broker.h"
#include "test_dirs.h"

namespace cairn {
namespace {

constexpr int kWaitMs = 30'000;

bool Eventually(const std::function<bool()>& condition) {
  Env* env = Env::Default();
  const int64_t deadline = env->MonotonicNanos() + int64_t{kWaitMs} * 1'000'000;
  while (!condition()) {
    if (env->MonotonicNanos() >= deadline) return false;
    env->SleepForMicros(10'000);
  }
  return true;
}

// Refuses the first `refusals` writes as a whole, as a quota in
// backpressure mode does; a negative count refuses forever.
class RefusingEngine : public ForwardingEngine {
 public:
  RefusingEngine(Engine* target, int refusals) : ForwardingEngine(target), refusals_(refusals) {}

  Result<WriteResult> Write(const std::string& table, const std::vector<Record>& records) override {
    ++attempts_;
    int left = refusals_.load();
    while (left != 0) {
      if (left < 0 || refusals_.compare_exchange_weak(left, left - 1)) {
        return Status::ResourceExhausted("quota for unsynced data reached (backpressure)");
      }
    }
    return ForwardingEngine::Write(table, records);
  }

  int attempts() const { return attempts_.load(); }

 private:
  std::atomic<int> refusals_;
  std::atomic<int> attempts_{0};
};

class MqttInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status started = broker_.Start(MosquittoBrokerOptions());
    ASSERT_TRUE(started.ok()) << started.ToString();
    Result<std::unique_ptr<Engine>> engine =
        Engine::Open(Env::Default(), data_dir_.PathOf("data"), EngineOptions());
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    engine_ = std::move(*engine);
    ASSERT_TRUE(engine_->CreateTable("readings", TableOptions()).ok());
    ASSERT_TRUE(engine_->CreateTable("alarms", TableOptions()).ok());

    MqttLinkOptions publisher_options;
    publisher_options.server_uri = broker_.server_uri();
    publisher_options.client_id = "cairn-input-test-sensor";
    publisher_options.clean_session = true;
    Result<std::unique_ptr<MqttLink>> publisher = MqttLink::Create(Env::Default(), publisher_options);
    ASSERT_TRUE(publisher.ok()) << publisher.status().ToString();
    publisher_ = std::move(*publisher);
    ASSERT_TRUE(publisher_->Start().ok());
    ASSERT_TRUE(publisher_->WaitConnected(kWaitMs)) << publisher_->stats().last_error;
  }

  void TearDown() override {
    if (input_) input_->Stop();
    if (publisher_) publisher_->Stop();
    if (engine_) {
      EXPECT_TRUE(engine_->Close().ok());
    }
  }

  MqttInputOptions InputOptions(std::vector<MqttInputRoute> routes) {
    MqttInputOptions options;
    options.link.server_uri = broker_.server_uri();
    options.link.client_id = "cairn-input-test";
    options.link.reconnect_min_ms = 20;
    options.link.reconnect_max_ms = 200;
    options.routes = std::move(routes);
    options.retry_min_ms = 1;
    options.retry_max_ms = 20;
    options.log = [this](std::string_view line) {
      std::lock_guard<std::mutex> lock(log_mutex_);
      log_.emplace_back(line);
    };
    return options;
  }

  void StartInput(MqttInputOptions options, Engine* engine = nullptr) {
    Result<std::unique_ptr<MqttInput>> input =
        MqttInput::Create(Env::Default(), engine ? engine : engine_.get(), std::move(options));
    ASSERT_TRUE(input.ok()) << input.status().ToString();
    input_ = std::move(*input);
    ASSERT_TRUE(input_->Start().ok());
    ASSERT_TRUE(input_->WaitConnected(kWaitMs)) << input_->stats().link.last_error << broker_.ReadLog();
  }

  // Publishes with QoS 1 and waits for the broker's PUBACK.
  void Send(const std::string& topic, const std::string& payload) {
    std::mutex mutex;
    std::condition_variable done;
    std::optional<Status> outcome;
    Status published = publisher_->Publish(topic, payload, [&](const Status& status) {
      std::lock_guard<std::mutex> lock(mutex);
      outcome = status;
      done.notify_all();
    });
    ASSERT_TRUE(published.ok()) << published.ToString();
    std::unique_lock<std::mutex> lock(mutex);
    ASSERT_TRUE(done.wait_for(lock, std::chrono::milliseconds(kWaitMs), [&] { return outcome.has_value(); }));
    ASSERT_TRUE(outcome->ok()) << outcome->ToString();
  }

  std::vector<RecordRow> Rows(const std::string& table, const std::string& device) {
    RangeQuery query;
    query.table = table;
    query.device_id = device;
    Result<RangeResult> result = engine_->Range(query);
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    return result.ok() ? result->rows : std::vector<RecordRow>();
  }

  // Waits until the input handled `count` messages.
  bool WaitForMessages(uint64_t count) {
    return Eventually([&] { return input_->stats().messages >= count; });
  }

  // Publishes without waiting for the PUBACK: while the input's handler
  // retries, Paho (one lock for every client in the process) takes in no
  // PUBACKs.
  void SendWithoutWaiting(const std::string& topic, const std::string& payload) {
    Status published = publisher_->Publish(topic, payload, [this](const Status&) { ++unwaited_outcomes_; });
    ASSERT_TRUE(published.ok()) << published.ToString();
  }

  std::string Log() {
    std::lock_guard<std::mutex> lock(log_mutex_);
    std::string text;
    for (const std::string& line : log_) text += line + "\n";
    return text;
  }

  // Readings an hour old, in whole seconds: well inside the default
  // retention whatever the clock says.
  int64_t Base(int seconds) const { return base_ + int64_t{seconds} * 1'000'000'000; }
  std::string T(int seconds) const { return std::to_string(Base(seconds)); }

  const int64_t base_ = (Env::Default()->NowUnixNanos() / 1'000'000'000 - 3600) * 1'000'000'000;
  ScopedTempDir data_dir_{"cairn-mqtt-input"};
  MosquittoBroker broker_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<MqttLink> publisher_;
  std::unique_ptr<MqttInput> input_;
  std::atomic<int> unwaited_outcomes_{0};
  std::mutex log_mutex_;
  std::vector<std::string> log_;
};

TEST_F(MqttInputTest, StoresLineProtocolAndJsonAndRoutesToTables) {
  StartInput(InputOptions({{"sensors/+/readings", "readings"}, {"alarms/#", "alarms"}}));
  ASSERT_FALSE(HasFatalFailure());

  Send("sensors/pump-1/readings", "env,device=pump-1,room=cellar temperature=21.5,running=true,starts=12i " +
                                      T(0) +
                                      "\n"
                                      "env,device=pump-1 temperature=21.75,running=false,starts=13i " +
                                      T(1) + "\n");
  Send("alarms/pump-2", "[{\"device\": \"pump-2\", \"measure\": \"alarm\", \"time\": " + T(2) +
                            ","
                            "  \"fields\": {\"code\": {\"int\": 7}, \"text\": \"overheat\", \"level\": 2.5}},"
                            " {\"device\": \"pump-2\", \"measure\": \"alarm\", \"time\": " +
                            T(3) +
                            ","
                            "  \"fields\": {\"code\": {\"int\": 0}, \"text\": \"cleared\", \"level\": 0}}]");
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(WaitForMessages(2)) << Log();

  std::vector<RecordRow> readings = Rows("readings", "pump-1");
  ASSERT_EQ(readings.size(), 2u);
  EXPECT_EQ(readings[0].measure_name, "env");
  EXPECT_EQ(readings[0].timestamp, Base(0));
  ASSERT_EQ(readings[0].fields.size(), 3u);  // sorted by name
  EXPECT_EQ(readings[0].fields[0].name, "running");
  EXPECT_EQ(readings[0].fields[0].value, Value(true));
  EXPECT_EQ(readings[0].fields[1].name, "starts");
  EXPECT_EQ(readings[0].fields[1].value, Value(int64_t{12}));
  EXPECT_EQ(readings[0].fields[2].name, "temperature");
  EXPECT_EQ(readings[0].fields[2].value, Value(21.5));
  EXPECT_EQ(readings[1].timestamp, Base(1));
  EXPECT_EQ(readings[1].fields[2].value, Value(21.75));

  std::vector<RecordRow> alarms = Rows("alarms", "pump-2");
  ASSERT_EQ(alarms.size(), 2u);
  EXPECT_EQ(alarms[0].measure_name, "alarm");
  ASSERT_EQ(alarms[0].fields.size(), 3u);
  EXPECT_EQ(alarms[0].fields[0].name, "code");
  EXPECT_EQ(alarms[0].fields[0].value, Value(int64_t{7}));
  EXPECT_EQ(alarms[0].fields[1].value, Value(2.5));
  EXPECT_EQ(alarms[0].fields[2].value, Value(std::string("overheat")));
  EXPECT_EQ(alarms[1].fields[2].value, Value(std::string("cleared")));
  // Each route fed only its own table.
  EXPECT_TRUE(Rows("alarms", "pump-1").empty());
  EXPECT_TRUE(Rows("readings", "pump-2").empty());

  MqttInputStats stats = input_->stats();
  EXPECT_EQ(stats.messages, 2u);
  EXPECT_EQ(stats.records_stored, 4u);
  EXPECT_EQ(stats.records_rejected, 0u);
  EXPECT_EQ(stats.messages_failed, 0u);
  EXPECT_TRUE(stats.link.connected);
  EXPECT_EQ(stats.link.received, 2u);
  EXPECT_EQ(Log(), "");
}

TEST_F(MqttInputTest, BadPayloadsAreCountedAndDoNotBlockTheNextOnes) {
  StartInput(InputOptions({{"sensors/#", "readings"}}));
  ASSERT_FALSE(HasFatalFailure());

  Send("sensors/a", "{\"device\": ");                             // JSON that does not parse
  Send("sensors/a", std::string("env,device=bad t=1\0x\n", 21));  // NUL byte
  Send("sensors/a", "env,device=mixed t=1 " + T(0) +
                        "\n"
                        "env t=2 " +
                        T(1) +
                        "\n"
                        "env,device=mixed t=3 " +
                        T(2) + "\n");
  Send("sensors/a", "[{\"device\": \"mixed\", \"measure\": \"env\", \"time\": " + T(3) +
                        ", \"fields\": {}},"
                        " {\"device\": \"mixed\", \"measure\": \"env\", \"time\": " +
                        T(4) +
                        ","
                        "  \"fields\": {\"t\": 5}}]");
  Send("sensors/a", "env,device=good t=42 " + T(5));
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(WaitForMessages(5)) << Log();

  std::vector<RecordRow> mixed = Rows("readings", "mixed");
  ASSERT_EQ(mixed.size(), 3u);
  EXPECT_EQ(mixed[0].fields[0].value, Value(1.0));
  EXPECT_EQ(mixed[1].fields[0].value, Value(3.0));
  EXPECT_EQ(mixed[2].fields[0].value, Value(5.0));
  EXPECT_TRUE(Rows("readings", "bad").empty());

  MqttInputStats stats = input_->stats();
  EXPECT_EQ(stats.messages, 5u);
  EXPECT_EQ(stats.messages_failed, 1u);
  EXPECT_EQ(stats.records_stored, 4u);
  EXPECT_EQ(stats.records_rejected, 3u);
  const std::string log = Log();
  EXPECT_NE(log.find("JSON payload"), std::string::npos) << log;
  EXPECT_NE(log.find("line 2: "), std::string::npos) << log;
  EXPECT_NE(log.find("reading 1: "), std::string::npos) << log;
  EXPECT_FALSE(stats.last_error.empty());
}

TEST_F(MqttInputTest, UnknownTableIsCountedAndOtherRoutesGoOn) {
  StartInput(InputOptions({{"lost/#", "no_such_table"}, {"sensors/#", "readings"}}));
  ASSERT_FALSE(HasFatalFailure());

  Send("lost/x", "env,device=lost t=1 " + T(0));
  Send("sensors/x", "env,device=found t=2 " + T(0));
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(WaitForMessages(2)) << Log();

  EXPECT_EQ(Rows("readings", "found").size(), 1u) << Log() << input_->stats().records_rejected;
  MqttInputStats stats = input_->stats();
  EXPECT_EQ(stats.messages_failed, 1u);
  EXPECT_EQ(stats.records_stored, 1u);
  EXPECT_NE(Log().find("no_such_table"), std::string::npos) << Log();
}

TEST_F(MqttInputTest, RetriesWhileTheEngineRefusesTheWrite) {
  RefusingEngine refusing(engine_.get(), 3);
  StartInput(InputOptions({{"sensors/#", "readings"}}), &refusing);
  ASSERT_FALSE(HasFatalFailure());

  Send("sensors/x", "env,device=patient t=1 " + T(0));
  Send("sensors/x", "env,device=patient t=2 " + T(1));
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(WaitForMessages(2)) << Log();

  std::vector<RecordRow> rows = Rows("readings", "patient");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].fields[0].value, Value(1.0));
  EXPECT_EQ(rows[1].fields[0].value, Value(2.0));
  MqttInputStats stats = input_->stats();
  EXPECT_EQ(stats.write_retries, 3u);
  EXPECT_EQ(stats.messages_failed, 0u);
  EXPECT_EQ(refusing.attempts(), 5);
  EXPECT_NE(Log().find("retrying"), std::string::npos) << Log();
  input_->Stop();
  input_.reset();
}

TEST_F(MqttInputTest, StopEndsARetryThatWouldNeverSucceed) {
  RefusingEngine refusing(engine_.get(), -1);
  StartInput(InputOptions({{"sensors/#", "readings"}}), &refusing);
  ASSERT_FALSE(HasFatalFailure());

  SendWithoutWaiting("sensors/x", "env,device=stuck t=1 " + T(0));
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(Eventually([&] { return input_->stats().write_retries >= 2; })) << Log();
  input_->Stop();
  MqttInputStats stats = input_->stats();
  EXPECT_EQ(stats.messages, 1u);
  EXPECT_EQ(stats.messages_failed, 1u);
  EXPECT_EQ(stats.records_stored, 0u);
  EXPECT_FALSE(stats.link.connected);
  const int attempts = refusing.attempts();
  Env::Default()->SleepForMicros(50'000);
  EXPECT_EQ(refusing.attempts(), attempts);
  EXPECT_TRUE(Rows("readings", "stuck").empty());
  input_.reset();
}

}  // namespace
}  // namespace cairn
