// MqttLink: one MQTT connection that stays up, for the three users of MQTT
// in cairn: the sync sender in cairnd, the local sensor input in cairnd, and
// the cloud-side cairn-ingest.
//
// MqttLink is the interface those users program against; they obtain links
// through an MqttLinkFactory, which is MqttLink::Create (Paho MQTT C++'s
// async client) unless a test hands them another. Every link keeps the
// contract written on the methods below.
//
// What MqttLink::Create adds to Paho:
//   - reconnection forever, with exponential backoff and full jitter (the
//     delay before attempt n is uniform in [0, min(max, min_delay * 2^n)]),
//     so a fleet of gateways does not reconnect in lockstep after an outage;
//   - subscriptions declared once and renewed on every connect;
//   - a bounded window of QoS 1 publishes awaiting PUBACK, refused beyond it
//     instead of queued without limit;
//   - Paho's own persistence switched off: it does not fsync, and cairn's
//     store (or, for ingest, the database) is the record of what was sent.
//
// Messages are QoS 1 in both directions. With clean_session off the broker
// keeps the session (subscriptions and QoS 1 messages for it) across
// disconnects, so nothing published to a subscriber while it was away is
// lost.
//
// Thread-safety: every method may be called from any thread. Handlers and
// publish callbacks run on the link's threads (Paho's), one at a time; they
// may call Publish and connected(), and must not call Stop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/platform/env.h"
#include "cairn/platform/status.h"

namespace cairn {

// TLS to the broker, through Paho's SSL options (OpenSSL underneath).
struct MqttTlsOptions {
  std::string ca_file;  // PEM; the broker's certificate must chain to it
  // Both or neither: the client certificate and key for mutual TLS (PEM).
  std::string cert_file;
  std::string key_file;
  // Check that the broker's certificate names the host of server_uri.
  bool verify_hostname = true;
};

struct MqttLinkOptions {
  // "tcp://host:port", or "ssl://host:port" / "mqtts://host:port" with tls.
  std::string server_uri;
  // 1..65535 bytes of UTF-8; the broker keys the persistent session by it.
  std::string client_id;
  std::string username;  // optional; empty: none
  std::string password;  // optional; only with a username
  std::optional<MqttTlsOptions> tls;  // required for ssl:// and mqtts://
  bool clean_session = false;
  int keep_alive_seconds = 30;
  int connect_timeout_ms = 10'000;
  // QoS 1 publishes awaiting PUBACK at most; Publish refuses beyond.
  size_t max_inflight = 32;
  // Reconnect backoff bounds (full jitter between 0 and the bound).
  int64_t reconnect_min_ms = 250;
  int64_t reconnect_max_ms = 60'000;
  // Topic filters subscribed with QoS 1 on every successful connect.
  std::vector<std::string> subscriptions;
};

// Counters since Create, for the shell and /metrics.
struct MqttLinkStats {
  bool connected = false;
  uint64_t connects = 0;         // successful connects
  uint64_t connect_failures = 0;
  uint64_t connection_losses = 0;
  uint64_t published = 0;        // publishes handed to the broker
  uint64_t acknowledged = 0;     // PUBACKs received
  uint64_t publish_failures = 0; // publishes that ended without PUBACK
  uint64_t received = 0;         // messages delivered to the handler
  uint64_t bytes_published = 0;  // payload bytes of `published`
  size_t inflight = 0;
  std::string last_error;        // the most recent connect or publish error
};

class MqttLink {
 public:
  // Called for every message on a subscribed topic. The message is
  // acknowledged to the broker when the handler returns, so a handler that
  // must not lose a message does its durable work before returning.
  using MessageHandler = std::function<void(std::string_view topic, std::string_view payload)>;
  // Called after every connect (true, "") and every loss of the connection
  // (false, reason).
  using ConnectionHandler = std::function<void(bool connected, const std::string& reason)>;
  // Called exactly once per accepted Publish: OK on PUBACK, an error when the
  // message could not be confirmed (connection lost, Stop). After an error
  // the broker may or may not have the message.
  using PublishCallback = std::function<void(const Status&)>;

  // Checks the options (InvalidArgument naming the problem: bad URI scheme,
  // TLS files missing or unreadable, password without user, empty client id,
  // max_inflight 0, backoff bounds) and builds the client without connecting.
  // `env` supplies the clock, random bytes for jitter and threads; it must
  // outlive the link. Handlers may be empty.
  static Result<std::unique_ptr<MqttLink>> Create(Env* env, MqttLinkOptions options,
                                                  MessageHandler on_message = {},
                                                  ConnectionHandler on_connection = {});

  // Stops (as Stop) before destruction.
  virtual ~MqttLink() = default;

  // Starts connecting in the background and returns at once; from then on
  // the link reconnects after every loss until Stop. FailedPrecondition if
  // already started or stopped.
  virtual Status Start() = 0;

  // Publishes `payload` to `topic` with QoS 1 (retain off). Unavailable
  // when not connected or when max_inflight publishes await PUBACK: nothing
  // was sent and `done` will not be called; the caller tries again later.
  // InvalidArgument for an invalid topic name (empty, '#', '+').
  virtual Status Publish(const std::string& topic, std::string payload, PublishCallback done) = 0;

  // Blocks until connected or `timeout_ms` passes; true when connected.
  virtual bool WaitConnected(int64_t timeout_ms) = 0;

  virtual bool connected() const = 0;
  virtual MqttLinkStats stats() const = 0;

  // Disconnects (waiting up to a second for in-flight PUBACKs), fails the
  // remaining publish callbacks with Unavailable (stopped before PUBACK), and returns after the last
  // handler call. No handler runs afterwards. Idempotent.
  virtual void Stop() = 0;
};

// Builds a link as MqttLink::Create does (checking the options, without
// connecting); the handlers follow MqttLink's contract. SyncAgent, MqttInput
// and IngestService take one in their options, defaulting to
// MqttLink::Create, so that tests can connect them to an in-memory broker.
using MqttLinkFactory = std::function<Result<std::unique_ptr<MqttLink>>(
    Env* env, MqttLinkOptions options, MqttLink::MessageHandler on_message,
    MqttLink::ConnectionHandler on_connection)>;

// The window rule of MqttLink::Publish, for every implementation of MqttLink
// (Create's and the tests' in-memory one) so that they refuse alike: OK when
// a link with `options`, `inflight` publishes awaiting PUBACK, stopping or
// not and connected or not, may take one more publish; otherwise
// Unavailable saying why (stopped, not connected, max_inflight reached).
// Pure; the caller holds whatever lock makes its arguments current.
Status CheckPublishAdmission(const MqttLinkOptions& options, bool stopping, bool connected, size_t inflight);

}  // namespace cairn
