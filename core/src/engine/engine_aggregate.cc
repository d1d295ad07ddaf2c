// Aggregates: min, max, avg, sum, count, first and last of a numeric field
// per time step over the series of one device and measure that match the
// query's tags, optionally grouped by tags. Exact for int64 fields
// (aggregate_bucket.h).
#include <algorithm>
#include <map>
#include <optional>

#include "engine/query/aggregate_bucket.h"
#include "engine/engine_impl.h"
#include "engine/query/series_snapshot.h"

namespace cairn {

namespace {

constexpr int64_t kMaxAggregateBuckets = 1'000'000;

}  // namespace

// One series' share of an aggregate (Aggregate): its readings of `field`
// in the query's range, each into its bucket. Chunks that lie inside one
// bucket, overlap no other chunk or head record and hold nothing expired are
// answered from their statistics.
Status EngineImpl::AccumulateSeries(const AggregateQuery& query, const SeriesSnapshot& snap, size_t field,
                                    FieldType type, int64_t now, std::map<int64_t, BucketAccumulator>* buckets,
                                    std::vector<SkippedDamage>* skipped) {
  const auto bucket_of = [&](int64_t ts) {
    return static_cast<int64_t>((static_cast<uint64_t>(ts) - static_cast<uint64_t>(query.from)) /
                                static_cast<uint64_t>(query.step));
  };
  // Version 1 statistics hold an int64 field's sum as an inexact double:
  // where a sum or mean is asked, such chunks are decoded instead.
  const bool exact_sum_needed =
      type == FieldType::kInt64 && std::any_of(query.functions.begin(), query.functions.end(), [](auto fn) {
        return fn == AggregateFunction::kSum || fn == AggregateFunction::kAvg;
      });
  std::vector<ChunkRecord> records = snap.head;
  std::vector<int64_t> head_times;
  for (const ChunkRecord& r : snap.head) head_times.push_back(r.timestamp);
  for (int64_t start : snap.period_starts) {
    if (start >= query.to || NextPeriodStart(snap.period, start) <= query.from) continue;
    auto handle = GetPeriodFile(query.table, snap.period, start, PeriodAccess::kRead);
    if (!handle.ok()) {
      if (handle.status().Is(StatusCode::kNotFound)) continue;
      if (!handle.status().Is(StatusCode::kCorruption)) return handle.status();
    }
    std::vector<ChunkRow> chunks;
    Status listed = handle.status();
    if (listed.ok()) {
      MutexLock file_lock(&(*handle)->mutex);
      Result<std::vector<ChunkRow>> read = (*handle)->file->ReadChunks(snap.id, query.from, query.to, false);
      listed = read.status();
      if (read.ok()) chunks = std::move(read).value();
    }
    if (!listed.ok()) {
      if (!listed.Is(StatusCode::kCorruption)) return listed;
      NoteReadDamage(query.table,
                     SkippedDamage{PeriodPath(query.table, snap.period, start), "the whole file",
                                   listed.message(), 0},
                     skipped);
      continue;
    }
    std::vector<bool> from_stats(chunks.size(), false);
    bool need_data = false;
    for (size_t i = 0; i < chunks.size(); ++i) {
      const ChunkRow& c = chunks[i];
      bool eligible = c.start_ns >= query.from && c.end_ns < query.to &&
                      bucket_of(c.start_ns) == bucket_of(c.end_ns) &&
                      (c.min_ttl == 0 || c.min_ttl > now / kReadNanosPerSecond);
      for (size_t j = 0; eligible && j < chunks.size(); ++j) {
        if (j != i && chunks[j].start_ns <= c.end_ns && chunks[j].end_ns >= c.start_ns) eligible = false;
      }
      if (eligible) {
        auto h = std::lower_bound(head_times.begin(), head_times.end(), c.start_ns);
        if (h != head_times.end() && *h <= c.end_ns) eligible = false;
      }
      if (eligible) {
        auto chunk_field = std::find_if(c.fields.begin(), c.fields.end(),
                                        [&](const ChunkField& f) { return f.name == query.field; });
        if (chunk_field == c.fields.end() || chunk_field->type != type) {
          from_stats[i] = true;  // the chunk does not carry the field
          continue;
        }
        Result<ChunkStats> decoded_stats = DecodeChunkStats(c.stats, c.fields);
        if (!decoded_stats.ok()) {
          // Damaged statistics: the records themselves may still decode.
          need_data = true;
          continue;
        }
        const ChunkStats& stats = *decoded_stats;
        const FieldStats& fs = stats.fields[static_cast<size_t>(chunk_field - c.fields.begin())];
        if (exact_sum_needed && !fs.integer_sum) {
          need_data = true;
          continue;
        }
        if (fs.count > 0) (*buckets)[bucket_of(c.start_ns)].AddStats(fs, c.start_ns, c.end_ns);
        from_stats[i] = true;
      } else {
        need_data = true;
      }
    }
    if (!need_data) continue;
    CAIRN_ASSIGN_OR_RETURN(std::vector<ChunkRecord> sealed,
                           ReadSealed(query.table, snap.period, start, snap.id, snap.fields, query.from, query.to,
                                      skipped));
    // Keep only records of chunks that were not answered from statistics.
    std::erase_if(sealed, [&](const ChunkRecord& r) {
      for (size_t i = 0; i < chunks.size(); ++i) {
        if (from_stats[i] && r.timestamp >= chunks[i].start_ns && r.timestamp <= chunks[i].end_ns)
          return true;
      }
      return false;
    });
    std::move(sealed.begin(), sealed.end(), std::back_inserter(records));
  }
  MergeVisible(&records, now);
  for (const ChunkRecord& r : records) {
    if (field < r.values.size() && !std::holds_alternative<std::monostate>(r.values[field])) {
      (*buckets)[bucket_of(r.timestamp)].Add(r.values[field], r.timestamp);
    }
  }

  return Status::Ok();
}

Result<AggregateResult> EngineImpl::Aggregate(const AggregateQuery& query) {
  if (query.step <= 0) return Status::InvalidArgument("step must be positive");
  if (query.from >= query.to) return Status::InvalidArgument("'from' must be before 'to'");
  if (query.functions.empty()) return Status::InvalidArgument("no aggregate function given");
  const uint64_t span = static_cast<uint64_t>(query.to) - static_cast<uint64_t>(query.from);
  if (span / static_cast<uint64_t>(query.step) >= static_cast<uint64_t>(kMaxAggregateBuckets)) {
    return Status::InvalidArgument("too many buckets: at most " + std::to_string(kMaxAggregateBuckets) +
                                   " steps per query");
  }
  CAIRN_RETURN_IF_ERROR(ValidateIdentifier("device_id", query.device_id, kMaxDeviceIdBytes));
  CAIRN_RETURN_IF_ERROR(ValidateIdentifier("measure_name", query.measure_name, kMaxMeasureNameBytes));
  std::vector<SeriesSnapshot> snapshots;
  {
    ReaderLock state(&state_mutex_);
    auto t = tables_.find(query.table);
    if (t == tables_.end()) return Status::NotFound("table '" + query.table + "' does not exist");
    const auto& all = t->second->series;
    for (auto it = all.lower_bound(SeriesKey{query.device_id, query.measure_name, ""});
         it != all.end() && it->first.device_id == query.device_id && it->first.measure_name == query.measure_name;
         ++it) {
      if (TagsMatch(*it->second, query.tags))
        snapshots.push_back(TakeSnapshot<SeriesSnapshot>(*t->second, *it->second, query.from, query.to));
    }
  }
  if (snapshots.empty()) return AggregateResult{};
  // The field's type across the matching series: one type, or the query
  // must narrow them down.
  std::optional<FieldType> type;
  for (const SeriesSnapshot& snap : snapshots) {
    for (const ChunkField& f : snap.fields) {
      if (f.name != query.field) continue;
      if (type && *type != f.type) {
        return Status::InvalidArgument("field '" + query.field + "' is " + std::string(FieldTypeName(*type)) +
                                       " in one series of measure '" + query.measure_name + "' and " +
                                       std::string(FieldTypeName(f.type)) + " in another; narrow them with tags");
      }
      type = f.type;
    }
  }
  if (!type) return Status::NotFound("measure '" + query.measure_name + "' has no field '" + query.field + "'");
  if (*type != FieldType::kDouble && *type != FieldType::kInt64) {
    return Status::InvalidArgument("field '" + query.field + "' is " + std::string(FieldTypeName(*type)) +
                                   "; aggregates need a double or int64 field");
  }
  const int64_t now = clock_->ExpiryNow();  // ttl by the deletion clock (clock_trust.h)
  AggregateResult result;
  // Group (the values of the group_by tags) -> bucket index -> what it has
  // seen (aggregate_bucket.h).
  std::map<TagMap, std::map<int64_t, BucketAccumulator>> groups;
  for (const SeriesSnapshot& snap : snapshots) {
    auto field_it = std::find_if(snap.fields.begin(), snap.fields.end(),
                                 [&](const ChunkField& f) { return f.name == query.field; });
    if (field_it == snap.fields.end()) continue;
    TagMap group;
    for (const std::string& name : query.group_by) {
      auto d = snap.dimensions.find(name);
      if (d != snap.dimensions.end()) {
        group.emplace(name, d->second);
      } else if (auto a = snap.attributes.find(name); a != snap.attributes.end()) {
        group.emplace(name, a->second);
      } else {
        group.emplace(name, "");
      }
    }
    CAIRN_RETURN_IF_ERROR(AccumulateSeries(query, snap, static_cast<size_t>(field_it - snap.fields.begin()),
                                           *type, now, &groups[group], &result.skipped));
  }
  for (auto& [group, buckets] : groups) {
    for (auto& [index, acc] : buckets) {
      AggregateBucket bucket;
      bucket.group = group;
      bucket.start = static_cast<int64_t>(static_cast<uint64_t>(query.from) +
                                          static_cast<uint64_t>(index) * static_cast<uint64_t>(query.step));
      bucket.count = acc.count();
      for (AggregateFunction fn : query.functions) {
        CAIRN_ASSIGN_OR_RETURN(Value value, acc.Answer(fn, bucket.start));
        bucket.values.push_back(std::move(value));
      }
      result.buckets.push_back(std::move(bucket));
    }
  }
  return result;
}

}  // namespace cairn
