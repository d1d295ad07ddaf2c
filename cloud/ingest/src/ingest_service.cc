#include "cairn/ingest/ingest_service.h"

#include <atomic>
#include <utility>

namespace cairn {

// Receipt counters, shared with publish callbacks that may run after the
// service is gone.
struct IngestService::Counters {
  std::atomic<uint64_t> published{0};
  std::atomic<uint64_t> deferred{0};
  std::atomic<uint64_t> acknowledged{0};
  std::atomic<uint64_t> failures{0};
};

Result<std::unique_ptr<IngestService>> IngestService::Create(Env* env, IngestServiceOptions options,
                                                             std::unique_ptr<IngestSink> sink) {
  if (sink == nullptr) return Status::InvalidArgument("the ingest service needs a sink");
  if (options.ingest.keys.empty()) return Status::InvalidArgument("the ingest service needs gateway keys");
  if (!options.link_factory) return Status::InvalidArgument("the ingest service needs an MQTT link factory");
  for (const auto& [gateway, key] : options.ingest.keys) {
    if (key.size() < kMinSyncKeyBytes) {
      return Status::InvalidArgument("the key of gateway '" + gateway + "' is shorter than " +
                                     std::to_string(kMinSyncKeyBytes) + " bytes");
    }
  }
  // SyncTopic checks the prefix; "+" levels are not valid identifiers, so
  // check with placeholders and build the filter by hand.
  Result<std::string> probe = SyncTopic(options.ingest.topic_prefix, "gateway", "table", SyncLane::kLive);
  if (!probe.ok()) return probe.status().WithContext("topic prefix");

  std::unique_ptr<IngestService> service(new IngestService(env, std::move(options), std::move(sink)));
  MqttLinkOptions link = service->options_.link;
  link.clean_session = false;
  link.subscriptions.push_back(service->subscription_);
  IngestService* self = service.get();
  CAIRN_ASSIGN_OR_RETURN(
      service->link_,
      service->options_.link_factory(
          env, std::move(link),
          [self](std::string_view topic, std::string_view payload) { self->OnMessage(topic, payload); },
          [self](bool connected, const std::string& reason) { self->OnConnection(connected, reason); }));
  return service;
}

IngestService::IngestService(Env* env, IngestServiceOptions options, std::unique_ptr<IngestSink> sink)
    : env_(env),
      options_(std::move(options)),
      sink_(std::move(sink)),
      handler_(env, options_.ingest, sink_.get()),
      subscription_(options_.ingest.topic_prefix + "/+/+/+"),
      counters_(std::make_shared<Counters>()) {}

IngestService::~IngestService() { Stop(); }

Status IngestService::Start() { return link_->Start(); }

bool IngestService::WaitConnected(int64_t timeout_ms) { return link_->WaitConnected(timeout_ms); }

void IngestService::Stop() {
  // First release a handler blocked in sink retries, so that the link's
  // Stop, which waits for the running handler, returns.
  handler_.RequestStop();
  if (link_ != nullptr) link_->Stop();
}

IngestServiceStats IngestService::stats() const {
  IngestServiceStats stats;
  stats.ingest = handler_.stats();
  if (link_ != nullptr) stats.link = link_->stats();
  stats.receipts_published = counters_->published.load();
  stats.receipts_acknowledged = counters_->acknowledged.load();
  stats.receipt_failures = counters_->failures.load();
  stats.receipts_deferred = counters_->deferred.load();
  return stats;
}

void IngestService::Log(std::string_view line) {
  if (options_.log) options_.log(line);
}

void IngestService::OnConnection(bool connected, const std::string& reason) {
  if (connected) {
    Log("subscribed to " + subscription_ + " on " + options_.link.server_uri);
    FlushDeferredReceipts();
  } else {
    Log("connection to " + options_.link.server_uri + " lost: " + reason);
  }
}

void IngestService::OnMessage(std::string_view topic, std::string_view payload) {
  const IngestStats before = handler_.stats();
  HandledMessage handled = handler_.Handle(topic, payload);
  const IngestStats after = handler_.stats();
  if (after.sink_failures != before.sink_failures) {
    Log("sink failed " + std::to_string(after.sink_failures - before.sink_failures) +
        " time(s) before this batch went through; last error: " + after.last_error);
  }
  switch (handled.outcome) {
    case IngestOutcome::kStored:
      if (options_.progress_every_batches > 0 &&
          after.batches_stored % options_.progress_every_batches == 0) {
        Log(std::to_string(after.batches_stored) + " batches stored; records inserted " +
            std::to_string(after.records_inserted) + ", replaced " + std::to_string(after.records_replaced) +
            ", duplicate " + std::to_string(after.records_duplicate) + ", older " +
            std::to_string(after.records_older));
      }
      break;
    case IngestOutcome::kRejected:
      Log("rejected batch " + std::to_string(handled.batch->batch_sequence) + " of " +
          handled.batch->gateway_id + "/" + handled.batch->table + ": " + handled.detail);
      break;
    default:
      Log("dropped message (" + std::string(IngestOutcomeName(handled.outcome)) + "): " + handled.detail);
      break;
  }
  if (handled.receipt.has_value()) PublishReceipt(std::move(*handled.receipt));
}

Status IngestService::TryPublish(const OutgoingReceipt& receipt) {
  std::shared_ptr<Counters> counters = counters_;
  Status published = link_->Publish(receipt.topic, receipt.payload, [counters](const Status& done) {
    if (done.ok()) {
      counters->acknowledged.fetch_add(1);
    } else {
      counters->failures.fetch_add(1);
    }
  });
  if (published.ok()) counters_->published.fetch_add(1);
  return published;
}

void IngestService::FlushDeferredReceipts() {
  MutexLock lock(&deferred_mutex_);
  while (!deferred_receipts_.empty()) {
    Status published = TryPublish(deferred_receipts_.front());
    if (published.Is(StatusCode::kUnavailable)) return;  // later, on the next message or connect
    if (!published.ok()) {
      counters_->failures.fetch_add(1);
      Log("receipt to " + deferred_receipts_.front().topic + " not published: " + published.ToString());
    }
    deferred_receipts_.pop_front();
  }
}

void IngestService::DeferReceipt(OutgoingReceipt receipt) {
  MutexLock lock(&deferred_mutex_);
  if (deferred_receipts_.size() >= kMaxDeferredReceipts) {
    // The gateway re-sends what stays unconfirmed; the batch is stored.
    counters_->failures.fetch_add(1);
    Log("receipt to " + receipt.topic + " dropped: too many receipts wait for the broker");
    return;
  }
  counters_->deferred.fetch_add(1);
  deferred_receipts_.push_back(std::move(receipt));
}

void IngestService::PublishReceipt(OutgoingReceipt receipt) {
  FlushDeferredReceipts();
  {
    MutexLock lock(&deferred_mutex_);
    if (!deferred_receipts_.empty()) {
      // Keep the order: this one goes after those still waiting.
      counters_->deferred.fetch_add(1);
      deferred_receipts_.push_back(std::move(receipt));
      return;
    }
  }
  // Publish refuses (Unavailable) while the in-flight window is full, which
  // PUBACKs empty from Paho's threads; wait for room a bounded time.
  const int64_t deadline = env_->MonotonicNanos() + options_.receipt_wait_ms * 1'000'000;
  while (true) {
    Status published = TryPublish(receipt);
    if (published.ok()) return;
    if (!published.Is(StatusCode::kUnavailable)) {
      counters_->failures.fetch_add(1);
      Log("receipt to " + receipt.topic + " not published: " + published.ToString());
      return;
    }
    // Not connected: messages a persistent session queued are delivered
    // right after the broker accepts the connection, before the link counts
    // as connected and takes publishes. Blocking here would hold up the
    // very thread that completes the connection, so the receipt waits for
    // the connect (OnConnection) or the next message instead.
    if (!link_->connected() || env_->MonotonicNanos() >= deadline) {
      DeferReceipt(std::move(receipt));
      return;
    }
    env_->SleepForMicros(10'000);
  }
}

}  // namespace cairn
