// MqttLink against a real mosquitto: QoS 1 round trips and PUBACKs, the
// in-flight window, a broker that goes away and comes back (pending
// publishes fail, the link reconnects and resubscribes by itself), a
// persistent session, TLS, mutual TLS and passwords.
//
// Every wait is bounded (kWaitMs); links and brokers stop in their
// destructors, also when an assertion fails half-way.
#include "cairn/mqtt/mqtt_link.h"

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/platform/env.h"

#include "eventually.h"
#include "mosquitto_broker.h"
#include "test_dirs.h"
#include "test_pki.h"

namespace cairn {
namespace {

constexpr int kWaitMs = 30'000;

// What a link's handlers saw, for the test thread to wait on.
class Recorder {
 public:
  struct Message {
    std::string topic;
    std::string payload;
  };

  MqttLink::MessageHandler MessageHandler() {
    return [this](std::string_view topic, std::string_view payload) {
      std::function<void()> hook;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        messages_.push_back({std::string(topic), std::string(payload)});
        hook = on_message_hook_;
      }
      changed_.notify_all();
      if (hook) hook();
    };
  }

  MqttLink::ConnectionHandler ConnectionHandler() {
    return [this](bool connected, const std::string& reason) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        connection_events_.push_back(connected);
        if (!connected) last_loss_reason_ = reason;
      }
      changed_.notify_all();
    };
  }

  // Runs on Paho's thread after each message is recorded.
  void set_on_message_hook(std::function<void()> hook) {
    std::lock_guard<std::mutex> lock(mutex_);
    on_message_hook_ = std::move(hook);
  }

  // Waits until a message with `payload` arrived; returns its topic, or
  // nothing after kWaitMs.
  std::optional<std::string> WaitForPayload(const std::string& payload) {
    std::unique_lock<std::mutex> lock(mutex_);
    std::optional<std::string> topic;
    changed_.wait_for(lock, std::chrono::milliseconds(kWaitMs), [&] {
      for (const Message& message : messages_) {
        if (message.payload == payload) topic = message.topic;
      }
      return topic.has_value();
    });
    return topic;
  }

  // Waits until `count` connection events were reported.
  std::vector<bool> WaitForConnectionEvents(size_t count) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_for(lock, std::chrono::milliseconds(kWaitMs),
                      [&] { return connection_events_.size() >= count; });
    return connection_events_;
  }

  std::vector<Message> messages() {
    std::lock_guard<std::mutex> lock(mutex_);
    return messages_;
  }

  std::string last_loss_reason() {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_loss_reason_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Message> messages_;
  std::vector<bool> connection_events_;
  std::string last_loss_reason_;
  std::function<void()> on_message_hook_;
};

// A publish's outcome, set once by its callback.
class Outcome {
 public:
  MqttLink::PublishCallback Callback() {
    return [this](const Status& status) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++calls_;
        status_ = status;
      }
      changed_.notify_all();
    };
  }

  // The status, or nothing when the callback did not run within kWaitMs.
  std::optional<Status> Wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!changed_.wait_for(lock, std::chrono::milliseconds(kWaitMs), [&] { return calls_ > 0; })) {
      return std::nullopt;
    }
    return status_;
  }

  int calls() {
    std::lock_guard<std::mutex> lock(mutex_);
    return calls_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int calls_ = 0;
  Status status_;
};

// A one-shot gate between the test thread and a handler.
class Latch {
 public:
  void Open() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      open_ = true;
    }
    changed_.notify_all();
  }
  bool Wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, std::chrono::milliseconds(kWaitMs), [&] { return open_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = false;
};

// Polls `condition` until it holds or kWaitMs passes.
bool Eventually(const std::function<bool()>& condition) { return cairn::Eventually(condition, kWaitMs); }

MqttLinkOptions LinkOptions(const MosquittoBroker& broker, const std::string& client_id,
                            std::vector<std::string> subscriptions = {}) {
  MqttLinkOptions options;
  options.server_uri = broker.server_uri();
  options.client_id = client_id;
  options.clean_session = true;
  options.reconnect_min_ms = 20;
  options.reconnect_max_ms = 200;
  options.subscriptions = std::move(subscriptions);
  return options;
}

std::unique_ptr<MqttLink> MakeLink(MqttLinkOptions options, Recorder* recorder = nullptr) {
  Result<std::unique_ptr<MqttLink>> link =
      MqttLink::Create(Env::Default(), std::move(options), recorder ? recorder->MessageHandler() : nullptr,
                       recorder ? recorder->ConnectionHandler() : nullptr);
  EXPECT_TRUE(link.ok()) << link.status().ToString();
  if (!link.ok()) return nullptr;
  Status started = (*link)->Start();
  EXPECT_TRUE(started.ok()) << started.ToString();
  return std::move(*link);
}

class MqttLinkBrokerTest : public ::testing::Test {
 protected:
  void StartBroker(const MosquittoBrokerOptions& options = MosquittoBrokerOptions()) {
    Status started = broker_.Start(options);
    ASSERT_TRUE(started.ok()) << started.ToString();
  }

  void MakePki() {
    Result<TestPki> pki = GenerateTestPki(pki_dir_.PathOf("pki"));
    ASSERT_TRUE(pki.ok()) << pki.status().ToString();
    pki_ = *pki;
  }

  MqttLinkOptions TlsLinkOptions(const std::string& client_id, const std::string& ca_file,
                                 bool with_client_certificate) {
    MqttLinkOptions options = LinkOptions(broker_, client_id, {"cairn/tls/#"});
    options.tls = MqttTlsOptions();
    options.tls->ca_file = ca_file;
    if (with_client_certificate) {
      options.tls->cert_file = pki_.client_certificate_path;
      options.tls->key_file = pki_.client_key_path;
    }
    return options;
  }

  // Publishes on `link` to a topic it subscribes to and checks the message
  // comes back.
  void ExpectRoundTrip(MqttLink* link, Recorder* recorder, const std::string& topic,
                       const std::string& payload) {
    Outcome outcome;
    Status published = link->Publish(topic, payload, outcome.Callback());
    ASSERT_TRUE(published.ok()) << published.ToString();
    std::optional<Status> acked = outcome.Wait();
    ASSERT_TRUE(acked.has_value()) << broker_.ReadLog();
    EXPECT_TRUE(acked->ok()) << acked->ToString();
    EXPECT_EQ(recorder->WaitForPayload(payload), topic) << broker_.ReadLog();
  }

  ScopedTempDir pki_dir_{"cairn-mqtt-link-pki"};
  TestPki pki_;
  MosquittoBroker broker_;
};

TEST_F(MqttLinkBrokerTest, PublishesAndReceivesWithPuback) {
  StartBroker();
  Recorder subscriber_events;
  std::unique_ptr<MqttLink> subscriber =
      MakeLink(LinkOptions(broker_, "cairn-link-subscriber", {"cairn/round/+"}), &subscriber_events);
  Recorder publisher_events;
  std::unique_ptr<MqttLink> publisher =
      MakeLink(LinkOptions(broker_, "cairn-link-publisher"), &publisher_events);
  ASSERT_TRUE(subscriber && publisher);
  ASSERT_TRUE(subscriber->WaitConnected(kWaitMs)) << subscriber->stats().last_error << broker_.ReadLog();
  ASSERT_TRUE(publisher->WaitConnected(kWaitMs)) << publisher->stats().last_error << broker_.ReadLog();
  EXPECT_EQ(subscriber_events.WaitForConnectionEvents(1), std::vector<bool>{true});

  Outcome outcome;
  ASSERT_TRUE(
      publisher->Publish("cairn/round/a", std::string("reading\0 21.5", 13), outcome.Callback()).ok());
  std::optional<Status> acked = outcome.Wait();
  ASSERT_TRUE(acked.has_value());
  EXPECT_TRUE(acked->ok()) << acked->ToString();
  EXPECT_EQ(subscriber_events.WaitForPayload(std::string("reading\0 21.5", 13)), "cairn/round/a");
  EXPECT_EQ(outcome.calls(), 1);

  MqttLinkStats publisher_stats = publisher->stats();
  EXPECT_TRUE(publisher_stats.connected);
  EXPECT_EQ(publisher_stats.connects, 1u);
  EXPECT_EQ(publisher_stats.published, 1u);
  EXPECT_EQ(publisher_stats.acknowledged, 1u);
  EXPECT_EQ(publisher_stats.bytes_published, 13u);
  EXPECT_EQ(publisher_stats.publish_failures, 0u);
  EXPECT_EQ(publisher_stats.inflight, 0u);
  EXPECT_EQ(subscriber->stats().received, 1u);

  publisher->Stop();
  subscriber->Stop();
  EXPECT_FALSE(publisher->connected());
  Status after_stop = publisher->Publish("cairn/round/a", "late", outcome.Callback());
  EXPECT_TRUE(after_stop.Is(StatusCode::kUnavailable)) << after_stop.ToString();
  // Stop is not a loss of the connection: no (false) event.
  EXPECT_EQ(subscriber_events.WaitForConnectionEvents(1), std::vector<bool>{true});
}

// Inside its own message handler the link cannot take in PUBACKs (Paho
// delivers them on the thread the handler holds), so the window stays full.
TEST_F(MqttLinkBrokerTest, RefusesPublishBeyondTheWindow) {
  StartBroker();
  Recorder events;
  MqttLinkOptions options = LinkOptions(broker_, "cairn-link-window", {"cairn/window/trigger"});
  options.max_inflight = 2;
  Outcome first;
  Outcome second;
  Outcome third;
  Status first_status;
  Status second_status;
  Status third_status;
  size_t inflight_seen = 0;
  Latch handled;
  MqttLink* link_in_handler = nullptr;
  events.set_on_message_hook([&] {
    first_status = link_in_handler->Publish("cairn/window/out", "1", first.Callback());
    second_status = link_in_handler->Publish("cairn/window/out", "2", second.Callback());
    third_status = link_in_handler->Publish("cairn/window/out", "3", third.Callback());
    inflight_seen = link_in_handler->stats().inflight;
    handled.Open();
  });
  std::unique_ptr<MqttLink> link = MakeLink(options, &events);
  ASSERT_TRUE(link);
  link_in_handler = link.get();
  ASSERT_TRUE(link->WaitConnected(kWaitMs)) << link->stats().last_error;

  Recorder trigger_events;
  std::unique_ptr<MqttLink> trigger = MakeLink(LinkOptions(broker_, "cairn-link-trigger"), &trigger_events);
  ASSERT_TRUE(trigger && trigger->WaitConnected(kWaitMs));
  Outcome triggered;
  ASSERT_TRUE(trigger->Publish("cairn/window/trigger", "go", triggered.Callback()).ok());
  ASSERT_TRUE(handled.Wait());

  EXPECT_TRUE(first_status.ok()) << first_status.ToString();
  EXPECT_TRUE(second_status.ok()) << second_status.ToString();
  EXPECT_TRUE(third_status.Is(StatusCode::kUnavailable)) << third_status.ToString();
  EXPECT_EQ(inflight_seen, 2u);
  std::optional<Status> first_done = first.Wait();
  std::optional<Status> second_done = second.Wait();
  ASSERT_TRUE(first_done && second_done);
  EXPECT_TRUE(first_done->ok()) << first_done->ToString();
  EXPECT_TRUE(second_done->ok()) << second_done->ToString();
  EXPECT_EQ(third.calls(), 0);
  EXPECT_EQ(link->stats().inflight, 0u);
  EXPECT_EQ(link->stats().acknowledged, 2u);

  // The window has room again.
  Outcome fourth;
  ASSERT_TRUE(link->Publish("cairn/window/out", "4", fourth.Callback()).ok());
  std::optional<Status> fourth_done = fourth.Wait();
  ASSERT_TRUE(fourth_done);
  EXPECT_TRUE(fourth_done->ok()) << fourth_done->ToString();
}

TEST_F(MqttLinkBrokerTest, SurvivesBrokerOutageAndResubscribes) {
  StartBroker();
  Recorder subscriber_events;
  Recorder publisher_events;
  MqttLink* publisher_in_handler = nullptr;
  Outcome pending;
  Status pending_status = Status::Internal("the handler did not run");
  // Paho runs message handlers with its library lock held, so while this
  // handler runs no link in the process can notice the broker's death:
  // the publish below is accepted and then fails with the connection.
  subscriber_events.set_on_message_hook([&] {
    if (subscriber_events.messages().back().payload != "kill") return;
    broker_.Kill();
    pending_status = publisher_in_handler->Publish("cairn/outage/pending", "pending", pending.Callback());
  });
  std::unique_ptr<MqttLink> subscriber =
      MakeLink(LinkOptions(broker_, "cairn-link-outage-subscriber", {"cairn/outage/#"}), &subscriber_events);
  std::unique_ptr<MqttLink> publisher =
      MakeLink(LinkOptions(broker_, "cairn-link-outage-publisher"), &publisher_events);
  ASSERT_TRUE(subscriber && publisher);
  publisher_in_handler = publisher.get();
  ASSERT_TRUE(subscriber->WaitConnected(kWaitMs)) << subscriber->stats().last_error;
  ASSERT_TRUE(publisher->WaitConnected(kWaitMs)) << publisher->stats().last_error;

  Outcome kill;
  ASSERT_TRUE(publisher->Publish("cairn/outage/kill", "kill", kill.Callback()).ok());
  ASSERT_TRUE(subscriber_events.WaitForPayload("kill").has_value());
  std::optional<Status> failed = pending.Wait();
  ASSERT_TRUE(failed.has_value()) << pending_status.ToString();
  EXPECT_TRUE(pending_status.ok()) << pending_status.ToString();
  EXPECT_TRUE(failed->Is(StatusCode::kUnavailable)) << failed->ToString();
  EXPECT_NE(failed->message().find("connection lost before PUBACK"), std::string::npos) << failed->ToString();
  EXPECT_TRUE(kill.Wait().has_value());
  EXPECT_EQ(kill.calls(), 1);
  EXPECT_EQ(pending.calls(), 1);

  EXPECT_EQ(subscriber_events.WaitForConnectionEvents(2), (std::vector<bool>{true, false}));
  EXPECT_EQ(publisher_events.WaitForConnectionEvents(2), (std::vector<bool>{true, false}));
  EXPECT_FALSE(subscriber_events.last_loss_reason().empty());
  EXPECT_FALSE(publisher->connected());
  Outcome refused;
  Status while_down = publisher->Publish("cairn/outage/down", "down", refused.Callback());
  EXPECT_TRUE(while_down.Is(StatusCode::kUnavailable)) << while_down.ToString();
  EXPECT_EQ(publisher->stats().inflight, 0u);
  // Both keep trying while the broker is away.
  EXPECT_TRUE(Eventually([&] { return publisher->stats().connect_failures >= 1; }));

  Status restarted = broker_.Restart();
  ASSERT_TRUE(restarted.ok()) << restarted.ToString();
  ASSERT_TRUE(subscriber->WaitConnected(kWaitMs))
      << subscriber->stats().last_error << " failures " << subscriber->stats().connect_failures
      << broker_.ReadLog();
  ASSERT_TRUE(publisher->WaitConnected(kWaitMs)) << publisher->stats().last_error << broker_.ReadLog();
  EXPECT_EQ(subscriber_events.WaitForConnectionEvents(3), (std::vector<bool>{true, false, true}));

  // A fresh broker knows no subscriptions: the link renewed its own.
  Outcome after;
  ASSERT_TRUE(publisher->Publish("cairn/outage/after", "after restart", after.Callback()).ok());
  std::optional<Status> after_done = after.Wait();
  ASSERT_TRUE(after_done.has_value());
  EXPECT_TRUE(after_done->ok()) << after_done->ToString();
  EXPECT_EQ(subscriber_events.WaitForPayload("after restart"), "cairn/outage/after") << broker_.ReadLog();

  MqttLinkStats stats = subscriber->stats();
  EXPECT_EQ(stats.connects, 2u);
  EXPECT_EQ(stats.connection_losses, 1u);
  EXPECT_EQ(refused.calls(), 0);
}

TEST_F(MqttLinkBrokerTest, PersistentSessionDeliversWhatArrivedWhileAway) {
  StartBroker();
  MqttLinkOptions subscriber_options = LinkOptions(broker_, "cairn-link-persistent", {"cairn/queued"});
  subscriber_options.clean_session = false;
  {
    Recorder events;
    std::unique_ptr<MqttLink> subscriber = MakeLink(subscriber_options, &events);
    ASSERT_TRUE(subscriber && subscriber->WaitConnected(kWaitMs)) << broker_.ReadLog();
    subscriber->Stop();
  }
  std::unique_ptr<MqttLink> publisher = MakeLink(LinkOptions(broker_, "cairn-link-persistent-publisher"));
  ASSERT_TRUE(publisher && publisher->WaitConnected(kWaitMs));
  Outcome outcome;
  ASSERT_TRUE(publisher->Publish("cairn/queued", "while away", outcome.Callback()).ok());
  std::optional<Status> acked = outcome.Wait();
  ASSERT_TRUE(acked.has_value());
  ASSERT_TRUE(acked->ok()) << acked->ToString();

  Recorder events;
  std::unique_ptr<MqttLink> subscriber = MakeLink(subscriber_options, &events);
  ASSERT_TRUE(subscriber);
  EXPECT_EQ(events.WaitForPayload("while away"), "cairn/queued") << broker_.ReadLog();
  EXPECT_EQ(events.messages().size(), 1u);
}

// Handlers publish while the broker hands a persistent session's queued
// messages to the link right after CONNACK: the announcement of the
// connection and the deliveries must not wait on each other.
TEST_F(MqttLinkBrokerTest, HandlersPublishWhileQueuedMessagesArrive) {
  StartBroker();
  MqttLinkOptions options = LinkOptions(broker_, "cairn-link-busy", {"cairn/busy/in"});
  options.clean_session = false;
  {
    std::unique_ptr<MqttLink> first = MakeLink(options);
    ASSERT_TRUE(first && first->WaitConnected(kWaitMs)) << broker_.ReadLog();
  }
  std::unique_ptr<MqttLink> publisher = MakeLink(LinkOptions(broker_, "cairn-link-busy-publisher"));
  ASSERT_TRUE(publisher && publisher->WaitConnected(kWaitMs));
  constexpr int kQueued = 20;
  for (int i = 0; i < kQueued; ++i) {
    Outcome outcome;
    ASSERT_TRUE(publisher->Publish("cairn/busy/in", "queued " + std::to_string(i), outcome.Callback()).ok());
    std::optional<Status> acked = outcome.Wait();
    ASSERT_TRUE(acked && acked->ok());
  }

  MqttLink* link_in_handler = nullptr;
  std::mutex mutex;
  Status hello_status = Status::Internal("connection handler did not run");
  Outcome hello;
  struct Echo {
    Outcome outcome;
    bool accepted = false;
  };
  std::vector<std::unique_ptr<Echo>> echoes;
  Recorder events;
  Result<std::unique_ptr<MqttLink>> busy = MqttLink::Create(
      Env::Default(), options,
      [&](std::string_view topic, std::string_view payload) {
        events.MessageHandler()(topic, payload);
        std::lock_guard<std::mutex> lock(mutex);
        echoes.push_back(std::make_unique<Echo>());
        echoes.back()->accepted =
            link_in_handler
                ->Publish("cairn/busy/echo", std::string(payload), echoes.back()->outcome.Callback())
                .ok();
      },
      [&](bool connected, const std::string&) {
        if (!connected) return;
        std::lock_guard<std::mutex> lock(mutex);
        hello_status = link_in_handler->Publish("cairn/busy/hello", "hello", hello.Callback());
      });
  ASSERT_TRUE(busy.ok()) << busy.status().ToString();
  link_in_handler = busy->get();
  ASSERT_TRUE((*busy)->Start().ok());
  ASSERT_TRUE(events.WaitForPayload("queued " + std::to_string(kQueued - 1)).has_value())
      << broker_.ReadLog();
  std::optional<Status> hello_done = hello.Wait();
  ASSERT_TRUE(hello_done.has_value());
  EXPECT_TRUE(hello_done->ok()) << hello_done->ToString();
  EXPECT_EQ(events.messages().size(), static_cast<size_t>(kQueued));
  (*busy)->Stop();
  std::lock_guard<std::mutex> lock(mutex);
  EXPECT_TRUE(hello_status.ok()) << hello_status.ToString();
  // Every echo was either refused at once (not yet connected, or the window
  // full) and never reported, or accepted and reported exactly once, by
  // Stop at the latest.
  ASSERT_EQ(echoes.size(), static_cast<size_t>(kQueued));
  for (const std::unique_ptr<Echo>& echo : echoes) EXPECT_EQ(echo->outcome.calls(), echo->accepted ? 1 : 0);
}

TEST_F(MqttLinkBrokerTest, TlsWithTheBrokersCa) {
  MakePki();
  ASSERT_FALSE(HasFatalFailure());
  MosquittoBrokerOptions broker_options;
  broker_options.tls = true;
  broker_options.pki = pki_;
  StartBroker(broker_options);
  ASSERT_FALSE(HasFatalFailure());

  Recorder events;
  std::unique_ptr<MqttLink> link =
      MakeLink(TlsLinkOptions("cairn-link-tls", pki_.ca_certificate_path, false), &events);
  ASSERT_TRUE(link);
  ASSERT_TRUE(link->WaitConnected(kWaitMs)) << link->stats().last_error << broker_.ReadLog();
  ExpectRoundTrip(link.get(), &events, "cairn/tls/a", "over tls");

  // The mqtts:// spelling reaches the same broker.
  MqttLinkOptions mqtts = TlsLinkOptions("cairn-link-mqtts", pki_.ca_certificate_path, false);
  mqtts.server_uri = "mqtts://127.0.0.1:" + std::to_string(broker_.port());
  Recorder mqtts_events;
  std::unique_ptr<MqttLink> mqtts_link = MakeLink(mqtts, &mqtts_events);
  ASSERT_TRUE(mqtts_link);
  ASSERT_TRUE(mqtts_link->WaitConnected(kWaitMs)) << mqtts_link->stats().last_error << broker_.ReadLog();
  ExpectRoundTrip(mqtts_link.get(), &mqtts_events, "cairn/tls/b", "over mqtts");

  // A link that trusts another CA refuses the broker, again and again.
  std::unique_ptr<MqttLink> misled =
      MakeLink(TlsLinkOptions("cairn-link-wrong-ca", pki_.other_ca_certificate_path, false));
  ASSERT_TRUE(misled);
  EXPECT_TRUE(Eventually([&] { return misled->stats().connect_failures >= 2; })) << broker_.ReadLog();
  EXPECT_FALSE(misled->connected());
  EXPECT_EQ(misled->stats().connects, 0u);
  EXPECT_FALSE(misled->stats().last_error.empty());
}

TEST_F(MqttLinkBrokerTest, MutualTls) {
  MakePki();
  ASSERT_FALSE(HasFatalFailure());
  MosquittoBrokerOptions broker_options;
  broker_options.tls = true;
  broker_options.pki = pki_;
  broker_options.require_client_certificate = true;
  StartBroker(broker_options);
  ASSERT_FALSE(HasFatalFailure());

  Recorder events;
  std::unique_ptr<MqttLink> link =
      MakeLink(TlsLinkOptions("cairn-link-mutual", pki_.ca_certificate_path, true), &events);
  ASSERT_TRUE(link);
  ASSERT_TRUE(link->WaitConnected(kWaitMs)) << link->stats().last_error << broker_.ReadLog();
  ExpectRoundTrip(link.get(), &events, "cairn/tls/mutual", "mutual tls");

  Recorder anonymous_events;
  std::unique_ptr<MqttLink> anonymous = MakeLink(
      TlsLinkOptions("cairn-link-no-certificate", pki_.ca_certificate_path, false), &anonymous_events);
  ASSERT_TRUE(anonymous);
  EXPECT_TRUE(Eventually([&] { return anonymous->stats().connect_failures >= 2; })) << broker_.ReadLog();
  EXPECT_TRUE(broker_.WaitForLog("peer did not return a certificate", kWaitMs)) << broker_.ReadLog();
  MqttLinkStats stats = anonymous->stats();
  EXPECT_FALSE(stats.connected);
  EXPECT_EQ(stats.connects, 0u);
  EXPECT_FALSE(stats.last_error.empty());
  anonymous->Stop();
  EXPECT_TRUE(anonymous_events.messages().empty());
}

TEST_F(MqttLinkBrokerTest, UserNameAndPassword) {
  MosquittoBrokerOptions broker_options;
  broker_options.username = "gateway";
  broker_options.password = "s3cret pass";
  StartBroker(broker_options);

  MqttLinkOptions right = LinkOptions(broker_, "cairn-link-right-password", {"cairn/auth"});
  right.username = "gateway";
  right.password = "s3cret pass";
  Recorder events;
  std::unique_ptr<MqttLink> link = MakeLink(right, &events);
  ASSERT_TRUE(link);
  ASSERT_TRUE(link->WaitConnected(kWaitMs)) << link->stats().last_error << broker_.ReadLog();
  ExpectRoundTrip(link.get(), &events, "cairn/auth", "authenticated");

  MqttLinkOptions wrong = right;
  wrong.client_id = "cairn-link-wrong-password";
  wrong.password = "not it";
  std::unique_ptr<MqttLink> refused = MakeLink(wrong);
  ASSERT_TRUE(refused);
  EXPECT_TRUE(Eventually([&] { return refused->stats().connect_failures >= 1; }));
  MqttLinkStats stats = refused->stats();
  EXPECT_EQ(stats.connects, 0u);
  EXPECT_NE(stats.last_error.find("not authorized"), std::string::npos) << stats.last_error;
}

}  // namespace
}  // namespace cairn
