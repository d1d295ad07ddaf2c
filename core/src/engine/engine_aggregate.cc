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

// What one series' share of an aggregate is judged by: the query, the
// field's type, the deletion clock's now and the head's timestamps.
struct SeriesPass {
  SeriesPass(const AggregateQuery& q, FieldType field_type, const std::vector<ChunkRecord>& head, int64_t now_ns)
      : query(q), type(field_type), now(now_ns) {
    // Version 1 statistics hold an int64 field's sum as an inexact double:
    // where a sum or mean is asked, such chunks are decoded instead.
    exact_sum_needed =
        type == FieldType::kInt64 && std::any_of(query.functions.begin(), query.functions.end(), [](auto fn) {
          return fn == AggregateFunction::kSum || fn == AggregateFunction::kAvg;
        });
    for (const ChunkRecord& r : head) head_times.push_back(r.timestamp);
  }
  int64_t BucketOf(int64_t ts) const {
    return static_cast<int64_t>((static_cast<uint64_t>(ts) - static_cast<uint64_t>(query.from)) /
                                static_cast<uint64_t>(query.step));
  }

  const AggregateQuery& query;
  const FieldType type;
  const int64_t now;
  bool exact_sum_needed = false;
  std::vector<int64_t> head_times;
};

// Whether chunk `i` may be answered from its statistics: inside the range
// and one bucket, holding nothing expired, overlapping no other chunk and no
// head record.
bool StatsMayAnswer(const SeriesPass& pass, const std::vector<ChunkRow>& chunks, size_t i) {
  const ChunkRow& c = chunks[i];
  if (c.start_ns < pass.query.from || c.end_ns >= pass.query.to) return false;
  if (pass.BucketOf(c.start_ns) != pass.BucketOf(c.end_ns)) return false;
  if (c.min_ttl != 0 && c.min_ttl <= pass.now / kReadNanosPerSecond) return false;
  for (size_t j = 0; j < chunks.size(); ++j) {
    if (j != i && chunks[j].start_ns <= c.end_ns && chunks[j].end_ns >= c.start_ns) return false;
  }
  auto h = std::lower_bound(pass.head_times.begin(), pass.head_times.end(), c.start_ns);
  return h == pass.head_times.end() || *h > c.end_ns;
}

// Which chunks of one period file were answered from their statistics
// (added to the buckets), and whether any other must be decoded.
struct StatsAnswers {
  std::vector<bool> from_stats;
  bool need_data = false;
};

StatsAnswers AnswerFromStats(const SeriesPass& pass, const std::vector<ChunkRow>& chunks,
                             std::map<int64_t, BucketAccumulator>* buckets) {
  StatsAnswers answers;
  answers.from_stats.assign(chunks.size(), false);
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (!StatsMayAnswer(pass, chunks, i)) {
      answers.need_data = true;
      continue;
    }
    const ChunkRow& c = chunks[i];
    auto chunk_field = std::find_if(c.fields.begin(), c.fields.end(),
                                    [&](const ChunkField& f) { return f.name == pass.query.field; });
    if (chunk_field == c.fields.end() || chunk_field->type != pass.type) {
      answers.from_stats[i] = true;  // the chunk does not carry the field
      continue;
    }
    Result<ChunkStats> decoded_stats = DecodeChunkStats(c.stats, c.fields);
    if (!decoded_stats.ok()) {
      // Damaged statistics: the records themselves may still decode.
      answers.need_data = true;
      continue;
    }
    const FieldStats& fs = decoded_stats->fields[static_cast<size_t>(chunk_field - c.fields.begin())];
    if (pass.exact_sum_needed && !fs.integer_sum) {
      answers.need_data = true;
      continue;
    }
    if (fs.count > 0) (*buckets)[pass.BucketOf(c.start_ns)].AddStats(fs, c.start_ns, c.end_ns);
    answers.from_stats[i] = true;
  }
  return answers;
}

// Removes from `sealed` the records of chunks answered from statistics.
void DropAnswered(const std::vector<ChunkRow>& chunks, const std::vector<bool>& from_stats,
                  std::vector<ChunkRecord>* sealed) {
  std::erase_if(*sealed, [&](const ChunkRecord& r) {
    for (size_t i = 0; i < chunks.size(); ++i) {
      if (from_stats[i] && r.timestamp >= chunks[i].start_ns && r.timestamp <= chunks[i].end_ns) return true;
    }
    return false;
  });
}

// The values of the `group_by` tags of a series (dimension, else attribute,
// else empty): the group its readings are aggregated in.
TagMap GroupOf(const std::vector<std::string>& group_by, const TagMap& dimensions, const TagMap& attributes) {
  TagMap group;
  for (const std::string& name : group_by) {
    auto d = dimensions.find(name);
    if (d != dimensions.end()) {
      group.emplace(name, d->second);
    } else if (auto a = attributes.find(name); a != attributes.end()) {
      group.emplace(name, a->second);
    } else {
      group.emplace(name, "");
    }
  }
  return group;
}

// Why `query` cannot be answered as asked, Ok when it can.
Status CheckAggregateQuery(const AggregateQuery& query) {
  if (query.step <= 0) return Status::InvalidArgument("step must be positive");
  if (query.from >= query.to) return Status::InvalidArgument("'from' must be before 'to'");
  if (query.functions.empty()) return Status::InvalidArgument("no aggregate function given");
  const uint64_t span = static_cast<uint64_t>(query.to) - static_cast<uint64_t>(query.from);
  if (span / static_cast<uint64_t>(query.step) >= static_cast<uint64_t>(kMaxAggregateBuckets)) {
    return Status::InvalidArgument("too many buckets: at most " + std::to_string(kMaxAggregateBuckets) +
                                   " steps per query");
  }
  CAIRN_RETURN_IF_ERROR(ValidateIdentifier("device_id", query.device_id, kMaxDeviceIdBytes));
  return ValidateIdentifier("measure_name", query.measure_name, kMaxMeasureNameBytes);
}

// The field's type across the matching series: one type, or the query must
// narrow them down; and a type aggregates can answer. A template so that it
// takes the engine's own snapshot type.
template <typename Snapshot>
Result<FieldType> FieldTypeAcross(const AggregateQuery& query, const std::vector<Snapshot>& snapshots) {
  std::optional<FieldType> type;
  for (const Snapshot& snap : snapshots) {
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
  return *type;
}

// Appends the answer of every bucket of every group to `result`.
Status AnswerBuckets(const AggregateQuery& query,
                     std::map<TagMap, std::map<int64_t, BucketAccumulator>>& groups, AggregateResult* result) {
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
      result->buckets.push_back(std::move(bucket));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<ChunkRow>> EngineImpl::SealedChunkRows(const std::string& table, Period period, int64_t start,
                                                          int64_t series_id, int64_t from, int64_t to,
                                                          std::vector<SkippedDamage>* skipped) {
  auto handle = GetPeriodFile(table, period, start, PeriodAccess::kRead);
  if (!handle.ok()) {
    if (handle.status().Is(StatusCode::kNotFound)) return std::vector<ChunkRow>{};
    if (!handle.status().Is(StatusCode::kCorruption)) return handle.status();
  }
  std::vector<ChunkRow> chunks;
  Status listed = handle.status();
  if (listed.ok()) {
    MutexLock file_lock(&(*handle)->mutex);
    Result<std::vector<ChunkRow>> read = (*handle)->file->ReadChunks(series_id, from, to, false);
    listed = read.status();
    if (read.ok()) chunks = std::move(read).value();
  }
  if (!listed.ok()) {
    if (!listed.Is(StatusCode::kCorruption)) return listed;
    NoteReadDamage(table, SkippedDamage{PeriodPath(table, period, start), "the whole file", listed.message(), 0},
                   skipped);
    return std::vector<ChunkRow>{};
  }
  return chunks;
}

// One series' share of an aggregate (Aggregate): its readings of `field`
// in the query's range, each into its bucket. Chunks that lie inside one
// bucket, overlap no other chunk or head record and hold nothing expired are
// answered from their statistics.
Status EngineImpl::AccumulateSeries(const AggregateQuery& query, const SeriesSnapshot& snap, size_t field,
                                    FieldType type, int64_t now, std::map<int64_t, BucketAccumulator>* buckets,
                                    std::vector<SkippedDamage>* skipped) {
  const SeriesPass pass(query, type, snap.head, now);
  std::vector<ChunkRecord> records = snap.head;
  for (int64_t start : snap.period_starts) {
    if (start >= query.to || NextPeriodStart(snap.period, start) <= query.from) continue;
    CAIRN_ASSIGN_OR_RETURN(std::vector<ChunkRow> chunks, SealedChunkRows(query.table, snap.period, start, snap.id,
                                                                         query.from, query.to, skipped));
    const StatsAnswers answers = AnswerFromStats(pass, chunks, buckets);
    if (!answers.need_data) continue;
    CAIRN_ASSIGN_OR_RETURN(std::vector<ChunkRecord> sealed,
                           ReadSealed(query.table, snap.period, start, snap.id, snap.fields, query.from, query.to,
                                      skipped));
    DropAnswered(chunks, answers.from_stats, &sealed);
    std::move(sealed.begin(), sealed.end(), std::back_inserter(records));
  }
  MergeVisible(&records, now);
  for (const ChunkRecord& r : records) {
    if (field < r.values.size() && !std::holds_alternative<std::monostate>(r.values[field])) {
      (*buckets)[pass.BucketOf(r.timestamp)].Add(r.values[field], r.timestamp);
    }
  }
  return Status::Ok();
}

Result<AggregateResult> EngineImpl::Aggregate(const AggregateQuery& query) {
  CAIRN_RETURN_IF_ERROR(CheckAggregateQuery(query));
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
  CAIRN_ASSIGN_OR_RETURN(const FieldType type, FieldTypeAcross(query, snapshots));
  const int64_t now = clock_->ExpiryNow();  // ttl by the deletion clock (clock_trust.h)
  AggregateResult result;
  // Group (the values of the group_by tags) -> bucket index -> what it has
  // seen (aggregate_bucket.h).
  std::map<TagMap, std::map<int64_t, BucketAccumulator>> groups;
  for (const SeriesSnapshot& snap : snapshots) {
    auto field_it = std::find_if(snap.fields.begin(), snap.fields.end(),
                                 [&](const ChunkField& f) { return f.name == query.field; });
    if (field_it == snap.fields.end()) continue;
    const TagMap group = GroupOf(query.group_by, snap.dimensions, snap.attributes);
    CAIRN_RETURN_IF_ERROR(AccumulateSeries(query, snap, static_cast<size_t>(field_it - snap.fields.begin()),
                                           type, now, &groups[group], &result.skipped));
  }
  CAIRN_RETURN_IF_ERROR(AnswerBuckets(query, groups, &result));
  return result;
}

}  // namespace cairn
