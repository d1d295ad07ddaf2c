// MqttInput: sensor readings published to an MQTT broker on the gateway,
// stored like any other write (DESIGN §6, local input).
//
// cairnd subscribes to the topic filters of its routes; each message is one
// batch of readings for the route's table, in line protocol or in cairn's
// JSON reading format (transport/src/mqtt/mqtt_input_format.md). The first
// route whose filter matches a message's topic decides its table.
//
// Delivery: the message is QoS 1 and acknowledged to the broker only after
// its handler returns, and the handler returns after Engine::Write did (the
// records are durable per the engine's durability mode). While the engine
// refuses a write as a whole with Unavailable or ResourceExhausted (a quota
// in backpressure mode), the handler keeps retrying the same message with
// backoff, so the broker keeps it and everything behind it queued. Paho runs
// every client's callbacks and network traffic of the process on shared
// threads under one lock, so during such a retry no other MqttLink in the
// process makes progress either. Stop ends a retry: the handler returns,
// so that message is acknowledged without being stored; it is counted as
// failed and logged.
//
// Bad input never blocks the subscription: lines or readings that do not
// parse, or that the engine refuses, are counted and logged and the good
// ones of the same message are stored; a message for an unknown table is
// counted and dropped.
//
// Thread-safety: every method may be called from any thread; Stop must not be
// called from `log`.
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
#include "cairn/transport/line_protocol.h"
#include "cairn/transport/mqtt_link.h"

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
  // so that readings published while cairnd is down wait at the broker.
  MqttLinkOptions link;
  // At least one.
  std::vector<MqttInputRoute> routes;
  // Unit of timestamps in line protocol and in JSON "time".
  TimestampPrecision precision = TimestampPrecision::kNanoseconds;
  // The line-protocol tag that names the device (JSON uses "device").
  std::string device_tag = "device";
  // Longer lines are refused (as for HTTP writes).
  size_t max_line_bytes = 64 * 1024;
  // Backoff bounds while the engine refuses writes (full jitter).
  int64_t retry_min_ms = 100;
  int64_t retry_max_ms = 5'000;
  // Receives one line per problem (bad line, refused record, unknown table,
  // engine refusal); optional. Called on Paho's thread; must not block long.
  std::function<void(std::string_view)> log;
};

// Counters since Create.
struct MqttInputStats {
  uint64_t messages = 0;          // messages handled (stored, partly stored or failed)
  uint64_t records_stored = 0;    // records the engine stored (or had: duplicates)
  uint64_t records_rejected = 0;  // bad lines/readings, invalid or lower-version records
  uint64_t messages_failed = 0;   // messages of which nothing could be stored for a reason not
                                  // in the records: unknown table, unparseable JSON, write error
  uint64_t write_retries = 0;     // Engine::Write attempts repeated after a refusal
  std::string last_error;
  MqttLinkStats link;
};

class MqttInput {
 public:
  // Checks the options (InvalidArgument: no routes, a bad filter or empty
  // table, link subscriptions given, bad link options, backoff bounds) and
  // creates the link without connecting. `env` and `engine` must outlive the
  // input.
  static Result<std::unique_ptr<MqttInput>> Create(Env* env, Engine* engine, MqttInputOptions options);

  // Stops first.
  ~MqttInput();

  MqttInput(const MqttInput&) = delete;
  MqttInput& operator=(const MqttInput&) = delete;

  // Connects in the background and keeps the connection (MqttLink::Start).
  Status Start();

  // Ends a write retry in progress, then stops the link (MqttLink::Stop).
  // No engine write starts after it returns. Idempotent.
  void Stop();

  MqttInputStats stats() const;

  // Blocks until the link is connected and subscribed, at most `timeout_ms`.
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
