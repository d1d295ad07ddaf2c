// IngestHandler: what the ingest service does with one MQTT message, apart
// from MQTT itself, so that it can be driven and tested without a broker.
//
// For a message on "<prefix>/<gateway>/<table>/<lane>" it picks the gateway's
// key by the topic, verifies and decodes the envelope, checks that the
// envelope names the topic's gateway, table and lane, applies the batch to
// the sink, and returns the signed receipt to publish (in the envelope's own
// encoding). Messages that cannot be attributed to a gateway with certainty
// (unknown gateway, bad MAC, malformed, moved to another topic) get no
// receipt: the service cannot sign an answer for a sender it cannot
// identify (envelope_format.md §6).
//
// Thread-safety: Handle is called by one thread at a time (the MQTT link
// delivers messages one at a time); RequestStop and stats may be called from
// any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cairn/ingest/gateway_keys.h"
#include "cairn/ingest/ingest_sink.h"
#include "cairn/platform/env.h"
#include "cairn/platform/mutex.h"
#include "cairn/sync/sync_envelope.h"

namespace cairn {

struct IngestHandlerOptions {
  // The topic prefix gateways publish under (SyncTopic).
  std::string topic_prefix = "cairn/v1";
  GatewayKeys keys;
  EnvelopeLimits limits;
  // Backoff between attempts while the sink fails transiently: doubling from
  // min to max. Attempts continue until the sink works or RequestStop.
  int64_t retry_min_ms = 100;
  int64_t retry_max_ms = 10'000;
};

enum class IngestOutcome : uint8_t {
  kStored,          // committed; an ok receipt
  kRejected,        // the sink refuses the batch for good; a rejected receipt
  kUnknownGateway,  // no key for the topic's gateway; no receipt
  kForged,          // bad MAC, or an authentic envelope on another topic; no receipt
  kMalformed,       // not a sync topic, truncated, undecodable; no receipt
  kStopped,         // RequestStop while the sink was failing; no receipt
};

// "stored", "rejected", "unknown_gateway", "forged", "malformed", "stopped".
std::string_view IngestOutcomeName(IngestOutcome outcome);

struct OutgoingReceipt {
  std::string topic;    // ReceiptTopic(prefix, gateway)
  std::string payload;  // EncodeReceipt under the gateway's key
};

struct HandledMessage {
  IngestOutcome outcome = IngestOutcome::kMalformed;
  std::optional<OutgoingReceipt> receipt;  // kStored and kRejected only
  std::optional<EnvelopeHeader> batch;     // when the envelope was authentic
  SinkCounts counts;                       // kStored only
  std::string detail;                      // why, for anything but kStored
};

// Counters since construction.
struct IngestStats {
  uint64_t messages = 0;
  uint64_t batches_stored = 0;
  uint64_t batches_rejected = 0;
  uint64_t unknown_gateway = 0;
  uint64_t forged = 0;
  uint64_t malformed = 0;
  uint64_t records_inserted = 0;
  uint64_t records_replaced = 0;
  uint64_t records_duplicate = 0;
  uint64_t records_older = 0;
  uint64_t sink_failures = 0;  // transient sink errors (each retried)
  std::string last_error;      // the most recent sink error
};

class IngestHandler {
 public:
  // `sink` and `env` (clock for received_at, sleeps between retries) must
  // outlive the handler.
  IngestHandler(Env* env, IngestHandlerOptions options, IngestSink* sink);

  IngestHandler(const IngestHandler&) = delete;
  IngestHandler& operator=(const IngestHandler&) = delete;

  // Handles one message. Blocks while the sink fails transiently, retrying
  // with backoff (and reconnecting it) until it works or RequestStop.
  HandledMessage Handle(std::string_view topic, std::string_view payload);

  // Makes a Handle blocked in retries return kStopped, now and from then on.
  void RequestStop();

  IngestStats stats() const;

  const IngestHandlerOptions& options() const { return options_; }

 private:
  // An envelope that passed every check, with what its receipt needs.
  struct VerifiedMessage {
    DecodedEnvelope envelope;
    std::string_view key;  // the gateway's, in options_.keys
    std::string receipt_topic;
  };

  // Checks the topic, the gateway's key, the MAC and that the envelope
  // belongs to its topic; the refusal when one fails, else nullopt with
  // *verified filled.
  std::optional<HandledMessage> Verify(std::string_view topic, std::string_view payload,
                                       VerifiedMessage* verified);
  // Applies the batch until the sink stores or rejects it (true, with
  // *handled and *receipt filled) or RequestStop (false, kStopped).
  bool StoreWithRetries(const DecodedEnvelope& envelope, HandledMessage* handled, SyncReceipt* receipt);
  HandledMessage Refuse(IngestOutcome outcome, std::string detail);
  // Sleeps up to `ms`, waking early on RequestStop.
  void SleepUnlessStopped(int64_t ms);

  Env* const env_;
  const IngestHandlerOptions options_;
  IngestSink* const sink_;
  std::atomic<bool> stop_requested_{false};
  mutable Mutex mutex_;
  IngestStats stats_ GUARDED_BY(mutex_);
};

}  // namespace cairn
