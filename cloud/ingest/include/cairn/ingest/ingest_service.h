// IngestService: the reference cloud ingest service (DESIGN §6). One MQTT
// connection with a persistent session (clean_session off, QoS 1) subscribed
// to "<prefix>/+/+/+", an IngestHandler per message, and the receipt
// published with QoS 1 after the commit and before the handler returns,
// i.e. before the envelope is acknowledged to the broker. A crash at any
// point therefore leads to a redelivery (by the broker, or a re-send by the
// gateway), which the sink absorbs as duplicates.
//
// One exception to "before the handler returns": messages the broker kept
// for the session arrive right after it accepts the connection, while the
// link does not take publishes yet. Their receipts are queued and published
// once the link is up (or with the next message); a crash meanwhile loses
// only receipts, and the gateway re-sends those batches.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "cairn/ingest/ingest_handler.h"
#include "cairn/ingest/ingest_sink.h"
#include "cairn/platform/env.h"
#include "cairn/platform/mutex.h"
#include "cairn/platform/status.h"
#include "cairn/mqtt/mqtt_link.h"

namespace cairn {

struct IngestServiceOptions {
  // The broker connection. The service sets clean_session = false and its
  // own subscription; other subscriptions are kept.
  MqttLinkOptions link;
  // Builds the link from `link`.
  MqttLinkFactory link_factory = &MqttLink::Create;
  IngestHandlerOptions ingest;
  // Receives log lines (without newline): connection changes ("subscribed to
  // <filter> on <server_uri>" after every connect), every refused
  // or rejected message, sink errors, and a progress line every
  // `progress_every_batches` stored batches (0: none). Empty: no logging.
  // Called on MQTT threads.
  std::function<void(std::string_view line)> log;
  uint64_t progress_every_batches = 1000;
  // How long a receipt publish may wait for room in the link's in-flight
  // window before it is given up (the gateway re-sends the batch later).
  int64_t receipt_wait_ms = 5'000;
};

struct IngestServiceStats {
  IngestStats ingest;
  MqttLinkStats link;
  uint64_t receipts_published = 0;     // accepted by the link
  uint64_t receipts_acknowledged = 0;  // PUBACK received
  uint64_t receipt_failures = 0;       // not published, or ended without PUBACK
  // Receipts that waited for the connection before they were handed to the
  // link (see IngestService).
  uint64_t receipts_deferred = 0;
};

class IngestService {
 public:
  // Checks the options (as MqttLink::Create, plus the prefix and the keys:
  // InvalidArgument) and builds the link without connecting. `env` must
  // outlive the service; the service owns `sink`.
  static Result<std::unique_ptr<IngestService>> Create(Env* env, IngestServiceOptions options,
                                                       std::unique_ptr<IngestSink> sink);

  // Stops (as Stop).
  ~IngestService();
  IngestService(const IngestService&) = delete;
  IngestService& operator=(const IngestService&) = delete;

  // Starts connecting in the background; messages are handled from the
  // first connect on. FailedPrecondition when already started.
  Status Start();

  // Blocks until connected or `timeout_ms` passes; true when connected.
  bool WaitConnected(int64_t timeout_ms);

  // The subscription filter, "<prefix>/+/+/+".
  const std::string& subscription() const { return subscription_; }

  // Ends sink retries, disconnects and returns after the last message
  // handler returned. Idempotent.
  void Stop();

  IngestServiceStats stats() const;

 private:
  struct Counters;
  IngestService(Env* env, IngestServiceOptions options, std::unique_ptr<IngestSink> sink);
  void OnMessage(std::string_view topic, std::string_view payload);
  void OnConnection(bool connected, const std::string& reason);
  // Publishes now, or queues the receipt when the link cannot take it yet.
  void PublishReceipt(OutgoingReceipt receipt) EXCLUDES(deferred_mutex_);
  Status TryPublish(const OutgoingReceipt& receipt);
  void DeferReceipt(OutgoingReceipt receipt) EXCLUDES(deferred_mutex_);
  // Publishes queued receipts, oldest first, while the link takes them.
  void FlushDeferredReceipts() EXCLUDES(deferred_mutex_);
  void Log(std::string_view line);

  // Queued receipts beyond this are dropped (and counted as failures).
  static constexpr size_t kMaxDeferredReceipts = 10'000;

  Env* const env_;
  IngestServiceOptions options_;
  std::unique_ptr<IngestSink> sink_;
  IngestHandler handler_;
  std::string subscription_;
  std::shared_ptr<Counters> counters_;  // shared with publish callbacks
  Mutex deferred_mutex_;
  std::deque<OutgoingReceipt> deferred_receipts_ GUARDED_BY(deferred_mutex_);
  std::unique_ptr<MqttLink> link_;
};

}  // namespace cairn
