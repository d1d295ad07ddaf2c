// The harness the sync tests build on, checked against the real peers:
// mosquitto brokers driven by Paho MQTT C++ (plain TCP, TLS with and without
// client certificates, a wrong CA, passwords, a persistent session across a
// restart, kill -9) and PostgreSQL clusters through libpq (an SQL round trip,
// two clusters side by side, crash recovery after kill -9).
//
// Every wait is bounded. Brokers, clusters and clients are stopped by their
// destructors, also when an assertion fails half-way.
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <gtest/gtest.h>
#include <mqtt/async_client.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cairn/platform/env.h"

#include "mosquitto_broker.h"
#include "postgres_cluster.h"
#include "test_dirs.h"
#include "test_pki.h"

namespace cairn {
namespace {

constexpr auto kWait = std::chrono::seconds(30);
constexpr int kWaitMs = 30000;
// MQTT 3.1.1 CONNACK return code 5.
constexpr int kConnackNotAuthorized = 5;

// A Paho client that consumes incoming messages into a queue (started before
// connecting, so messages a broker delivers right after CONNACK are kept) and
// disconnects, bounded, when destroyed.
class TestClient {
 public:
  TestClient(const std::string& server_uri, const std::string& client_id) : client_(server_uri, client_id) {
    client_.start_consuming();
  }
  ~TestClient() {
    try {
      if (client_.is_connected()) client_.disconnect()->wait_for(std::chrono::seconds(5));
    } catch (const mqtt::exception&) {
      // Already gone: nothing left to close.
    }
  }
  TestClient(const TestClient&) = delete;
  TestClient& operator=(const TestClient&) = delete;

  // Connects; returns "" on success, otherwise why it failed.
  std::string Connect(mqtt::connect_options options) {
    last_return_code_ = 0;
    try {
      mqtt::token_ptr token = client_.connect(options);
      if (!token->wait_for(kWait)) return "connect timed out";
      session_present_ = token->get_connect_response().is_session_present();
      return "";
    } catch (const mqtt::exception& error) {
      last_return_code_ = error.get_return_code();
      return std::string("connect failed: ") + error.what();
    }
  }

  // Paho's code for the last failed Connect (a CONNACK return code when the
  // broker answered), 0 after a successful one.
  int last_return_code() const { return last_return_code_; }

  std::string Subscribe(const std::string& topic, int qos) {
    try {
      return client_.subscribe(topic, qos)->wait_for(kWait) ? "" : "subscribe timed out";
    } catch (const mqtt::exception& error) {
      return std::string("subscribe failed: ") + error.what();
    }
  }

  // Publishes and waits for the broker's acknowledgement (PUBACK for QoS 1).
  std::string Publish(const std::string& topic, const std::string& payload, int qos) {
    try {
      return client_.publish(mqtt::make_message(topic, payload, qos, false))->wait_for(kWait)
                 ? ""
                 : "publish timed out";
    } catch (const mqtt::exception& error) {
      return std::string("publish failed: ") + error.what();
    }
  }

  std::string Disconnect() {
    try {
      return client_.disconnect()->wait_for(kWait) ? "" : "disconnect timed out";
    } catch (const mqtt::exception& error) {
      return std::string("disconnect failed: ") + error.what();
    }
  }

  // The next message delivered, or nothing when none came within kWait or
  // the connection was lost.
  mqtt::const_message_ptr Receive() {
    mqtt::const_message_ptr message;
    if (!client_.try_consume_message_for(&message, kWait)) return nullptr;
    return message;
  }

  // From the last successful Connect's CONNACK.
  bool session_present() const { return session_present_; }

 private:
  mqtt::async_client client_;
  bool session_present_ = false;
  int last_return_code_ = 0;
};

mqtt::connect_options_builder BaseOptions(bool clean_session) {
  mqtt::connect_options_builder builder;
  // A fixed protocol version: Paho's default retries a refused 3.1.1 CONNECT
  // as 3.1, which would blur what was refused.
  builder.mqtt_version(MQTTVERSION_3_1_1)
      .clean_session(clean_session)
      .connect_timeout(std::chrono::seconds(20))
      .keep_alive_interval(std::chrono::seconds(60));
  return builder;
}

mqtt::connect_options PlainOptions(bool clean_session = true) {
  return BaseOptions(clean_session).finalize();
}

// TLS trusting `ca_path`, with the test's client certificate when
// `with_client_certificate`. The server's name (127.0.0.1) is checked too.
mqtt::connect_options TlsOptions(const TestPki& pki, const std::string& ca_path,
                                 bool with_client_certificate) {
  mqtt::ssl_options_builder ssl;
  ssl.trust_store(ca_path).enable_server_cert_auth(true).verify(true);
  if (with_client_certificate) ssl.key_store(pki.client_certificate_path).private_key(pki.client_key_path);
  return BaseOptions(true).ssl(ssl.finalize()).finalize();
}

std::string PayloadOf(const mqtt::const_message_ptr& message) {
  return message ? message->to_string() : "<no message>";
}

class MosquittoBrokerTest : public ::testing::Test {
 protected:
  // Makes a PKI and a TLS broker that requires client certificates.
  void StartTlsBroker() {
    Result<TestPki> pki = GenerateTestPki(pki_dir_.path());
    ASSERT_TRUE(pki.ok()) << pki.status().ToString();
    pki_ = *pki;
    MosquittoBrokerOptions options;
    options.tls = true;
    options.pki = pki_;
    options.require_client_certificate = true;
    Status started = broker_.Start(options);
    ASSERT_TRUE(started.ok()) << started.ToString();
  }

  ScopedTempDir pki_dir_{"cairn-harness-pki"};
  TestPki pki_;
  MosquittoBroker broker_;
};

TEST_F(MosquittoBrokerTest, PlainBrokerDeliversQos1) {
  Status started = broker_.Start(MosquittoBrokerOptions());
  ASSERT_TRUE(started.ok()) << started.ToString();
  EXPECT_TRUE(broker_.running());
  EXPECT_NE(broker_.port(), 0);
  EXPECT_EQ(broker_.server_uri(), "tcp://127.0.0.1:" + std::to_string(broker_.port()));
  EXPECT_TRUE(broker_.Start(MosquittoBrokerOptions()).Is(StatusCode::kFailedPrecondition));

  TestClient subscriber(broker_.server_uri(), "harness-plain-subscriber");
  ASSERT_EQ(subscriber.Connect(PlainOptions()), "") << broker_.ReadLog();
  ASSERT_EQ(subscriber.Subscribe("cairn/harness/plain", 1), "");
  TestClient publisher(broker_.server_uri(), "harness-plain-publisher");
  ASSERT_EQ(publisher.Connect(PlainOptions()), "") << broker_.ReadLog();
  ASSERT_EQ(publisher.Publish("cairn/harness/plain", "reading 21.5", 1), "");

  mqtt::const_message_ptr message = subscriber.Receive();
  ASSERT_NE(message, nullptr) << broker_.ReadLog();
  EXPECT_EQ(message->get_topic(), "cairn/harness/plain");
  EXPECT_EQ(message->to_string(), "reading 21.5");
  EXPECT_EQ(message->get_qos(), 1);

  EXPECT_TRUE(broker_.Stop().ok());
  EXPECT_FALSE(broker_.running());
  EXPECT_NE(broker_.ReadLog().find("harness-plain-publisher"), std::string::npos) << broker_.ReadLog();
}

TEST_F(MosquittoBrokerTest, TlsBrokerAcceptsClientWithCertificate) {
  StartTlsBroker();
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_EQ(broker_.server_uri(), "ssl://127.0.0.1:" + std::to_string(broker_.port()));

  TestClient subscriber(broker_.server_uri(), "harness-tls-subscriber");
  ASSERT_EQ(subscriber.Connect(TlsOptions(pki_, pki_.ca_certificate_path, true)), "") << broker_.ReadLog();
  ASSERT_EQ(subscriber.Subscribe("cairn/harness/tls", 1), "");
  TestClient publisher(broker_.server_uri(), "harness-tls-publisher");
  ASSERT_EQ(publisher.Connect(TlsOptions(pki_, pki_.ca_certificate_path, true)), "") << broker_.ReadLog();
  ASSERT_EQ(publisher.Publish("cairn/harness/tls", "over tls", 1), "");
  EXPECT_EQ(PayloadOf(subscriber.Receive()), "over tls");
}

TEST_F(MosquittoBrokerTest, TlsBrokerRefusesClientWithoutCertificate) {
  StartTlsBroker();
  ASSERT_FALSE(HasFatalFailure());

  TestClient anonymous(broker_.server_uri(), "harness-no-certificate");
  EXPECT_NE(anonymous.Connect(TlsOptions(pki_, pki_.ca_certificate_path, false)), "");
  EXPECT_TRUE(broker_.WaitForLog("peer did not return a certificate", kWaitMs)) << broker_.ReadLog();
  // The broker is up and only the missing certificate was the problem.
  TestClient with_certificate(broker_.server_uri(), "harness-with-certificate");
  EXPECT_EQ(with_certificate.Connect(TlsOptions(pki_, pki_.ca_certificate_path, true)), "")
      << broker_.ReadLog();
}

TEST_F(MosquittoBrokerTest, TlsClientRefusesBrokerSignedByAnotherCa) {
  StartTlsBroker();
  ASSERT_FALSE(HasFatalFailure());

  TestClient misled(broker_.server_uri(), "harness-wrong-ca");
  EXPECT_NE(misled.Connect(TlsOptions(pki_, pki_.other_ca_certificate_path, true)), "");
  // The client rejected the broker's certificate and told it so.
  EXPECT_TRUE(broker_.WaitForLog("alert unknown ca", kWaitMs)) << broker_.ReadLog();
  TestClient trusting(broker_.server_uri(), "harness-right-ca");
  EXPECT_EQ(trusting.Connect(TlsOptions(pki_, pki_.ca_certificate_path, true)), "") << broker_.ReadLog();
}

TEST_F(MosquittoBrokerTest, PasswordFileAdmitsOnlyTheConfiguredUser) {
  MosquittoBrokerOptions options;
  options.username = "gateway";
  options.password = "s3cret pass";
  Status started = broker_.Start(options);
  ASSERT_TRUE(started.ok()) << started.ToString();

  TestClient anonymous(broker_.server_uri(), "harness-anonymous");
  EXPECT_NE(anonymous.Connect(PlainOptions()), "");
  EXPECT_EQ(anonymous.last_return_code(), kConnackNotAuthorized);
  TestClient wrong(broker_.server_uri(), "harness-wrong-password");
  EXPECT_NE(wrong.Connect(BaseOptions(true).user_name("gateway").password("not it").finalize()), "");
  EXPECT_EQ(wrong.last_return_code(), kConnackNotAuthorized);
  TestClient right(broker_.server_uri(), "harness-right-password");
  EXPECT_EQ(right.Connect(BaseOptions(true).user_name("gateway").password("s3cret pass").finalize()), "")
      << broker_.ReadLog();
}

// The scenario the sync tests need: a QoS 1 message published while the
// subscriber was offline, a broker restart, then the subscriber reconnects
// with clean session off and gets it.
TEST_F(MosquittoBrokerTest, PersistentSessionKeepsQueuedMessageAcrossRestart) {
  MosquittoBrokerOptions options;
  options.persistence = true;
  Status started = broker_.Start(options);
  ASSERT_TRUE(started.ok()) << started.ToString();
  const uint16_t port = broker_.port();
  {
    TestClient subscriber(broker_.server_uri(), "harness-persistent-subscriber");
    ASSERT_EQ(subscriber.Connect(PlainOptions(false)), "") << broker_.ReadLog();
    ASSERT_EQ(subscriber.Subscribe("cairn/harness/queued", 1), "");
    ASSERT_EQ(subscriber.Disconnect(), "");
  }
  {
    TestClient publisher(broker_.server_uri(), "harness-persistent-publisher");
    ASSERT_EQ(publisher.Connect(PlainOptions()), "") << broker_.ReadLog();
    ASSERT_EQ(publisher.Publish("cairn/harness/queued", "published while offline", 1), "");
    ASSERT_EQ(publisher.Disconnect(), "");
  }

  Status restarted = broker_.Restart();
  ASSERT_TRUE(restarted.ok()) << restarted.ToString();
  EXPECT_EQ(broker_.port(), port);

  TestClient subscriber(broker_.server_uri(), "harness-persistent-subscriber");
  ASSERT_EQ(subscriber.Connect(PlainOptions(false)), "") << broker_.ReadLog();
  EXPECT_TRUE(subscriber.session_present());
  mqtt::const_message_ptr message = subscriber.Receive();
  ASSERT_NE(message, nullptr) << broker_.ReadLog();
  EXPECT_EQ(message->to_string(), "published while offline");
  EXPECT_EQ(message->get_qos(), 1);
}

// The control for the test above: without persistence a restart forgets the
// session, so it is the persistence directory that carries it.
TEST_F(MosquittoBrokerTest, RestartWithoutPersistenceForgetsSessions) {
  Status started = broker_.Start(MosquittoBrokerOptions());
  ASSERT_TRUE(started.ok()) << started.ToString();
  {
    TestClient subscriber(broker_.server_uri(), "harness-forgotten-subscriber");
    ASSERT_EQ(subscriber.Connect(PlainOptions(false)), "") << broker_.ReadLog();
    ASSERT_EQ(subscriber.Subscribe("cairn/harness/forgotten", 1), "");
    ASSERT_EQ(subscriber.Disconnect(), "");
  }
  {
    // Same broker, no restart: the session is there.
    TestClient subscriber(broker_.server_uri(), "harness-forgotten-subscriber");
    ASSERT_EQ(subscriber.Connect(PlainOptions(false)), "") << broker_.ReadLog();
    EXPECT_TRUE(subscriber.session_present());
    ASSERT_EQ(subscriber.Disconnect(), "");
  }
  Status restarted = broker_.Restart();
  ASSERT_TRUE(restarted.ok()) << restarted.ToString();
  TestClient subscriber(broker_.server_uri(), "harness-forgotten-subscriber");
  ASSERT_EQ(subscriber.Connect(PlainOptions(false)), "") << broker_.ReadLog();
  EXPECT_FALSE(subscriber.session_present());
}

TEST_F(MosquittoBrokerTest, KilledBrokerRefusesConnectionsUntilRestarted) {
  EXPECT_TRUE(broker_.Restart().Is(StatusCode::kFailedPrecondition));
  Status started = broker_.Start(MosquittoBrokerOptions());
  ASSERT_TRUE(started.ok()) << started.ToString();
  const uint16_t port = broker_.port();

  broker_.Kill();
  EXPECT_FALSE(broker_.running());
  TestClient refused(broker_.server_uri(), "harness-while-down");
  EXPECT_NE(refused.Connect(PlainOptions()), "");

  Status restarted = broker_.Restart();
  ASSERT_TRUE(restarted.ok()) << restarted.ToString();
  EXPECT_TRUE(broker_.running());
  EXPECT_EQ(broker_.port(), port);
  TestClient client(broker_.server_uri(), "harness-after-restart");
  EXPECT_EQ(client.Connect(PlainOptions()), "") << broker_.ReadLog();
}

// Another process took the port while the broker was down: Restart says so
// instead of believing the intruder is the broker.
TEST_F(MosquittoBrokerTest, RestartReportsPortTakenWhileDown) {
  Status started = broker_.Start(MosquittoBrokerOptions());
  ASSERT_TRUE(started.ok()) << started.ToString();
  ASSERT_TRUE(broker_.Stop().ok());
  {
    Result<std::unique_ptr<TcpListener>> intruder = Env::Default()->ListenTcp("127.0.0.1", broker_.port());
    ASSERT_TRUE(intruder.ok()) << intruder.status().ToString();
    Status restarted = broker_.Restart();
    EXPECT_TRUE(restarted.Is(StatusCode::kUnavailable)) << restarted.ToString();
    EXPECT_NE(restarted.message().find("was taken"), std::string::npos) << restarted.ToString();
    EXPECT_FALSE(broker_.running());
  }
  Status restarted = broker_.Restart();
  ASSERT_TRUE(restarted.ok()) << restarted.ToString();
  TestClient client(broker_.server_uri(), "harness-after-intruder");
  EXPECT_EQ(client.Connect(PlainOptions()), "") << broker_.ReadLog();
}

// ---- PostgreSQL --------------------------------------------------------------

QueryRows Rows(std::initializer_list<std::vector<std::string>> rows) { return QueryRows(rows); }

TEST(PostgresClusterTest, StartsRunsSqlAndStops) {
  PostgresCluster cluster;
  Status started = cluster.Start();
  ASSERT_TRUE(started.ok()) << started.ToString();
  EXPECT_TRUE(cluster.running());
  ASSERT_NE(cluster.port(), 0);
  EXPECT_EQ(cluster.connection_string(),
            "host=127.0.0.1 port=" + std::to_string(cluster.port()) + " dbname=cairn user=" + cluster.user());
  if (::geteuid() == 0) {
    // PostgreSQL refuses root; the harness's own user owns the cluster.
    EXPECT_EQ(cluster.user(), "cairn-pg");
    struct stat data_stat;
    ASSERT_EQ(::stat(cluster.data_directory().c_str(), &data_stat), 0);
    EXPECT_NE(data_stat.st_uid, 0u);
  }

  Result<QueryRows> settings = cluster.Query("SELECT current_database(), current_setting('fsync')");
  ASSERT_TRUE(settings.ok()) << settings.status().ToString();
  EXPECT_EQ(*settings, Rows({{"cairn", "on"}}));

  Result<QueryRows> created = cluster.Query(
      "CREATE TABLE readings (device text NOT NULL, at bigint NOT NULL, value double precision);"
      "INSERT INTO readings VALUES ('pump-1', 1700000000000, 21.5), ('pump-2', 1700000000001, NULL)");
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_TRUE(created->empty());
  Result<QueryRows> selected = cluster.Query("SELECT device, at, value FROM readings ORDER BY device");
  ASSERT_TRUE(selected.ok()) << selected.status().ToString();
  EXPECT_EQ(*selected, Rows({{"pump-1", "1700000000000", "21.5"}, {"pump-2", "1700000000001", ""}}));

  Result<QueryRows> missing = cluster.Query("SELECT * FROM no_such_table");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.status().Is(StatusCode::kInvalidArgument)) << missing.status().ToString();
  EXPECT_NE(missing.status().message().find("no_such_table"), std::string::npos);

  const uint16_t port = cluster.port();
  Status stopped = cluster.Stop();
  ASSERT_TRUE(stopped.ok()) << stopped.ToString();
  EXPECT_FALSE(cluster.running());
  Result<QueryRows> while_down = cluster.Query("SELECT 1");
  ASSERT_FALSE(while_down.ok());
  EXPECT_TRUE(while_down.status().Is(StatusCode::kUnavailable)) << while_down.status().ToString();

  {
    // Another process took the port while the server was down.
    Result<std::unique_ptr<TcpListener>> intruder = Env::Default()->ListenTcp("127.0.0.1", port);
    ASSERT_TRUE(intruder.ok()) << intruder.status().ToString();
    started = cluster.Start();
    EXPECT_TRUE(started.Is(StatusCode::kUnavailable)) << started.ToString();
    EXPECT_NE(started.message().find("was taken"), std::string::npos) << started.ToString();
    EXPECT_FALSE(cluster.running());
  }

  // A clean restart of the same cluster keeps its port and its rows.
  started = cluster.Start();
  ASSERT_TRUE(started.ok()) << started.ToString();
  EXPECT_EQ(cluster.port(), port);
  Result<QueryRows> count = cluster.Query("SELECT count(*) FROM readings");
  ASSERT_TRUE(count.ok()) << count.status().ToString();
  EXPECT_EQ(*count, Rows({{"2"}}));
}

TEST(PostgresClusterTest, TwoClustersRunSideBySide) {
  PostgresCluster first;
  PostgresCluster second;
  Status started = first.Start();
  ASSERT_TRUE(started.ok()) << started.ToString();
  started = second.Start();
  ASSERT_TRUE(started.ok()) << started.ToString();
  EXPECT_NE(first.port(), second.port());
  EXPECT_NE(first.directory(), second.directory());

  for (auto [cluster, name] : {std::pair{&first, "first"}, std::pair{&second, "second"}}) {
    Result<QueryRows> written = cluster->Query("CREATE TABLE owner (name text); INSERT INTO owner VALUES ('" +
                                               std::string(name) + "')");
    ASSERT_TRUE(written.ok()) << written.status().ToString();
  }
  Result<QueryRows> from_first = first.Query("SELECT name FROM owner");
  Result<QueryRows> from_second = second.Query("SELECT name FROM owner");
  ASSERT_TRUE(from_first.ok()) << from_first.status().ToString();
  ASSERT_TRUE(from_second.ok()) << from_second.status().ToString();
  EXPECT_EQ(*from_first, Rows({{"first"}}));
  EXPECT_EQ(*from_second, Rows({{"second"}}));

  // Stopping one leaves the other serving.
  Status stopped = first.Stop();
  ASSERT_TRUE(stopped.ok()) << stopped.ToString();
  Result<QueryRows> still = second.Query("SELECT name FROM owner");
  ASSERT_TRUE(still.ok()) << still.status().ToString();
  EXPECT_EQ(*still, Rows({{"second"}}));
}

TEST(PostgresClusterTest, KilledClusterRecoversCommittedRowsOnStart) {
  PostgresCluster cluster;
  Status started = cluster.Start();
  ASSERT_TRUE(started.ok()) << started.ToString();
  Result<QueryRows> written = cluster.Query(
      "CREATE TABLE readings (seq integer PRIMARY KEY, value double precision);"
      "INSERT INTO readings SELECT n, n * 0.5 FROM generate_series(1, 1000) AS n");
  ASSERT_TRUE(written.ok()) << written.status().ToString();

  Status killed = cluster.Kill();
  ASSERT_TRUE(killed.ok()) << killed.ToString();
  EXPECT_FALSE(cluster.running());
  Result<QueryRows> while_down = cluster.Query("SELECT 1");
  EXPECT_FALSE(while_down.ok());

  started = cluster.Start();
  ASSERT_TRUE(started.ok()) << started.ToString();
  // The server replayed its write-ahead log instead of starting clean.
  EXPECT_NE(cluster.ReadLog().find("automatic recovery in progress"), std::string::npos) << cluster.ReadLog();
  Result<QueryRows> summary = cluster.Query("SELECT count(*), sum(seq), max(value) FROM readings");
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(*summary, Rows({{"1000", "500500", "500"}}));
}

}  // namespace
}  // namespace cairn
