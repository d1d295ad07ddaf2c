// The sync quota (EngineOptions::sync_quota, DESIGN §6): how much data not
// yet confirmed by the cloud the synced tables may hold, and how much free
// disk must remain; what happens when either is reached. Format of the
// aggregates that downsampling writes: quota_format.md beside this file;
// they are computed in quota_aggregates.cc.
//
// Measuring: Maintain calls CheckSyncQuota, which at most every
// check_interval_ms sums SummarizeUnsynced over the synced tables against
// the ledgers in the catalog and asks the filesystem for its free space. The
// result sets two flags that every Write reads without a lock.
//
// Reclaiming (drop_oldest, downsample): sealed chunks holding unconfirmed
// records are rewritten oldest first (period files by start, chunks by
// lowest LSN), each period file in one SQLite transaction
// (PeriodFile::ReplaceChunks), until the backlog is back to 90 % of the
// budget and free space 10 % above the floor. Confirmed records in those
// chunks stay as they are. Records still in the head are not touched: they
// are sealed within seal_age_ms and handled by a later round.
//
// Why downsampled records keep LSNs of the records they replace: the
// aggregate must be sent like any unsynced record, and taking one of the
// replaced records' LSNs (the highest of its step) keeps every LSN unique
// and the sync ledger's ranges meaningful without logging anything: the
// rewrite is atomic in its period file, so a crash leaves either the raw
// records or their aggregates, never both or neither.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <set>
#include <tuple>
#include <unordered_map>

#include "engine/engine_impl.h"
#include "engine/quota_aggregates.h"

namespace cairn {

namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;
constexpr int64_t kNanosPerMilli = 1'000'000;
constexpr size_t kMaxRecordsPerChunk = 8192;

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

int64_t FloorTo(int64_t value, int64_t step) {
  int64_t q = value / step;
  if (value % step < 0) --q;
  return q * step;
}

// Where a raw series' aggregates go: the series and its field layout.
struct AggregateTarget {
  int64_t series_id = 0;
  std::string measure_name;
  std::vector<ChunkField> fields;  // the aggregate series' fields, whole
  TagMap dimensions;
  TagMap attributes;
  int shard = 0;
};

// The measure of a series' aggregates: "env" -> "env@60s".
std::string AggregateMeasureName(const std::string& measure_name, int64_t step_seconds) {
  return measure_name + "@" + std::to_string(step_seconds) + "s";
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

struct EngineImpl::QuotaMeasurement {
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

SyncQuotaStatus EngineImpl::QuotaStatus() {
  std::lock_guard lock(quota_mutex_);
  return quota_;
}

Status EngineImpl::AdmitUnderQuota(const std::string& table, bool received) {
  const bool refuse_all = quota_refuses_all_.load(std::memory_order_relaxed);
  if (!refuse_all && (received || !quota_refuses_synced_.load(std::memory_order_relaxed)))
    return Status::Ok();
  if (!refuse_all) {
    std::shared_lock state(state_mutex_);
    auto it = tables_.find(table);
    // An unknown table fails later with its own message.
    if (it == tables_.end() || !it->second->info.options.sync) return Status::Ok();
  }
  std::lock_guard lock(quota_mutex_);
  ++quota_.writes_refused;
  if (quota_.below_floor) {
    return Status::ResourceExhausted("free space on the data directory's filesystem is " +
                                     Bytes(quota_.free_bytes) + ", below the sync quota's floor of " +
                                     Bytes(quota_.min_free_bytes) + "; writes resume once space is freed");
  }
  return Status::ResourceExhausted(
      "sync quota reached: " + Bytes(quota_.unsynced_bytes) + " not yet confirmed by the cloud, budget " +
      Bytes(quota_.max_unsynced_bytes) + " (policy backpressure); writes resume as the backlog drains");
}

Result<EngineImpl::QuotaMeasurement> EngineImpl::MeasureQuota() {
  QuotaMeasurement m;
  std::map<std::string, LsnRangeSet> confirmed;
  {
    CAIRN_ASSIGN_OR_RETURN(std::vector<SyncLedger> ledgers, catalog_->LoadSyncLedgers());
    for (SyncLedger& ledger : ledgers) confirmed[ledger.table] = std::move(ledger.confirmed);
  }
  struct Synced {
    std::string name;
    Period period;
    std::set<int64_t> starts;
  };
  std::vector<Synced> synced;
  {
    std::shared_lock state(state_mutex_);
    if (closed_) return Status::FailedPrecondition("engine is closed");
    for (const auto& [name, table] : tables_) {
      if (table->info.options.sync)
        synced.push_back({name, table->info.options.period, table->period_starts});
    }
  }
  for (Synced& table : synced) {
    LsnRangeSet& set = m.confirmed[table.name];
    set = std::move(confirmed[table.name]);
    Result<UnsyncedSummary> summary = SummarizeUnsynced(table.name, set);
    if (!summary.ok()) {
      if (summary.status().Is(StatusCode::kNotFound)) continue;  // dropped meanwhile
      return summary.status();
    }
    m.unsynced_bytes += summary->bytes;
    m.sealed_unsynced_bytes += summary->bytes - summary->head_bytes;
    for (int64_t start : table.starts) m.files.push_back({table.name, table.period, start});
  }
  std::sort(m.files.begin(), m.files.end(),
            [](const QuotaMeasurement::File& a, const QuotaMeasurement::File& b) {
              return std::tie(a.start, a.table) < std::tie(b.start, b.table);
            });
  CAIRN_ASSIGN_OR_RETURN(m.free_bytes, env_->FreeSpace(data_dir_));
  return m;
}

Status EngineImpl::CheckSyncQuota() {
  const SyncQuotaOptions& q = options_.sync_quota;
  if (q.max_unsynced_bytes == 0 && q.min_free_bytes == 0) return Status::Ok();
  const int64_t now_monotonic = env_->MonotonicNanos();
  {
    std::lock_guard lock(quota_mutex_);
    if (quota_checked_monotonic_ns_ != 0 &&
        now_monotonic - quota_checked_monotonic_ns_ < q.check_interval_ms * kNanosPerMilli) {
      return Status::Ok();
    }
  }
  auto over_budget = [&](const QuotaMeasurement& m) {
    return q.max_unsynced_bytes != 0 && m.unsynced_bytes > q.max_unsynced_bytes;
  };
  auto below_floor = [&](const QuotaMeasurement& m) {
    return q.min_free_bytes != 0 && m.free_bytes < q.min_free_bytes;
  };
  Status status;
  Result<QuotaMeasurement> measured = MeasureQuota();
  if (measured.ok() && q.policy != QuotaPolicy::kBackpressure &&
      (over_budget(*measured) || below_floor(*measured))) {
    // Only sealed records can be reclaimed, and the head is counted at its
    // in-memory size, several times what it takes once sealed: when the
    // budget is exceeded only because of the head, later rounds find it
    // sealed instead of this one reclaiming more than needed.
    uint64_t wanted = 0;
    const uint64_t target = q.max_unsynced_bytes - q.max_unsynced_bytes / 10;
    if (over_budget(*measured) && measured->sealed_unsynced_bytes > target) {
      wanted = measured->sealed_unsynced_bytes - target;
    }
    if (below_floor(*measured)) {
      wanted = std::max(wanted, q.min_free_bytes - measured->free_bytes + q.min_free_bytes / 10);
    }
    Result<uint64_t> freed = [&]() -> Result<uint64_t> {
      std::lock_guard seal_lock(seal_mutex_);
      return ReclaimUnsynced(wanted, *measured, q.policy == QuotaPolicy::kDownsample);
    }();
    if (!freed.ok()) status = freed.status();
    measured = MeasureQuota();  // what is true after the reclaim
  }
  if (!measured.ok() && status.ok()) status = measured.status();

  std::lock_guard lock(quota_mutex_);
  quota_checked_monotonic_ns_ = std::max<int64_t>(1, now_monotonic);
  quota_.last_error = status.ok() ? "" : status.ToString();
  if (!measured.ok()) return status;  // the flags stay as the last good check left them
  quota_.checked_at = env_->NowUnixNanos();
  quota_.unsynced_bytes = measured->unsynced_bytes;
  quota_.free_bytes = measured->free_bytes;
  quota_.over_budget = over_budget(*measured);
  quota_.below_floor = below_floor(*measured);
  // The floor is hard for every policy: a full disk endangers everything
  // stored, synced or not. The budget refuses writes only under
  // backpressure, and only to the tables it counts.
  quota_.refusing_writes =
      quota_.below_floor || (q.policy == QuotaPolicy::kBackpressure && quota_.over_budget);
  quota_refuses_all_.store(quota_.below_floor, std::memory_order_relaxed);
  quota_refuses_synced_.store(quota_.refusing_writes, std::memory_order_relaxed);
  return status;
}

Result<uint64_t> EngineImpl::ReclaimUnsynced(uint64_t wanted, const QuotaMeasurement& measurement,
                                             bool downsample) {
  uint64_t freed = 0;
  // Downsampling everywhere first; dropping only what downsampling could
  // not free.
  std::vector<bool> passes = downsample ? std::vector<bool>{true, false} : std::vector<bool>{false};
  for (bool downsample_pass : passes) {
    for (const QuotaMeasurement::File& file : measurement.files) {
      if (freed >= wanted) return freed;
      auto confirmed = measurement.confirmed.find(file.table);
      if (confirmed == measurement.confirmed.end()) continue;
      Result<uint64_t> got = ReclaimInPeriod(file.table, file.period, file.start, confirmed->second,
                                             wanted - freed, downsample_pass);
      if (!got.ok()) {
        if (got.status().Is(StatusCode::kNotFound)) continue;  // dropped by retention or DropTable meanwhile
        return got.status().WithContext("sync quota, " + file.table + " period " +
                                        std::to_string(file.start));
      }
      freed += *got;
    }
  }
  return freed;
}

Result<uint64_t> EngineImpl::ReclaimInPeriod(const std::string& table, Period period, int64_t start,
                                             const LsnRangeSet& confirmed, uint64_t wanted, bool downsample) {
  const int64_t step_ns = options_.sync_quota.downsample_step_seconds * kNanosPerSecond;
  auto unconfirmed_in = [&](const ChunkRow& row) {
    uint64_t n = 0;
    for (uint64_t lsn : row.lsns) n += confirmed.Contains(lsn) ? 0 : 1;
    return n;
  };
  auto row_bytes = [](const ChunkRow& row) {
    return static_cast<uint64_t>(row.stats.size()) + (row.data.empty() ? row.data_bytes : row.data.size());
  };

  // 1. The file's chunks holding unconfirmed records, lowest LSN first,
  //    and its series.
  CAIRN_ASSIGN_OR_RETURN(auto handle, GetPeriodFile(table, period, start, PeriodAccess::kWrite));
  std::vector<ChunkRow> candidates;
  std::vector<PeriodSeries> file_series;
  {
    std::lock_guard file_lock(handle->mutex);
    PeriodFile& file = *handle->file;
    CAIRN_ASSIGN_OR_RETURN(uint64_t max_lsn, file.MaxLsn());
    CAIRN_RETURN_IF_ERROR(ForEachUnconfirmedChunk(file, confirmed, max_lsn, [&](ChunkRow& row) {
      if (unconfirmed_in(row) != 0) candidates.push_back(std::move(row));
      return true;
    }));
    if (candidates.empty()) return uint64_t{0};
    CAIRN_ASSIGN_OR_RETURN(file_series, file.ListSeries());
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const ChunkRow& a, const ChunkRow& b) { return a.min_lsn < b.min_lsn; });
  std::unordered_map<int64_t, const PeriodSeries*> series_by_id;
  for (const PeriodSeries& s : file_series) series_by_id[s.series_id] = &s;

  // 2. Which chunks to work on, oldest first, until their unconfirmed
  //    bytes cover `wanted` (dropping) or twice that (downsampling keeps
  //    some), grouped by series in the order their oldest chunk comes.
  std::vector<int64_t> chosen;
  std::map<int64_t, std::vector<PeriodFile::ChunkKey>> chosen_chunks;
  {
    uint64_t planned = 0;
    const std::string aggregate_suffix =
        AggregateMeasureName("", options_.sync_quota.downsample_step_seconds);
    for (const ChunkRow& row : candidates) {
      if (planned >= (downsample ? 2 * wanted : wanted)) break;
      auto s = series_by_id.find(row.series_id);
      if (s == series_by_id.end()) continue;
      if (downsample && s->second->measure_name.ends_with(aggregate_suffix)) continue;  // already aggregates
      planned += unconfirmed_in(row) * row_bytes(row) / row.count;
      auto [it, first] = chosen_chunks.try_emplace(row.series_id);
      if (first) chosen.push_back(row.series_id);
      it->second.push_back({row.series_id, row.start_ns, row.seq});
    }
  }
  if (chosen.empty()) return uint64_t{0};

  // 3. Downsampling: the aggregate series, created in the catalog before
  //    any chunk refers to them (ids never change meaning across a crash).
  std::map<int64_t, AggregateTarget> targets;  // by raw series id
  if (downsample) {
    std::unique_lock state(state_mutex_);
    auto t = tables_.find(table);
    if (t == tables_.end()) return Status::NotFound("table '" + table + "' does not exist");
    std::vector<CatalogSeries> changes;
    for (int64_t raw_id : chosen) {
      const PeriodSeries& raw = *series_by_id[raw_id];
      std::vector<ChunkField> wanted_fields;
      for (const ChunkField& f : raw.fields) {
        for (ChunkField& a : AggregateFieldsOf(f)) wanted_fields.push_back(std::move(a));
      }
      const std::string measure =
          AggregateMeasureName(raw.measure_name, options_.sync_quota.downsample_step_seconds);
      bool fits = measure.size() <= kMaxMeasureNameBytes && wanted_fields.size() <= kMaxFieldsPerRecord;
      for (const ChunkField& f : wanted_fields) fits = fits && f.name.size() <= kMaxFieldNameBytes;
      if (!fits) continue;  // left for the drop pass
      bool created = false;
      // The aggregates of each raw series stay apart by its dimensions.
      Series* series = FindOrCreateSeries(*t->second, raw.device_id, measure, raw.dimensions, &created);
      bool changed = created;
      for (const ChunkField& f : wanted_fields) {
        auto it = series->field_index.find(f.name);
        if (it == series->field_index.end()) {
          series->AddField(f.name, f.type);
          changed = true;
        } else if (series->fields[it->second].type != f.type) {
          fits = false;  // a client wrote this series with other types
        }
      }
      if (created) {
        series->shard = raw.shard;
        auto raw_series = t->second->series.find(
            SeriesKey{raw.device_id, raw.measure_name, EncodeTagMap(raw.dimensions)});
        if (raw_series != t->second->series.end()) series->attributes = raw_series->second->attributes;
      }
      if (changed) {
        changes.push_back(CatalogSeries{series->id, table, series->device_id, series->measure_name,
                                        series->shard, series->fields, series->dimensions,
                                        series->attributes});
      }
      if (fits) {
        targets[raw_id] = AggregateTarget{series->id,         measure,           series->fields,
                                          series->dimensions, series->attributes, series->shard};
      }
    }
    if (!changes.empty()) CAIRN_RETURN_IF_ERROR(catalog_->PutSeries(changes));
    if (targets.empty()) return uint64_t{0};
  }

  // 4. The rewrite, in one transaction for the file.
  std::vector<PeriodFile::ChunkKey> removed;
  std::vector<ChunkRow> added;
  std::vector<PeriodSeries> upserted;
  uint64_t removed_bytes = 0, added_bytes = 0, dropped = 0, downsampled = 0, aggregates = 0;
  std::set<int64_t> touched;
  {
    std::lock_guard file_lock(handle->mutex);
    PeriodFile& file = *handle->file;
    for (int64_t raw_id : chosen) {
      if (downsample && !targets.count(raw_id)) continue;
      const PeriodSeries& raw = *series_by_id[raw_id];
      std::vector<ChunkRow> chunks;
      for (const PeriodFile::ChunkKey& key : chosen_chunks[raw_id]) {
        CAIRN_ASSIGN_OR_RETURN(std::vector<ChunkRow> at,
                               file.ReadChunks(raw_id, key.start_ns, key.start_ns + 1, /*with_data=*/true));
        for (ChunkRow& row : at) {
          if (row.start_ns == key.start_ns && row.seq == key.seq) chunks.push_back(std::move(row));
        }
      }
      // Highest version of each timestamp over the chosen chunks; the
      // series' other chunks stay as they are (a step split between chosen
      // and other chunks is merged into its aggregate by a later round).
      std::vector<ChunkField> schema = raw.fields;
      NewestRecords winners;
      std::vector<PeriodFile::ChunkKey> series_removed;
      uint64_t series_bytes = 0;
      for (const ChunkRow& chunk : chunks) {
        if (unconfirmed_in(chunk) == 0) continue;
        series_removed.push_back({chunk.series_id, chunk.start_ns, chunk.seq});
        series_bytes += row_bytes(chunk);
        CAIRN_RETURN_IF_ERROR(MergeChunkRecords(chunk, &schema, &winners));
      }
      if (series_removed.empty()) continue;
      std::vector<ChunkRecord> kept;
      std::vector<uint64_t> kept_lsns;
      // Unconfirmed records by step start (downsampling).
      std::map<int64_t, std::vector<std::pair<ChunkRecord, uint64_t>>> steps;
      uint64_t series_dropped = 0;
      for (auto& [ts, entry] : winners) {
        entry.first.values.resize(schema.size());
        if (confirmed.Contains(entry.second)) {
          kept.push_back(std::move(entry.first));
          kept_lsns.push_back(entry.second);
        } else if (downsample) {
          steps[FloorTo(ts, step_ns)].push_back(std::move(entry));
        } else {
          ++series_dropped;
        }
      }
      std::vector<ChunkRecord> aggregate_records;
      std::vector<uint64_t> aggregate_lsns;
      uint64_t series_downsampled = 0;
      if (downsample) {
        const AggregateTarget& target = targets[raw_id];
        // Aggregates already in the file for these steps are merged in, and
        // the result replaces them by version.
        NewestRecords existing;
        std::vector<ChunkField> target_schema = target.fields;
        if (!steps.empty()) {
          CAIRN_ASSIGN_OR_RETURN(std::vector<ChunkRow> old_rows,
                                 file.ReadChunks(target.series_id, steps.begin()->first,
                                                 steps.rbegin()->first + 1, /*with_data=*/true));
          for (const ChunkRow& row : old_rows) {
            CAIRN_RETURN_IF_ERROR(MergeChunkRecords(row, &target_schema, &existing));
          }
        }
        std::unordered_map<std::string, size_t> target_index;
        for (size_t i = 0; i < target_schema.size(); ++i) target_index[target_schema[i].name] = i;
        for (auto& [step_start, members] : steps) {
          auto old = existing.find(step_start);
          if (members.size() < 2 && old == existing.end()) {
            // One record per step gains nothing: it stays raw.
            for (auto& entry : members) {
              kept.push_back(std::move(entry.first));
              kept_lsns.push_back(entry.second);
            }
            continue;
          }
          ChunkRecord aggregate;
          aggregate.timestamp = step_start;
          aggregate.values.assign(target.fields.size(), Value{});
          uint64_t lsn = 0;
          for (const auto& entry : members) {
            lsn = std::max(lsn, entry.second);
            if (entry.first.ttl == 0 || aggregate.ttl == -1) {
              aggregate.ttl = -1;  // one record without expiry: the aggregate has none
            } else {
              aggregate.ttl = std::max(aggregate.ttl, entry.first.ttl);
            }
          }
          if (aggregate.ttl == -1) aggregate.ttl = 0;
          aggregate.version = old == existing.end() ? 0 : old->second.first.version + 1;
          // A step whose int64 sums cannot be kept exactly stays raw.
          const bool exact =
              FillStepAggregate(schema, target_index, old == existing.end() ? nullptr : &old->second.first,
                                members, &aggregate);
          if (!exact) {
            for (auto& entry : members) {
              kept.push_back(std::move(entry.first));
              kept_lsns.push_back(entry.second);
            }
            continue;
          }
          series_downsampled += members.size();
          aggregate_records.push_back(std::move(aggregate));
          aggregate_lsns.push_back(lsn);
        }
      }
      if (downsample ? series_downsampled == 0 : series_dropped == 0) continue;
      std::vector<ChunkRow> series_added;
      if (!aggregate_records.empty()) {
        const AggregateTarget& target = targets[raw_id];
        CAIRN_RETURN_IF_ERROR(EncodeSeriesChunks(target.series_id, target.fields, aggregate_records,
                                                 aggregate_lsns, kMaxRecordsPerChunk, &series_added));
      }
      if (!kept.empty()) {
        // Ascending timestamps: raw records kept from steps of one record
        // were appended after the confirmed ones.
        std::vector<size_t> order(kept.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::sort(order.begin(), order.end(),
                  [&](size_t a, size_t b) { return kept[a].timestamp < kept[b].timestamp; });
        std::vector<ChunkRecord> sorted;
        std::vector<uint64_t> sorted_lsns;
        for (size_t i : order) {
          sorted.push_back(std::move(kept[i]));
          sorted_lsns.push_back(kept_lsns[i]);
        }
        CAIRN_RETURN_IF_ERROR(
            EncodeSeriesChunks(raw_id, schema, sorted, sorted_lsns, kMaxRecordsPerChunk, &series_added));
      }
      uint64_t series_added_bytes = 0;
      for (const ChunkRow& row : series_added) series_added_bytes += row_bytes(row);
      // Data that compresses better raw than as aggregates stays raw; the
      // drop pass is what is left for it.
      if (downsample && series_added_bytes >= series_bytes) continue;
      if (!aggregate_records.empty()) {
        const AggregateTarget& target = targets[raw_id];
        upserted.push_back(PeriodSeries{target.series_id, raw.device_id, target.measure_name, target.shard,
                                        target.fields, target.dimensions});
        touched.insert(target.series_id);
      }
      for (ChunkRow& row : series_added) added.push_back(std::move(row));
      removed.insert(removed.end(), series_removed.begin(), series_removed.end());
      removed_bytes += series_bytes;
      added_bytes += series_added_bytes;
      dropped += series_dropped;
      downsampled += series_downsampled;
      aggregates += aggregate_records.size();
      touched.insert(raw_id);
    }
    if (removed.empty()) return uint64_t{0};
    // Dropped readings may take the file's highest LSN with them: its seal
    // mark (the coverage check on open) no longer applies.
    CAIRN_RETURN_IF_ERROR(catalog_->ForgetSealMark(table, start));
    CAIRN_RETURN_IF_ERROR(file.ReplaceChunks(removed, upserted, added));
  }

  // 5. What readers cache about the series changed.
  {
    std::unique_lock state(state_mutex_);
    if (auto t = tables_.find(table); t != tables_.end()) {
      for (auto& [key, series] : t->second->series) {
        if (!touched.count(series->id)) continue;
        series->latest_known = false;
        series->latest.reset();
        ++series->generation;
        for (const ChunkRow& row : added) {
          if (row.series_id == series->id) {
            series->sealed_max_timestamp = std::max(series->sealed_max_timestamp, row.end_ns);
          }
        }
      }
    }
  }
  {
    std::lock_guard lock(quota_mutex_);
    quota_.records_dropped += dropped;
    quota_.records_downsampled += downsampled;
    quota_.aggregates_written += aggregates;
  }
  return removed_bytes > added_bytes ? removed_bytes - added_bytes : uint64_t{0};
}

}  // namespace cairn
