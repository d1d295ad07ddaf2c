#include "cairn/ingest/ingest_handler.h"

#include <algorithm>
#include <utility>

namespace cairn {

namespace {

// The reason a rejected receipt carries. A receipt takes UTF-8 without
// control characters; printable ASCII is both, whatever the database quoted.
std::string ReceiptReason(std::string_view sink_message) {
  std::string reason;
  for (char c : sink_message) {
    const auto byte = static_cast<unsigned char>(c);
    reason.push_back(byte >= 0x20 && byte < 0x7F ? c : '?');
  }
  if (reason.empty()) reason = "rejected by the sink";
  if (reason.size() > kMaxReceiptReasonBytes) reason.resize(kMaxReceiptReasonBytes);
  return reason;
}

}  // namespace

std::string_view IngestOutcomeName(IngestOutcome outcome) {
  switch (outcome) {
    case IngestOutcome::kStored:
      return "stored";
    case IngestOutcome::kRejected:
      return "rejected";
    case IngestOutcome::kUnknownGateway:
      return "unknown_gateway";
    case IngestOutcome::kForged:
      return "forged";
    case IngestOutcome::kMalformed:
      return "malformed";
    case IngestOutcome::kStopped:
      return "stopped";
  }
  return "unknown";
}

IngestHandler::IngestHandler(Env* env, IngestHandlerOptions options, IngestSink* sink)
    : env_(env), options_(std::move(options)), sink_(sink) {}

void IngestHandler::RequestStop() { stop_requested_.store(true); }

IngestStats IngestHandler::stats() const {
  MutexLock lock(&mutex_);
  return stats_;
}

HandledMessage IngestHandler::Refuse(IngestOutcome outcome, std::string detail) {
  {
    MutexLock lock(&mutex_);
    switch (outcome) {
      case IngestOutcome::kUnknownGateway:
        ++stats_.unknown_gateway;
        break;
      case IngestOutcome::kForged:
        ++stats_.forged;
        break;
      case IngestOutcome::kMalformed:
        ++stats_.malformed;
        break;
      default:
        break;
    }
  }
  HandledMessage handled;
  handled.outcome = outcome;
  handled.detail = std::move(detail);
  return handled;
}

void IngestHandler::SleepUnlessStopped(int64_t ms) {
  // Short naps, so that Stop does not wait out a long backoff.
  constexpr int64_t kNapMs = 50;
  const int64_t deadline = env_->MonotonicNanos() + ms * 1'000'000;
  while (!stop_requested_.load()) {
    const int64_t left_ns = deadline - env_->MonotonicNanos();
    if (left_ns <= 0) return;
    env_->SleepForMicros(std::min(left_ns / 1000, kNapMs * 1000));
  }
}

HandledMessage IngestHandler::Handle(std::string_view topic, std::string_view payload) {
  {
    MutexLock lock(&mutex_);
    ++stats_.messages;
  }
  VerifiedMessage verified;
  if (std::optional<HandledMessage> refused = Verify(topic, payload, &verified)) return std::move(*refused);

  HandledMessage handled;
  handled.batch = verified.envelope.header;
  SyncReceipt receipt;
  receipt.batch = verified.envelope.header;
  if (!StoreWithRetries(verified.envelope, &handled, &receipt)) return handled;

  Result<std::string> receipt_payload = EncodeReceipt(receipt, verified.key, verified.envelope.encoding);
  if (!receipt_payload.ok()) {
    // Reachable only through a reason EncodeReceipt refuses, which
    // ReceiptReason prevents; reported rather than hidden.
    handled.detail = "cannot encode the receipt: " + receipt_payload.status().ToString();
    return handled;
  }
  handled.receipt = OutgoingReceipt{std::move(verified.receipt_topic), std::move(*receipt_payload)};
  return handled;
}

std::optional<HandledMessage> IngestHandler::Verify(std::string_view topic, std::string_view payload,
                                                    VerifiedMessage* verified) {
  Result<SyncTopicParts> parts = ParseSyncTopic(options_.topic_prefix, topic);
  if (!parts.ok()) return Refuse(IngestOutcome::kMalformed, "not a sync topic: " + parts.status().message());
  const auto key = options_.keys.find(parts->gateway_id);
  if (key == options_.keys.end()) {
    return Refuse(IngestOutcome::kUnknownGateway, "no key for gateway '" + parts->gateway_id + "'");
  }
  Result<DecodedEnvelope> envelope = DecodeEnvelope(payload, key->second, options_.limits);
  if (!envelope.ok()) {
    const Status& error = envelope.status();
    const IngestOutcome outcome =
        error.Is(StatusCode::kPermissionDenied) ? IngestOutcome::kForged : IngestOutcome::kMalformed;
    return Refuse(outcome, "envelope on " + std::string(topic) + ": " + error.ToString());
  }
  const EnvelopeHeader& header = envelope->header;
  if (header.gateway_id != parts->gateway_id || header.table != parts->table || header.lane != parts->lane) {
    // Authentic, but for another topic: someone moved a valid message.
    return Refuse(IngestOutcome::kForged, "envelope of " + header.gateway_id + "/" + header.table + "/" +
                                              std::string(SyncLaneName(header.lane)) + " arrived on topic " +
                                              std::string(topic));
  }
  Result<std::string> receipt_topic = ReceiptTopic(options_.topic_prefix, header.gateway_id);
  if (!receipt_topic.ok()) return Refuse(IngestOutcome::kMalformed, receipt_topic.status().ToString());

  verified->key = key->second;
  verified->envelope = std::move(*envelope);
  verified->receipt_topic = std::move(*receipt_topic);
  return std::nullopt;
}

bool IngestHandler::StoreWithRetries(const DecodedEnvelope& envelope, HandledMessage* handled,
                                     SyncReceipt* receipt) {
  int64_t backoff_ms = std::max<int64_t>(options_.retry_min_ms, 1);
  while (true) {
    if (stop_requested_.load()) {
      handled->outcome = IngestOutcome::kStopped;
      handled->detail = "stopped while the sink was failing";
      return false;
    }
    Result<SinkCounts> counts = sink_->ApplyBatch(envelope, env_->NowUnixNanos());
    if (counts.ok()) {
      handled->outcome = IngestOutcome::kStored;
      handled->counts = *counts;
      receipt->status = ReceiptStatus::kOk;
      MutexLock lock(&mutex_);
      ++stats_.batches_stored;
      stats_.records_inserted += counts->inserted;
      stats_.records_replaced += counts->replaced;
      stats_.records_duplicate += counts->duplicates;
      stats_.records_older += counts->older;
      return true;
    }
    if (counts.status().Is(StatusCode::kInvalidArgument)) {
      handled->outcome = IngestOutcome::kRejected;
      handled->detail = counts.status().message();
      receipt->status = ReceiptStatus::kRejected;
      receipt->reason = ReceiptReason(counts.status().message());
      MutexLock lock(&mutex_);
      ++stats_.batches_rejected;
      return true;
    }
    {
      MutexLock lock(&mutex_);
      ++stats_.sink_failures;
      stats_.last_error = counts.status().ToString();
    }
    SleepUnlessStopped(backoff_ms);
    backoff_ms = std::min(backoff_ms * 2, std::max<int64_t>(options_.retry_max_ms, 1));
    if (!stop_requested_.load()) {
      // A failed reconnect is one more transient failure; the next
      // ApplyBatch reports it again.
      (void)sink_->Reconnect();
    }
  }
}

}  // namespace cairn
