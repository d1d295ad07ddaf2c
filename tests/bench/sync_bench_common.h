// What the parts of `cairn-bench sync` (sync_benchmark.h) share: its options
// and constants, the data every run syncs, the receiver (the ingest side, in
// this process), the results of cairn's runs and of the naive peer, and the
// report made of them. The parts: sync_bench_common.cc (timing, the data's
// digest), sync_receiver.cc, sync_gateway_runs.cc (cairn's runs),
// sync_peer.cc (the naive forwarder), sync_report.cc (JSON and table) and
// sync_benchmark.cc (options, self-check, the whole run).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "cairn/core/sync_ledger.h"
#include "cairn/mqtt/mqtt_link.h"
#include "cairn/sync/sync_agent.h"
#include "cairn/sync/sync_envelope.h"
#include "cairn/text/json_value.h"

#include "bench_common.h"
#include "mosquitto_broker.h"

namespace cairn::bench::sync_bench {

using Clock = std::chrono::steady_clock;

constexpr char kTopicPrefix[] = "cairn/v1";
// The naive peer publishes every record to "naive/<gateway>/env", the shape
// of Telegraf's default "telegraf/<host>/<plugin>".
constexpr char kPeerTopicRoot[] = "naive";
constexpr char kPeerName[] = "naive_json_qos1";

// The peer's window of QoS 1 publishes awaiting PUBACK: the same as the
// window cairn's MQTT link gets by default (MqttLinkOptions::max_inflight).
inline const size_t kPeerWindow = MqttLinkOptions().max_inflight;
// mosquitto queues at most 1000 QoS 1 messages per subscriber (its default
// max_queued_messages) and drops the rest; the peer keeps at most this many
// published messages ahead of what the receiver has taken.
constexpr uint64_t kPeerReceiverLead = 500;
// The receiver's window for the receipts it publishes; the agent has at most
// backfill_max_inflight + 8 live batches awaiting receipts.
constexpr size_t kReceiverWindow = 1024;

// Bytes of an MQTT acknowledgement (PUBACK: fixed header, length, packet id).
constexpr uint64_t kPubackBytes = 4;

// The random streams of the data and of the gateway's key are derived from
// --seed with distinct constants so they never coincide.
constexpr uint64_t kKeyStream = 0x73796e632d6b6579ull;

// Bounds of every wait (the machine may be slow, a broken run must still end).
constexpr int64_t kConnectTimeoutMs = 30'000;
constexpr int64_t kConfirmPollMicros = 1000;

// Numeric targets of the issue (backfill, the product's default receipt mode).
constexpr double kTargetBackfillReadingsPerSecond = 1e6;
constexpr double kTargetBackfillMessagesPerSecond = 5e3;
constexpr double kTargetBackfillWireBytesPerReading = 2.5;

// Defaults: 200 devices x 1 h = 720 000 records = 2.16 M readings, synced by
// six cairn runs (backfill: receipt, broker, JSON envelopes; live at full
// speed: receipt, broker; live paced at 300 000 readings/s: receipt) plus
// the first 100 000 records through the naive peer: about a minute on a
// 2-core x86 host.
struct SyncOptions {
  CommonOptions common{.hours = 1.0};
  uint64_t peer_records = 100'000;
  double live_rate = 300'000;  // readings/s of the paced live run
};

// The generated data and what every run of it shares.
struct Plan : DataPlan {
  double live_rate = 0;  // readings/s of the paced live run
  std::string key;       // the gateway's HMAC key
};

// Rounds to `digits` significant digits, for ratios that span many decades.
double RoundSignificant(double value, int digits);

// The steady clock, in nanoseconds.
int64_t NowNanos();

// CPU time of the calling thread, and of the whole process (every thread).
int64_t ThreadCpuNanos();
int64_t ProcessCpuNanos();

// SIGINT / SIGTERM end the run at the next wait (CheckInterrupt then fails),
// so that the agent, the engine, the broker and the scratch directory are all
// cleaned up. The waits also look at `interrupted` themselves.
extern volatile std::sig_atomic_t interrupted;
void OnInterruptSignal(int);
Status CheckInterrupt();

// ---- what the receiver must see -------------------------------------------

// Order-independent digest of distinct records: a wrapping sum of one
// 64-bit hash per record over its device, timestamp and three readings in
// their integer steps, so that the sender and the receiver can compare
// contents without agreeing on an order.
uint64_t RecordHash(uint32_t device, int64_t timestamp, int64_t centidegrees, int64_t humidity_permille,
                    int64_t pressure_decapascals);

// One bit per (device, second): the generator produces exactly one distinct
// record per device and second, so a record's identity maps to one bit.
class SeenGrid {
 public:
  void Reset(uint32_t devices, uint64_t seconds, int64_t start) {
    devices_ = devices;
    seconds_ = seconds;
    start_ = start;
    bits_.assign(static_cast<size_t>((static_cast<uint64_t>(devices) * seconds + 63) / 64), 0);
  }

  // The cell of a record, or nothing when it lies outside the data.
  std::optional<uint64_t> Cell(uint32_t device, int64_t timestamp) const {
    if (device >= devices_ || timestamp < start_) return std::nullopt;
    const uint64_t second = static_cast<uint64_t>(timestamp - start_) / kNanosPerSecond;
    if (second >= seconds_) return std::nullopt;
    return static_cast<uint64_t>(device) * seconds_ + second;
  }

  // True when the cell was not set before.
  bool Insert(uint64_t cell) {
    uint64_t& word = bits_[static_cast<size_t>(cell / 64)];
    const uint64_t bit = uint64_t{1} << (cell % 64);
    if ((word & bit) != 0) return false;
    word |= bit;
    return true;
  }

 private:
  uint32_t devices_ = 0;
  uint64_t seconds_ = 0;
  int64_t start_ = 0;
  std::vector<uint64_t> bits_;
};

// The distinct content of the first `limit` delivered records of the data.
struct DataSummary {
  uint64_t delivered = 0;  // records handed out, retransmissions included
  uint64_t distinct_records = 0;
  uint64_t distinct_readings = 0;
  uint64_t digest = 0;
};

// What the first `limit` records the generator hands out hold.
DataSummary SummarizeData(const Plan& plan, uint64_t limit);

// The index of a generated device id ("<prefix><index>"), if it is one.
std::optional<uint32_t> DeviceIndex(std::string_view device_id);

// Bytes of an MQTT 3.1.1 PUBLISH packet with QoS 1 (§3.3): one byte of
// type and flags, the remaining length as a variable-length integer, the
// topic with its 2-byte length, the 2-byte packet id, the payload.
uint64_t PublishPacketBytes(size_t topic_bytes, size_t payload_bytes);

// ---- the receiver: the ingest side, in this process ------------------------

struct LsnEvent {
  int64_t nanos = 0;  // steady clock
  uint64_t first_lsn = 0;
  uint64_t last_lsn = 0;
};

// What the receiver expects during one run.
struct ReceiverExpectation {
  bool peer = false;  // the naive peer's JSON messages instead of envelopes
  std::string gateway_id;
  std::string key;
  bool send_receipts = false;
  std::string peer_topic;
  uint32_t devices = 0;
  uint64_t seconds = 0;
  int64_t start = 0;
};

struct ReceiverCounts {
  uint64_t messages = 0;  // verified and decoded
  uint64_t payload_bytes = 0;
  uint64_t publish_packet_bytes = 0;  // of `messages`, as the sender published them
  uint64_t records = 0;               // decoded, resent ones included
  uint64_t distinct_records = 0;
  uint64_t distinct_readings = 0;
  uint64_t digest = 0;
  uint64_t invalid = 0;  // failed verification or decoding, or not what was sent
  std::string last_invalid;
  uint64_t receipts_published = 0;
  uint64_t receipt_publish_failures = 0;
  uint64_t receipt_packet_bytes = 0;
  uint64_t receipts_observed = 0;  // on the gateway's receipt topic, as the broker forwards them
  int64_t worker_cpu_nanos = 0;    // CPU time of the receiver's worker thread (decode, count, publish)
};

struct ReceiverState {
  ReceiverCounts counts;
  LsnRangeSet receipted;  // LSN ranges of the receipts observed
  std::vector<LsnEvent> deliveries;
  std::vector<LsnEvent> receipts;
};

// The ingest side: verifies (HMAC) and decodes every envelope with the
// decoder of sync_envelope.h, checks each record against the data and counts
// it once by identity, and in receipt mode publishes a signed ok receipt, as
// the ingest service does after its commit. It also takes the naive peer's
// messages, and watches the gateway's receipt topic.
//
// Three MQTT connections of its own, so that TCP does not hold back what is
// measured: mosquitto (by default) and Paho C both leave Nagle's algorithm
// on, so a small packet written while an earlier small one awaits its TCP
// acknowledgement waits for the peer's delayed ACK, about 40 ms. A receipt
// published on the connection that has just sent the envelope's PUBACK, or
// delivered on the one whose own PUBACK the broker has just written, would
// wait that long. So: one connection receives envelopes and peer messages,
// one only publishes receipts, and one only receives receipts, which gives
// the moment the broker forwards a receipt, to the agent as well.
//
// The links' handlers only queue each message with its arrival time; a
// worker thread decodes, counts and publishes, so that Paho's threads keep
// receiving (and acknowledging) while a large envelope is decoded.
//
// Thread-safety: the handlers run on the links' threads, the worker on its
// own; the other methods are called from the benchmark's thread.
class Receiver {
 public:
  ~Receiver() { Stop(); }

  Status Start(const std::string& server_uri);

  void Stop();

  // Starts counting for a new run. No message of an earlier run may still
  // be on its way.
  void Begin(ReceiverExpectation expectation);

  // Waits until `done` holds for the state, at most `timeout_ms`.
  Status WaitFor(const std::function<bool(const ReceiverState&)>& done, int64_t timeout_ms,
                 std::string_view what);

  ReceiverState state() const;

  static std::string Describe(const ReceiverCounts& counts);

 private:
  struct Message {
    std::string topic;
    std::string payload;
    int64_t arrived_nanos = 0;
  };

  // Starts connecting one link; Paho connects them in the background.
  static Result<std::unique_ptr<MqttLink>> StartLink(const std::string& server_uri,
                                                     const std::string& client_id,
                                                     std::vector<std::string> subscriptions,
                                                     MqttLink::MessageHandler handler);

  bool StopRequested();

  // The links' handler.
  void Enqueue(std::string_view topic, std::string_view payload);

  // The worker thread.
  void Work();

  void Handle(const Message& message);

  void Invalid(std::string why);

  // Counts one record; requires mutex_.
  void CountRecord(uint32_t device, int64_t timestamp, int64_t centidegrees, int64_t humidity_permille,
                   int64_t pressure_decapascals, uint64_t readings);

  void ObserveReceipt(const ReceiverExpectation& expectation, const Message& message);

  void TakeEnvelope(const ReceiverExpectation& expectation, const Message& message);

  void PublishReceipt(const ReceiverExpectation& expectation, const EnvelopeHeader& header,
                      EnvelopeEncoding encoding);

  // The naive peer's message:
  // {"fields":{...},"name":"env","tags":{"device_id":...},"timestamp":<ns>}.
  void TakePeerMessage(const Message& message);

  std::unique_ptr<MqttLink> subscriber_;  // envelopes and peer messages
  std::unique_ptr<MqttLink> publisher_;   // receipts out
  std::unique_ptr<MqttLink> observer_;    // receipts as the broker forwards them
  std::thread worker_;
  std::mutex queue_mutex_;
  std::condition_variable queue_changed_;
  std::deque<Message> queue_;  // guarded by queue_mutex_
  bool stopping_ = false;      // guarded by queue_mutex_
  std::shared_ptr<std::atomic<uint64_t>> receipt_failures_ = std::make_shared<std::atomic<uint64_t>>(0);
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  ReceiverExpectation expectation_;  // guarded by mutex_
  std::string receipt_topic_;        // guarded by mutex_
  SeenGrid grid_;                    // guarded by mutex_
  ReceiverState state_;              // guarded by mutex_
};

// ---- cairn's runs (sync_gateway_runs.cc) --------------------------------------

// Writes the whole data into a fresh engine at `directory`, seals it and
// closes it: the starting point of every backfill run, copied for each.
// Durability off: only the sealed result counts, not how it was written.
Status WriteBackfillSource(const Plan& plan, const std::string& directory, uint64_t* last_lsn);

// One cairn run: which lane the data takes and how batches are confirmed.
struct RunSpec {
  std::string name;  // key in the report, e.g. "receipt_json"
  SyncLane lane = SyncLane::kBackfill;
  SyncConfirmation confirmation = SyncConfirmation::kReceipt;
  EnvelopeEncoding encoding = EnvelopeEncoding::kBinary;
  // Live: readings/s the writer paces itself to; 0 writes as fast as the
  // write path returns.
  double rate = 0;
};

// "<lane> <name>", naming the run in messages.
std::string RunLabel(const RunSpec& spec);

struct WriteAck {
  int64_t nanos = 0;  // steady clock, when Write returned
  uint64_t last_lsn = 0;
};

struct RunResult {
  RunSpec spec;
  uint64_t last_lsn = 0;
  int64_t start_nanos = 0;
  int64_t confirmed_nanos = 0;
  int64_t written_nanos = 0;      // live: when the last write returned
  int64_t process_cpu_nanos = 0;  // every thread of the process from start to confirmation
  ReceiverState receiver;
  SyncTableStatus table;
  MqttLinkStats link;
  uint64_t receipts_accepted = 0;
  uint64_t receipts_invalid = 0;
  std::vector<WriteAck> writes;  // live only
};

// How long a run of `readings` may take before its wait gives up.
int64_t WaitTimeoutMs(uint64_t readings);

// Backfill: the data is stored and sealed before the agent starts, so all of
// it lies at or below the live start and goes out on the backfill lane.
Result<RunResult> RunBackfill(const Plan& plan, const RunSpec& spec, const std::string& source,
                              uint64_t source_last_lsn, const std::string& directory,
                              const std::string& server_uri, const DataSummary& data, Receiver* receiver);

// Live: the agent starts on an empty table and the data is written while it
// runs, batch by batch, each write followed by Notify as cairnd does.
Result<RunResult> RunLive(const Plan& plan, const RunSpec& spec, const std::string& directory,
                          const std::string& server_uri, const DataSummary& data, Receiver* receiver);

// ---- the naive peer (sync_peer.cc) ----------------------------------------------

// One MQTT QoS 1 message per record, the record as JSON as Telegraf's JSON
// serializer writes it (nanosecond timestamps), through Paho's async client
// with a bounded window of publishes awaiting PUBACK.
struct PeerResult {
  uint64_t records = 0;  // delivered records published, retransmissions included
  uint64_t acknowledged = 0;
  uint64_t failed = 0;
  int64_t start_nanos = 0;
  int64_t acknowledged_nanos = 0;  // the last PUBACK
  int64_t end_nanos = 0;           // PUBACKs and the receiver both done
  int64_t process_cpu_nanos = 0;
  ReceiverState receiver;
};

// Publishes the records `data` summarizes (the first --peer-records of the
// data) through the naive peer to the receiver, and waits for every PUBACK
// and every distinct record.
Result<PeerResult> RunPeer(const Plan& plan, const std::string& server_uri, const DataSummary& data,
                           Receiver* receiver);

// ---- the report (sync_report.cc) ------------------------------------------------

// The problems of one run: what the receiver got against what was written,
// and what the agent's ledger says.
std::vector<std::string> CheckRun(const std::string& label, const RunResult& run, const DataSummary& data);

// One run's figures and checks, as the report prints them under cairn.<lane>.
JsonValue RunJson(const RunResult& run, const DataSummary& data);

// The problems of the peer's run, as CheckRun's.
std::vector<std::string> CheckPeer(const PeerResult& peer, const DataSummary& data);

// The peer's figures and checks, as the report prints them under peer.
JsonValue PeerJson(const PeerResult& peer, const DataSummary& data);

// The figures every run and the peer report, compared as cairn / peer.
constexpr std::string_view kRatioMetrics[] = {"readings_per_s", "messages_per_s", "payload_bytes_per_reading",
                                              "mqtt_uplink_bytes_per_reading"};

// cairn's receipt runs of `lane` against the peer, for each of kRatioMetrics.
JsonValue Ratios(const JsonValue& report, std::string_view lane);

// The numeric targets of cairn's backfill.
JsonValue TargetsJson();

// Whether cairn's backfill in the default receipt mode meets each target.
JsonValue TargetsMet(const JsonValue& report);

// The version the broker's log names, or "unknown".
std::string MosquittoVersion(const MosquittoBroker& broker);

// The table printed without --json.
void PrintTable(const JsonValue& report, std::ostream& out);

}  // namespace cairn::bench::sync_bench
