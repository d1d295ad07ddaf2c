// MqttInput with a real mosquitto and a real engine: readings published in
// line protocol and JSON are stored and read back equal, bad payloads are
// counted without blocking the ones behind them, routes pick tables, an
// unknown table is an error, and while the engine refuses writes the input
// pauses without holding up Paho (other links of the process keep working),
// then stores everything in order once the engine accepts writes again.
//
// Every wait is bounded (kWaitMs).
#include "cairn/mqtt/mqtt_input.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/core/engine.h"
#include "cairn/platform/env.h"
#include "cairn/mqtt/mqtt_link.h"

#include "eventually.h"
#include "forwarding_engine.h"
#include "log_lines.h"
#include "mosquitto_broker.h"
#include "test_dirs.h"

namespace cairn {
namespace {

constexpr int kWaitMs = 30'000;

// Polls `condition` until it holds or kWaitMs passes.
bool Eventually(const std::function<bool()>& condition) { return cairn::Eventually(condition, kWaitMs); }

// Refuses the first `refusals` writes as a whole, as the engine does for
// received records when free disk space is below the sync quota's floor; a
// negative count refuses until AcceptWrites.
// Remembers the records it let through, in write order.
class RefusingEngine : public ForwardingEngine {
 public:
  RefusingEngine(Engine* target, int refusals) : ForwardingEngine(target), refusals_(refusals) {}

  Result<WriteResult> WriteReceived(const std::string& table, const std::vector<Record>& records) override {
    ++attempts_;
    int left = refusals_.load();
    while (left != 0) {
      if (left < 0 || refusals_.compare_exchange_weak(left, left - 1)) {
        return Status::ResourceExhausted("free disk space is below the sync quota's floor");
      }
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const Record& record : records) accepted_.push_back(record);
    }
    return ForwardingEngine::WriteReceived(table, records);
  }

  void AcceptWrites() { refusals_ = 0; }

  int attempts() const { return attempts_.load(); }

  std::vector<Record> accepted() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return accepted_;
  }

 private:
  std::atomic<int> refusals_;
  std::atomic<int> attempts_{0};
  mutable std::mutex mutex_;
  std::vector<Record> accepted_;
};

// A second MQTT client in the process, next to the input: subscribes to
// `filter` and collects what it receives.
class Bystander {
 public:
  Status Start(const std::string& server_uri, const std::string& filter) {
    MqttLinkOptions options;
    options.server_uri = server_uri;
    options.client_id = "cairn-input-test-bystander";
    options.clean_session = true;
    options.subscriptions = {filter};
    Result<std::unique_ptr<MqttLink>> link =
        MqttLink::Create(Env::Default(), options, [this](std::string_view, std::string_view payload) {
          std::lock_guard<std::mutex> lock(mutex_);
          received_.emplace_back(payload);
        });
    if (!link.ok()) return link.status();
    link_ = std::move(*link);
    CAIRN_RETURN_IF_ERROR(link_->Start());
    if (!link_->WaitConnected(kWaitMs)) return Status::Unavailable("bystander: " + link_->stats().last_error);
    return Status::Ok();
  }

  ~Bystander() {
    if (link_) link_->Stop();
  }

  MqttLink* link() { return link_.get(); }

  std::vector<std::string> received() {
    std::lock_guard<std::mutex> lock(mutex_);
    return received_;
  }

 private:
  std::unique_ptr<MqttLink> link_;
  std::mutex mutex_;
  std::vector<std::string> received_;
};

// Publishes with QoS 1 on `link` and waits for the broker's PUBACK.
void PublishAndWait(MqttLink* link, const std::string& topic, const std::string& payload) {
  std::mutex mutex;
  std::condition_variable done;
  std::optional<Status> outcome;
  Status published = link->Publish(topic, payload, [&](const Status& status) {
    std::lock_guard<std::mutex> lock(mutex);
    outcome = status;
    done.notify_all();
  });
  ASSERT_TRUE(published.ok()) << published.ToString();
  std::unique_lock<std::mutex> lock(mutex);
  ASSERT_TRUE(done.wait_for(lock, std::chrono::milliseconds(kWaitMs), [&] { return outcome.has_value(); }))
      << "no PUBACK for " << topic;
  ASSERT_TRUE(outcome->ok()) << outcome->ToString();
}

// The order in which `device`'s readings (field value = sequence number)
// were first written, and how many writes repeated one.
struct WriteOrder {
  std::vector<double> first_writes;
  int repeats = 0;
};

WriteOrder OrderOf(const std::vector<Record>& accepted, const std::string& device) {
  WriteOrder order;
  for (const Record& record : accepted) {
    if (record.device_id != device) continue;
    const double value = std::get<double>(record.fields.at(0).value);
    if (std::find(order.first_writes.begin(), order.first_writes.end(), value) != order.first_writes.end()) {
      ++order.repeats;
    } else {
      order.first_writes.push_back(value);
    }
  }
  return order;
}

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
    options.log = log_.Sink();
    return options;
  }

  // Without `wait_connected` the input may pause before it announced its
  // connection: the broker delivers a session's queued messages right after
  // CONNACK, before the subscriptions are renewed.
  void StartInput(MqttInputOptions options, Engine* engine = nullptr, bool wait_connected = true) {
    Result<std::unique_ptr<MqttInput>> input =
        MqttInput::Create(Env::Default(), engine ? engine : engine_.get(), std::move(options));
    ASSERT_TRUE(input.ok()) << input.status().ToString();
    input_ = std::move(*input);
    ASSERT_TRUE(input_->Start().ok());
    if (!wait_connected) return;
    ASSERT_TRUE(input_->WaitConnected(kWaitMs)) << input_->stats().link.last_error << broker_.ReadLog();
  }

  // Publishes with QoS 1 and waits for the broker's PUBACK.
  void Send(const std::string& topic, const std::string& payload) {
    PublishAndWait(publisher_.get(), topic, payload);
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

  // Publishes without waiting for the PUBACK, so that several messages
  // reach the input back to back.
  void SendWithoutWaiting(const std::string& topic, const std::string& payload) {
    Status published = publisher_->Publish(topic, payload, [this](const Status&) { ++unwaited_outcomes_; });
    ASSERT_TRUE(published.ok()) << published.ToString();
  }

  // Line protocol for `device`'s reading number `sequence` (its value and
  // its second).
  std::string Reading(const std::string& device, int sequence) const {
    return "env,device=" + device + " n=" + std::to_string(sequence) + " " + T(sequence);
  }

  // The values of `device`'s stored readings, in time order.
  std::vector<double> StoredValues(const std::string& device) {
    std::vector<double> values;
    for (const RecordRow& row : Rows("readings", device))
      values.push_back(std::get<double>(row.fields.at(0).value));
    return values;
  }

  std::string Log() const { return log_.Text(); }

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
  LogLines log_;
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
  EXPECT_EQ(stats.pauses, 1u);
  EXPECT_NE(Log().find("retrying"), std::string::npos) << Log();
  ASSERT_TRUE(Eventually([&] { return !input_->stats().paused && input_->stats().link.connected; }));
  input_->Stop();
  input_.reset();
}

TEST_F(MqttInputTest, OtherLinksOfTheProcessKeepWorkingWhileWritesAreRefused) {
  RefusingEngine refusing(engine_.get(), -1);
  StartInput(InputOptions({{"sensors/#", "readings"}}), &refusing);
  ASSERT_FALSE(HasFatalFailure());

  Send("sensors/x", Reading("held", 0));
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(Eventually([&] { return input_->stats().paused; })) << Log();

  // Paho reads every client's network on one thread: were the input's
  // handler waiting for the engine, none of this would get through.
  Bystander bystander;
  Status started = bystander.Start(broker_.server_uri(), "chatter/#");
  ASSERT_TRUE(started.ok()) << started.ToString();
  std::vector<std::string> expected;
  for (int i = 0; i < 3; ++i) {
    PublishAndWait(bystander.link(), "chatter/bystander", "b" + std::to_string(i));
    Send("chatter/publisher", "p" + std::to_string(i));
    ASSERT_FALSE(HasFatalFailure());
    expected.push_back("b" + std::to_string(i));
    expected.push_back("p" + std::to_string(i));
  }
  ASSERT_TRUE(Eventually([&] { return bystander.received().size() >= expected.size(); }));
  std::vector<std::string> received = bystander.received();
  std::sort(received.begin(), received.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(received, expected);
  EXPECT_EQ(bystander.link()->stats().acknowledged, 3u);

  // Still refused: the input keeps the message and stays paused.
  ASSERT_TRUE(Eventually([&] { return input_->stats().write_retries >= 1; })) << Log();
  MqttInputStats during = input_->stats();
  EXPECT_TRUE(during.paused);
  EXPECT_EQ(during.pauses, 1u);
  EXPECT_EQ(during.messages_held, 1u);
  EXPECT_EQ(during.messages, 0u);
  EXPECT_EQ(during.records_stored, 0u);
  EXPECT_FALSE(during.link.connected);
  EXPECT_FALSE(input_->WaitConnected(0));
  EXPECT_TRUE(Rows("readings", "held").empty());

  refusing.AcceptWrites();
  ASSERT_TRUE(Eventually([&] {
    MqttInputStats stats = input_->stats();
    return stats.messages == 1 && !stats.paused && stats.link.connected;
  })) << Log();
  EXPECT_EQ(StoredValues("held"), std::vector<double>({0}));
  MqttInputStats after = input_->stats();
  EXPECT_EQ(after.records_stored, 1u);
  EXPECT_EQ(after.messages_failed, 0u);
  EXPECT_EQ(after.messages_held, 0u);
  EXPECT_EQ(after.pauses, 1u);
  EXPECT_EQ(after.link.connects, 2u);
  EXPECT_TRUE(input_->WaitConnected(kWaitMs));
}

TEST_F(MqttInputTest, MessagesPublishedDuringARefusalAreStoredOnceInOrderAfterIt) {
  // A first input leaves its session at the broker, which keeps the first
  // readings for it; the next input gets them back to back as it connects.
  const MqttInputOptions options = InputOptions({{"sensors/#", "readings"}});
  StartInput(options);
  ASSERT_FALSE(HasFatalFailure());
  input_->Stop();
  input_.reset();
  constexpr int kPerTopic = 10;
  constexpr int kBeforeConnect = 3;
  for (int i = 0; i < kBeforeConnect; ++i) {
    Send("sensors/a", Reading("a", i));
    Send("sensors/b", Reading("b", i));
    ASSERT_FALSE(HasFatalFailure());
  }

  // The first is refused; those right behind it arrive before or after the
  // link stopped (held, or kept by the broker).
  RefusingEngine refusing(engine_.get(), -1);
  StartInput(options, &refusing, /*wait_connected=*/false);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(Eventually([&] { return input_->stats().paused; })) << Log();
  MqttInputStats paused = input_->stats();
  EXPECT_GE(paused.messages_held, 1u);
  EXPECT_EQ(paused.pauses, 1u);
  EXPECT_EQ(paused.records_stored, 0u);
  EXPECT_FALSE(paused.link.connected);

  // After the pause took effect: all kept by the broker.
  for (int i = kBeforeConnect; i < kPerTopic; ++i) {
    Send("sensors/a", Reading("a", i));
    Send("sensors/b", Reading("b", i));
    ASSERT_FALSE(HasFatalFailure());
  }
  ASSERT_TRUE(Eventually([&] { return input_->stats().write_retries >= 1; })) << Log();
  MqttInputStats still = input_->stats();
  EXPECT_TRUE(still.paused);
  EXPECT_EQ(still.messages_held, paused.messages_held);
  EXPECT_EQ(still.records_stored, 0u);

  refusing.AcceptWrites();
  // Each message has one record: a message is settled once both counters agree.
  ASSERT_TRUE(Eventually([&] {
    MqttInputStats stats = input_->stats();
    return StoredValues("a").size() == kPerTopic && StoredValues("b").size() == kPerTopic && !stats.paused &&
           stats.messages == stats.records_stored;
  })) << Log();

  std::vector<double> expected;
  for (int i = 0; i < kPerTopic; ++i) expected.push_back(i);
  EXPECT_EQ(StoredValues("a"), expected);
  EXPECT_EQ(StoredValues("b"), expected);
  // Written in publish order per topic. A message whose PUBACK the
  // stopping link could no longer send comes again (QoS 1 is at least
  // once); the engine keeps one row of it.
  const std::vector<Record> accepted = refusing.accepted();
  WriteOrder a = OrderOf(accepted, "a");
  WriteOrder b = OrderOf(accepted, "b");
  EXPECT_EQ(a.first_writes, expected);
  EXPECT_EQ(b.first_writes, expected);

  MqttInputStats after = input_->stats();
  EXPECT_FALSE(after.paused);
  EXPECT_EQ(after.messages_held, 0u);
  EXPECT_EQ(after.pauses, 1u);
  EXPECT_EQ(after.messages_failed, 0u);
  EXPECT_EQ(after.records_rejected, 0u);
  EXPECT_EQ(after.records_stored, static_cast<uint64_t>(2 * kPerTopic + a.repeats + b.repeats));
  EXPECT_EQ(after.messages, after.records_stored);
  EXPECT_EQ(after.link.received, after.messages);
  EXPECT_GE(after.write_retries, 1u);
}

TEST_F(MqttInputTest, StopDuringAPauseCountsHeldMessagesAsLost) {
  RefusingEngine refusing(engine_.get(), -1);
  MqttInputOptions options = InputOptions({{"sensors/#", "readings"}});
  StartInput(options, &refusing);
  ASSERT_FALSE(HasFatalFailure());

  Send("sensors/x", Reading("stuck", 0));
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(Eventually([&] {
    MqttInputStats stats = input_->stats();
    return stats.paused && stats.write_retries >= 2;
  })) << Log();
  // Behind the pause: kept by the broker for the session.
  Send("sensors/x", Reading("stuck", 1));
  Send("sensors/x", Reading("stuck", 2));
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_EQ(input_->stats().messages_held, 1u);

  input_->Stop();
  MqttInputStats stats = input_->stats();
  EXPECT_EQ(stats.messages, 1u);
  EXPECT_EQ(stats.messages_failed, 1u);
  EXPECT_EQ(stats.messages_held, 0u);
  EXPECT_FALSE(stats.paused);
  EXPECT_EQ(stats.records_stored, 0u);
  EXPECT_FALSE(stats.link.connected);
  EXPECT_FALSE(input_->WaitConnected(kWaitMs));
  const int attempts = refusing.attempts();
  Env::Default()->SleepForMicros(50'000);
  EXPECT_EQ(refusing.attempts(), attempts);
  EXPECT_TRUE(Rows("readings", "stuck").empty());
  EXPECT_NE(Log().find("is lost"), std::string::npos) << Log();
  input_.reset();

  // The next input of the same session gets what the broker kept; only the
  // held message is gone.
  StartInput(options);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(Eventually([&] { return StoredValues("stuck").size() == 2; })) << Log();
  EXPECT_EQ(StoredValues("stuck"), std::vector<double>({1, 2}));
  EXPECT_EQ(input_->stats().messages_failed, 0u);
}

}  // namespace
}  // namespace cairn
