// The in-memory broker the MQTT users' logic tests stand on
// (tests/support/fake_mqtt_link.h): topic matching, persistent and clean
// sessions, the in-flight window, and the publish callbacks on a lost
// connection and on Stop, as MqttLink's contract and a broker give them.
#include "fake_mqtt_link.h"

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace cairn {
namespace {

constexpr int kWaitMs = 10'000;

struct Received {
  std::vector<std::string> payloads;
  std::vector<Status> outcomes;
};

std::unique_ptr<MqttLink> Connect(FakeMqttBroker& broker, const std::string& client_id,
                                  std::vector<std::string> subscriptions, Received* received,
                                  bool clean_session = false, size_t max_inflight = 32) {
  MqttLinkOptions options;
  options.server_uri = "tcp://broker:1883";
  options.client_id = client_id;
  options.clean_session = clean_session;
  options.max_inflight = max_inflight;
  options.subscriptions = std::move(subscriptions);
  Result<std::unique_ptr<MqttLink>> link = broker.factory()(
      Env::Default(), options,
      [received](std::string_view, std::string_view payload) { received->payloads.emplace_back(payload); }, {});
  EXPECT_TRUE(link.ok()) << link.status().ToString();
  if (!link.ok()) return nullptr;
  EXPECT_TRUE((*link)->Start().ok());
  EXPECT_TRUE((*link)->WaitConnected(kWaitMs));
  return std::move(*link);
}

// The broker routes by the product's own matcher; this pins its rules.
TEST(FakeMqttBrokerTest, MatchesTopicsAsMqttDoes) {
  EXPECT_TRUE(MqttTopicMatches("a/+/c", "a/b/c"));
  EXPECT_FALSE(MqttTopicMatches("a/+/c", "a/b/d"));
  EXPECT_FALSE(MqttTopicMatches("a/+", "a/b/c"));
  EXPECT_TRUE(MqttTopicMatches("a/#", "a"));
  EXPECT_TRUE(MqttTopicMatches("a/#", "a/b/c"));
  EXPECT_TRUE(MqttTopicMatches("#", "a/b"));
  EXPECT_FALSE(MqttTopicMatches("#", "$SYS/load"));
  EXPECT_FALSE(MqttTopicMatches("+/load", "$SYS/load"));
  EXPECT_TRUE(MqttTopicMatches("$SYS/#", "$SYS/load"));
  EXPECT_FALSE(MqttTopicMatches("a/b", "a/b/c"));
}

// A persistent session keeps what is published while no link has it and
// hands it to the next link with the same client id; a clean one does not.
TEST(FakeMqttBrokerTest, PersistentSessionsKeepMessagesAcrossLinks) {
  FakeMqttBroker broker;
  Received first, second, clean;
  Connect(broker, "kept", {"s/#"}, &first).reset();
  Connect(broker, "clean", {"s/#"}, &clean, /*clean_session=*/true).reset();
  broker.Publish("s/1", "one");
  broker.Publish("s/2", "two");
  broker.WaitIdle();
  std::unique_ptr<MqttLink> again = Connect(broker, "kept", {}, &second);
  std::unique_ptr<MqttLink> clean_again = Connect(broker, "clean", {}, &clean, /*clean_session=*/true);
  broker.WaitIdle();
  EXPECT_TRUE(first.payloads.empty());
  EXPECT_EQ(second.payloads, (std::vector<std::string>{"one", "two"}));
  EXPECT_TRUE(clean.payloads.empty());
  EXPECT_EQ(broker.connects("kept"), 2u);
}

// Publishes whose PUBACK is withheld fill the window; the connection's loss
// fails them, the link connects again, and Stop fails what is left.
TEST(FakeMqttBrokerTest, WithheldAcksFillTheWindowAndFailOnLossAndStop) {
  FakeMqttBroker broker;
  Received subscriber, publisher;
  std::unique_ptr<MqttLink> sub = Connect(broker, "sub", {"t/#"}, &subscriber);
  std::unique_ptr<MqttLink> pub = Connect(broker, "pub", {}, &publisher, false, /*max_inflight=*/2);
  broker.WithholdAcks("t/#", 4);
  auto record = [&](const Status& status) { publisher.outcomes.push_back(status); };
  ASSERT_TRUE(pub->Publish("t/1", "a", record).ok());
  ASSERT_TRUE(pub->Publish("t/2", "b", record).ok());
  EXPECT_TRUE(pub->Publish("t/3", "c", record).Is(StatusCode::kUnavailable));
  EXPECT_TRUE(pub->Publish("t/#", "d", record).Is(StatusCode::kInvalidArgument));
  broker.WaitIdle();
  EXPECT_EQ(subscriber.payloads, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(publisher.outcomes.empty());

  broker.DisconnectClient("pub");
  broker.WaitIdle();
  ASSERT_EQ(publisher.outcomes.size(), 2u);
  EXPECT_TRUE(publisher.outcomes[0].Is(StatusCode::kUnavailable));
  ASSERT_TRUE(pub->WaitConnected(kWaitMs));
  EXPECT_EQ(pub->stats().connection_losses, 1u);

  ASSERT_TRUE(pub->Publish("t/4", "e", record).ok());
  broker.WaitIdle();
  pub->Stop();
  ASSERT_EQ(publisher.outcomes.size(), 3u);
  EXPECT_TRUE(publisher.outcomes[2].Is(StatusCode::kUnavailable));
  EXPECT_TRUE(pub->Start().Is(StatusCode::kFailedPrecondition));
  EXPECT_EQ(broker.published("t/#").size(), 3u);
}

// The fake checks with the real link's functions, so both refuse a bad
// filter or topic, and a publish while not connected, in the same words.
TEST(FakeMqttBrokerTest, RefusesWhatTheRealLinkRefusesInItsWords) {
  FakeMqttBroker broker;
  MqttLinkOptions options;
  // Port 1 on loopback: the real link is built but never connects.
  options.server_uri = "tcp://127.0.0.1:1";
  options.client_id = "twin";
  for (const char* filter : {"", "a/#/b", "a/b#", "a+/b", "##", "a/\xff"}) {
    SCOPED_TRACE(filter);
    MqttLinkOptions bad = options;
    bad.subscriptions = {"good/+", filter};
    Result<std::unique_ptr<MqttLink>> real = MqttLink::Create(Env::Default(), bad);
    Result<std::unique_ptr<MqttLink>> fake = broker.factory()(Env::Default(), bad, {}, {});
    ASSERT_FALSE(real.ok());
    ASSERT_FALSE(fake.ok());
    EXPECT_EQ(fake.status().ToString(), real.status().ToString());
  }
  Result<std::unique_ptr<MqttLink>> real = MqttLink::Create(Env::Default(), options);
  Result<std::unique_ptr<MqttLink>> fake = broker.factory()(Env::Default(), options, {}, {});
  ASSERT_TRUE(real.ok()) << real.status().ToString();
  ASSERT_TRUE(fake.ok()) << fake.status().ToString();
  for (const char* topic : {"", "t/#", "t/+/x", "t/\xff", "t/ok"}) {
    SCOPED_TRACE(topic);
    Status from_real = (*real)->Publish(topic, "x", {});
    EXPECT_FALSE(from_real.ok());
    EXPECT_EQ((*fake)->Publish(topic, "x", {}).ToString(), from_real.ToString());
  }
}

TEST(FakeMqttBrokerTest, RefusedConnectsCountAsFailuresUntilAccepted) {
  FakeMqttBroker broker;
  Received received;
  broker.RefuseConnects(2);
  std::unique_ptr<MqttLink> link = Connect(broker, "c", {}, &received);
  EXPECT_EQ(link->stats().connect_failures, 2u);
  broker.SetAcceptingConnects(false);
  broker.DisconnectClient("c");
  broker.WaitIdle();
  EXPECT_FALSE(link->connected());
  broker.SetAcceptingConnects(true);
  EXPECT_TRUE(link->WaitConnected(kWaitMs));
  EXPECT_EQ(broker.connects("c"), 2u);
}

}  // namespace
}  // namespace cairn
