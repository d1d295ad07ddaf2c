// FakeMqttBroker: an in-memory MQTT broker, and the MqttLinks that connect
// to it, for logic tests of SyncAgent, MqttInput and IngestService. They
// take factory() as their MqttLinkFactory instead of MqttLink::Create, so
// their tests need no broker process; the real-broker tests
// (tests/integration/*mqtt*, sync_test, ingest_test) keep covering the wire.
//
// What it models, because those users depend on it:
//   - QoS 1 in both directions; a publish is PUBACKed by the broker when it
//     routes it, and delivered to every session with a matching filter
//     ('+' one level, '#' the rest, '$' topics not matched by a leading
//     wildcard);
//   - persistent sessions (clean_session off): subscriptions and undelivered
//     messages are kept by client id across disconnects and links, and the
//     kept messages are delivered right after the next connect, before the
//     link announces itself and takes publishes (as Paho does);
//   - a second connect with the same client id takes the session over and
//     drops the first connection;
//   - MqttLink's contract: at most max_inflight publishes await PUBACK,
//     every accepted publish's callback runs exactly once, Stop returns
//     after the last handler call, a stopped link does not start again.
// It checks topic names, filters and the publish window with the real
// link's own functions (mqtt_topic.h, CheckPublishAdmission), so it refuses
// what MqttLink::Create's link refuses, with the same words.
// What it leaves out: QoS 0 and 2, retained messages, shared subscriptions
// (no user subscribes with $share), the option checks of MqttLink::Create
// beyond the client id, max_inflight and the filters.
//
// Faults are commands for the next N publishes whose topic matches a
// filter: drop the message (PUBACKed, delivered to no one), withhold the
// PUBACK (delivered; the publisher learns only when the connection drops),
// duplicate it, or reorder a group; and for connections: drop a client's
// connection, refuse connects.
//
// Threads: the broker does everything on one thread of its own, in the
// order it was asked, as Paho reads every client of a process on one
// thread: routing, PUBACKs, connects, and every link's handlers and
// callbacks, one at a time. A link whose connection drops connects again at
// once (no backoff) unless the broker refuses connects.
//
// Thread-safety: every method of the broker and of its links may be called
// from any thread, except that handlers must not call the link's Stop (as
// for MqttLink) nor the broker's WaitIdle. The broker must outlive its
// links.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cairn/platform/mutex.h"
#include "cairn/mqtt/mqtt_link.h"
#include "cairn/mqtt/mqtt_topic.h"

namespace cairn {


// One publish as the broker received it.
struct FakeMqttMessage {
  std::string client_id;  // the publishing link's; empty for FakeMqttBroker::Publish
  std::string topic;
  std::string payload;
};

class FakeMqttBroker {
 public:
  FakeMqttBroker();
  // Stops the broker's thread; what it has not done yet is not done.
  ~FakeMqttBroker();
  FakeMqttBroker(const FakeMqttBroker&) = delete;
  FakeMqttBroker& operator=(const FakeMqttBroker&) = delete;

  // Makes links connected to this broker (the factory ignores its Env).
  MqttLinkFactory factory();

  // Publishes with QoS 1 as another client would (a sensor, a test peer).
  void Publish(const std::string& topic, std::string payload);

  // The next `count` publishes on topics matching `filter`:
  // PUBACKed to the publisher, delivered to no one.
  void DropMessages(const std::string& filter, int count);
  // delivered, but never PUBACKed; the publish callback fails when the
  // publisher's connection drops or its link stops.
  void WithholdAcks(const std::string& filter, int count);
  // delivered twice to each matching session.
  void DuplicateMessages(const std::string& filter, int count);
  // held back until all `count` have arrived, then delivered newest first.
  void ReorderMessages(const std::string& filter, int count);

  // Drops the connection of `client_id` (its handlers learn it as a loss);
  // the link connects again at once. No-op when it is not connected.
  void DisconnectClient(const std::string& client_id);
  // Refuses the next `count` connect attempts (each counts as a failure of
  // its link, which tries again at once).
  void RefuseConnects(int count);
  // Off: every connect attempt is refused and the link waits; on again:
  // the waiting links connect.
  void SetAcceptingConnects(bool accepting);

  // Every publish received so far on a topic matching `filter`, in order,
  // before any fault applied.
  std::vector<FakeMqttMessage> published(const std::string& filter = "#") const;
  // Waits until published(filter) has at least `count` messages; false when
  // `timeout_ms` passed first.
  bool WaitForPublished(const std::string& filter, size_t count, int64_t timeout_ms) const;
  // Returns when the broker's thread has nothing left to do.
  void WaitIdle();
  // Successful connects of `client_id` so far.
  uint64_t connects(const std::string& client_id) const;

  // For the links (fake_mqtt_link.cc); not for tests.
  class Link;

 private:
  struct Session {
    std::vector<std::string> filters;
    std::deque<FakeMqttMessage> queue;  // to deliver, oldest first
    std::shared_ptr<Link> link;         // connected link, or none
    bool clean = false;                 // ends when its link disconnects
    uint64_t connects = 0;
  };
  enum class FaultKind { kDrop, kWithholdAck, kDuplicate, kReorder };
  struct Fault {
    FaultKind kind;
    std::string filter;
    int remaining;
    int group;                             // kReorder: the group's size
    std::vector<FakeMqttMessage> held;     // kReorder: arrived so far
  };

  friend class Link;
  void Post(std::function<void()> task) EXCLUDES(mu_);
  void Run() EXCLUDES(mu_);
  void AddFault(FaultKind kind, const std::string& filter, int count) EXCLUDES(mu_);
  // Broker-thread tasks.
  void Connect(const std::shared_ptr<Link>& link) EXCLUDES(mu_);
  void Route(const std::shared_ptr<Link>& from, uint64_t key, FakeMqttMessage message) EXCLUDES(mu_);
  void Deliver(const std::string& client_id) EXCLUDES(mu_);
  void Drop(const std::string& client_id, const std::string& reason) EXCLUDES(mu_);
  // From a link's Stop: the link leaves its session and the waiting list.
  void Detach(const Link* link) EXCLUDES(mu_);
  void DetachLocked(const Link* link) REQUIRES(mu_);

  mutable Mutex mu_;
  mutable CondVar changed_;
  std::deque<std::function<void()>> tasks_ GUARDED_BY(mu_);
  bool busy_ GUARDED_BY(mu_) = false;
  bool shutting_down_ GUARDED_BY(mu_) = false;
  std::map<std::string, Session> sessions_ GUARDED_BY(mu_);
  std::vector<Fault> faults_ GUARDED_BY(mu_);
  std::vector<FakeMqttMessage> published_ GUARDED_BY(mu_);
  int refuse_connects_ GUARDED_BY(mu_) = 0;
  bool accepting_ GUARDED_BY(mu_) = true;
  std::vector<std::shared_ptr<Link>> waiting_ GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace cairn
