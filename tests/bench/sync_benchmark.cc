#include "sync_benchmark.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include <mqtt/async_client.h>
#include <time.h>

#include "cairn/core/engine.h"
#include "cairn/core/sync_ledger.h"
#include "cairn/platform/env.h"
#include "cairn/text/json_value.h"
#include "cairn/mqtt/mqtt_link.h"
#include "cairn/sync/sync_agent.h"
#include "cairn/sync/sync_envelope.h"

#include "bench_common.h"
#include "mosquitto_broker.h"
#include "sensor_generator.h"
#include "system_probe.h"

namespace cairn::bench {

namespace {

using Clock = std::chrono::steady_clock;

constexpr char kTopicPrefix[] = "cairn/v1";
// The naive peer publishes every record to "naive/<gateway>/env", the shape
// of Telegraf's default "telegraf/<host>/<plugin>".
constexpr char kPeerTopicRoot[] = "naive";
constexpr char kPeerName[] = "naive_json_qos1";

// The peer's window of QoS 1 publishes awaiting PUBACK: the same as the
// window cairn's MQTT link gets by default (MqttLinkOptions::max_inflight).
const size_t kPeerWindow = MqttLinkOptions().max_inflight;
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
double RoundSignificant(double value, int digits) {
  if (value == 0 || !std::isfinite(value)) return value;
  const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(value))));
  return Round(value, digits - 1 - magnitude);
}

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// CPU time of the calling thread, and of the whole process (every thread).
int64_t ThreadCpuNanos() {
  timespec now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<int64_t>(now.tv_sec) * kNanosPerSecond + now.tv_nsec;
}

int64_t ProcessCpuNanos() {
  timespec now{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<int64_t>(now.tv_sec) * kNanosPerSecond + now.tv_nsec;
}

// SIGINT / SIGTERM end the run at the next wait, so that the agent, the
// engine, the broker and the scratch directory are all cleaned up.
volatile std::sig_atomic_t interrupted = 0;

void OnInterruptSignal(int) { interrupted = 1; }

Status CheckInterrupt() {
  if (interrupted != 0) return Status::Unavailable("interrupted");
  return Status::Ok();
}

// ---- what the receiver must see -------------------------------------------

// Order-independent digest of distinct records: a wrapping sum of one
// 64-bit hash per record over its device, timestamp and three readings in
// their integer steps, so that the sender and the receiver can compare
// contents without agreeing on an order.
uint64_t Mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

uint64_t RecordHash(uint32_t device, int64_t timestamp, int64_t centidegrees, int64_t humidity_permille,
                    int64_t pressure_decapascals) {
  uint64_t hash = Mix64(device + 0x9e3779b97f4a7c15ull);
  hash = Mix64(hash ^ static_cast<uint64_t>(timestamp));
  hash = Mix64(hash ^ static_cast<uint64_t>(centidegrees));
  hash = Mix64(hash ^ static_cast<uint64_t>(humidity_permille));
  return Mix64(hash ^ static_cast<uint64_t>(pressure_decapascals));
}

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

DataSummary SummarizeData(const Plan& plan, uint64_t limit) {
  DataSummary summary;
  SeenGrid grid;
  grid.Reset(plan.devices, plan.seconds, plan.start);
  SensorGenerator generator(GeneratorOptions(plan));
  std::vector<SensorRecord> batch;
  while (summary.delivered < limit &&
         generator.NextBatch(static_cast<size_t>(std::min<uint64_t>(plan.batch, limit - summary.delivered)),
                             &batch)) {
    for (const SensorRecord& record : batch) {
      ++summary.delivered;
      const std::optional<uint64_t> cell = grid.Cell(record.device_index, record.timestamp);
      if (!cell || !grid.Insert(*cell)) continue;
      ++summary.distinct_records;
      summary.distinct_readings += kReadingsPerRecord;
      summary.digest += RecordHash(record.device_index, record.timestamp, record.temperature_centidegrees,
                                   record.humidity_permille, record.pressure_decapascals);
    }
  }
  return summary;
}

std::optional<uint32_t> DeviceIndex(std::string_view device_id) {
  if (!device_id.starts_with(kDeviceIdPrefix)) return std::nullopt;
  device_id.remove_prefix(kDeviceIdPrefix.size());
  uint32_t index = 0;
  const auto result = std::from_chars(device_id.data(), device_id.data() + device_id.size(), index);
  if (result.ec != std::errc() || result.ptr != device_id.data() + device_id.size()) return std::nullopt;
  return index;
}

// Bytes of an MQTT 3.1.1 PUBLISH packet with QoS 1 (§3.3): one byte of
// type and flags, the remaining length as a variable-length integer, the
// topic with its 2-byte length, the 2-byte packet id, the payload.
uint64_t PublishPacketBytes(size_t topic_bytes, size_t payload_bytes) {
  const uint64_t remaining = 2 + uint64_t{topic_bytes} + 2 + uint64_t{payload_bytes};
  uint64_t length_bytes = 1;
  for (uint64_t rest = remaining >> 7; rest != 0; rest >>= 7) ++length_bytes;
  return 1 + length_bytes + remaining;
}

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

  Status Start(const std::string& server_uri) {
    worker_ = std::thread([this] { Work(); });
    auto enqueue = [this](std::string_view topic, std::string_view payload) { Enqueue(topic, payload); };
    const std::string prefix = kTopicPrefix;
    CAIRN_ASSIGN_OR_RETURN(
        subscriber_,
        StartLink(server_uri, "cairn-bench-receiver",
                  {prefix + "/+/+/+", std::string(kPeerTopicRoot) + "/+/" + kEnvMeasure}, enqueue));
    CAIRN_ASSIGN_OR_RETURN(publisher_, StartLink(server_uri, "cairn-bench-receipts", {}, {}));
    CAIRN_ASSIGN_OR_RETURN(
        observer_, StartLink(server_uri, "cairn-bench-receipt-observer", {prefix + "/+/receipts"}, enqueue));
    for (MqttLink* link : {subscriber_.get(), publisher_.get(), observer_.get()}) {
      if (!link->WaitConnected(kConnectTimeoutMs)) {
        return Status::TimedOut("the receiver did not connect to " + server_uri + ": " +
                                link->stats().last_error);
      }
    }
    return Status::Ok();
  }

  void Stop() {
    for (std::unique_ptr<MqttLink>* link : {&subscriber_, &observer_, &publisher_}) {
      if (*link != nullptr) (*link)->Stop();
    }
    {
      std::lock_guard<std::mutex> lock(queue_mutex_);
      stopping_ = true;
    }
    queue_changed_.notify_all();
    if (worker_.joinable()) worker_.join();
  }

  // Starts counting for a new run. No message of an earlier run may still
  // be on its way.
  void Begin(ReceiverExpectation expectation) {
    std::lock_guard<std::mutex> lock(mutex_);
    expectation_ = std::move(expectation);
    grid_.Reset(expectation_.devices, expectation_.seconds, expectation_.start);
    state_ = ReceiverState();
    receipt_failures_->store(0);
    receipt_topic_.clear();
    if (!expectation_.peer) {
      Result<std::string> topic = ReceiptTopic(kTopicPrefix, expectation_.gateway_id);
      if (topic.ok()) receipt_topic_ = *topic;
    }
  }

  // Waits until `done` holds for the state, at most `timeout_ms`.
  Status WaitFor(const std::function<bool(const ReceiverState&)>& done, int64_t timeout_ms,
                 std::string_view what) {
    const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    std::unique_lock<std::mutex> lock(mutex_);
    while (!done(state_)) {
      CAIRN_RETURN_IF_ERROR(CheckInterrupt());
      if (Clock::now() >= deadline) {
        return Status::TimedOut("waited " + std::to_string(timeout_ms / 1000) + " s for " +
                                std::string(what) + "; receiver: " + Describe(state_.counts));
      }
      changed_.wait_for(lock, std::chrono::milliseconds(100));
    }
    return Status::Ok();
  }

  ReceiverState state() const {
    std::lock_guard<std::mutex> lock(mutex_);
    ReceiverState copy = state_;
    // Receipts the broker never acknowledged count as not published.
    copy.counts.receipt_publish_failures += receipt_failures_->load();
    return copy;
  }

  static std::string Describe(const ReceiverCounts& counts) {
    std::string text = std::to_string(counts.messages) + " messages, " +
                       std::to_string(counts.distinct_records) + " distinct records, " +
                       std::to_string(counts.invalid) + " invalid";
    if (!counts.last_invalid.empty()) text += " (last: " + counts.last_invalid + ")";
    return text;
  }

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
                                                     MqttLink::MessageHandler handler) {
    MqttLinkOptions options;
    options.server_uri = server_uri;
    options.client_id = client_id;
    options.clean_session = true;
    options.max_inflight = kReceiverWindow;
    options.subscriptions = std::move(subscriptions);
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<MqttLink> link,
                           MqttLink::Create(Env::Default(), std::move(options), std::move(handler)));
    CAIRN_RETURN_IF_ERROR(link->Start());
    return link;
  }

  bool StopRequested() {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    return stopping_;
  }

  // The links' handler.
  void Enqueue(std::string_view topic, std::string_view payload) {
    Message message{std::string(topic), std::string(payload), NowNanos()};
    {
      std::lock_guard<std::mutex> lock(queue_mutex_);
      queue_.push_back(std::move(message));
    }
    queue_changed_.notify_one();
  }

  // The worker thread.
  void Work() {
    std::unique_lock<std::mutex> queue_lock(queue_mutex_);
    for (;;) {
      queue_changed_.wait(queue_lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      Message message = std::move(queue_.front());
      queue_.pop_front();
      queue_lock.unlock();
      const int64_t cpu_before = ThreadCpuNanos();
      Handle(message);
      const int64_t cpu_used = ThreadCpuNanos() - cpu_before;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        state_.counts.worker_cpu_nanos += cpu_used;
      }
      changed_.notify_all();
      queue_lock.lock();
    }
  }

  void Handle(const Message& message) {
    ReceiverExpectation expectation;
    std::string receipt_topic;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      expectation = expectation_;
      receipt_topic = receipt_topic_;
    }
    if (!receipt_topic.empty() && message.topic == receipt_topic) {
      ObserveReceipt(expectation, message);
    } else if (expectation.peer && message.topic == expectation.peer_topic) {
      TakePeerMessage(message);
    } else if (!expectation.peer) {
      TakeEnvelope(expectation, message);
    } else {
      Invalid("message on " + message.topic + " outside the run");
    }
  }

  void Invalid(std::string why) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++state_.counts.invalid;
    state_.counts.last_invalid = std::move(why);
  }

  // Counts one record; requires mutex_.
  void CountRecord(uint32_t device, int64_t timestamp, int64_t centidegrees, int64_t humidity_permille,
                   int64_t pressure_decapascals, uint64_t readings) {
    ++state_.counts.records;
    const std::optional<uint64_t> cell = grid_.Cell(device, timestamp);
    if (!cell) {
      ++state_.counts.invalid;
      state_.counts.last_invalid =
          "a record outside the data: device " + std::to_string(device) + " at " + std::to_string(timestamp);
      return;
    }
    if (!grid_.Insert(*cell)) return;
    ++state_.counts.distinct_records;
    state_.counts.distinct_readings += readings;
    state_.counts.digest +=
        RecordHash(device, timestamp, centidegrees, humidity_permille, pressure_decapascals);
  }

  void ObserveReceipt(const ReceiverExpectation& expectation, const Message& message) {
    Result<SyncReceipt> receipt = DecodeReceipt(message.payload, expectation.key);
    if (!receipt.ok()) return Invalid("receipt: " + receipt.status().ToString());
    std::lock_guard<std::mutex> lock(mutex_);
    ++state_.counts.receipts_observed;
    state_.receipted.Add(receipt->batch.first_lsn, receipt->batch.last_lsn);
    state_.receipts.push_back({message.arrived_nanos, receipt->batch.first_lsn, receipt->batch.last_lsn});
  }

  void TakeEnvelope(const ReceiverExpectation& expectation, const Message& message) {
    const std::string& topic = message.topic;
    Result<SyncTopicParts> parts = ParseSyncTopic(kTopicPrefix, topic);
    if (!parts.ok()) return Invalid("topic " + topic + ": " + parts.status().message());
    if (parts->gateway_id != expectation.gateway_id) {
      return Invalid("an envelope of gateway " + parts->gateway_id + " during the run of " +
                     expectation.gateway_id);
    }
    Result<DecodedEnvelope> envelope = DecodeEnvelope(message.payload, expectation.key);
    if (!envelope.ok()) return Invalid("envelope on " + topic + ": " + envelope.status().ToString());
    const EnvelopeHeader& header = envelope->header;
    if (header.gateway_id != parts->gateway_id || header.table != parts->table ||
        header.lane != parts->lane) {
      return Invalid("an envelope of another topic arrived on " + topic);
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++state_.counts.messages;
      state_.counts.payload_bytes += message.payload.size();
      state_.counts.publish_packet_bytes += PublishPacketBytes(topic.size(), message.payload.size());
      for (const RecordRow& row : envelope->records) {
        const std::optional<uint32_t> device = DeviceIndex(row.device_id);
        const double* temperature = nullptr;
        const double* humidity = nullptr;
        const double* pressure = nullptr;
        for (const Field& field : row.fields) {
          const double* value = std::get_if<double>(&field.value);
          if (field.name == "temperature") temperature = value;
          if (field.name == "humidity") humidity = value;
          if (field.name == "pressure") pressure = value;
        }
        if (!device || row.measure_name != kEnvMeasure || row.fields.size() != kReadingsPerRecord ||
            temperature == nullptr || humidity == nullptr || pressure == nullptr) {
          ++state_.counts.invalid;
          state_.counts.last_invalid = "a record that was never written: " + row.device_id + "/" +
                                       row.measure_name + " at " + std::to_string(row.timestamp);
          continue;
        }
        CountRecord(*device, row.timestamp, std::llround(*temperature * 100), std::llround(*humidity * 10),
                    std::llround(*pressure * 10), row.fields.size());
      }
      state_.deliveries.push_back({message.arrived_nanos, header.first_lsn, header.last_lsn});
    }
    if (expectation.send_receipts) PublishReceipt(expectation, header, envelope->encoding);
  }

  void PublishReceipt(const ReceiverExpectation& expectation, const EnvelopeHeader& header,
                      EnvelopeEncoding encoding) {
    SyncReceipt receipt;
    receipt.batch = header;
    receipt.status = ReceiptStatus::kOk;
    Result<std::string> payload = EncodeReceipt(receipt, expectation.key, encoding);
    Result<std::string> topic = ReceiptTopic(kTopicPrefix, expectation.gateway_id);
    if (!payload.ok() || !topic.ok()) {
      return Invalid("cannot build the receipt: " +
                     (payload.ok() ? topic.status().ToString() : payload.status().ToString()));
    }
    const uint64_t packet_bytes = PublishPacketBytes(topic->size(), payload->size());
    std::shared_ptr<std::atomic<uint64_t>> failures = receipt_failures_;
    // The window is far larger than the batches the agent has in flight; a
    // full one means PUBACKs are slow, so wait for room a bounded time.
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(10);
    for (;;) {
      Status published = publisher_->Publish(*topic, *payload, [failures](const Status& done) {
        if (!done.ok()) failures->fetch_add(1);
      });
      if (published.ok() || !published.Is(StatusCode::kUnavailable) || Clock::now() >= deadline ||
          interrupted != 0 || StopRequested()) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (published.ok()) {
          ++state_.counts.receipts_published;
          state_.counts.receipt_packet_bytes += packet_bytes;
        } else {
          ++state_.counts.receipt_publish_failures;
          state_.counts.last_invalid = "receipt not published: " + published.ToString();
        }
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  // The naive peer's message:
  // {"fields":{...},"name":"env","tags":{"device_id":...},"timestamp":<ns>}.
  void TakePeerMessage(const Message& message) {
    Result<JsonValue> parsed = JsonValue::Parse(message.payload);
    if (!parsed.ok()) return Invalid("peer message: " + parsed.status().ToString());
    const JsonValue* fields = parsed->Find("fields");
    const JsonValue* tags = parsed->Find("tags");
    const JsonValue* device_id = tags != nullptr ? tags->Find("device_id") : nullptr;
    const JsonValue* timestamp = parsed->Find("timestamp");
    const JsonValue* name = parsed->Find("name");
    if (fields == nullptr || device_id == nullptr || timestamp == nullptr || name == nullptr ||
        !device_id->is_string() || !timestamp->is_number() || name->text() != kEnvMeasure) {
      return Invalid("peer message without fields, device, timestamp or name");
    }
    const JsonValue* temperature = fields->Find("temperature");
    const JsonValue* humidity = fields->Find("humidity");
    const JsonValue* pressure = fields->Find("pressure");
    int64_t nanos = 0;
    const std::string& literal = timestamp->text();
    const std::from_chars_result parsed_time =
        std::from_chars(literal.data(), literal.data() + literal.size(), nanos);
    const std::optional<uint32_t> device = DeviceIndex(device_id->text());
    if (temperature == nullptr || humidity == nullptr || pressure == nullptr || !temperature->is_number() ||
        !humidity->is_number() || !pressure->is_number() || fields->members().size() != kReadingsPerRecord ||
        parsed_time.ec != std::errc() || parsed_time.ptr != literal.data() + literal.size() || !device) {
      return Invalid("peer message with bad fields, timestamp or device");
    }
    std::lock_guard<std::mutex> lock(mutex_);
    ++state_.counts.messages;
    state_.counts.payload_bytes += message.payload.size();
    state_.counts.publish_packet_bytes += PublishPacketBytes(message.topic.size(), message.payload.size());
    CountRecord(*device, nanos, std::llround(temperature->number() * 100),
                std::llround(humidity->number() * 10), std::llround(pressure->number() * 10),
                fields->members().size());
  }

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

// ---- the gateway: engine, writer and agent ----------------------------------

// Hands generated records to an engine: each device's three readings at one
// instant are one multi-measure record "env", as in the core benchmark.
class RecordWriter {
 public:
  explicit RecordWriter(Engine* engine) : engine_(engine) {}

  // Writes one batch; every record must be stored or dropped as a duplicate.
  Result<WriteResult> Write(const std::vector<SensorRecord>& batch) {
    ToEnvRecords(batch, &records_);
    CAIRN_ASSIGN_OR_RETURN(WriteResult result, engine_->Write(kBenchTable, records_));
    if (result.invalid != 0 || result.rejected != 0) {
      return Status::Internal("cairn refused " + std::to_string(result.invalid + result.rejected) +
                              " valid records");
    }
    return result;
  }

 private:
  Engine* const engine_;
  std::vector<Record> records_;
};

// Writes the whole data into a fresh engine at `directory`, seals it and
// closes it: the starting point of every backfill run, copied for each.
// Durability off: only the sealed result counts, not how it was written.
Status WriteBackfillSource(const Plan& plan, const std::string& directory, uint64_t* last_lsn) {
  EngineOptions options;
  options.durability = Durability::kOff;
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::Open(Env::Default(), directory, options));
  CAIRN_RETURN_IF_ERROR(engine->CreateTable(kBenchTable, TableOptions()));
  RecordWriter writer(engine.get());
  SensorGenerator generator(GeneratorOptions(plan));
  std::vector<SensorRecord> batch;
  while (generator.NextBatch(plan.batch, &batch)) {
    CAIRN_RETURN_IF_ERROR(CheckInterrupt());
    CAIRN_RETURN_IF_ERROR(writer.Write(batch).status());
  }
  CAIRN_RETURN_IF_ERROR(engine->SealAll());
  *last_lsn = engine->Stats().last_lsn;
  return engine->Close();
}

Status CopyDirectory(const std::string& from, const std::string& to) {
  std::error_code error;
  std::filesystem::copy(from, to, std::filesystem::copy_options::recursive, error);
  if (error) return Status::IOError("copying " + from + " to " + to + ": " + error.message());
  return Status::Ok();
}

// The agent's log lines, kept to explain a run that fails.
class AgentLog {
 public:
  void Add(std::string_view line) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (lines_.size() == kKeep) lines_.erase(lines_.begin());
    lines_.emplace_back(line);
  }
  std::string Joined() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string text;
    for (const std::string& line : lines_) text += "\n  agent: " + line;
    return text;
  }

 private:
  static constexpr size_t kKeep = 5;
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

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

std::string RunLabel(const RunSpec& spec) { return std::string(SyncLaneName(spec.lane)) + " " + spec.name; }

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

SyncAgentOptions AgentOptions(const Plan& plan, const RunSpec& spec, const std::string& gateway_id,
                              const std::string& server_uri, const std::shared_ptr<AgentLog>& log) {
  SyncAgentOptions options;
  options.gateway_id = gateway_id;
  options.key = plan.key;
  options.topic_prefix = kTopicPrefix;
  options.encoding = spec.encoding;
  options.confirmation = spec.confirmation;
  options.link.server_uri = server_uri;
  // Backfill as fast as the link and the receiver allow; every other
  // setting is the product's default.
  options.backfill_records_per_second = 0;
  options.log = [log](std::string_view line) { log->Add(line); };
  return options;
}

Result<SyncTableStatus> TableStatus(SyncAgent* agent, SyncStatus* full = nullptr) {
  CAIRN_ASSIGN_OR_RETURN(SyncStatus status, agent->GetStatus());
  for (const SyncTableStatus& table : status.tables) {
    if (table.table == kBenchTable) {
      SyncTableStatus found = table;
      if (full != nullptr) *full = std::move(status);
      return found;
    }
  }
  return Status::NotFound("the agent does not sync table '" + std::string(kBenchTable) + "'");
}

Status WaitConnected(SyncAgent* agent, const AgentLog& log) {
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(kConnectTimeoutMs);
  for (;;) {
    CAIRN_RETURN_IF_ERROR(CheckInterrupt());
    CAIRN_ASSIGN_OR_RETURN(SyncStatus status, agent->GetStatus());
    if (status.connected) return Status::Ok();
    if (Clock::now() >= deadline) {
      return Status::TimedOut("the agent did not connect: " + status.link.last_error + log.Joined());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

int64_t WaitTimeoutMs(uint64_t readings) {
  // Two minutes, plus room for rates down to 20 000 readings/s.
  return 120'000 + static_cast<int64_t>(readings / 20);
}

// Waits until the receiver has every distinct record (and, in receipt mode,
// has seen receipts for every LSN), then polls the agent until its ledger
// confirms everything through `last_lsn`. Fills the end of `result`.
Status WaitUntilConfirmed(SyncAgent* agent, Receiver* receiver, const DataSummary& data, uint64_t last_lsn,
                          const AgentLog& log, RunResult* result) {
  const bool receipts = result->spec.confirmation == SyncConfirmation::kReceipt;
  const uint64_t distinct = data.distinct_records;
  Status received = receiver->WaitFor(
      [&](const ReceiverState& state) {
        return state.counts.distinct_records >= distinct &&
               (!receipts || state.receipted.ContiguousFrom(1) >= last_lsn);
      },
      WaitTimeoutMs(data.distinct_readings), "every record at the receiver");
  if (!received.ok()) return Status(received.code(), received.message() + log.Joined());
  // The receiver is done; the agent is at most one receipt delivery and one
  // wake-up behind. Poll closely so the end time is within a poll of it.
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(60);
  for (;;) {
    CAIRN_RETURN_IF_ERROR(CheckInterrupt());
    const int64_t asked = NowNanos();
    CAIRN_ASSIGN_OR_RETURN(SyncTableStatus table, TableStatus(agent));
    if (table.confirmed_through >= last_lsn) {
      result->confirmed_nanos = asked;
      result->process_cpu_nanos += ProcessCpuNanos();
      break;
    }
    if (Clock::now() >= deadline) {
      return Status::TimedOut("the agent confirmed through LSN " + std::to_string(table.confirmed_through) +
                              " of " + std::to_string(last_lsn) + " a minute after the receiver had all" +
                              log.Joined());
    }
    std::this_thread::sleep_for(std::chrono::microseconds(kConfirmPollMicros));
  }
  SyncStatus status;
  CAIRN_ASSIGN_OR_RETURN(result->table, TableStatus(agent, &status));
  result->link = status.link;
  result->receipts_accepted = status.receipts_accepted;
  result->receipts_invalid = status.receipts_invalid;
  result->last_lsn = last_lsn;
  result->receiver = receiver->state();
  return Status::Ok();
}

// What the receiver expects of a cairn run as the gateway `gateway_id`.
ReceiverExpectation RunExpectation(const Plan& plan, const RunSpec& spec, const std::string& gateway_id) {
  ReceiverExpectation expectation;
  expectation.gateway_id = gateway_id;
  expectation.key = plan.key;
  expectation.send_receipts = spec.confirmation == SyncConfirmation::kReceipt;
  expectation.devices = plan.devices;
  expectation.seconds = plan.seconds;
  expectation.start = plan.start;
  return expectation;
}

// Backfill: the data is stored and sealed before the agent starts, so all of
// it lies at or below the live start and goes out on the backfill lane.
Result<RunResult> RunBackfill(const Plan& plan, const RunSpec& spec, const std::string& source,
                              uint64_t source_last_lsn, const std::string& directory,
                              const std::string& server_uri, const DataSummary& data, Receiver* receiver) {
  RunResult result;
  result.spec = spec;
  const std::string label = RunLabel(spec);
  Progress(plan, label, "copy the stored data");
  CAIRN_RETURN_IF_ERROR(CopyDirectory(source, directory));
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine,
                         Engine::Open(Env::Default(), directory, EngineOptions()));
  const uint64_t last_lsn = engine->Stats().last_lsn;
  if (last_lsn != source_last_lsn) {
    return Status::Internal("the copied data ends at LSN " + std::to_string(last_lsn) + ", not " +
                            std::to_string(source_last_lsn));
  }
  const std::string gateway_id = "bench-backfill-" + spec.name;
  receiver->Begin(RunExpectation(plan, spec, gateway_id));

  // The agent connects while the table's sync is off, and the clock starts
  // when it is switched on: the run measures syncing, not the MQTT connect
  // (which also waits for Paho's threads when a second client of the
  // process connects: about 2 s).
  CAIRN_ASSIGN_OR_RETURN(TableInfo table, engine->GetTable(kBenchTable));
  TableOptions sync_off = table.options;
  sync_off.sync = false;
  CAIRN_RETURN_IF_ERROR(engine->AlterTable(kBenchTable, sync_off));
  auto log = std::make_shared<AgentLog>();
  CAIRN_ASSIGN_OR_RETURN(
      std::unique_ptr<SyncAgent> agent,
      SyncAgent::Create(Env::Default(), engine.get(), AgentOptions(plan, spec, gateway_id, server_uri, log)));
  CAIRN_RETURN_IF_ERROR(agent->Start());
  Status confirmed = WaitConnected(agent.get(), *log);
  if (confirmed.ok()) {
    Progress(plan, label, "sync");
    result.process_cpu_nanos = -ProcessCpuNanos();
    result.start_nanos = NowNanos();
    confirmed = engine->AlterTable(kBenchTable, table.options);
  }
  if (confirmed.ok()) {
    agent->Notify();
    confirmed = WaitUntilConfirmed(agent.get(), receiver, data, last_lsn, *log, &result);
  }
  agent->Stop();
  CAIRN_RETURN_IF_ERROR(confirmed);
  CAIRN_RETURN_IF_ERROR(engine->Close());
  return result;
}

// Live: the agent starts on an empty table and the data is written while it
// runs, batch by batch, each write followed by Notify as cairnd does.
Result<RunResult> RunLive(const Plan& plan, const RunSpec& spec, const std::string& directory,
                          const std::string& server_uri, const DataSummary& data, Receiver* receiver) {
  RunResult result;
  result.spec = spec;
  const std::string label = RunLabel(spec);
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine,
                         Engine::Open(Env::Default(), directory, EngineOptions()));
  CAIRN_RETURN_IF_ERROR(engine->CreateTable(kBenchTable, TableOptions()));
  const std::string gateway_id = "bench-live-" + spec.name;
  receiver->Begin(RunExpectation(plan, spec, gateway_id));

  auto log = std::make_shared<AgentLog>();
  CAIRN_ASSIGN_OR_RETURN(
      std::unique_ptr<SyncAgent> agent,
      SyncAgent::Create(Env::Default(), engine.get(), AgentOptions(plan, spec, gateway_id, server_uri, log)));
  CAIRN_RETURN_IF_ERROR(agent->Start());
  // Writes start once the agent is connected, so that none waits for the
  // connection itself.
  if (Status connected = WaitConnected(agent.get(), *log); !connected.ok()) {
    agent->Stop();
    return connected;
  }

  Progress(plan, label, "write and sync");
  RecordWriter writer(engine.get());
  SensorGenerator generator(GeneratorOptions(plan));
  std::vector<SensorRecord> batch;
  uint64_t delivered = 0;
  Status written = Status::Ok();
  result.process_cpu_nanos = -ProcessCpuNanos();
  result.start_nanos = NowNanos();
  while (generator.NextBatch(plan.batch, &batch)) {
    if (spec.rate > 0) {
      // Steady pacing: batch k goes out when k batches' readings are due.
      const double due_seconds = static_cast<double>(delivered * kReadingsPerRecord) / spec.rate;
      const int64_t due = result.start_nanos + static_cast<int64_t>(due_seconds * 1e9);
      const int64_t wait = due - NowNanos();
      if (wait > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
    }
    delivered += batch.size();
    Result<WriteResult> write = writer.Write(batch);
    const int64_t acknowledged = NowNanos();
    if (!write.ok()) {
      written = write.status();
      break;
    }
    agent->Notify();
    if (write->stored > 0) result.writes.push_back({acknowledged, write->first_lsn + write->stored - 1});
    if (interrupted != 0) {
      written = CheckInterrupt();
      break;
    }
  }
  result.written_nanos = NowNanos();
  const uint64_t last_lsn = engine->Stats().last_lsn;
  if (written.ok() && !result.writes.empty() && result.writes.back().last_lsn != last_lsn) {
    written = Status::Internal("the writes' LSNs end at " + std::to_string(result.writes.back().last_lsn) +
                               ", the engine's at " + std::to_string(last_lsn));
  }
  Status confirmed =
      written.ok() ? WaitUntilConfirmed(agent.get(), receiver, data, last_lsn, *log, &result) : written;
  agent->Stop();
  CAIRN_RETURN_IF_ERROR(confirmed);
  CAIRN_RETURN_IF_ERROR(engine->Close());
  return result;
}

// ---- the naive peer --------------------------------------------------------

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

class PeerWindow : public mqtt::iaction_listener {
 public:
  void on_success(const mqtt::token&) override { Done(true); }
  void on_failure(const mqtt::token&) override { Done(false); }

  // Waits until fewer than `window` publishes await PUBACK; false after
  // `timeout_ms` or on interrupt.
  bool WaitBelow(size_t window, int64_t timeout_ms) {
    const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    std::unique_lock<std::mutex> lock(mutex_);
    while (in_flight_ >= window) {
      if (interrupted != 0 || Clock::now() >= deadline) return false;
      changed_.wait_for(lock, std::chrono::milliseconds(100));
    }
    return true;
  }

  void Sent() {
    std::lock_guard<std::mutex> lock(mutex_);
    ++in_flight_;
  }

  // For a publish Paho refused: it will not call back.
  void Unsent() {
    std::lock_guard<std::mutex> lock(mutex_);
    --in_flight_;
  }

  uint64_t acknowledged() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return acknowledged_;
  }
  uint64_t failed() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return failed_;
  }
  int64_t last_done_nanos() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_done_nanos_;
  }

 private:
  void Done(bool ok) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --in_flight_;
      ++(ok ? acknowledged_ : failed_);
      last_done_nanos_ = NowNanos();
    }
    changed_.notify_all();
  }

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  size_t in_flight_ = 0;
  uint64_t acknowledged_ = 0;
  uint64_t failed_ = 0;
  int64_t last_done_nanos_ = 0;
};

void AppendShortest(std::string* out, double value) {
  char buffer[32];
  const std::to_chars_result result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out->append(buffer, result.ptr);
}

void PeerPayload(const SensorRecord& record, std::string* out) {
  out->assign(R"({"fields":{"humidity":)");
  AppendShortest(out, record.humidity_percent());
  out->append(R"(,"pressure":)");
  AppendShortest(out, record.pressure_hectopascals());
  out->append(R"(,"temperature":)");
  AppendShortest(out, record.temperature_celsius());
  out->append(R"(},"name":"env","tags":{"device_id":")");
  out->append(record.device_id);
  out->append(R"("},"timestamp":)");
  out->append(std::to_string(record.timestamp));
  out->push_back('}');
}

Result<PeerResult> RunPeer(const Plan& plan, const std::string& server_uri, const DataSummary& data,
                           Receiver* receiver) {
  const std::string gateway_id = "bench-peer";
  const std::string topic = std::string(kPeerTopicRoot) + "/" + gateway_id + "/" + kEnvMeasure;
  ReceiverExpectation expectation;
  expectation.peer = true;
  expectation.peer_topic = topic;
  expectation.devices = plan.devices;
  expectation.seconds = plan.seconds;
  expectation.start = plan.start;
  receiver->Begin(std::move(expectation));

  PeerResult result;
  PeerWindow window;
  const int64_t timeout_ms = 60'000;
  try {
    // No persistence, as cairn's link: the comparison is of the wire.
    mqtt::async_client client(server_uri, "cairn-bench-" + gateway_id, nullptr);
    const mqtt::connect_options options = mqtt::connect_options_builder()
                                              .mqtt_version(MQTTVERSION_3_1_1)
                                              .clean_session(true)
                                              .max_inflight(static_cast<int>(kPeerWindow))
                                              .connect_timeout(std::chrono::milliseconds(kConnectTimeoutMs))
                                              .finalize();
    if (!client.connect(options)->wait_for(std::chrono::milliseconds(kConnectTimeoutMs))) {
      return Status::TimedOut("the peer did not connect to " + server_uri);
    }
    Progress(plan, "peer", "publish " + std::to_string(data.delivered) + " records");
    SensorGenerator generator(GeneratorOptions(plan));
    std::vector<SensorRecord> batch;
    std::string payload;
    result.process_cpu_nanos = -ProcessCpuNanos();
    result.start_nanos = NowNanos();
    while (
        result.records < data.delivered &&
        generator.NextBatch(
            static_cast<size_t>(std::min<uint64_t>(plan.batch, data.delivered - result.records)), &batch)) {
      for (const SensorRecord& record : batch) {
        if (!window.WaitBelow(kPeerWindow, timeout_ms)) {
          CAIRN_RETURN_IF_ERROR(CheckInterrupt());
          return Status::TimedOut("no PUBACK for the peer's publishes within " +
                                  std::to_string(timeout_ms / 1000) + " s");
        }
        const uint64_t sent = result.records;
        if (sent >= kPeerReceiverLead) {
          CAIRN_RETURN_IF_ERROR(receiver->WaitFor(
              [sent](const ReceiverState& state) { return state.counts.messages + kPeerReceiverLead > sent; },
              timeout_ms, "the receiver to take the peer's messages"));
        }
        PeerPayload(record, &payload);
        window.Sent();
        try {
          client.publish(topic, payload.data(), payload.size(), 1, false, nullptr, window);
        } catch (...) {
          window.Unsent();
          throw;
        }
        ++result.records;
      }
    }
    if (!window.WaitBelow(1, timeout_ms)) {
      CAIRN_RETURN_IF_ERROR(CheckInterrupt());
      return Status::TimedOut("the peer's last publishes got no PUBACK");
    }
    result.acknowledged_nanos = window.last_done_nanos();
    const uint64_t records = result.records;
    const uint64_t distinct = data.distinct_records;
    CAIRN_RETURN_IF_ERROR(receiver->WaitFor(
        [records, distinct](const ReceiverState& state) {
          return state.counts.messages >= records && state.counts.distinct_records >= distinct;
        },
        WaitTimeoutMs(data.distinct_readings), "the peer's records at the receiver"));
    result.end_nanos = std::max(NowNanos(), result.acknowledged_nanos);
    result.process_cpu_nanos += ProcessCpuNanos();
    client.disconnect()->wait_for(std::chrono::seconds(10));
  } catch (const std::exception& error) {
    return Status::Unavailable(std::string("the peer's MQTT client: ") + error.what());
  }
  result.acknowledged = window.acknowledged();
  result.failed = window.failed();
  result.receiver = receiver->state();
  return result;
}

// ---- the report ------------------------------------------------------------

// For each write, how long after its acknowledgement the contiguous coverage
// of `events` (LSN ranges, in arrival order) first reached its last LSN.
std::vector<int64_t> CoverageDelays(const std::vector<WriteAck>& writes,
                                    const std::vector<LsnEvent>& events) {
  std::vector<int64_t> delays;
  LsnRangeSet covered;
  uint64_t watermark = 0;
  int64_t reached_at = 0;
  size_t next = 0;
  for (const WriteAck& write : writes) {
    while (watermark < write.last_lsn && next < events.size()) {
      covered.Add(events[next].first_lsn, events[next].last_lsn);
      watermark = covered.ContiguousFrom(1);
      reached_at = events[next].nanos;
      ++next;
    }
    if (watermark < write.last_lsn) break;
    // A batch can leave before its write returns (the log sync runs after
    // the records reach the head); that counts as no delay.
    delays.push_back(std::max<int64_t>(0, reached_at - write.nanos));
  }
  return delays;
}

// When the contiguous coverage of `events` first reached `lsn`, if it did.
std::optional<int64_t> CoverageReached(const std::vector<LsnEvent>& events, uint64_t lsn) {
  LsnRangeSet covered;
  for (const LsnEvent& event : events) {
    covered.Add(event.first_lsn, event.last_lsn);
    if (covered.ContiguousFrom(1) >= lsn) return event.nanos;
  }
  return std::nullopt;
}

JsonValue Milliseconds(const std::vector<int64_t>& nanos, double fraction) {
  if (nanos.empty()) return JsonValue();
  return JsonValue::Number(Round(static_cast<double>(Percentile(nanos, fraction)) / 1e6, 3));
}

// CPU seconds of the run: the whole process (the broker is another), the
// receiver's worker thread (decoding, counting, receipts), and the rest: the
// sender (agent, engine and live writer, or the peer's client) plus every
// MQTT client thread of the process, the receiver's included.
JsonValue CpuJson(int64_t process_nanos, int64_t receiver_nanos, double readings) {
  const int64_t other_nanos = std::max<int64_t>(0, process_nanos - receiver_nanos);
  JsonValue cpu = JsonValue::Object();
  cpu.Set("process_seconds", JsonValue::Number(Round(static_cast<double>(process_nanos) / 1e9, 3)));
  cpu.Set("receiver_worker_seconds", JsonValue::Number(Round(static_cast<double>(receiver_nanos) / 1e9, 3)));
  cpu.Set("other_seconds", JsonValue::Number(Round(static_cast<double>(other_nanos) / 1e9, 3)));
  cpu.Set("readings_per_other_cpu_s",
          other_nanos > 0 ? JsonValue::Number(Round(readings * 1e9 / static_cast<double>(other_nanos), 0))
                          : JsonValue());
  return cpu;
}

double PerSecond(double count, int64_t nanos) {
  return nanos > 0 ? count * 1e9 / static_cast<double>(nanos) : 0;
}

// The problems of one run: what the receiver got against what was written,
// and what the agent's ledger says.
std::vector<std::string> CheckRun(const std::string& label, const RunResult& run, const DataSummary& data) {
  std::vector<std::string> problems;
  const ReceiverCounts& counts = run.receiver.counts;
  if (counts.distinct_readings != data.distinct_readings) {
    problems.push_back(label + ": the receiver decoded " + std::to_string(counts.distinct_readings) +
                       " distinct readings, " + std::to_string(data.distinct_readings) + " were written");
  }
  if (counts.digest != data.digest)
    problems.push_back(label + ": the received values differ from the written ones");
  if (counts.invalid != 0) {
    problems.push_back(label + ": " + std::to_string(counts.invalid) + " invalid messages or records (" +
                       counts.last_invalid + ")");
  }
  if (counts.receipt_publish_failures != 0) {
    problems.push_back(label + ": " + std::to_string(counts.receipt_publish_failures) +
                       " receipts not published");
  }
  if (run.table.confirmed_through != run.last_lsn || run.table.unsynced.records != 0) {
    problems.push_back(label + ": the ledger confirms through " +
                       std::to_string(run.table.confirmed_through) + " of " + std::to_string(run.last_lsn) +
                       " with " + std::to_string(run.table.unsynced.records) + " records unsynced");
  }
  if (counts.messages != run.link.published || counts.payload_bytes != run.link.bytes_published) {
    problems.push_back(label + ": the agent published " + std::to_string(run.link.published) + " messages (" +
                       std::to_string(run.link.bytes_published) + " bytes), the receiver got " +
                       std::to_string(counts.messages) + " (" + std::to_string(counts.payload_bytes) +
                       " bytes)");
  }
  if (run.receipts_invalid != 0) {
    problems.push_back(label + ": the agent refused " + std::to_string(run.receipts_invalid) + " receipts");
  }
  return problems;
}

JsonValue RunJson(const RunResult& run, const DataSummary& data) {
  const ReceiverCounts& counts = run.receiver.counts;
  const bool receipts = run.spec.confirmation == SyncConfirmation::kReceipt;
  const double readings = static_cast<double>(data.distinct_readings);
  const int64_t nanos = run.confirmed_nanos - run.start_nanos;
  const uint64_t messages = run.link.published;
  // Gateway to broker: its envelope PUBLISH packets and its PUBACKs of the
  // receipts. Broker to gateway: PUBACKs of the envelopes and the receipts.
  const uint64_t uplink = counts.publish_packet_bytes + counts.receipts_published * kPubackBytes;
  const uint64_t downlink = messages * kPubackBytes + counts.receipt_packet_bytes;
  uint64_t batches_confirmed = 0;
  JsonValue lanes = JsonValue::Object();
  for (const SyncLaneStatus& lane : run.table.lanes) {
    batches_confirmed += lane.batches_confirmed;
    lanes.Set(SyncLaneName(lane.lane), JsonValue::Unsigned(lane.records_confirmed));
  }

  JsonValue json = JsonValue::Object();
  json.Set("lane", JsonValue::String(std::string(SyncLaneName(run.spec.lane))));
  json.Set("confirmation", JsonValue::String(std::string(SyncConfirmationName(run.spec.confirmation))));
  json.Set("encoding", JsonValue::String(run.spec.encoding == EnvelopeEncoding::kJson ? "json" : "binary"));
  json.Set("records", JsonValue::Unsigned(data.distinct_records));
  json.Set("readings", JsonValue::Unsigned(data.distinct_readings));
  json.Set("seconds", JsonValue::Number(Round(static_cast<double>(nanos) / 1e9, 3)));
  json.Set("readings_per_s", JsonValue::Number(Round(PerSecond(readings, nanos), 0)));
  json.Set("messages", JsonValue::Unsigned(messages));
  json.Set("messages_per_s", JsonValue::Number(Round(PerSecond(static_cast<double>(messages), nanos), 1)));
  json.Set("records_per_message",
           JsonValue::Number(messages > 0 ? Round(static_cast<double>(counts.records) / messages, 1) : 0));
  json.Set("payload_bytes", JsonValue::Unsigned(counts.payload_bytes));
  json.Set("payload_bytes_per_reading",
           JsonValue::Number(Round(static_cast<double>(counts.payload_bytes) / readings, 4)));
  json.Set("mqtt_uplink_bytes_per_reading",
           JsonValue::Number(Round(static_cast<double>(uplink) / readings, 4)));
  json.Set("mqtt_downlink_bytes_per_reading",
           JsonValue::Number(Round(static_cast<double>(downlink) / readings, 6)));
  json.Set("receipts", JsonValue::Unsigned(counts.receipts_published));
  json.Set("resent_messages",
           JsonValue::Unsigned(messages > batches_confirmed ? messages - batches_confirmed : 0));
  json.Set("records_confirmed_by_lane", std::move(lanes));
  json.Set("cpu", CpuJson(run.process_cpu_nanos, counts.worker_cpu_nanos, readings));
  // Receipt mode: how long after the broker forwarded the last receipt the
  // agent's ledger had everything, within one status poll. (Broker mode
  // has no such moment to observe: the agent may be done before the
  // receiver has decoded the last envelope.)
  const std::optional<int64_t> reached =
      receipts ? CoverageReached(run.receiver.receipts, run.last_lsn) : std::nullopt;
  json.Set("ledger_lag_ms",
           reached ? JsonValue::Number(Round(static_cast<double>(run.confirmed_nanos - *reached) / 1e6, 3))
                   : JsonValue());
  if (run.spec.lane == SyncLane::kLive) {
    const int64_t write_nanos = run.written_nanos - run.start_nanos;
    json.Set("paced_readings_per_s", run.spec.rate > 0 ? JsonValue::Number(run.spec.rate) : JsonValue());
    json.Set("write_seconds", JsonValue::Number(Round(static_cast<double>(write_nanos) / 1e9, 3)));
    json.Set("write_readings_per_s", JsonValue::Number(Round(PerSecond(readings, write_nanos), 0)));
    const std::vector<int64_t> confirm =
        receipts ? CoverageDelays(run.writes, run.receiver.receipts) : std::vector<int64_t>();
    const std::vector<int64_t> delivery = CoverageDelays(run.writes, run.receiver.deliveries);
    json.Set("write_batches", JsonValue::Unsigned(run.writes.size()));
    json.Set("confirm_latency_ms_p50", Milliseconds(confirm, 0.50));
    json.Set("confirm_latency_ms_p99", Milliseconds(confirm, 0.99));
    json.Set("delivery_latency_ms_p50", Milliseconds(delivery, 0.50));
    json.Set("delivery_latency_ms_p99", Milliseconds(delivery, 0.99));
  }
  JsonValue checks = JsonValue::Object();
  checks.Set("expected_distinct_readings", JsonValue::Unsigned(data.distinct_readings));
  checks.Set("received_distinct_readings", JsonValue::Unsigned(counts.distinct_readings));
  checks.Set("received_records", JsonValue::Unsigned(counts.records));
  checks.Set("values_match", JsonValue::Bool(counts.digest == data.digest));
  checks.Set("invalid", JsonValue::Unsigned(counts.invalid));
  checks.Set("last_lsn", JsonValue::Unsigned(run.last_lsn));
  checks.Set("confirmed_through", JsonValue::Unsigned(run.table.confirmed_through));
  checks.Set("unsynced_records", JsonValue::Unsigned(run.table.unsynced.records));
  checks.Set("receipts_observed", JsonValue::Unsigned(counts.receipts_observed));
  checks.Set("receipts_accepted", JsonValue::Unsigned(run.receipts_accepted));
  json.Set("checks", std::move(checks));
  return json;
}

std::vector<std::string> CheckPeer(const PeerResult& peer, const DataSummary& data) {
  std::vector<std::string> problems;
  const ReceiverCounts& counts = peer.receiver.counts;
  if (counts.distinct_readings != data.distinct_readings || counts.digest != data.digest) {
    problems.push_back("peer: the receiver decoded " + std::to_string(counts.distinct_readings) +
                       " distinct readings (values " + (counts.digest == data.digest ? "match" : "differ") +
                       "), " + std::to_string(data.distinct_readings) + " were published");
  }
  if (counts.invalid != 0) {
    problems.push_back("peer: " + std::to_string(counts.invalid) + " invalid messages (" +
                       counts.last_invalid + ")");
  }
  if (peer.failed != 0 || peer.acknowledged != peer.records || counts.messages != peer.records) {
    problems.push_back("peer: " + std::to_string(peer.records) + " published, " +
                       std::to_string(peer.acknowledged) + " acknowledged, " + std::to_string(peer.failed) +
                       " failed, " + std::to_string(counts.messages) + " received");
  }
  return problems;
}

JsonValue PeerJson(const PeerResult& peer, const DataSummary& data) {
  const ReceiverCounts& counts = peer.receiver.counts;
  const double readings = static_cast<double>(data.distinct_readings);
  const int64_t nanos = peer.end_nanos - peer.start_nanos;
  JsonValue json = JsonValue::Object();
  json.Set("name", JsonValue::String(kPeerName));
  json.Set("window", JsonValue::Unsigned(kPeerWindow));
  json.Set("records_published", JsonValue::Unsigned(peer.records));
  json.Set("records", JsonValue::Unsigned(data.distinct_records));
  json.Set("readings", JsonValue::Unsigned(data.distinct_readings));
  json.Set("seconds", JsonValue::Number(Round(static_cast<double>(nanos) / 1e9, 3)));
  json.Set("readings_per_s", JsonValue::Number(Round(PerSecond(readings, nanos), 0)));
  json.Set("messages", JsonValue::Unsigned(peer.records));
  json.Set("messages_per_s",
           JsonValue::Number(Round(PerSecond(static_cast<double>(peer.records), nanos), 1)));
  json.Set("records_per_message", JsonValue::Number(1));
  json.Set("payload_bytes", JsonValue::Unsigned(counts.payload_bytes));
  json.Set("payload_bytes_per_reading",
           JsonValue::Number(Round(static_cast<double>(counts.payload_bytes) / readings, 4)));
  json.Set("mqtt_uplink_bytes_per_reading",
           JsonValue::Number(Round(static_cast<double>(counts.publish_packet_bytes) / readings, 4)));
  json.Set("mqtt_downlink_bytes_per_reading",
           JsonValue::Number(Round(static_cast<double>(peer.records * kPubackBytes) / readings, 4)));
  json.Set("cpu", CpuJson(peer.process_cpu_nanos, counts.worker_cpu_nanos, readings));
  json.Set("puback_seconds", JsonValue::Number(Round(
                                 static_cast<double>(peer.acknowledged_nanos - peer.start_nanos) / 1e9, 3)));
  JsonValue checks = JsonValue::Object();
  checks.Set("expected_distinct_readings", JsonValue::Unsigned(data.distinct_readings));
  checks.Set("received_distinct_readings", JsonValue::Unsigned(counts.distinct_readings));
  checks.Set("values_match", JsonValue::Bool(counts.digest == data.digest));
  checks.Set("acknowledged", JsonValue::Unsigned(peer.acknowledged));
  checks.Set("invalid", JsonValue::Unsigned(counts.invalid));
  json.Set("checks", std::move(checks));
  return json;
}

// The figures every run and the peer report, compared as cairn / peer.
constexpr std::string_view kRatioMetrics[] = {"readings_per_s", "messages_per_s", "payload_bytes_per_reading",
                                              "mqtt_uplink_bytes_per_reading"};

JsonValue Ratios(const JsonValue& report, std::string_view lane) {
  JsonValue ratios = JsonValue::Object();
  for (std::string_view metric : kRatioMetrics) {
    const std::optional<double> cairn = NumberAt(report, {"cairn", lane, "receipt", metric});
    const std::optional<double> peer = NumberAt(report, {"peer", metric});
    ratios.Set(metric, cairn && peer && *peer != 0 ? JsonValue::Number(RoundSignificant(*cairn / *peer, 4))
                                                   : JsonValue());
  }
  return ratios;
}

JsonValue TargetsJson() {
  JsonValue targets = JsonValue::Object();
  targets.Set("backfill_readings_per_s_min", JsonValue::Number(kTargetBackfillReadingsPerSecond));
  targets.Set("backfill_messages_per_s_max", JsonValue::Number(kTargetBackfillMessagesPerSecond));
  targets.Set("backfill_mqtt_uplink_bytes_per_reading_max",
              JsonValue::Number(kTargetBackfillWireBytesPerReading));
  return targets;
}

// Whether cairn's backfill in the default receipt mode meets each target.
JsonValue TargetsMet(const JsonValue& report) {
  auto check = [&](std::string_view metric, bool at_least, double limit) {
    const std::optional<double> value = NumberAt(report, {"cairn", "backfill", "receipt", metric});
    if (!value) return JsonValue();
    return JsonValue::Bool(at_least ? *value >= limit : *value <= limit);
  };
  JsonValue met = JsonValue::Object();
  met.Set("backfill_readings_per_s", check("readings_per_s", true, kTargetBackfillReadingsPerSecond));
  met.Set("backfill_messages_per_s", check("messages_per_s", false, kTargetBackfillMessagesPerSecond));
  met.Set("backfill_mqtt_uplink_bytes_per_reading",
          check("mqtt_uplink_bytes_per_reading", false, kTargetBackfillWireBytesPerReading));
  return met;
}

std::string MosquittoVersion(const MosquittoBroker& broker) {
  // mosquitto logs "mosquitto version X running" once it listens.
  const std::string log = broker.ReadLog();
  const std::string_view marker = "mosquitto version ";
  const size_t at = log.find(marker);
  if (at == std::string::npos) return "unknown";
  const size_t begin = at + marker.size();
  const size_t end = log.find(' ', begin);
  return log.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

// ---- printing --------------------------------------------------------------

struct Column {
  std::string_view heading;
  std::initializer_list<std::string_view> path;  // inside a run
  int decimals;
};

const Column kRateColumns[] = {
    {"readings/s", {"readings_per_s"}, 0},
    {"messages/s", {"messages_per_s"}, 1},
    {"records/msg", {"records_per_message"}, 1},
    {"payload B/rdg", {"payload_bytes_per_reading"}, 3},
    {"MQTT up B/rdg", {"mqtt_uplink_bytes_per_reading"}, 3},
    {"seconds", {"seconds"}, 2},
};

const Column kCostColumns[] = {
    {"CPU s", {"cpu", "process_seconds"}, 2}, {"receiver s", {"cpu", "receiver_worker_seconds"}, 2},
    {"other s", {"cpu", "other_seconds"}, 2}, {"rdg/other-CPU-s", {"cpu", "readings_per_other_cpu_s"}, 0},
    {"ledger lag ms", {"ledger_lag_ms"}, 1},
};

template <size_t N>
void PrintRow(std::ostream& out, std::string_view label, const JsonValue* run, const Column (&columns)[N]) {
  char cell[64];
  std::snprintf(cell, sizeof(cell), "%-28s", std::string(label).c_str());
  out << cell;
  for (const Column& column : columns) {
    std::snprintf(cell, sizeof(cell), " %15s",
                  FormatNumber(run ? FindPath(*run, column.path) : nullptr, column.decimals).c_str());
    out << cell;
  }
  out << "\n";
}

template <size_t N>
void PrintRuns(const JsonValue& report, std::ostream& out, const Column (&columns)[N]) {
  char cell[64];
  std::snprintf(cell, sizeof(cell), "%-28s", "run");
  out << cell;
  for (const Column& column : columns) {
    std::snprintf(cell, sizeof(cell), " %15s", std::string(column.heading).c_str());
    out << cell;
  }
  out << "\n";
  for (std::string_view lane : {"backfill", "live"}) {
    const JsonValue* runs = FindPath(report, {"cairn", lane});
    if (runs == nullptr) continue;
    for (const auto& member : runs->members()) {
      PrintRow(out, "cairn " + std::string(lane) + " " + member.first, &member.second, columns);
    }
  }
  const JsonValue* peer = report.Find("peer");
  if (peer != nullptr && peer->is_object()) PrintRow(out, std::string(kPeerName), peer, columns);
}

void PrintTable(const JsonValue& report, std::ostream& out) {
  PrintHeading(report, out);
  out << ", mosquitto " << FindPath(report, {"broker", "version"})->text() << " on loopback, data on "
      << report.Find("data_filesystem")->text() << "\n\n";
  PrintRuns(report, out, kRateColumns);
  const JsonValue* peer = report.Find("peer");
  if (peer != nullptr && peer->is_object()) {
    out << "  (" << kPeerName << ": the first " << peer->Find("records_published")->text()
        << " records, one QoS 1 message each, window " << peer->Find("window")->text() << ")\n";
  }
  out << "\n";
  PrintRuns(report, out, kCostColumns);
  out << "  (CPU of this process; other = all but the receiver's worker: the sender and every MQTT client "
         "thread)\n\n";
  for (std::string_view lane : {"live"}) {
    const JsonValue* live = FindPath(report, {"cairn", lane});
    if (live == nullptr) continue;
    for (const auto& member : live->members()) {
      const JsonValue& run = member.second;
      out << "live " << member.first << ": writes at " << FormatNumber(run.Find("write_readings_per_s"), 0)
          << " readings/s; write -> envelope at the receiver p50/p99 "
          << FormatNumber(run.Find("delivery_latency_ms_p50"), 1) << "/"
          << FormatNumber(run.Find("delivery_latency_ms_p99"), 1) << " ms";
      if (const JsonValue* confirm = run.Find("confirm_latency_ms_p50");
          confirm != nullptr && confirm->is_number()) {
        out << "; write -> receipt forwarded by the broker p50/p99 " << FormatNumber(confirm, 1) << "/"
            << FormatNumber(run.Find("confirm_latency_ms_p99"), 1) << " ms";
      }
      out << "\n";
    }
  }
  for (std::string_view lane : {"backfill", "live"}) {
    const JsonValue* ratios = FindPath(report, {"ratios", lane});
    if (ratios == nullptr) continue;
    out << "cairn " << lane << " receipt / peer:";
    for (const auto& member : ratios->members())
      out << " " << member.first << " " << FormatRatio(&member.second);
    out << "\n";
  }
  out << "targets (cairn backfill receipt):";
  const JsonValue* met = report.Find("targets_met");
  const JsonValue* targets = report.Find("targets");
  for (const auto& member : targets->members()) {
    out << " " << member.first << " " << member.second.text();
  }
  out << "\n  met:";
  for (const auto& member : met->members()) {
    out << " " << member.first << " "
        << (member.second.is_null()   ? "-"
            : member.second.boolean() ? "yes"
                                      : "NO");
  }
  out << "\n";
  PrintResults(report,
               "checks: the receiver decoded every distinct reading with its values, and every ledger "
               "confirms everything",
               "checks FAILED:", out);
}

// ---- self-check --------------------------------------------------------------

// The keys every cairn run and the peer report; all positive but the
// downlink, which rounds to 0 when a few PUBACKs answer millions of readings.
constexpr std::string_view kRunMetrics[] = {"seconds",
                                            "readings_per_s",
                                            "messages",
                                            "messages_per_s",
                                            "records_per_message",
                                            "payload_bytes_per_reading",
                                            "mqtt_uplink_bytes_per_reading",
                                            "mqtt_downlink_bytes_per_reading"};

constexpr std::pair<std::string_view, std::string_view> kExpectedRuns[] = {
    {"backfill", "receipt"}, {"backfill", "broker"}, {"backfill", "receipt_json"},
    {"live", "receipt"},     {"live", "broker"},     {"live", "receipt_paced"},
};

std::vector<std::string> SelfCheck(const std::string& printed) {
  std::vector<std::string> problems;
  const std::optional<JsonValue> parsed = ParseReport(printed, "sync", &problems);
  if (!parsed) return problems;
  const JsonValue& report = *parsed;
  auto require_positive = [&](const JsonValue* node, const std::string& where, std::string_view key) {
    const JsonValue* value = node != nullptr ? node->Find(key) : nullptr;
    const bool may_be_zero = key == "mqtt_downlink_bytes_per_reading";
    if (value == nullptr || !value->is_number()) {
      problems.push_back(where + "." + std::string(key) + " is missing or not a number");
    } else if (!(value->number() > 0) && !(may_be_zero && value->number() == 0)) {
      problems.push_back(where + "." + std::string(key) + " = " + value->text() + " is not positive");
    }
  };
  for (std::string_view key : {"readings", "records", "devices", "hours"})
    require_positive(&report, "report", key);
  require_positive(report.Find("machine"), "machine", "nproc");
  const JsonValue* version = FindPath(report, {"broker", "version"});
  if (version == nullptr || !version->is_string() || version->text().empty()) {
    problems.push_back("broker.version is missing");
  }
  for (const auto& expected : kExpectedRuns) {
    const std::string where = "cairn." + std::string(expected.first) + "." + std::string(expected.second);
    const JsonValue* run = FindPath(report, {"cairn", expected.first, expected.second});
    if (run == nullptr || !run->is_object()) {
      problems.push_back(where + " is missing");
      continue;
    }
    for (std::string_view metric : kRunMetrics) require_positive(run, where, metric);
    if (!IsTrue(FindPath(*run, {"checks", "values_match"}))) {
      problems.push_back(where + ".checks.values_match is not true");
    }
    if (expected.first == std::string_view("live")) {
      require_positive(run, where, "write_readings_per_s");
      const JsonValue* delivery = run->Find("delivery_latency_ms_p50");
      if (delivery == nullptr || !delivery->is_number())
        problems.push_back(where + ".delivery_latency_ms_p50");
      if (expected.second == std::string_view("receipt")) {
        const JsonValue* confirm = run->Find("confirm_latency_ms_p99");
        if (confirm == nullptr || !confirm->is_number())
          problems.push_back(where + ".confirm_latency_ms_p99");
      }
    }
  }
  const JsonValue* peer = report.Find("peer");
  if (peer == nullptr || !peer->is_object()) {
    problems.push_back("peer is missing");
  } else {
    for (std::string_view metric : kRunMetrics) require_positive(peer, "peer", metric);
    require_positive(peer, "peer", "records_published");
  }
  for (std::string_view lane : {"backfill", "live"}) {
    for (std::string_view metric : kRatioMetrics) {
      require_positive(FindPath(report, {"ratios", lane}), "ratios." + std::string(lane), metric);
    }
  }
  const JsonValue* met = report.Find("targets_met");
  if (met == nullptr || !met->is_object() || met->members().size() != 3) {
    problems.push_back("targets_met is missing");
  } else {
    for (const auto& member : met->members()) {
      if (member.second.kind() != JsonValue::Kind::kBool) problems.push_back("targets_met." + member.first);
    }
  }
  if (!IsTrue(FindPath(report, {"checks", "results_match"}))) {
    problems.push_back("checks.results_match is not true");
  }
  return problems;
}

// ---- options ----------------------------------------------------------------

constexpr char kUsage[] =
    "usage: cairn-bench sync [--json] [--self-check] [--devices N] [--hours H] [--batch N]\n"
    "                        [--seed N] [--dir PATH] [--keep] [--peer-records N] [--live-rate R]\n"
    "\n"
    "  --devices N       devices sending one multi-measure record per second (default 200)\n"
    "  --hours H         hours of data per device, fractions allowed, at most 648 (default 1)\n"
    "  --batch N         records per engine write call (default 1000)\n"
    "  --seed N          seed of the generated data and of the gateway's key (default 1)\n"
    "  --dir PATH        where to create the scratch data directory (default $TMPDIR or /tmp)\n"
    "  --keep            keep the data directory instead of removing it at exit\n"
    "  --peer-records N  records the naive peer publishes, from the start of the data\n"
    "                    (default 100000; capped at the data's size)\n"
    "  --live-rate R     readings/s the writer of the paced live run keeps to (default\n"
    "                    300000); the other live runs write as fast as writes return\n"
    "  --json            print one JSON object instead of the table\n"
    "  --self-check      validate the printed JSON (keys, types, checks); exit 1 if not\n";

// Returns an error message, empty on success.
std::string ParseOptions(int argc, char** argv, SyncOptions* options) {
  auto own_flags = [options](std::string_view flag,
                             const TakeFlagValue& take_value) -> std::optional<std::string> {
    std::string_view value;
    if (flag == "--peer-records") {
      if (!take_value(&value) || !ParseInteger(value, &options->peer_records) || options->peer_records < 1) {
        return "--peer-records takes a positive integer";
      }
      return "";
    }
    if (flag == "--live-rate") {
      if (!take_value(&value) || !ParseFiniteDouble(value, &options->live_rate) || options->live_rate <= 0) {
        return "--live-rate takes a positive number of readings per second";
      }
      return "";
    }
    return std::nullopt;
  };
  if (std::string error = ParseCommonOptions(argc, argv, &options->common, own_flags); !error.empty()) {
    return error;
  }
  return CheckHoursCoverASecond(options->common);
}

std::string KeyFromSeed(uint64_t seed) {
  DeterministicRandom random(seed ^ kKeyStream);
  std::string key;
  while (key.size() < 32) {
    const uint64_t word = random.Next();
    for (int i = 0; i < 8; ++i) key.push_back(static_cast<char>((word >> (8 * i)) & 0xff));
  }
  return key;
}

struct RunAll {
  std::vector<std::pair<RunSpec, RunResult>> runs;
  std::optional<PeerResult> peer;
};

}  // namespace

int RunSyncBenchmark(int argc, char** argv) {
  if (WantsHelp(argc, argv)) {
    std::cout << kUsage;
    return 0;
  }
  SyncOptions options;
  if (const std::string error = ParseOptions(argc, argv, &options); !error.empty()) {
    std::cerr << "cairn-bench sync: " << error << "\n\n" << kUsage;
    return 2;
  }

  const Plan plan{PlanData(options.common), options.live_rate, KeyFromSeed(options.common.seed)};
  Result<ScratchDirectory> scratch = CreateScratchDirectory(options.common, "cairn-bench-sync-");
  if (!scratch.ok()) {
    std::cerr << "cairn-bench sync: " << scratch.status().ToString() << "\n";
    return 1;
  }

  std::signal(SIGINT, OnInterruptSignal);
  std::signal(SIGTERM, OnInterruptSignal);

  MosquittoBroker broker;
  Receiver receiver;
  RunAll all;
  DataSummary data;
  DataSummary peer_data;
  auto run = [&]() -> Status {
    Progress(plan, "broker", "start mosquitto");
    CAIRN_RETURN_IF_ERROR(broker.Start(MosquittoBrokerOptions()).WithContext("mosquitto"));
    CAIRN_RETURN_IF_ERROR(receiver.Start(broker.server_uri()).WithContext("receiver"));
    data = SummarizeData(plan, UINT64_MAX);
    peer_data = SummarizeData(plan, options.peer_records);

    const std::string source = scratch->path() + "/stored";
    uint64_t source_last_lsn = 0;
    Progress(plan, "backfill", "write and seal the data once");
    CAIRN_RETURN_IF_ERROR(
        WriteBackfillSource(plan, source, &source_last_lsn).WithContext("writing the data"));

    const RunSpec specs[] = {
        {"receipt", SyncLane::kBackfill, SyncConfirmation::kReceipt, EnvelopeEncoding::kBinary},
        {"broker", SyncLane::kBackfill, SyncConfirmation::kBroker, EnvelopeEncoding::kBinary},
        {"receipt_json", SyncLane::kBackfill, SyncConfirmation::kReceipt, EnvelopeEncoding::kJson},
        {"receipt", SyncLane::kLive, SyncConfirmation::kReceipt, EnvelopeEncoding::kBinary},
        {"broker", SyncLane::kLive, SyncConfirmation::kBroker, EnvelopeEncoding::kBinary},
        {"receipt_paced", SyncLane::kLive, SyncConfirmation::kReceipt, EnvelopeEncoding::kBinary,
         plan.live_rate},
    };
    for (const RunSpec& spec : specs) {
      const std::string label = RunLabel(spec);
      const std::string directory =
          scratch->path() + "/" + std::string(SyncLaneName(spec.lane)) + "-" + spec.name;
      Result<RunResult> result = spec.lane == SyncLane::kBackfill
                                     ? RunBackfill(plan, spec, source, source_last_lsn, directory,
                                                   broker.server_uri(), data, &receiver)
                                     : RunLive(plan, spec, directory, broker.server_uri(), data, &receiver);
      if (!result.ok()) return result.status().WithContext(label);
      all.runs.emplace_back(spec, std::move(*result));
      // Each run's data directory goes as soon as it is measured.
      std::error_code ignored;
      std::filesystem::remove_all(directory, ignored);
    }
    Result<PeerResult> peer = RunPeer(plan, broker.server_uri(), peer_data, &receiver);
    if (!peer.ok()) return peer.status().WithContext("peer");
    all.peer = std::move(*peer);
    return Status::Ok();
  };
  const Status status = run();
  receiver.Stop();
  if (!status.ok()) {
    std::cerr << "cairn-bench sync: " << status.ToString() << "\n";
    return 1;
  }

  JsonValue report = ReportHead("sync", plan, options.common.hours, data.distinct_readings);
  report.Set("live_rate", JsonValue::Number(plan.live_rate));
  report.Set("machine", MachineJson());
  JsonValue broker_json = JsonValue::Object();
  broker_json.Set("version", JsonValue::String(MosquittoVersion(broker)));
  broker_json.Set("transport", JsonValue::String("tcp 127.0.0.1"));
  broker_json.Set("persistence", JsonValue::Bool(false));
  report.Set("broker", std::move(broker_json));
  report.Set("data_filesystem", JsonValue::String(FilesystemName(scratch->path())));
  report.Set(
      "wire_bytes",
      JsonValue::String("payload: envelope (or peer JSON) bytes; mqtt_uplink: MQTT 3.1.1 PUBLISH packets "
                        "gateway->broker (header, topic, packet id, payload) plus its PUBACKs of receipts; "
                        "mqtt_downlink: PUBACKs and receipt PUBLISH packets broker->gateway; TCP/IP "
                        "headers excluded"));

  std::vector<std::string> problems;
  JsonValue cairn = JsonValue::Object();
  for (std::string_view lane : {"backfill", "live"}) {
    JsonValue runs = JsonValue::Object();
    for (const auto& entry : all.runs) {
      if (SyncLaneName(entry.first.lane) != lane) continue;
      runs.Set(entry.first.name, RunJson(entry.second, data));
      const std::vector<std::string> found = CheckRun(RunLabel(entry.first), entry.second, data);
      problems.insert(problems.end(), found.begin(), found.end());
    }
    cairn.Set(lane, std::move(runs));
  }
  report.Set("cairn", std::move(cairn));
  report.Set("peer", PeerJson(*all.peer, peer_data));
  const std::vector<std::string> peer_problems = CheckPeer(*all.peer, peer_data);
  problems.insert(problems.end(), peer_problems.begin(), peer_problems.end());
  JsonValue ratios = JsonValue::Object();
  ratios.Set("backfill", Ratios(report, "backfill"));
  ratios.Set("live", Ratios(report, "live"));
  report.Set("ratios", std::move(ratios));
  report.Set("targets", TargetsJson());
  report.Set("targets_met", TargetsMet(report));
  JsonValue checks = JsonValue::Object();
  checks.Set("expected_distinct_readings", JsonValue::Unsigned(data.distinct_readings));
  checks.Set("duplicates_delivered", JsonValue::Unsigned(data.delivered - data.distinct_records));
  SetResults(problems, &checks);
  report.Set("checks", std::move(checks));

  if (!PrintReport(options.common, report, scratch->path(), PrintTable, SelfCheck)) return 1;
  return problems.empty() ? 0 : 1;
}

}  // namespace cairn::bench
