#include "engine/reclaim/reclaim_period.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/engine_impl.h"
#include "engine/reclaim/quota_aggregates.h"

namespace cairn {

namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;
constexpr size_t kMaxRecordsPerChunk = 8192;

int64_t FloorTo(int64_t value, int64_t step) {
  int64_t q = value / step;
  if (value % step < 0) --q;
  return q * step;
}

uint64_t RowBytes(const ChunkRow& row) {
  return static_cast<uint64_t>(row.stats.size()) + (row.data.empty() ? row.data_bytes : row.data.size());
}

// A record with its LSN.
using LsnRecord = std::pair<ChunkRecord, uint64_t>;

// What the rewrite of one series' chosen chunks replaces and adds.
struct SeriesRewrite {
  std::vector<PeriodFile::ChunkKey> removed;
  uint64_t removed_bytes = 0;
  std::vector<ChunkRow> added;
  uint64_t added_bytes = 0;
  uint64_t dropped = 0, downsampled = 0, aggregates = 0;
};

// One run of ReclaimInPeriod, step by step.
class PeriodReclaim {
 public:
  PeriodReclaim(ReclaimerStore& store, Catalog& catalog, const std::string& table, Period period,
                int64_t start, const LsnRangeSet& confirmed, bool downsample, int64_t step_seconds)
      : store_(store),
        catalog_(catalog),
        table_(table),
        period_(period),
        start_(start),
        confirmed_(confirmed),
        downsample_(downsample),
        step_seconds_(step_seconds) {}

  Result<PeriodReclaimResult> Run(uint64_t wanted) {
    PeriodReclaimResult result;
    CAIRN_RETURN_IF_ERROR(store_.WithPeriodFile(table_, period_, start_,
                                                [&](PeriodFile& file) { return CollectCandidates(file); }));
    if (candidates_.empty()) return result;
    ChooseChunks(wanted);
    if (chosen_.empty()) return result;
    if (downsample_) {
      CAIRN_RETURN_IF_ERROR(PrepareTargets());
      if (targets_.empty()) return result;
    }
    CAIRN_RETURN_IF_ERROR(store_.WithPeriodFile(
        table_, period_, start_, [&](PeriodFile& file) { return RewriteFile(file, &result); }));
    if (!touched_.empty()) store_.SeriesRewritten(table_, touched_, added_);
    return result;
  }

 private:
  uint64_t UnconfirmedIn(const ChunkRow& row) const {
    uint64_t n = 0;
    for (uint64_t lsn : row.lsns) n += confirmed_.Contains(lsn) ? 0 : 1;
    return n;
  }

  // 1. The file's chunks holding unconfirmed records, lowest LSN first, and
  //    its series.
  Status CollectCandidates(PeriodFile& file) {
    CAIRN_ASSIGN_OR_RETURN(uint64_t max_lsn, file.MaxLsn());
    CAIRN_RETURN_IF_ERROR(ForEachUnconfirmedChunk(file, confirmed_, max_lsn, [&](ChunkRow& row) {
      if (UnconfirmedIn(row) != 0) candidates_.push_back(std::move(row));
      return true;
    }));
    if (candidates_.empty()) return Status::Ok();
    CAIRN_ASSIGN_OR_RETURN(file_series_, file.ListSeries());
    std::sort(candidates_.begin(), candidates_.end(),
              [](const ChunkRow& a, const ChunkRow& b) { return a.min_lsn < b.min_lsn; });
    for (const PeriodSeries& s : file_series_) series_by_id_[s.series_id] = &s;
    return Status::Ok();
  }

  // 2. Which chunks to work on, oldest first, until their unconfirmed bytes
  //    cover `wanted` (dropping) or twice that (downsampling keeps some),
  //    grouped by series in the order their oldest chunk comes.
  void ChooseChunks(uint64_t wanted) {
    uint64_t planned = 0;
    const std::string aggregate_suffix = AggregateMeasureName("", step_seconds_);
    for (const ChunkRow& row : candidates_) {
      if (planned >= (downsample_ ? 2 * wanted : wanted)) break;
      auto s = series_by_id_.find(row.series_id);
      if (s == series_by_id_.end()) continue;
      if (downsample_ && s->second->measure_name.ends_with(aggregate_suffix)) continue;  // already aggregates
      planned += UnconfirmedIn(row) * RowBytes(row) / row.count;
      auto [it, first] = chosen_chunks_.try_emplace(row.series_id);
      if (first) chosen_.push_back(row.series_id);
      it->second.push_back({row.series_id, row.start_ns, row.seq});
    }
  }

  // 3. Downsampling: the aggregate series, created in the catalog before
  //    any chunk refers to them (ids never change meaning across a crash).
  //    A raw series whose aggregates would break a limit is left for the
  //    drop pass.
  Status PrepareTargets() {
    std::vector<ReclaimerStore::AggregateRequest> requests;
    for (int64_t raw_id : chosen_) {
      const PeriodSeries& raw = *series_by_id_[raw_id];
      ReclaimerStore::AggregateRequest request{
          &raw, AggregateMeasureName(raw.measure_name, step_seconds_), {}};
      for (const ChunkField& f : raw.fields) {
        for (ChunkField& a : AggregateFieldsOf(f)) request.fields.push_back(std::move(a));
      }
      bool fits =
          request.measure.size() <= kMaxMeasureNameBytes && request.fields.size() <= kMaxFieldsPerRecord;
      for (const ChunkField& f : request.fields) fits = fits && f.name.size() <= kMaxFieldNameBytes;
      if (fits) requests.push_back(std::move(request));
    }
    return store_.EnsureAggregateSeries(table_, requests, &targets_);
  }

  // 4. The rewrite, in one transaction for the file.
  Status RewriteFile(PeriodFile& file, PeriodReclaimResult* result) {
    std::vector<PeriodFile::ChunkKey> removed;
    std::vector<PeriodSeries> upserted;
    uint64_t removed_bytes = 0, added_bytes = 0;
    for (int64_t raw_id : chosen_) {
      if (downsample_ && !targets_.count(raw_id)) continue;
      const PeriodSeries& raw = *series_by_id_[raw_id];
      CAIRN_ASSIGN_OR_RETURN(std::optional<SeriesRewrite> rewrite, RewriteSeries(file, raw));
      if (!rewrite) continue;
      if (rewrite->aggregates != 0) {
        const AggregateTarget& target = targets_[raw_id];
        upserted.push_back(PeriodSeries{target.series_id, raw.device_id, target.measure_name, target.shard,
                                        target.fields, target.dimensions});
        touched_.insert(target.series_id);
      }
      for (ChunkRow& row : rewrite->added) added_.push_back(std::move(row));
      removed.insert(removed.end(), rewrite->removed.begin(), rewrite->removed.end());
      removed_bytes += rewrite->removed_bytes;
      added_bytes += rewrite->added_bytes;
      result->dropped += rewrite->dropped;
      result->downsampled += rewrite->downsampled;
      result->aggregates += rewrite->aggregates;
      touched_.insert(raw_id);
    }
    if (removed.empty()) {
      *result = PeriodReclaimResult{};
      return Status::Ok();
    }
    // Dropped readings may take the file's highest LSN with them: its seal
    // mark (the coverage check on open) no longer applies.
    CAIRN_RETURN_IF_ERROR(catalog_.ForgetSealMark(table_, start_));
    CAIRN_RETURN_IF_ERROR(file.ReplaceChunks(removed, upserted, added_));
    result->freed_bytes = removed_bytes > added_bytes ? removed_bytes - added_bytes : 0;
    return Status::Ok();
  }

  // The rewrite of one raw series' chosen chunks; nullopt when it frees
  // nothing (no unconfirmed record dropped or downsampled, or aggregates
  // that take more room than the raw records).
  Result<std::optional<SeriesRewrite>> RewriteSeries(PeriodFile& file, const PeriodSeries& raw) {
    SeriesRewrite out;
    // Highest version of each timestamp over the chosen chunks; the series'
    // other chunks stay as they are (a step split between chosen and other
    // chunks is merged into its aggregate by a later round).
    std::vector<ChunkField> schema = raw.fields;
    NewestRecords winners;
    CAIRN_ASSIGN_OR_RETURN(std::vector<ChunkRow> chunks, ReadChosenChunks(file, raw.series_id));
    for (const ChunkRow& chunk : chunks) {
      if (UnconfirmedIn(chunk) == 0) continue;
      out.removed.push_back({chunk.series_id, chunk.start_ns, chunk.seq});
      out.removed_bytes += RowBytes(chunk);
      CAIRN_RETURN_IF_ERROR(MergeChunkRecords(chunk, &schema, &winners));
    }
    if (out.removed.empty()) return std::optional<SeriesRewrite>();
    std::vector<LsnRecord> kept;
    // Unconfirmed records by step start (downsampling).
    std::map<int64_t, std::vector<LsnRecord>> steps;
    const int64_t step_ns = step_seconds_ * kNanosPerSecond;
    for (auto& [ts, entry] : winners) {
      entry.first.values.resize(schema.size());
      if (confirmed_.Contains(entry.second)) {
        kept.push_back(std::move(entry));
      } else if (downsample_) {
        steps[FloorTo(ts, step_ns)].push_back(std::move(entry));
      } else {
        ++out.dropped;
      }
    }
    std::vector<LsnRecord> aggregates;
    if (downsample_) {
      CAIRN_RETURN_IF_ERROR(DownsampleSteps(file, targets_[raw.series_id], schema, steps, &kept, &aggregates,
                                            &out.downsampled));
    }
    if (downsample_ ? out.downsampled == 0 : out.dropped == 0) return std::optional<SeriesRewrite>();
    out.aggregates = aggregates.size();
    if (!aggregates.empty()) {
      const AggregateTarget& target = targets_[raw.series_id];
      CAIRN_RETURN_IF_ERROR(Encode(target.series_id, target.fields, aggregates, &out.added));
    }
    if (!kept.empty()) {
      // Ascending timestamps: raw records kept from steps of one record
      // were appended after the confirmed ones.
      std::sort(kept.begin(), kept.end(),
                [](const LsnRecord& a, const LsnRecord& b) { return a.first.timestamp < b.first.timestamp; });
      CAIRN_RETURN_IF_ERROR(Encode(raw.series_id, schema, kept, &out.added));
    }
    for (const ChunkRow& row : out.added) out.added_bytes += RowBytes(row);
    // Data that compresses better raw than as aggregates stays raw; the
    // drop pass is what is left for it.
    if (downsample_ && out.added_bytes >= out.removed_bytes) return std::optional<SeriesRewrite>();
    return std::optional<SeriesRewrite>(std::move(out));
  }

  // The chosen chunks of one series, read with data.
  Result<std::vector<ChunkRow>> ReadChosenChunks(PeriodFile& file, int64_t series_id) {
    std::vector<ChunkRow> chunks;
    for (const PeriodFile::ChunkKey& key : chosen_chunks_[series_id]) {
      CAIRN_ASSIGN_OR_RETURN(std::vector<ChunkRow> at,
                             file.ReadChunks(series_id, key.start_ns, key.start_ns + 1, /*with_data=*/true));
      for (ChunkRow& row : at) {
        if (row.start_ns == key.start_ns && row.seq == key.seq) chunks.push_back(std::move(row));
      }
    }
    return chunks;
  }

  // Replaces each step of `steps` by one aggregate in `aggregates`, merged
  // with the aggregate the file already holds for it; a step of one record
  // (and no earlier aggregate) or whose int64 sums cannot be kept exactly
  // goes to `kept` raw. Counts the replaced records in `downsampled`.
  Status DownsampleSteps(PeriodFile& file, const AggregateTarget& target,
                         const std::vector<ChunkField>& schema,
                         std::map<int64_t, std::vector<LsnRecord>>& steps, std::vector<LsnRecord>* kept,
                         std::vector<LsnRecord>* aggregates, uint64_t* downsampled) {
    // Aggregates already in the file for these steps are merged in, and the
    // result replaces them by version.
    NewestRecords existing;
    std::vector<ChunkField> target_schema = target.fields;
    if (!steps.empty()) {
      CAIRN_ASSIGN_OR_RETURN(
          std::vector<ChunkRow> old_rows,
          file.ReadChunks(target.series_id, steps.begin()->first, steps.rbegin()->first + 1,
                          /*with_data=*/true));
      for (const ChunkRow& row : old_rows) {
        CAIRN_RETURN_IF_ERROR(MergeChunkRecords(row, &target_schema, &existing));
      }
    }
    std::unordered_map<std::string, size_t> target_index;
    for (size_t i = 0; i < target_schema.size(); ++i) target_index[target_schema[i].name] = i;
    for (auto& [step_start, members] : steps) {
      auto old = existing.find(step_start);
      const ChunkRecord* old_record = old == existing.end() ? nullptr : &old->second.first;
      // One record per step gains nothing: it stays raw.
      bool raw = members.size() < 2 && old_record == nullptr;
      LsnRecord aggregate = StepHeader(step_start, target.fields.size(), members, old_record);
      // A step whose int64 sums cannot be kept exactly stays raw.
      raw = raw || !FillStepAggregate(schema, target_index, old_record, members, &aggregate.first);
      if (raw) {
        for (LsnRecord& entry : members) kept->push_back(std::move(entry));
        continue;
      }
      *downsampled += members.size();
      aggregates->push_back(std::move(aggregate));
    }
    return Status::Ok();
  }

  // The aggregate of one step before its values: timestamp, version after
  // `old`'s, the longest expiry of its members (none if one has none), and
  // the highest of their LSNs.
  static LsnRecord StepHeader(int64_t step_start, size_t field_count, const std::vector<LsnRecord>& members,
                              const ChunkRecord* old) {
    ChunkRecord aggregate;
    aggregate.timestamp = step_start;
    aggregate.values.assign(field_count, Value{});
    uint64_t lsn = 0;
    for (const LsnRecord& entry : members) {
      lsn = std::max(lsn, entry.second);
      if (entry.first.ttl == 0 || aggregate.ttl == -1) {
        aggregate.ttl = -1;  // one record without expiry: the aggregate has none
      } else {
        aggregate.ttl = std::max(aggregate.ttl, entry.first.ttl);
      }
    }
    if (aggregate.ttl == -1) aggregate.ttl = 0;
    aggregate.version = old == nullptr ? 0 : old->version + 1;
    return {std::move(aggregate), lsn};
  }

  // Encodes `records` (ascending timestamps) as chunk rows of `series_id`.
  static Status Encode(int64_t series_id, const std::vector<ChunkField>& fields,
                       std::vector<LsnRecord>& records, std::vector<ChunkRow>* out) {
    std::vector<ChunkRecord> chunk_records;
    std::vector<uint64_t> lsns;
    chunk_records.reserve(records.size());
    lsns.reserve(records.size());
    for (LsnRecord& entry : records) {
      chunk_records.push_back(std::move(entry.first));
      lsns.push_back(entry.second);
    }
    return EncodeSeriesChunks(series_id, fields, chunk_records, lsns, kMaxRecordsPerChunk, out);
  }

  ReclaimerStore& store_;
  Catalog& catalog_;
  const std::string& table_;
  const Period period_;
  const int64_t start_;
  const LsnRangeSet& confirmed_;
  const bool downsample_;
  const int64_t step_seconds_;

  std::vector<ChunkRow> candidates_;
  std::vector<PeriodSeries> file_series_;
  std::unordered_map<int64_t, const PeriodSeries*> series_by_id_;
  std::vector<int64_t> chosen_;  // raw series ids, in the order of their oldest chosen chunk
  std::map<int64_t, std::vector<PeriodFile::ChunkKey>> chosen_chunks_;
  std::map<int64_t, AggregateTarget> targets_;  // by raw series id
  std::vector<ChunkRow> added_;
  std::set<int64_t> touched_;
};

}  // namespace

std::string AggregateMeasureName(const std::string& measure_name, int64_t step_seconds) {
  return measure_name + "@" + std::to_string(step_seconds) + "s";
}

Result<PeriodReclaimResult> ReclaimInPeriod(ReclaimerStore& store, Catalog& catalog, const std::string& table,
                                            Period period, int64_t start, const LsnRangeSet& confirmed,
                                            uint64_t wanted, bool downsample, int64_t step_seconds) {
  return PeriodReclaim(store, catalog, table, period, start, confirmed, downsample, step_seconds).Run(wanted);
}

}  // namespace cairn
