// Measuring: the engine's maintenance round calls Check, which at most
// every check_interval_ms sums SummarizeUnsynced over the synced tables
// against the ledgers in the catalog and asks the filesystem for its free
// space. The result sets two flags that every write reads without a lock.
//
// Reclaiming (drop_oldest, downsample): period files by start, each
// rewritten by ReclaimInPeriod (reclaim_period.h), until the backlog is back
// to 90 % of the budget and free space 10 % above the floor. Records still
// in the head are not touched: they are sealed within seal_age_ms and
// handled by a later round.
#include "engine/reclaim/reclaimer.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <tuple>

#include "engine/reclaim/reclaim_period.h"

namespace cairn {

namespace {

constexpr int64_t kNanosPerMilli = 1'000'000;

std::string Bytes(uint64_t bytes) {
  char text[64];
  if (bytes >= (uint64_t{1} << 20)) {
    std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  } else if (bytes >= 1024) {
    std::snprintf(text, sizeof text, "%.1f KiB", static_cast<double>(bytes) / 1024);
  } else {
    std::snprintf(text, sizeof text, "%" PRIu64 " bytes", bytes);
  }
  return text;
}

}  // namespace

std::string_view QuotaPolicyName(QuotaPolicy policy) {
  switch (policy) {
    case QuotaPolicy::kBackpressure:
      return "backpressure";
    case QuotaPolicy::kDropOldest:
      return "drop_oldest";
    case QuotaPolicy::kDownsample:
      return "downsample";
  }
  return "unknown";
}

Result<QuotaPolicy> ParseQuotaPolicy(std::string_view name) {
  for (QuotaPolicy policy :
       {QuotaPolicy::kBackpressure, QuotaPolicy::kDropOldest, QuotaPolicy::kDownsample}) {
    if (name == QuotaPolicyName(policy)) return policy;
  }
  return Status::InvalidArgument("unknown quota policy '" + std::string(name) +
                                 "' (backpressure, drop_oldest or downsample)");
}

Reclaimer::Reclaimer(Env* env, std::string data_dir, const SyncQuotaOptions& options, Catalog* catalog,
                     ReclaimerStore* store)
    : env_(env), data_dir_(std::move(data_dir)), options_(options), catalog_(catalog), store_(store) {
  MutexLock lock(&mutex_);
  status_.enabled = options.max_unsynced_bytes != 0 || options.min_free_bytes != 0;
  status_.policy = options.policy;
  status_.max_unsynced_bytes = options.max_unsynced_bytes;
  status_.min_free_bytes = options.min_free_bytes;
}

SyncQuotaStatus Reclaimer::QuotaStatus() {
  MutexLock lock(&mutex_);
  return status_;
}

Status Reclaimer::Admit(const std::string& table, bool received) {
  const bool refuse_all = refuses_all_.load(std::memory_order_relaxed);
  if (!refuse_all && (received || !refuses_synced_.load(std::memory_order_relaxed))) return Status::Ok();
  // An unknown table fails later with its own message.
  if (!refuse_all && !store_->IsSynced(table)) return Status::Ok();
  MutexLock lock(&mutex_);
  ++status_.writes_refused;
  if (status_.below_floor) {
    return Status::ResourceExhausted("free space on the data directory's filesystem is " +
                                     Bytes(status_.free_bytes) + ", below the sync quota's floor of " +
                                     Bytes(status_.min_free_bytes) + "; writes resume once space is freed");
  }
  return Status::ResourceExhausted(
      "sync quota reached: " + Bytes(status_.unsynced_bytes) + " not yet confirmed by the cloud, budget " +
      Bytes(status_.max_unsynced_bytes) + " (policy backpressure); writes resume as the backlog drains");
}

Result<Reclaimer::Measurement> Reclaimer::Measure() {
  Measurement m;
  std::map<std::string, LsnRangeSet> confirmed;
  {
    CAIRN_ASSIGN_OR_RETURN(std::vector<SyncLedger> ledgers, catalog_->LoadSyncLedgers());
    for (SyncLedger& ledger : ledgers) confirmed[ledger.table] = std::move(ledger.confirmed);
  }
  CAIRN_ASSIGN_OR_RETURN(std::vector<ReclaimerStore::SyncedTable> synced, store_->SyncedTables());
  for (ReclaimerStore::SyncedTable& table : synced) {
    LsnRangeSet& set = m.confirmed[table.name];
    set = std::move(confirmed[table.name]);
    Result<UnsyncedSummary> summary = store_->SummarizeUnsynced(table.name, set);
    if (!summary.ok()) {
      if (summary.status().Is(StatusCode::kNotFound)) continue;  // dropped meanwhile
      return summary.status();
    }
    m.unsynced_bytes += summary->bytes;
    m.sealed_unsynced_bytes += summary->bytes - summary->head_bytes;
    for (int64_t start : table.starts) m.files.push_back({table.name, table.period, start});
  }
  std::sort(m.files.begin(), m.files.end(), [](const Measurement::File& a, const Measurement::File& b) {
    return std::tie(a.start, a.table) < std::tie(b.start, b.table);
  });
  CAIRN_ASSIGN_OR_RETURN(m.free_bytes, env_->FreeSpace(data_dir_));
  return m;
}

bool Reclaimer::OverBudget(const Measurement& m) const {
  return options_.max_unsynced_bytes != 0 && m.unsynced_bytes > options_.max_unsynced_bytes;
}

bool Reclaimer::BelowFloor(const Measurement& m) const {
  return options_.min_free_bytes != 0 && m.free_bytes < options_.min_free_bytes;
}

uint64_t Reclaimer::Wanted(const Measurement& m) const {
  // Only sealed records can be reclaimed, and the head is counted at its
  // in-memory size, several times what it takes once sealed: when the
  // budget is exceeded only because of the head, later rounds find it
  // sealed instead of this one reclaiming more than needed.
  uint64_t wanted = 0;
  const uint64_t target = options_.max_unsynced_bytes - options_.max_unsynced_bytes / 10;
  if (OverBudget(m) && m.sealed_unsynced_bytes > target) wanted = m.sealed_unsynced_bytes - target;
  if (BelowFloor(m)) {
    wanted = std::max(wanted, options_.min_free_bytes - m.free_bytes + options_.min_free_bytes / 10);
  }
  return wanted;
}

Status Reclaimer::Check() {
  if (options_.max_unsynced_bytes == 0 && options_.min_free_bytes == 0) return Status::Ok();
  const int64_t now_monotonic = env_->MonotonicNanos();
  {
    MutexLock lock(&mutex_);
    if (checked_monotonic_ns_ != 0 &&
        now_monotonic - checked_monotonic_ns_ < options_.check_interval_ms * kNanosPerMilli) {
      return Status::Ok();
    }
  }
  Status status;
  Result<Measurement> measured = Measure();
  if (measured.ok() && options_.policy != QuotaPolicy::kBackpressure &&
      (OverBudget(*measured) || BelowFloor(*measured))) {
    const uint64_t wanted = Wanted(*measured);
    Result<uint64_t> freed = store_->WithSealsHeld(
        [&] { return Reclaim(wanted, *measured, options_.policy == QuotaPolicy::kDownsample); });
    if (!freed.ok()) status = freed.status();
    measured = Measure();  // what is true after the reclaim
  }
  if (!measured.ok() && status.ok()) status = measured.status();
  return Record(now_monotonic, measured, std::move(status));
}

Status Reclaimer::Record(int64_t now_monotonic, const Result<Measurement>& measured, Status status) {
  MutexLock lock(&mutex_);
  checked_monotonic_ns_ = std::max<int64_t>(1, now_monotonic);
  status_.last_error = status.ok() ? "" : status.ToString();
  if (!measured.ok()) return status;  // the flags stay as the last good check left them
  status_.checked_at = env_->NowUnixNanos();
  status_.unsynced_bytes = measured->unsynced_bytes;
  status_.free_bytes = measured->free_bytes;
  status_.over_budget = OverBudget(*measured);
  status_.below_floor = BelowFloor(*measured);
  // The floor is hard for every policy: a full disk endangers everything
  // stored, synced or not. The budget refuses writes only under
  // backpressure, and only to the tables it counts.
  status_.refusing_writes =
      status_.below_floor || (options_.policy == QuotaPolicy::kBackpressure && status_.over_budget);
  refuses_all_.store(status_.below_floor, std::memory_order_relaxed);
  refuses_synced_.store(status_.refusing_writes, std::memory_order_relaxed);
  return status;
}

Result<uint64_t> Reclaimer::Reclaim(uint64_t wanted, const Measurement& measurement, bool downsample) {
  uint64_t freed = 0;
  // Downsampling everywhere first; dropping only what downsampling could
  // not free.
  std::vector<bool> passes = downsample ? std::vector<bool>{true, false} : std::vector<bool>{false};
  for (bool downsample_pass : passes) {
    for (const Measurement::File& file : measurement.files) {
      if (freed >= wanted) return freed;
      auto confirmed = measurement.confirmed.find(file.table);
      if (confirmed == measurement.confirmed.end()) continue;
      Result<PeriodReclaimResult> got =
          ReclaimInPeriod(*store_, *catalog_, file.table, file.period, file.start, confirmed->second,
                          wanted - freed, downsample_pass, options_.downsample_step_seconds);
      if (!got.ok()) {
        if (got.status().Is(StatusCode::kNotFound)) continue;  // dropped by retention or DropTable meanwhile
        return got.status().WithContext("sync quota, " + file.table + " period " +
                                        std::to_string(file.start));
      }
      {
        MutexLock lock(&mutex_);
        status_.records_dropped += got->dropped;
        status_.records_downsampled += got->downsampled;
        status_.aggregates_written += got->aggregates;
      }
      freed += got->freed_bytes;
    }
  }
  return freed;
}

}  // namespace cairn
