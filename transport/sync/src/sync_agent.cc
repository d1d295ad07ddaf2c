// SyncAgent: the lanes, the in-flight batches and the ledger flushes of
// sync_agent.h. One thread does all the sending; MQTT callbacks only record
// what happened (under the agent's mutex) and wake it.
#include "cairn/sync/sync_agent.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <thread>

#include "cairn/platform/mutex.h"

#include "sync_agent_options.h"
#include "sync_agent_state.h"

namespace cairn {

namespace {

using namespace sync_agent_state;

constexpr int64_t kNanosPerMilli = 1'000'000;
constexpr int64_t kNanosPerSecond = 1'000'000'000;
// After a failed publish, the batch waits this long before the next try (the
// link's own reconnect backoff spaces out the attempts while it is down).
constexpr int64_t kRepublishDelayNs = 200 * kNanosPerMilli;
// Live batches out at once, unconfirmed.
constexpr size_t kLiveMaxInflight = 8;

class SyncAgentImpl final : public SyncAgent {
 public:
  SyncAgentImpl(Env* env, Engine* engine, SyncAgentOptions options)
      : env_(env), engine_(engine), options_(std::move(options)) {}

  ~SyncAgentImpl() override { Stop(); }

  Status Init() {
    CAIRN_RETURN_IF_ERROR(CheckSyncAgentOptions(options_));
    CAIRN_ASSIGN_OR_RETURN(receipt_topic_, ReceiptTopic(options_.topic_prefix, options_.gateway_id));
    MqttLinkOptions link = options_.link;
    if (link.client_id.empty()) link.client_id = "cairn-" + options_.gateway_id;
    if (options_.confirmation == SyncConfirmation::kReceipt) link.subscriptions.push_back(receipt_topic_);
    if (!options_.link_factory) return Status::InvalidArgument("the sync agent needs an MQTT link factory");
    CAIRN_ASSIGN_OR_RETURN(
        link_, options_.link_factory(
                   env_, std::move(link),
                   [this](std::string_view topic, std::string_view payload) { OnMessage(topic, payload); },
                   [this](bool connected, const std::string& reason) { OnConnection(connected, reason); }));
    return Status::Ok();
  }

  Status Start() override {
    {
      MutexLock lock(&mutex_);
      if (started_) return Status::FailedPrecondition("the sync agent was started already");
      started_ = true;
    }
    CAIRN_ASSIGN_OR_RETURN(std::vector<SyncLedger> ledgers, engine_->LoadSyncLedgers());
    const uint64_t last_lsn = engine_->Stats().last_lsn;
    {
      MutexLock lock(&mutex_);
      for (SyncLedger& ledger : ledgers) {
        TableSync& table = tables_[ledger.table];
        table.name = ledger.table;
        table.confirmed = std::move(ledger.confirmed);
        table.next_sequence = std::move(ledger.next_sequence);
        // Batches that were in flight before the restart are not resent
        // as such: their LSNs are unconfirmed, so backfill reads them again.
      }
      start_lsn_ = last_lsn;
    }
    CAIRN_RETURN_IF_ERROR(link_->Start());
    thread_ = env_->StartThread([this] { Run(); });
    return Status::Ok();
  }

  void Notify() override {
    notified_.store(true, std::memory_order_relaxed);
    wake_.Signal();
  }

  Result<SyncStatus> GetStatus() override {
    SyncStatus status;
    std::vector<std::pair<std::string, LsnRangeSet>> confirmed;
    {
      MutexLock lock(&mutex_);
      status.connected = link_->connected();
      status.gateway_id = options_.gateway_id;
      status.confirmation = options_.confirmation;
      status.receipts_accepted = receipts_accepted_;
      status.receipts_rejected_by_ingest = receipts_rejected_;
      status.receipts_invalid = receipts_invalid_;
      for (const auto& [name, table] : tables_) {
        status.tables.push_back(DescribeTableSync(name, table));
        confirmed.emplace_back(name, table.confirmed);
      }
    }
    status.link = link_->stats();
    for (size_t i = 0; i < status.tables.size(); ++i) {
      Result<UnsyncedSummary> summary = engine_->SummarizeUnsynced(confirmed[i].first, confirmed[i].second);
      if (summary.ok()) {
        status.tables[i].unsynced = *summary;
      } else if (!summary.status().Is(StatusCode::kNotFound)) {
        return summary.status();
      }
    }
    return status;
  }

  void Stop() override {
    {
      MutexLock lock(&mutex_);
      if (stopping_) return;
      stopping_ = true;
    }
    wake_.SignalAll();
    if (thread_.joinable()) thread_.join();
    if (link_) link_->Stop();
    MutexLock lock(&mutex_);
    if (started_) FlushLedgers(/*force=*/true);
  }

 private:
  void Log(const std::string& message) {
    if (options_.log) options_.log(message);
  }

  // ---- MQTT callbacks (Paho threads) ----------------------------------------

  void OnConnection(bool connected, const std::string& reason) {
    if (!connected) {
      MutexLock lock(&mutex_);
      // Publishes without PUBACK fail through their callbacks; batches
      // awaiting receipts wait for them (the session keeps them) until
      // their timeout.
      last_link_error_ = reason;
    }
    wake_.Signal();
  }

  void OnMessage(std::string_view topic, std::string_view payload) {
    if (topic != receipt_topic_) return;
    Result<SyncReceipt> receipt = DecodeReceipt(payload, options_.key);
    MutexLock lock(&mutex_);
    if (!receipt.ok()) {
      ++receipts_invalid_;
      Log("sync: ignored a receipt: " + receipt.status().ToString());
      return;
    }
    const EnvelopeHeader& header = receipt->batch;
    auto table = tables_.find(header.table);
    if (header.gateway_id != options_.gateway_id || table == tables_.end()) {
      ++receipts_invalid_;
      return;
    }
    auto batch = table->second.in_flight.find({header.lane, header.batch_sequence});
    if (batch == table->second.in_flight.end() || !(batch->second.header == header)) {
      // A receipt for a batch confirmed already (a resend's second receipt)
      // or from before a restart: nothing to do.
      return;
    }
    if (receipt->status == ReceiptStatus::kRejected) {
      ++receipts_rejected_;
      batch->second.state.last_error = "rejected by the ingest service: " + receipt->reason;
      table->second.lanes[header.lane].last_error = batch->second.state.last_error;
      batch->second.needs_publish = true;
      batch->second.retry_at_monotonic_ns =
          env_->MonotonicNanos() + options_.receipt_timeout_ms * kNanosPerMilli;
      table->second.dirty = true;
      return;
    }
    ++receipts_accepted_;
    Confirm(table->second, batch);
    wake_.Signal();
  }

  void OnPublished(const std::string& table_name, SyncLane lane, uint64_t sequence, uint32_t attempt,
                   const Status& status) {
    MutexLock lock(&mutex_);
    auto table = tables_.find(table_name);
    if (table == tables_.end()) return;
    auto batch = table->second.in_flight.find({lane, sequence});
    if (batch == table->second.in_flight.end()) return;
    if (status.ok()) {
      if (options_.confirmation == SyncConfirmation::kBroker) {
        Confirm(table->second, batch);
      } else if (batch->second.state.attempts == attempt) {
        batch->second.acknowledged = true;
      }
    } else if (batch->second.state.attempts == attempt) {
      batch->second.state.last_error = status.ToString();
      table->second.lanes[lane].last_error = batch->second.state.last_error;
      batch->second.needs_publish = true;
      batch->second.retry_at_monotonic_ns = env_->MonotonicNanos() + kRepublishDelayNs;
    }
    wake_.Signal();
  }

  void Confirm(TableSync& table, std::map<std::pair<SyncLane, uint64_t>, InFlight>::iterator batch)
      REQUIRES(mutex_) {
    const SyncBatchState& state = batch->second.state;
    table.confirmed.Add(state.first_lsn, state.last_lsn);
    LaneCounters& lane = table.lanes[state.lane];
    ++lane.batches_confirmed;
    lane.records_confirmed += state.records;
    lane.last_error.clear();
    table.in_flight.erase(batch);
    table.dirty = true;
  }

  // ---- the sending thread -----------------------------------------------------

  void Run() EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    while (!stopping_) {
      // A write's Notify wakes the wait; a full live batch that may have more
      // behind it skips it. (The wait's deadline is the condition variable's
      // steady clock; the agent's own time reads go through env_.)
      wake_.WaitFor(&mutex_, std::chrono::milliseconds(options_.poll_interval_ms),
                    [this]() REQUIRES(mutex_) { return stopping_ || more_live_; });
      if (stopping_) break;
      if (more_live_) {
        more_live_ = false;
        notified_.store(true, std::memory_order_relaxed);
      }
      mutex_.Unlock();
      Status status = Round();
      mutex_.Lock();
      if (!status.ok()) Log("sync: " + status.ToString());
      FlushLedgers(/*force=*/false);
    }
  }

  // One pass over every synced table. Engine reads happen without mutex_.
  Status Round() {
    CAIRN_ASSIGN_OR_RETURN(std::vector<TableInfo> tables, engine_->ListTables());
    const int64_t now = env_->MonotonicNanos();
    const bool notified = notified_.exchange(false, std::memory_order_relaxed);
    {
      MutexLock lock(&mutex_);
      // Tables dropped or switched off stop syncing; new ones start, with
      // everything already stored as backfill.
      for (auto it = tables_.begin(); it != tables_.end();) {
        auto info = std::find_if(tables.begin(), tables.end(),
                                 [&](const TableInfo& t) { return t.name == it->first; });
        it = (info == tables.end() || !info->options.sync) ? tables_.erase(it) : std::next(it);
      }
      for (const TableInfo& info : tables) {
        if (!info.options.sync) continue;
        auto [it, created] = tables_.try_emplace(info.name);
        TableSync& table = it->second;
        if (created || table.name.empty()) {
          table.name = info.name;
          table.live_start = table.live_sent = start_lsn_;
        } else if (table.live_start == 0 && table.live_sent == 0) {
          table.live_start = table.live_sent = start_lsn_;
        }
        table.period = info.options.period;
        table.retention_ns = info.options.retention_seconds * kNanosPerSecond;
      }
    }
    if (!link_->connected()) return Status::Ok();
    Status first_error;
    for (const TableInfo& info : tables) {
      if (!info.options.sync) continue;
      Status status = PublishPending(info.name, now);
      if (status.ok()) status = SendLive(info.name, now, notified);
      if (status.ok()) status = SendBackfill(info.name, now);
      if (status.ok()) status = PublishPending(info.name, now);
      if (!status.ok() && first_error.ok()) first_error = status.WithContext("table '" + info.name + "'");
    }
    return first_error;
  }

  // Hands to the broker every batch that needs it: new, failed, or without
  // a receipt for too long. Paho calls the link's handlers while holding its
  // own lock, and those handlers take mutex_: so Publish is called here with
  // mutex_ released, never under it.
  Status PublishPending(const std::string& table_name, int64_t now) {
    struct Attempt {
      std::pair<SyncLane, uint64_t> key;
      uint32_t attempt;
      std::string topic, payload;
    };
    std::vector<Attempt> attempts;
    {
      MutexLock lock(&mutex_);
      auto table = tables_.find(table_name);
      if (table == tables_.end()) return Status::Ok();
      for (auto& [key, batch] : table->second.in_flight) {
        if (!batch.needs_publish && options_.confirmation == SyncConfirmation::kReceipt &&
            batch.acknowledged &&
            now - batch.sent_monotonic_ns >= options_.receipt_timeout_ms * kNanosPerMilli) {
          batch.needs_publish = true;
          batch.state.last_error = "no receipt within " + std::to_string(options_.receipt_timeout_ms) + " ms";
        }
        if (!batch.needs_publish || now < batch.retry_at_monotonic_ns) continue;
        // Marked as sent before the call: a PUBACK may arrive before
        // Publish returns. Undone below if the link takes nothing.
        batch.state.attempts += 1;
        batch.needs_publish = false;
        batch.acknowledged = false;
        batch.sent_monotonic_ns = now;
        attempts.push_back({key, batch.state.attempts, batch.topic, batch.payload});
      }
    }
    bool link_refused = false;
    for (Attempt& attempt : attempts) {
      Status status = Status::Unavailable("not tried: the link refused an earlier publish");
      const size_t bytes = attempt.payload.size();
      if (!link_refused) {
        const SyncLane lane = attempt.key.first;
        const uint64_t sequence = attempt.key.second;
        const uint32_t number = attempt.attempt;
        status = link_->Publish(attempt.topic, std::move(attempt.payload),
                                [this, table_name, lane, sequence, number](const Status& s) {
                                  OnPublished(table_name, lane, sequence, number, s);
                                });
        link_refused = !status.ok();
      }
      MutexLock lock(&mutex_);
      auto table = tables_.find(table_name);
      if (table == tables_.end()) return Status::Ok();
      auto batch = table->second.in_flight.find(attempt.key);
      if (batch == table->second.in_flight.end()) continue;
      InFlight& b = batch->second;
      if (status.ok()) {
        if (b.state.first_sent_unix_ns == 0) b.state.first_sent_unix_ns = env_->NowUnixNanos();
        table->second.lanes[attempt.key.first].bytes_sent += bytes;
        table->second.dirty = true;
      } else if (b.state.attempts == attempt.attempt) {
        b.state.attempts -= 1;
        b.needs_publish = true;
        if (!status.Is(StatusCode::kUnavailable)) {
          b.state.last_error = status.ToString();
          b.retry_at_monotonic_ns = now + options_.receipt_timeout_ms * kNanosPerMilli;
        }
      }
    }
    return Status::Ok();
  }

  // Builds a batch from `changes` (non-empty) covering after+1..covered,
  // for PublishPending to send.
  Status AddBatchLocked(TableSync& table, SyncLane lane, uint64_t after, const ChangeBatch& changes)
      REQUIRES(mutex_) {
    EnvelopeHeader header;
    header.gateway_id = options_.gateway_id;
    header.table = table.name;
    header.lane = lane;
    uint64_t& next = table.next_sequence[lane];
    if (next == 0) next = 1;
    header.batch_sequence = next;
    header.first_lsn = after + 1;
    header.last_lsn = changes.covered_through;
    CAIRN_ASSIGN_OR_RETURN(std::string payload,
                           EncodeEnvelope(header, changes.records, options_.key, options_.encoding));
    CAIRN_ASSIGN_OR_RETURN(std::string topic,
                           SyncTopic(options_.topic_prefix, options_.gateway_id, table.name, lane));
    ++next;
    InFlight batch;
    batch.header = header;
    batch.topic = std::move(topic);
    batch.payload = std::move(payload);
    batch.state.lane = lane;
    batch.state.sequence = header.batch_sequence;
    batch.state.first_lsn = header.first_lsn;
    batch.state.last_lsn = header.last_lsn;
    batch.state.records = changes.records.size();
    batch.state.bytes = batch.payload.size();
    table.in_flight.emplace(std::make_pair(lane, header.batch_sequence), std::move(batch));
    table.dirty = true;
    return Status::Ok();
  }

  // Reads up to `max_records` changes after `after`, halving the batch when
  // the envelope would exceed its limits.
  Result<ChangeBatch> ReadEncodable(const std::string& table, uint64_t after, uint64_t through,
                                    size_t max_records) {
    for (;;) {
      CAIRN_ASSIGN_OR_RETURN(ChangeBatch changes, engine_->ReadChanges(table, after, through, max_records));
      if (changes.records.empty() || max_records == 1) return changes;
      Status fits = ValidateRecordBlock(changes.records);
      if (fits.ok()) return changes;
      if (!fits.Is(StatusCode::kResourceExhausted)) return fits;
      max_records /= 2;
    }
  }

  Status SendLive(const std::string& table_name, int64_t now, bool notified) {
    uint64_t after = 0;
    {
      MutexLock lock(&mutex_);
      auto table = tables_.find(table_name);
      if (table == tables_.end()) return Status::Ok();
      const bool due =
          now - table->second.last_live_monotonic_ns >= options_.live_interval_ms * kNanosPerMilli;
      if (!due && !notified) return Status::Ok();
      size_t live_in_flight = 0;
      for (const auto& [key, batch] : table->second.in_flight) live_in_flight += key.first == SyncLane::kLive;
      if (live_in_flight >= kLiveMaxInflight) return Status::Ok();
      after = table->second.live_sent;
    }
    CAIRN_ASSIGN_OR_RETURN(ChangeBatch changes,
                           ReadEncodable(table_name, after, UINT64_MAX, options_.live_max_records));
    const bool full = changes.records.size() >= options_.live_max_records;
    uint64_t last_lsn = 0;
    if (full) last_lsn = engine_->Stats().last_lsn;
    MutexLock lock(&mutex_);
    auto table = tables_.find(table_name);
    if (table == tables_.end() || table->second.live_sent != after) return Status::Ok();
    TableSync& t = table->second;
    const bool due = now - t.last_live_monotonic_ns >= options_.live_interval_ms * kNanosPerMilli;
    if (!full && !due) return Status::Ok();  // not enough for an early batch
    if (full && last_lsn > changes.covered_through + options_.live_lag_limit_records) {
      // Live fell far behind (an outage): what it has not sent becomes
      // backfill, and live starts again from the newest record.
      t.live_start = t.live_sent = last_lsn;
      t.last_live_monotonic_ns = now;
      return Status::Ok();
    }
    t.last_live_monotonic_ns = now;
    if (changes.covered_through <= after) return Status::Ok();
    if (changes.records.empty()) {
      // No record of this table in the range: confirmed as it is.
      t.confirmed.Add(after + 1, changes.covered_through);
      t.live_sent = changes.covered_through;
      t.dirty = true;
      return Status::Ok();
    }
    CAIRN_RETURN_IF_ERROR(AddBatchLocked(t, SyncLane::kLive, after, changes));
    t.live_sent = changes.covered_through;
    // A full batch may have more behind it: the next round comes at once
    // instead of after the interval, so a burst does not drain one batch a
    // second.
    if (full) more_live_ = true;
    return Status::Ok();
  }

  Status SendBackfill(const std::string& table_name, int64_t now) {
    // Refill the rate limiter's bucket (at most one second's worth).
    if (options_.backfill_records_per_second > 0) {
      MutexLock lock(&mutex_);
      const double per_ns = static_cast<double>(options_.backfill_records_per_second) / kNanosPerSecond;
      if (last_refill_ns_ == 0) last_refill_ns_ = now;
      backfill_tokens_ = std::min(static_cast<double>(options_.backfill_records_per_second),
                                  backfill_tokens_ + static_cast<double>(now - last_refill_ns_) * per_ns);
      last_refill_ns_ = now;
    }
    for (int batches = 0; batches < 16; ++batches) {
      uint64_t after = 0, through = 0;
      size_t max_records = options_.backfill_max_records;
      {
        MutexLock lock(&mutex_);
        auto table = tables_.find(table_name);
        if (table == tables_.end()) return Status::Ok();
        TableSync& t = table->second;
        size_t backfill_in_flight = 0;
        LsnRangeSet covered = t.confirmed;
        for (const auto& [key, batch] : t.in_flight) {
          backfill_in_flight += key.first != SyncLane::kLive;
          covered.Add(batch.state.first_lsn, batch.state.last_lsn);
        }
        if (backfill_in_flight >= options_.backfill_max_inflight) return Status::Ok();
        std::vector<LsnRange> gaps = covered.Gaps(t.live_start);
        if (gaps.empty()) return Status::Ok();
        if (options_.backfill_records_per_second > 0) {
          if (backfill_tokens_ < 1) return Status::Ok();
          max_records = std::min<size_t>(max_records, static_cast<size_t>(backfill_tokens_));
        }
        after = gaps.front().first - 1;
        through = gaps.front().last;
      }
      CAIRN_ASSIGN_OR_RETURN(ChangeBatch changes, ReadEncodable(table_name, after, through, max_records));
      {
        MutexLock lock(&mutex_);
        auto table = tables_.find(table_name);
        if (table == tables_.end()) return Status::Ok();
        TableSync& t = table->second;
        if (changes.covered_through <= after) return Status::Ok();
        if (changes.records.empty()) {
          t.confirmed.Add(after + 1, changes.covered_through);
          t.dirty = true;
          continue;
        }
        if (options_.backfill_records_per_second > 0) {
          backfill_tokens_ -= static_cast<double>(changes.records.size());
        }
        // All of it in periods past retention: the archive lane.
        const int64_t cutoff = env_->NowUnixNanos() - t.retention_ns;
        const SyncLane lane = NextPeriodStart(t.period, changes.max_timestamp) <= cutoff
                                  ? SyncLane::kArchive
                                  : SyncLane::kBackfill;
        CAIRN_RETURN_IF_ERROR(AddBatchLocked(t, lane, after, changes));
      }
      // On the wire at once, so the link carries one batch while the next
      // is read and encoded.
      CAIRN_RETURN_IF_ERROR(PublishPending(table_name, now));
    }
    return Status::Ok();
  }

  void FlushLedgers(bool force) REQUIRES(mutex_) {
    const int64_t now = env_->MonotonicNanos();
    if (!force && now - last_flush_ns_ < options_.ledger_flush_ms * kNanosPerMilli) return;
    last_flush_ns_ = now;
    for (auto& [name, table] : tables_) {
      if (!table.dirty) continue;
      SyncLedger ledger;
      ledger.table = name;
      ledger.confirmed = table.confirmed;
      ledger.next_sequence = table.next_sequence;
      for (const auto& [key, batch] : table.in_flight) ledger.in_flight.push_back(batch.state);
      Status saved = engine_->SaveSyncLedger(ledger);
      if (saved.ok() || saved.Is(StatusCode::kNotFound)) {
        table.dirty = false;
      } else {
        Log("sync: saving the ledger of '" + name + "': " + saved.ToString());
      }
    }
  }

  Env* const env_;
  Engine* const engine_;
  const SyncAgentOptions options_;
  std::string receipt_topic_;
  std::unique_ptr<MqttLink> link_;

  // Taken by the MQTT callbacks, so never held while calling the link.
  Mutex mutex_;
  CondVar wake_;
  std::atomic<bool> notified_{false};
  bool more_live_ GUARDED_BY(mutex_) = false;  // a full live batch was sent
  bool started_ GUARDED_BY(mutex_) = false;
  bool stopping_ GUARDED_BY(mutex_) = false;
  uint64_t start_lsn_ GUARDED_BY(mutex_) = 0;
  std::map<std::string, TableSync> tables_ GUARDED_BY(mutex_);
  uint64_t receipts_accepted_ GUARDED_BY(mutex_) = 0;
  uint64_t receipts_rejected_ GUARDED_BY(mutex_) = 0;
  uint64_t receipts_invalid_ GUARDED_BY(mutex_) = 0;
  std::string last_link_error_ GUARDED_BY(mutex_);
  double backfill_tokens_ GUARDED_BY(mutex_) = 0;
  int64_t last_refill_ns_ GUARDED_BY(mutex_) = 0;
  int64_t last_flush_ns_ GUARDED_BY(mutex_) = 0;
  std::thread thread_;
};

}  // namespace

Result<std::unique_ptr<SyncAgent>> SyncAgent::Create(Env* env, Engine* engine, SyncAgentOptions options) {
  auto agent = std::make_unique<SyncAgentImpl>(env, engine, std::move(options));
  CAIRN_RETURN_IF_ERROR(agent->Init());
  return std::unique_ptr<SyncAgent>(std::move(agent));
}

}  // namespace cairn
