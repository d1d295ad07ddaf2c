// The receiver of `cairn-bench sync`: the ingest side, in this process
// (sync_bench_common.h describes it).
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "cairn/platform/env.h"

#include "sync_bench_common.h"

namespace cairn::bench::sync_bench {

Status Receiver::Start(const std::string& server_uri) {
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

void Receiver::Stop() {
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

void Receiver::Begin(ReceiverExpectation expectation) {
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

Status Receiver::WaitFor(const std::function<bool(const ReceiverState&)>& done, int64_t timeout_ms,
                         std::string_view what) {
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!done(state_)) {
    CAIRN_RETURN_IF_ERROR(CheckInterrupt());
    if (Clock::now() >= deadline) {
      return Status::TimedOut("waited " + std::to_string(timeout_ms / 1000) + " s for " + std::string(what) +
                              "; receiver: " + Describe(state_.counts));
    }
    changed_.wait_for(lock, std::chrono::milliseconds(100));
  }
  return Status::Ok();
}

ReceiverState Receiver::state() const {
  std::lock_guard<std::mutex> lock(mutex_);
  ReceiverState copy = state_;
  // Receipts the broker never acknowledged count as not published.
  copy.counts.receipt_publish_failures += receipt_failures_->load();
  return copy;
}

std::string Receiver::Describe(const ReceiverCounts& counts) {
  std::string text = std::to_string(counts.messages) + " messages, " +
                     std::to_string(counts.distinct_records) + " distinct records, " +
                     std::to_string(counts.invalid) + " invalid";
  if (!counts.last_invalid.empty()) text += " (last: " + counts.last_invalid + ")";
  return text;
}

Result<std::unique_ptr<MqttLink>> Receiver::StartLink(const std::string& server_uri,
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

bool Receiver::StopRequested() {
  std::lock_guard<std::mutex> lock(queue_mutex_);
  return stopping_;
}

void Receiver::Enqueue(std::string_view topic, std::string_view payload) {
  Message message{std::string(topic), std::string(payload), NowNanos()};
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    queue_.push_back(std::move(message));
  }
  queue_changed_.notify_one();
}

void Receiver::Work() {
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

void Receiver::Handle(const Message& message) {
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

void Receiver::Invalid(std::string why) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++state_.counts.invalid;
  state_.counts.last_invalid = std::move(why);
}

void Receiver::CountRecord(uint32_t device, int64_t timestamp, int64_t centidegrees,
                           int64_t humidity_permille, int64_t pressure_decapascals, uint64_t readings) {
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

void Receiver::ObserveReceipt(const ReceiverExpectation& expectation, const Message& message) {
  Result<SyncReceipt> receipt = DecodeReceipt(message.payload, expectation.key);
  if (!receipt.ok()) return Invalid("receipt: " + receipt.status().ToString());
  std::lock_guard<std::mutex> lock(mutex_);
  ++state_.counts.receipts_observed;
  state_.receipted.Add(receipt->batch.first_lsn, receipt->batch.last_lsn);
  state_.receipts.push_back({message.arrived_nanos, receipt->batch.first_lsn, receipt->batch.last_lsn});
}

void Receiver::TakeEnvelope(const ReceiverExpectation& expectation, const Message& message) {
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
  if (header.gateway_id != parts->gateway_id || header.table != parts->table || header.lane != parts->lane) {
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

void Receiver::PublishReceipt(const ReceiverExpectation& expectation, const EnvelopeHeader& header,
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

void Receiver::TakePeerMessage(const Message& message) {
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

}  // namespace cairn::bench::sync_bench
