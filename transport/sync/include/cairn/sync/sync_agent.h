// SyncAgent: store-and-forward of every table with sync on to the cloud over
// MQTT (DESIGN §6).
//
// The store is the outbox. Each table's ledger (cairn/core/sync_ledger.h)
// says which LSNs the cloud has confirmed; everything else is read back from
// the engine (Engine::ReadChanges) and sent, in signed envelopes
// (sync_envelope.h), until it is confirmed. Nothing is kept only in memory
// and Paho's own persistence is off, so a restart or a power cut at any
// moment loses nothing: what was not confirmed in the ledger is sent again,
// and the ingest side drops what it already has (same identity and version).
//
// Lanes, per table:
//   live      records above the live start: the LSN of the newest record
//             when the agent started, or when live fell more than
//             live_lag_limit_records behind (after an outage). A batch goes
//             out every live_interval_ms, or as soon as live_max_records
//             wait. Live batches have their own share of the in-flight
//             window, so fresh data is never stuck behind a backlog.
//   backfill  every unconfirmed record at or below the live start, oldest
//             (lowest LSN) first, at most backfill_records_per_second, in
//             batches of backfill_max_records, with at most
//             backfill_max_inflight batches out at once.
//   archive   a backfill batch whose records all lie in periods past the
//             table's retention is sent on the archive lane; the engine keeps
//             such files until they are confirmed
//             (EngineOptions::retention_waits_for_sync).
//
// Confirmation: in receipt mode (default) a batch is confirmed by the
// ingest service's signed receipt, published after its database commit; in
// broker mode by the broker's PUBACK. A batch without confirmation after
// receipt_timeout_ms, or whose publish failed, is sent again.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/core/engine.h"
#include "cairn/core/sync_ledger.h"
#include "cairn/platform/env.h"
#include "cairn/platform/status.h"
#include "cairn/mqtt/mqtt_link.h"
#include "cairn/sync/sync_envelope.h"

namespace cairn {

enum class SyncConfirmation : uint8_t {
  kReceipt,  // the ingest service's receipt after its commit (default)
  kBroker,   // the broker's PUBACK
};

std::string_view SyncConfirmationName(SyncConfirmation confirmation);  // "receipt", "broker"
Result<SyncConfirmation> ParseSyncConfirmation(std::string_view name);

struct SyncAgentOptions {
  std::string gateway_id;  // ValidateGatewayId
  std::string key;         // the HMAC key, at least kMinSyncKeyBytes bytes
  std::string topic_prefix = "cairn/v1";
  EnvelopeEncoding encoding = EnvelopeEncoding::kBinary;
  SyncConfirmation confirmation = SyncConfirmation::kReceipt;
  // The broker connection. The agent adds the receipt topic to its
  // subscriptions (receipt mode) and uses "cairn-<gateway_id>" as client
  // id when it is empty. Its max_inflight is the whole window.
  MqttLinkOptions link;
  // Builds the link from `link`.
  MqttLinkFactory link_factory = &MqttLink::Create;

  int64_t live_interval_ms = 1000;
  size_t live_max_records = 10'000;
  size_t live_lag_limit_records = 100'000;
  size_t backfill_max_records = 50'000;
  uint64_t backfill_records_per_second = 500'000;  // 0: unlimited
  size_t backfill_max_inflight = 4;
  int64_t receipt_timeout_ms = 30'000;
  // Confirmations reach the catalog at most this often (and at Stop): a
  // crash forgets at most this much, which is then sent again.
  int64_t ledger_flush_ms = 5000;
  // How often the agent looks for work when nothing wakes it.
  int64_t poll_interval_ms = 50;

  // Where the agent reports what it cannot return (publish errors, bad
  // receipts); may be empty.
  std::function<void(std::string_view)> log;
};

// One lane of one table, for the shell and /metrics.
struct SyncLaneStatus {
  SyncLane lane = SyncLane::kLive;
  size_t in_flight = 0;
  uint64_t batches_confirmed = 0;  // since Start
  uint64_t records_confirmed = 0;  // since Start
  uint64_t bytes_sent = 0;         // envelope bytes published since Start, resends included
  std::string last_error;
};

struct SyncTableStatus {
  std::string table;
  UnsyncedSummary unsynced;
  // The highest LSN up to which everything is confirmed.
  uint64_t confirmed_through = 0;
  uint64_t live_start = 0;
  std::vector<SyncLaneStatus> lanes;      // live, backfill, archive
  std::vector<SyncBatchState> in_flight;  // every lane, by lane then sequence
};

struct SyncStatus {
  bool connected = false;
  std::string gateway_id;
  SyncConfirmation confirmation = SyncConfirmation::kReceipt;
  MqttLinkStats link;
  uint64_t receipts_accepted = 0;
  uint64_t receipts_rejected_by_ingest = 0;  // status "rejected"
  uint64_t receipts_invalid = 0;             // bad MAC, malformed, unknown batch
  std::vector<SyncTableStatus> tables;       // tables with sync on, by name
};

class SyncAgent {
 public:
  // Checks the options (InvalidArgument naming the problem) and builds the
  // MQTT link without connecting. `env` and `engine` must outlive the agent.
  static Result<std::unique_ptr<SyncAgent>> Create(Env* env, Engine* engine, SyncAgentOptions options);

  virtual ~SyncAgent() = default;

  // Loads the ledgers and starts the link and the sending thread.
  virtual Status Start() = 0;

  // Wakes the live lane (after a write), so a full batch need not wait
  // for the next poll. Cheap; may be called on every write.
  virtual void Notify() = 0;

  // The state of every synced table now (reads chunk metadata for the
  // unsynced counts).
  virtual Result<SyncStatus> GetStatus() = 0;

  // Stops sending, saves the ledgers, stops the link. Idempotent.
  virtual void Stop() = 0;
};

}  // namespace cairn
