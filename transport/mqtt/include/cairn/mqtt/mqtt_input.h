// MqttInput: sensor readings published to an MQTT broker on the gateway,
// stored like any other write (DESIGN §6, local input).
//
// cairnd subscribes to the topic filters of its routes; each message is one
// batch of readings for the route's table, in line protocol or in cairn's
// JSON reading format (transport/mqtt/src/mqtt_input_format.md). The first
// route whose filter matches a message's topic decides its table.
//
// Delivery: messages are QoS 1 with a persistent session (clean_session
// off), so what is published while cairnd is down waits at the broker.
// Paho C acknowledges a QoS 1 message (PUBACK) as soon as it has read it
// from the network, before the handler runs; the handler writes the
// message's records (Engine::WriteReceived) and returns once they are
// durable per the engine's durability mode. A crash in between loses the
// messages Paho had read and not yet handed over; MQTT 3.1.1 through Paho
// offers no later acknowledgement.
//
// Because the broker already has its acknowledgement, the sync quota's
// budget does not refuse these writes (WriteReceived): holding them back
// would only move them into memory, and a gateway broker drops what it
// queues beyond its limit (mosquitto: max_queued_messages, 1000 by default)
// during a long outage. Only a refusal as a whole that no waiting in the
// handler may fix (Unavailable, or ResourceExhausted when free disk space
// is below the quota's floor) pauses the input. The handler must not wait:
// Paho reads the network of every client in the process on one thread, and
// the sync agent's link needs it for the receipts that drain the backlog.
// So the handler moves the message's records into a held queue in memory
// and returns, and the input's own thread (never one of Paho's) stops the
// link, so the broker queues what is published behind it. Messages that
// still arrive before the link is stopped join the held queue, never
// written ahead of it. The input's thread retries the held messages in
// order with backoff (retry_min_ms..retry_max_ms, full jitter), and once all
// are stored it connects a new link and the broker delivers what it queued
// meanwhile. Held messages live only in memory: a crash during the pause
// loses them, and so does Stop (it counts them in messages_failed and logs
// each).
//
// Bad input never blocks the subscription: lines or readings that do not
// parse, or that the engine refuses, are counted and logged and the good
// ones of the same message are stored; a message for an unknown table is
// counted and dropped.
//
// Thread-safety: every method may be called from any thread; Stop must not be
// called from `log`. The input runs one thread of its own from Start to Stop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/core/engine.h"
#include "cairn/core/record.h"
#include "cairn/platform/env.h"
#include "cairn/platform/status.h"
#include "cairn/text/line_protocol.h"
#include "cairn/mqtt/mqtt_link.h"

namespace cairn {

// Messages on topics matching `topic_filter` (MQTT wildcards '+' and '#')
// are stored in `table`, which must exist.
struct MqttInputRoute {
  std::string topic_filter;
  std::string table;
};

// Parses the command-line form "FILTER=TABLE", e.g.
// "sensors/+/readings=readings". The table is after the last '=' (a topic
// filter may contain '='). InvalidArgument naming the problem for a missing
// '=', an empty side or a bad filter.
Result<MqttInputRoute> ParseMqttInputRoute(std::string_view text);

struct MqttInputOptions {
  // The broker connection. Its subscriptions must be empty: MqttInput
  // subscribes to the routes' filters. Use clean_session off (the default)
  // so that readings published while cairnd is down or the input is paused
  // wait at the broker; with it on, the broker drops them.
  MqttLinkOptions link;
  // Builds the link from `link`, at Create and again after every pause.
  MqttLinkFactory link_factory = &MqttLink::Create;
  // At least one.
  std::vector<MqttInputRoute> routes;
  // Unit of timestamps in line protocol and in JSON "time".
  TimestampPrecision precision = TimestampPrecision::kNanoseconds;
  // The line-protocol tag that names the device (JSON uses "device").
  std::string device_tag = "device";
  // Longer lines are refused (as for HTTP writes).
  size_t max_line_bytes = 64 * 1024;
  // Backoff bounds between write attempts of a held message while the engine
  // refuses it (full jitter).
  int64_t retry_min_ms = 100;
  int64_t retry_max_ms = 5'000;
  // Receives one line per problem (bad line, refused record, unknown table,
  // engine refusal, held message lost at Stop); optional. Called on Paho's
  // thread, on the input's thread or in Stop, one call at a time; must not
  // block long.
  std::function<void(std::string_view)> log;
};

// Counters since Create.
struct MqttInputStats {
  uint64_t messages = 0;          // messages settled (stored, partly stored or failed); a held
                                  // message counts once it is stored or lost
  uint64_t records_stored = 0;    // records the engine stored (or had: duplicates)
  uint64_t records_rejected = 0;  // bad lines/readings, invalid or lower-version records
  uint64_t messages_failed = 0;   // messages of which nothing could be stored for a reason not
                                  // in the records: unknown table, unparseable JSON, write error
  uint64_t write_retries = 0;     // Engine::Write attempts repeated after a refusal
  uint64_t pauses = 0;            // times the engine's refusal paused the input
  bool paused = false;            // the link is stopped for a pause (from its stop to the resume)
  uint64_t messages_held = 0;     // refused or arrived during a pause, in memory, not yet stored
  std::string last_error;
  MqttLinkStats link;
};

class MqttInput {
 public:
  // Checks the options (InvalidArgument: no routes, a bad filter or empty
  // table, link subscriptions given, bad link options, backoff bounds) and
  // creates the link without connecting. `env` and `engine` must outlive the
  // input; `engine` may be called from Paho's thread and from the input's.
  static Result<std::unique_ptr<MqttInput>> Create(Env* env, Engine* engine, MqttInputOptions options);

  // Stops first.
  ~MqttInput();

  MqttInput(const MqttInput&) = delete;
  MqttInput& operator=(const MqttInput&) = delete;

  // Connects in the background and keeps the connection (MqttLink::Start),
  // and starts the input's thread. FailedPrecondition when already started
  // or stopped.
  Status Start();

  // Ends a pause (waiting at most for an engine write in progress), stops
  // the link, then counts the held messages as failed and logs them as lost.
  // No engine write starts after it returns. Idempotent.
  void Stop();

  MqttInputStats stats() const;

  // Blocks until the link is connected and subscribed, at most `timeout_ms`;
  // during a pause, until the new link is. False after Stop.
  bool WaitConnected(int64_t timeout_ms);

  // Exposed for tests and the payload documentation: turns one message into
  // records. Line protocol unless the first non-blank byte is '{' or '['
  // (JSON). Bad lines or readings go to `errors` ("line N: reason" /
  // "reading N: reason"); InvalidArgument only when the JSON as a whole
  // does not parse or has the wrong shape.
  static Status ParsePayload(std::string_view payload, const LineProtocolOptions& options,
                             std::vector<Record>* records, std::vector<std::string>* errors);

 private:
  class Impl;
  explicit MqttInput(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cairn
