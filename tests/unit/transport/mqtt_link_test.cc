// MqttLink's option checks and the behaviour of a link that never reached a
// broker. The tests against a real mosquitto are in
// tests/integration/mqtt_link_test.cc.
#include "cairn/mqtt/mqtt_link.h"

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "cairn/platform/env.h"

#include "test_dirs.h"

namespace cairn {
namespace {

MqttLinkOptions PlainOptions() {
  MqttLinkOptions options;
  // Port 1 on loopback: nothing listens there, connects are refused at once.
  options.server_uri = "tcp://127.0.0.1:1";
  options.client_id = "cairn-unit";
  return options;
}

// The InvalidArgument message, or "OK" / another code's text when Create did
// not refuse as expected.
std::string Refusal(const MqttLinkOptions& options) {
  Result<std::unique_ptr<MqttLink>> link = MqttLink::Create(Env::Default(), options);
  if (link.ok()) return "OK";
  if (!link.status().Is(StatusCode::kInvalidArgument)) return link.status().ToString();
  return link.status().message();
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class MqttLinkOptionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ca_path_ = dir_.PathOf("ca.pem");
    ASSERT_TRUE(Env::Default()->WriteFileAtomically(ca_path_, "-----BEGIN CERTIFICATE-----\n").ok());
    empty_path_ = dir_.PathOf("empty.pem");
    ASSERT_TRUE(Env::Default()->WriteFileAtomically(empty_path_, "").ok());
  }

  ScopedTempDir dir_{"cairn-mqtt-options"};
  std::string ca_path_;
  std::string empty_path_;
};

TEST_F(MqttLinkOptionsTest, AcceptsPlainAndTlsOptions) {
  EXPECT_EQ(Refusal(PlainOptions()), "OK");

  MqttLinkOptions tls = PlainOptions();
  tls.server_uri = "mqtts://localhost:8883";
  tls.tls = MqttTlsOptions{ca_path_, "", "", true};
  EXPECT_EQ(Refusal(tls), "OK");
  tls.server_uri = "ssl://[::1]:8883";
  EXPECT_EQ(Refusal(tls), "OK");

  MqttLinkOptions no_port = PlainOptions();
  no_port.server_uri = "tcp://broker.local";
  no_port.username = "gateway";
  no_port.password = "secret";
  no_port.subscriptions = {"sensors/+/readings", "alarms/#", "#", "+"};
  EXPECT_EQ(Refusal(no_port), "OK");
}

TEST_F(MqttLinkOptionsTest, RefusesBadServerUris) {
  for (const char* uri : {"", "127.0.0.1:1883", "http://127.0.0.1:1883", "ws://127.0.0.1:80", "tcp://",
                          "tcp://:1883", "tcp://127.0.0.1:", "tcp://127.0.0.1:0", "tcp://127.0.0.1:65536",
                          "tcp://127.0.0.1:18a3", "tcp://[::1", "tcp://host/path"}) {
    MqttLinkOptions options = PlainOptions();
    options.server_uri = uri;
    const std::string refusal = Refusal(options);
    EXPECT_NE(refusal, "OK") << uri;
    EXPECT_TRUE(Contains(refusal, "URI")) << uri << ": " << refusal;
  }
}

TEST_F(MqttLinkOptionsTest, TlsSchemeAndTlsOptionsGoTogether) {
  MqttLinkOptions missing = PlainOptions();
  missing.server_uri = "ssl://127.0.0.1:8883";
  EXPECT_TRUE(Contains(Refusal(missing), "no TLS options")) << Refusal(missing);
  missing.server_uri = "mqtts://127.0.0.1:8883";
  EXPECT_TRUE(Contains(Refusal(missing), "no TLS options")) << Refusal(missing);

  MqttLinkOptions extra = PlainOptions();
  extra.tls = MqttTlsOptions{ca_path_, "", "", true};
  EXPECT_TRUE(Contains(Refusal(extra), "plain tcp://")) << Refusal(extra);
}

TEST_F(MqttLinkOptionsTest, RefusesMissingOrUnreadableTlsFiles) {
  MqttLinkOptions options = PlainOptions();
  options.server_uri = "ssl://127.0.0.1:8883";

  const std::string missing = dir_.PathOf("missing.pem");
  options.tls = MqttTlsOptions{missing, "", "", true};
  EXPECT_TRUE(Contains(Refusal(options), missing)) << Refusal(options);

  options.tls = MqttTlsOptions{empty_path_, "", "", true};
  EXPECT_TRUE(Contains(Refusal(options), empty_path_)) << Refusal(options);

  // A directory is not a readable file.
  options.tls = MqttTlsOptions{dir_.path(), "", "", true};
  EXPECT_TRUE(Contains(Refusal(options), dir_.path())) << Refusal(options);

  options.tls = MqttTlsOptions{ca_path_, ca_path_, "", true};
  EXPECT_TRUE(Contains(Refusal(options), "together")) << Refusal(options);
  options.tls = MqttTlsOptions{ca_path_, "", ca_path_, true};
  EXPECT_TRUE(Contains(Refusal(options), "together")) << Refusal(options);

  const std::string missing_key = dir_.PathOf("client.key");
  options.tls = MqttTlsOptions{ca_path_, ca_path_, missing_key, true};
  EXPECT_TRUE(Contains(Refusal(options), missing_key)) << Refusal(options);
}

TEST_F(MqttLinkOptionsTest, RefusesBadIdentityAndLimits) {
  MqttLinkOptions options = PlainOptions();
  options.client_id = "";
  EXPECT_TRUE(Contains(Refusal(options), "client id")) << Refusal(options);
  options.client_id = std::string(65536, 'c');
  EXPECT_TRUE(Contains(Refusal(options), "client id")) << Refusal(options);
  options.client_id = "bad\xff";
  EXPECT_TRUE(Contains(Refusal(options), "client id")) << Refusal(options);
  options.client_id = std::string("nul\0id", 6);
  EXPECT_TRUE(Contains(Refusal(options), "client id")) << Refusal(options);

  options = PlainOptions();
  options.password = "secret";
  EXPECT_TRUE(Contains(Refusal(options), "password")) << Refusal(options);

  options = PlainOptions();
  options.max_inflight = 0;
  EXPECT_TRUE(Contains(Refusal(options), "max_inflight")) << Refusal(options);

  options = PlainOptions();
  options.reconnect_min_ms = 0;
  EXPECT_TRUE(Contains(Refusal(options), "backoff")) << Refusal(options);
  options.reconnect_min_ms = 1000;
  options.reconnect_max_ms = 999;
  EXPECT_TRUE(Contains(Refusal(options), "backoff")) << Refusal(options);

  options = PlainOptions();
  options.connect_timeout_ms = 0;
  EXPECT_TRUE(Contains(Refusal(options), "connect_timeout_ms")) << Refusal(options);
  options = PlainOptions();
  options.keep_alive_seconds = -1;
  EXPECT_TRUE(Contains(Refusal(options), "keep_alive_seconds")) << Refusal(options);
}

TEST_F(MqttLinkOptionsTest, RefusesBadSubscriptionFilters) {
  for (const char* filter : {"", "a/#/b", "a/b#", "a+/b", "a/+b", "##"}) {
    MqttLinkOptions options = PlainOptions();
    options.subscriptions = {"good/+", filter};
    EXPECT_NE(Refusal(options), "OK") << filter;
  }
}

TEST(MqttLinkTest, UnstartedLinkRefusesPublishAndStopsTwice) {
  Result<std::unique_ptr<MqttLink>> link = MqttLink::Create(Env::Default(), PlainOptions());
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  bool called = false;
  Status published = (*link)->Publish("cairn/t", "x", [&](const Status&) { called = true; });
  EXPECT_TRUE(published.Is(StatusCode::kUnavailable)) << published.ToString();
  EXPECT_FALSE((*link)->connected());
  EXPECT_FALSE((*link)->WaitConnected(0));

  for (const char* topic : {"", "cairn/#", "cairn/+/x"}) {
    Status invalid = (*link)->Publish(topic, "x", [&](const Status&) { called = true; });
    EXPECT_TRUE(invalid.Is(StatusCode::kInvalidArgument)) << topic << ": " << invalid.ToString();
  }
  (*link)->Stop();
  (*link)->Stop();
  EXPECT_TRUE((*link)->Start().Is(StatusCode::kFailedPrecondition));
  EXPECT_FALSE(called);
  EXPECT_EQ((*link)->stats().published, 0u);
}

TEST(MqttLinkTest, KeepsRetryingARefusedBrokerUntilStopped) {
  MqttLinkOptions options = PlainOptions();
  options.reconnect_min_ms = 1;
  options.reconnect_max_ms = 5;
  int connection_calls = 0;
  Result<std::unique_ptr<MqttLink>> link =
      MqttLink::Create(Env::Default(), options, {}, [&](bool, const std::string&) { ++connection_calls; });
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  ASSERT_TRUE((*link)->Start().ok());
  EXPECT_TRUE((*link)->Start().Is(StatusCode::kFailedPrecondition));
  // Bounded: a refused loopback connect fails at once, so several attempts
  // happen well within the deadline.
  const int64_t deadline = Env::Default()->MonotonicNanos() + 20'000'000'000;
  while ((*link)->stats().connect_failures < 3 && Env::Default()->MonotonicNanos() < deadline) {
    Env::Default()->SleepForMicros(10'000);
  }
  MqttLinkStats stats = (*link)->stats();
  EXPECT_GE(stats.connect_failures, 3u);
  EXPECT_EQ(stats.connects, 0u);
  EXPECT_FALSE(stats.connected);
  EXPECT_FALSE(stats.last_error.empty());
  (*link)->Stop();
  const uint64_t failures_at_stop = (*link)->stats().connect_failures;
  Env::Default()->SleepForMicros(50'000);
  EXPECT_EQ((*link)->stats().connect_failures, failures_at_stop);
  // Never connected, so never lost: the handler is not told of failed attempts.
  EXPECT_EQ(connection_calls, 0);
}

}  // namespace
}  // namespace cairn
