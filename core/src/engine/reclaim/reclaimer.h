// Reclaimer: the sync quota (EngineOptions::sync_quota, DESIGN §6). It
// measures how much data not yet confirmed by the cloud the synced tables
// hold and how much disk is free, decides whether writes are refused, and
// under drop_oldest / downsample rewrites the oldest unconfirmed sealed
// chunks until the backlog is back under budget. Aggregates written by
// downsampling: quota_format.md; computed in quota_aggregates.cc.
//
// The reclaimer owns the quota state (its mutex and the two refuse flags)
// and nothing else: tables, series and period files are reached through a
// ReclaimerStore, the sync ledgers and seal marks through the Catalog.
//
// Thread-safety: every method may be called from any thread. Check must
// not run concurrently with itself (the engine calls it from its one
// maintenance round at a time); Admit and QuotaStatus never block on I/O.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cairn/core/engine.h"
#include "cairn/platform/env.h"
#include "cairn/platform/mutex.h"

#include "engine/catalog/catalog.h"
#include "engine/reclaim/retention.h"
#include "storage/period_file.h"

namespace cairn {

// Where a raw series' aggregates go: the aggregate series and its whole
// field layout, as the catalog now holds it.
struct AggregateTarget {
  int64_t series_id = 0;
  std::string measure_name;
  std::vector<ChunkField> fields;
  TagMap dimensions;
  TagMap attributes;
  int shard = 0;
};

// The measure of a series' aggregates: "env" -> "env@60s".
std::string AggregateMeasureName(const std::string& measure_name, int64_t step_seconds);

// What the reclaimer needs from the engine's tables and period files. The
// engine implements it over its state lock and its period file cache.
class ReclaimerStore {
 public:
  virtual ~ReclaimerStore() = default;

  // A synced table and the starts of its period files.
  struct SyncedTable {
    std::string name;
    Period period = Period::kDay;
    std::set<int64_t> starts;
  };
  // Every table with TableOptions::sync now. FailedPrecondition once the
  // engine is closed.
  virtual Result<std::vector<SyncedTable>> SyncedTables() = 0;
  // True when `table` exists and is synced.
  virtual bool IsSynced(const std::string& table) = 0;
  // Engine::SummarizeUnsynced: NotFound when the table is gone.
  virtual Result<UnsyncedSummary> SummarizeUnsynced(const std::string& table,
                                                    const LsnRangeSet& confirmed) = 0;
  // Runs `work` on one period file opened writable, holding the file's
  // handle lock for the call. NotFound when the file or table is gone.
  virtual Status WithPeriodFile(const std::string& table, Period period, int64_t start,
                                const std::function<Status(PeriodFile&)>& work) = 0;
  // For each raw series in `raws` (keyed by raw series id), finds or
  // creates the series `measure` of the same device and dimensions with at
  // least `fields`, records what changed in the catalog, and fills
  // `targets` for those whose types agree. NotFound when the table is gone.
  struct AggregateRequest {
    const PeriodSeries* raw;
    std::string measure;
    std::vector<ChunkField> fields;
  };
  virtual Status EnsureAggregateSeries(const std::string& table,
                                       const std::vector<AggregateRequest>& requests,
                                       std::map<int64_t, AggregateTarget>* targets) = 0;
  // After a rewrite of a period file of `table`: the series in `touched`
  // lost or gained chunks (`added`); what readers cache of them is stale.
  virtual void SeriesRewritten(const std::string& table, const std::set<int64_t>& touched,
                               const std::vector<ChunkRow>& added) = 0;
  // Runs `work` while no seal, checkpoint or compaction runs.
  virtual Result<uint64_t> WithSealsHeld(const std::function<Result<uint64_t>()>& work) = 0;
};

class Reclaimer {
 public:
  // `env`, `catalog` and `store` must outlive the reclaimer; `data_dir` is
  // the directory whose filesystem's free space the floor watches.
  Reclaimer(Env* env, std::string data_dir, const SyncQuotaOptions& options, Catalog* catalog,
            ReclaimerStore* store);

  Reclaimer(const Reclaimer&) = delete;
  Reclaimer& operator=(const Reclaimer&) = delete;

  // The quota as the last Check left it.
  SyncQuotaStatus QuotaStatus() EXCLUDES(mutex_);

  // OK, or ResourceExhausted naming the limit when the quota refuses writes
  // to `table` now; `received` (WriteReceived) is refused by the floor
  // only. Reads two flags; takes the lock only to refuse.
  Status Admit(const std::string& table, bool received) EXCLUDES(mutex_);

  // Measures the quota when check_interval_ms has passed since the last
  // check, reclaims under drop_oldest / downsample, and sets the flags
  // Admit reads. On a failed measurement the flags stay as they were and
  // the error is kept in QuotaStatus().last_error and returned.
  Status Check() EXCLUDES(mutex_);

  // What the synced tables hold unconfirmed, and where.
  struct Measurement {
    uint64_t unsynced_bytes = 0;
    uint64_t sealed_unsynced_bytes = 0;  // without the head's estimate
    uint64_t free_bytes = 0;
    std::map<std::string, LsnRangeSet> confirmed;  // every synced table
    struct File {
      std::string table;
      Period period;
      int64_t start;
    };
    std::vector<File> files;  // the synced tables' period files, oldest first
  };
  Result<Measurement> Measure();

  // Drops (or first downsamples) the oldest unconfirmed sealed records of
  // `measurement`'s files until about `wanted` bytes are freed or nothing
  // is left; returns the bytes freed. The caller keeps seals out.
  Result<uint64_t> Reclaim(uint64_t wanted, const Measurement& measurement, bool downsample) EXCLUDES(mutex_);

 private:
  // How many bytes a round should free for `m`, 0 when none.
  uint64_t Wanted(const Measurement& m) const;
  bool OverBudget(const Measurement& m) const;
  bool BelowFloor(const Measurement& m) const;
  // Stores a finished check's outcome and sets the flags.
  Status Record(int64_t now_monotonic, const Result<Measurement>& measured, Status status) EXCLUDES(mutex_);

  Env* const env_;
  const std::string data_dir_;
  const SyncQuotaOptions options_;
  Catalog* const catalog_;
  ReclaimerStore* const store_;

  Mutex mutex_;
  SyncQuotaStatus status_ GUARDED_BY(mutex_);
  int64_t checked_monotonic_ns_ GUARDED_BY(mutex_) = 0;  // 0: never
  // Copies of status_'s decision, read by every write without the lock.
  std::atomic<bool> refuses_synced_{false}, refuses_all_{false};
};

}  // namespace cairn
