// Reads: get, range, latest, aggregates, listings. Every read merges the
// head with sealed chunks, keeps the highest version of each timestamp and
// hides records whose ttl has passed.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <tuple>

#include "engine/aggregate_bucket.h"
#include "engine/engine_impl.h"

namespace cairn {

namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;
constexpr int64_t kMaxAggregateBuckets = 1'000'000;

bool Expired(const ChunkRecord& r, int64_t now_ns) { return r.ttl != 0 && r.ttl <= now_ns / kNanosPerSecond; }

// Sorts by timestamp and keeps the highest version of each, of equal
// versions the later arrival (higher LSN: on_conflict overwrite). Expired
// records stay: an expired newest version must still hide the older ones.
void MergeVersions(std::vector<ChunkRecord>* records) {
  const bool strictly_ascending =
      std::adjacent_find(records->begin(), records->end(), [](const ChunkRecord& a, const ChunkRecord& b) {
        return a.timestamp >= b.timestamp;
      }) == records->end();
  if (strictly_ascending) return;  // the common case: nothing to merge
  std::sort(records->begin(), records->end(), [](const ChunkRecord& a, const ChunkRecord& b) {
    if (a.timestamp != b.timestamp) return a.timestamp < b.timestamp;
    return a.version != b.version ? a.version > b.version : a.lsn > b.lsn;
  });
  size_t out = 0;
  for (size_t i = 0; i < records->size(); ++i) {
    if (out > 0 && (*records)[out - 1].timestamp == (*records)[i].timestamp) continue;
    if (i != out) (*records)[out] = std::move((*records)[i]);
    ++out;
  }
  records->resize(out);
}

// MergeVersions, then hides what has expired. Only valid once every version
// of every timestamp in range has been collected.
void MergeVisible(std::vector<ChunkRecord>* records, int64_t now_ns) {
  MergeVersions(records);
  std::erase_if(*records, [&](const ChunkRecord& r) { return Expired(r, now_ns); });
}

// Page tokens are "<timestamp>:<dimensions key in hex>:<measure_name>" of
// the last row returned: the hex never holds ':', the measure may.
std::string MakePageToken(int64_t timestamp, const std::string& dimensions_key, const std::string& measure) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token = std::to_string(timestamp) + ":";
  for (unsigned char c : dimensions_key) {
    token += kHex[c >> 4];
    token += kHex[c & 15];
  }
  return token + ":" + measure;
}

Status ParsePageToken(const std::string& token, int64_t* timestamp, std::string* dimensions_key,
                      std::string* measure) {
  const Status malformed = Status::InvalidArgument("malformed page token");
  const size_t colon = token.find(':');
  const size_t second = colon == std::string::npos ? colon : token.find(':', colon + 1);
  if (second == std::string::npos || (second - colon - 1) % 2 != 0) return malformed;
  auto [end, ec] = std::from_chars(token.data(), token.data() + colon, *timestamp);
  if (ec != std::errc() || end != token.data() + colon) return malformed;
  dimensions_key->clear();
  for (size_t i = colon + 1; i < second; i += 2) {
    unsigned byte = 0;
    auto [hex_end, hex_ec] = std::from_chars(token.data() + i, token.data() + i + 2, byte, 16);
    if (hex_ec != std::errc() || hex_end != token.data() + i + 2) return malformed;
    dimensions_key->push_back(static_cast<char>(byte));
  }
  *measure = token.substr(second + 1);
  return Status::Ok();
}

bool MeasureMatches(const std::string& measure, const std::string& exact, const std::string& prefix) {
  if (!exact.empty()) return measure == exact;
  if (!prefix.empty()) return measure.compare(0, prefix.size(), prefix) == 0;
  return true;
}

// RangeQuery::tags: each named tag is one of the series' dimensions or
// attributes, with that value.
bool TagsMatch(const Series& series, const TagMap& filter) {
  for (const auto& [name, value] : filter) {
    auto d = series.dimensions.find(name);
    if (d != series.dimensions.end()) {
      if (d->second != value) return false;
      continue;
    }
    auto a = series.attributes.find(name);
    if (a == series.attributes.end() || a->second != value) return false;
  }
  return true;
}

}  // namespace

struct EngineImpl::SeriesSnapshot {
  const Series* series = nullptr;  // identity only; never dereferenced without the state lock
  int64_t id = 0;
  std::string device_id, measure_name;
  TagMap dimensions, attributes;
  std::string dimensions_key;
  int shard = 0;
  std::vector<ChunkField> fields;
  std::vector<size_t> fields_by_name;  // indexes into fields, sorted by field name
  Period period = Period::kDay;
  std::set<int64_t> period_starts;
  std::vector<ChunkRecord> head;  // head records inside the query range
  uint64_t generation = 0;
};

namespace {

// Copies what a query needs of a series while the state lock is held.
template <typename Snapshot>
Snapshot TakeSnapshot(const TableState& table, const Series& s, int64_t from, int64_t to) {
  Snapshot snap;
  snap.series = &s;
  snap.id = s.id;
  snap.device_id = s.device_id;
  snap.measure_name = s.measure_name;
  snap.shard = s.shard;
  snap.fields = s.fields;
  snap.dimensions = s.dimensions;
  snap.attributes = s.attributes;
  snap.dimensions_key = s.dimensions_key;
  snap.fields_by_name.resize(s.fields.size());
  for (size_t i = 0; i < s.fields.size(); ++i) snap.fields_by_name[i] = i;
  std::sort(snap.fields_by_name.begin(), snap.fields_by_name.end(),
            [&](size_t a, size_t b) { return s.fields[a].name < s.fields[b].name; });
  snap.period = table.info.options.period;
  snap.period_starts = table.period_starts;
  snap.generation = s.generation;
  auto lo = std::lower_bound(s.head.begin(), s.head.end(), from,
                             [](const HeadEntry& e, int64_t ts) { return e.record.timestamp < ts; });
  for (auto it = lo; it != s.head.end() && it->record.timestamp < to; ++it) {
    snap.head.push_back(it->record);
    snap.head.back().values.resize(s.fields.size());
    snap.head.back().lsn = it->lsn;
  }
  return snap;
}

}  // namespace

Result<std::vector<ChunkRecord>> EngineImpl::CollectSeries(const std::string& table,
                                                           const SeriesSnapshot& series, int64_t from,
                                                           int64_t to, Order order, size_t limit,
                                                           int64_t now_ns, std::vector<SkippedDamage>* skipped) {
  std::vector<ChunkRecord> records = series.head;
  std::vector<int64_t> periods;
  for (int64_t start : series.period_starts) {
    if (start < to && NextPeriodStart(series.period, start) > from) periods.push_back(start);
  }
  if (order == Order::kDescending) std::reverse(periods.begin(), periods.end());
  const bool ascending = order == Order::kAscending;
  // Visible records in what has been read completely: everything before
  // `frontier` (ascending) or from it on (descending).
  const auto settled = [&](int64_t frontier) {
    MergeVersions(&records);
    size_t n = 0;
    for (const ChunkRecord& r : records) {
      const bool read_through = ascending ? r.timestamp < frontier : r.timestamp >= frontier;
      if (read_through && !Expired(r, now_ns)) ++n;
    }
    return n;
  };
  const auto read = [&](int64_t start, int64_t lo, int64_t hi) -> Status {
    CAIRN_ASSIGN_OR_RETURN(std::vector<ChunkRecord> sealed,
                           ReadSealed(table, series.period, start, series.id, series.fields, lo, hi, skipped));
    std::move(sealed.begin(), sealed.end(), std::back_inserter(records));
    return Status::Ok();
  };
  for (int64_t start : periods) {
    const int64_t lo = std::max(from, start);
    const int64_t hi = std::min(to, NextPeriodStart(series.period, start));
    if (limit == 0) {
      CAIRN_RETURN_IF_ERROR(read(start, lo, hi));
      continue;
    }
    // A limited query reads the period in windows growing from the end it
    // starts at, and stops once enough visible records lie in what it has
    // read: `latest` of a device writing 100 readings/s reads the last
    // minutes of its day, not the 8.6 M readings before them. Each window
    // is read completely (every chunk overlapping it), so what lies in it is
    // final. Widths are unsigned: a period may reach INT64_MAX.
    const auto span = [](int64_t a, int64_t b) { return static_cast<uint64_t>(b) - static_cast<uint64_t>(a); };
    // The windows start where the series' sealed data does, not at the
    // period's edge (a day read backwards from its end at 16:00 would
    // otherwise cross eight empty hours first), one average chunk wide. The
    // head may hold records past that point; they are in `records` already.
    const std::optional<SealedExtentInfo> extent = SealedExtent(table, series.period, start, series.id, lo, hi);
    if (!extent) {
      if (settled(ascending ? hi : lo) >= limit) break;
      continue;
    }
    int64_t frontier = ascending ? std::max(lo, extent->first) : std::min(hi, extent->last + 1);
    uint64_t width = std::max<uint64_t>(span(extent->first, extent->last) / extent->chunks, 1);
    if (settled(frontier) >= limit) break;
    while (ascending ? frontier < hi : frontier > lo) {
      const uint64_t step = std::min(width, ascending ? span(frontier, hi) : span(lo, frontier));
      const int64_t next = static_cast<int64_t>(ascending ? static_cast<uint64_t>(frontier) + step
                                                          : static_cast<uint64_t>(frontier) - step);
      CAIRN_RETURN_IF_ERROR(ascending ? read(start, frontier, next) : read(start, next, frontier));
      frontier = next;
      if (settled(frontier) >= limit) break;
      width = width > UINT64_MAX / 4 ? UINT64_MAX : width * 4;
    }
    // Periods not read yet lie entirely after (before, descending) this one.
    if (settled(frontier) >= limit) break;
  }
  MergeVisible(&records, now_ns);
  if (order == Order::kDescending) std::reverse(records.begin(), records.end());
  return records;
}

std::optional<EngineImpl::SealedExtentInfo> EngineImpl::SealedExtent(const std::string& table, Period period,
                                                                     int64_t period_start, int64_t series_id,
                                                                     int64_t from, int64_t to) {
  const SealedExtentInfo whole{from, to - 1, 1};  // ReadSealed reports why the file cannot tell
  auto handle = GetPeriodFile(table, period, period_start, PeriodAccess::kRead);
  if (!handle.ok()) return whole;
  Result<std::vector<ChunkRow>> rows = [&] {
    std::lock_guard file_lock((*handle)->mutex);
    return (*handle)->file->ReadChunks(series_id, from, to, /*with_data=*/false);
  }();
  if (!rows.ok()) return whole;
  if (rows->empty()) return std::nullopt;
  SealedExtentInfo extent{INT64_MAX, INT64_MIN, rows->size()};
  for (const ChunkRow& row : *rows) {
    extent.first = std::min(extent.first, row.start_ns);
    extent.last = std::max(extent.last, row.end_ns);
  }
  return extent;
}

RecordRow EngineImpl::MakeRow(const SeriesSnapshot& series, const ChunkRecord& record) const {
  RecordRow row;
  row.device_id = series.device_id;
  row.measure_name = series.measure_name;
  row.dimensions = series.dimensions;
  row.attributes = series.attributes;
  row.shard = series.shard;
  row.timestamp = record.timestamp;
  row.version = record.version;
  row.ttl = record.ttl;
  row.fields.reserve(series.fields.size());
  for (size_t i : series.fields_by_name) {
    if (i < record.values.size() && !std::holds_alternative<std::monostate>(record.values[i])) {
      row.fields.push_back(Field{series.fields[i].name, record.values[i]});
    }
  }
  return row;
}

Result<RangeResult> EngineImpl::Range(const RangeQuery& query) {
  if (!query.measure_name.empty() && !query.measure_prefix.empty()) {
    return Status::InvalidArgument("give a measure name or a measure prefix, not both");
  }
  CAIRN_RETURN_IF_ERROR(ValidateIdentifier("device_id", query.device_id, kMaxDeviceIdBytes));
  int64_t from = query.from, to = query.to;
  int64_t token_timestamp = 0;
  std::string token_measure, token_dimensions;
  const bool paged = !query.page_token.empty();
  if (paged) {
    CAIRN_RETURN_IF_ERROR(ParsePageToken(query.page_token, &token_timestamp, &token_dimensions, &token_measure));
    if (query.order == Order::kAscending) {
      from = std::max(from, token_timestamp);
    } else if (token_timestamp < INT64_MAX) {
      to = std::min(to, token_timestamp + 1);
    }
  }
  RangeResult result;
  if (from >= to) return result;

  std::vector<SeriesSnapshot> snapshots;
  {
    std::shared_lock state(state_mutex_);
    auto table = tables_.find(query.table);
    if (table == tables_.end()) return Status::NotFound("table '" + query.table + "' does not exist");
    const auto& all = table->second->series;
    for (auto it = all.lower_bound(SeriesKey{query.device_id, "", ""});
         it != all.end() && it->first.device_id == query.device_id; ++it) {
      if (MeasureMatches(it->first.measure_name, query.measure_name, query.measure_prefix) &&
          TagsMatch(*it->second, query.tags)) {
        snapshots.push_back(TakeSnapshot<SeriesSnapshot>(*table->second, *it->second, from, to));
      }
    }
  }
  const int64_t now = clock_->ExpiryNow();  // ttl by the deletion clock (clock_trust.h)
  // One more than the limit per series, plus the row the token names.
  const size_t per_series_limit = query.limit == 0 ? 0 : query.limit + 2;
  struct Candidate {
    size_t series;
    ChunkRecord record;
  };
  std::vector<Candidate> candidates;
  for (size_t s = 0; s < snapshots.size(); ++s) {
    CAIRN_ASSIGN_OR_RETURN(
        std::vector<ChunkRecord> records,
        CollectSeries(query.table, snapshots[s], from, to, query.order, per_series_limit, now, &result.skipped));
    for (ChunkRecord& r : records) candidates.push_back(Candidate{s, std::move(r)});
  }
  const bool ascending = query.order == Order::kAscending;
  // Rows are ordered by (timestamp, measure, dimensions), the dimensions
  // as their sorted (name, value) lists.
  struct RowKey {
    int64_t timestamp;
    const std::string* measure;
    const TagMap* dimensions;
    bool operator<(const RowKey& o) const {
      if (timestamp != o.timestamp) return timestamp < o.timestamp;
      if (int c = measure->compare(*o.measure); c != 0) return c < 0;
      return *dimensions < *o.dimensions;
    }
  };
  const auto key_of = [&](const Candidate& c) {
    const SeriesSnapshot& s = snapshots[c.series];
    return RowKey{c.record.timestamp, &s.measure_name, &s.dimensions};
  };
  // One series comes out of CollectSeries in order already.
  if (snapshots.size() > 1) {
    std::sort(candidates.begin(), candidates.end(), [&](const Candidate& a, const Candidate& b) {
      return ascending ? key_of(a) < key_of(b) : key_of(b) < key_of(a);
    });
  }
  TagMap token_tags;
  if (paged) {
    Result<TagMap> decoded = DecodeTagMap(token_dimensions);
    if (!decoded.ok()) return Status::InvalidArgument("malformed page token");
    token_tags = std::move(decoded).value();
  }
  const RowKey token_key{token_timestamp, &token_measure, &token_tags};
  result.rows.reserve(query.limit == 0 ? candidates.size() : std::min(candidates.size(), query.limit));
  const Candidate* last = nullptr;
  for (const Candidate& c : candidates) {
    if (paged && !(ascending ? token_key < key_of(c) : key_of(c) < token_key)) continue;
    if (query.limit != 0 && result.rows.size() == query.limit) {
      const SeriesSnapshot& s = snapshots[last->series];
      result.next_page_token = MakePageToken(last->record.timestamp, s.dimensions_key, s.measure_name);
      break;
    }
    result.rows.push_back(MakeRow(snapshots[c.series], c.record));
    last = &c;
  }
  return result;
}

Result<std::optional<RecordRow>> EngineImpl::Get(const std::string& table, const std::string& device_id,
                                                 const std::string& measure_name, int64_t timestamp,
                                                 const TagMap& dimensions) {
  CAIRN_RETURN_IF_ERROR(ValidateIdentifier("measure_name", measure_name, kMaxMeasureNameBytes));
  RangeQuery q;
  q.table = table;
  q.device_id = device_id;
  q.measure_name = measure_name;
  q.tags = dimensions;
  q.from = timestamp;
  q.to = timestamp == INT64_MAX ? INT64_MAX : timestamp + 1;
  q.limit = 0;
  CAIRN_ASSIGN_OR_RETURN(RangeResult range, Range(q));
  // The filter matched every series holding these dimensions; the identity
  // is the one holding exactly these.
  std::optional<RecordRow> row;
  for (RecordRow& candidate : range.rows) {
    if (candidate.timestamp == timestamp && candidate.dimensions == dimensions) row = std::move(candidate);
  }
  return row;
}

Result<std::vector<RecordRow>> EngineImpl::Latest(const std::string& table, const std::string& device_id,
                                                  const std::string& measure_name, const TagMap& tags) {
  return LatestLocked(table, {device_id}, measure_name, tags);
}

Result<std::vector<RecordRow>> EngineImpl::LatestBatch(const std::string& table,
                                                       const std::vector<std::string>& device_ids,
                                                       const std::string& measure_name, const TagMap& tags) {
  return LatestLocked(table, device_ids, measure_name, tags);
}

Result<std::vector<RecordRow>> EngineImpl::LatestLocked(const std::string& table,
                                                        const std::vector<std::string>& devices,
                                                        const std::string& measure_name, const TagMap& tags) {
  for (const std::string& d : devices)
    CAIRN_RETURN_IF_ERROR(ValidateIdentifier("device_id", d, kMaxDeviceIdBytes));
  const int64_t now = clock_->ExpiryNow();  // ttl by the deletion clock (clock_trust.h)
  std::vector<RecordRow> rows;
  std::vector<SeriesSnapshot> to_compute;
  {
    std::shared_lock state(state_mutex_);
    auto t = tables_.find(table);
    if (t == tables_.end()) return Status::NotFound("table '" + table + "' does not exist");
    const auto& all = t->second->series;
    for (const std::string& device : devices) {
      for (auto it = all.lower_bound(SeriesKey{device, "", ""}); it != all.end() && it->first.device_id == device;
           ++it) {
        if (!measure_name.empty() && it->first.measure_name != measure_name) continue;
        const Series& s = *it->second;
        if (!TagsMatch(s, tags)) continue;
        if (s.latest_known && (!s.latest || !Expired(*s.latest, now))) {
          if (s.latest) {
            // The fast path: the index holds it and it is still visible.
            RecordRow row;
            row.device_id = s.device_id;
            row.measure_name = s.measure_name;
            row.dimensions = s.dimensions;
            row.attributes = s.attributes;
            row.shard = s.shard;
            row.timestamp = s.latest->timestamp;
            row.version = s.latest->version;
            row.ttl = s.latest->ttl;
            for (size_t i = 0; i < s.latest->values.size() && i < s.fields.size(); ++i) {
              if (!std::holds_alternative<std::monostate>(s.latest->values[i])) {
                row.fields.push_back(Field{s.fields[i].name, s.latest->values[i]});
              }
            }
            std::sort(row.fields.begin(), row.fields.end(),
                      [](const Field& a, const Field& b) { return a.name < b.name; });
            rows.push_back(std::move(row));
          }
          continue;
        }
        to_compute.push_back(TakeSnapshot<SeriesSnapshot>(*t->second, s, INT64_MIN, INT64_MAX));
      }
    }
  }
  for (const SeriesSnapshot& snap : to_compute) {
    CAIRN_ASSIGN_OR_RETURN(std::vector<ChunkRecord> newest,
                           CollectSeries(table, snap, INT64_MIN, INT64_MAX, Order::kDescending, 1, now,
                                         /*skipped=*/nullptr));
    {
      std::unique_lock state(state_mutex_);
      auto t = tables_.find(table);
      if (t != tables_.end()) {
        auto it = t->second->series.find(SeriesKey{snap.device_id, snap.measure_name, snap.dimensions_key});
        if (it != t->second->series.end() && it->second.get() == snap.series &&
            it->second->generation == snap.generation) {
          it->second->latest_known = true;
          it->second->latest.reset();
          if (!newest.empty()) it->second->latest = newest.front();
        }
      }
    }
    if (!newest.empty()) rows.push_back(MakeRow(snap, newest.front()));
  }
  std::sort(rows.begin(), rows.end(), [](const RecordRow& a, const RecordRow& b) {
    return std::tie(a.device_id, a.measure_name, a.dimensions) < std::tie(b.device_id, b.measure_name, b.dimensions);
  });
  return rows;
}

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
      std::lock_guard file_lock((*handle)->mutex);
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
                      (c.min_ttl == 0 || c.min_ttl > now / kNanosPerSecond);
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
    std::shared_lock state(state_mutex_);
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

Result<std::vector<DeviceInfo>> EngineImpl::ListDevices(const std::string& table) {
  std::shared_lock state(state_mutex_);
  auto t = tables_.find(table);
  if (t == tables_.end()) return Status::NotFound("table '" + table + "' does not exist");
  std::vector<DeviceInfo> devices;
  for (const auto& [key, series] : t->second->series) {
    if (devices.empty() || devices.back().device_id != key.device_id)
      devices.push_back(DeviceInfo{key.device_id, {}});
    // A measure's dimension sets are adjacent: it is listed once.
    std::vector<std::string>& measures = devices.back().measures;
    if (measures.empty() || measures.back() != key.measure_name) measures.push_back(key.measure_name);
  }
  return devices;
}

Result<std::vector<MeasureInfo>> EngineImpl::ListMeasures(const std::string& table) {
  std::shared_lock state(state_mutex_);
  auto t = tables_.find(table);
  if (t == tables_.end()) return Status::NotFound("table '" + table + "' does not exist");
  std::map<std::string, MeasureInfo> measures;
  std::map<std::string, std::string> last_device;  // measure -> the device counted last
  for (const auto& [key, series] : t->second->series) {
    MeasureInfo& m = measures[key.measure_name];
    m.measure_name = key.measure_name;
    ++m.series;
    // Series are ordered by device, then measure: a device's series of one
    // measure are adjacent.
    auto [device, first] = last_device.try_emplace(key.measure_name, key.device_id);
    if (first || device->second != key.device_id) {
      ++m.devices;
      device->second = key.device_id;
    }
    for (const ChunkField& f : series->fields) m.fields.emplace(f.name, f.type);
    for (const auto& [name, value] : series->dimensions) m.dimensions.insert(name);
    for (const auto& [name, value] : series->attributes) m.attributes.insert(name);
  }
  std::vector<MeasureInfo> out;
  for (auto& [name, m] : measures) out.push_back(std::move(m));
  return out;
}

}  // namespace cairn
