// Reads: get, latest, listings, and the merging read of one series that
// ranges fall back on (ranges are engine_range.cc, aggregates
// engine_aggregate.cc).
// Every read merges the head with sealed chunks, keeps the highest version of
// each timestamp and hides records whose ttl has passed (series_snapshot.h).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <string_view>
#include <tuple>

#include "cairn/util/hex.h"

#include "engine/engine_impl.h"
#include "engine/query/series_snapshot.h"

namespace cairn {

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
    MutexLock file_lock(&(*handle)->mutex);
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
  return LatestRows(table, {device_id}, measure_name, tags);
}

Result<std::vector<RecordRow>> EngineImpl::LatestBatch(const std::string& table,
                                                       const std::vector<std::string>& device_ids,
                                                       const std::string& measure_name, const TagMap& tags) {
  return LatestRows(table, device_ids, measure_name, tags);
}

Result<std::vector<RecordRow>> EngineImpl::LatestRows(const std::string& table,
                                                        const std::vector<std::string>& devices,
                                                        const std::string& measure_name, const TagMap& tags) {
  for (const std::string& d : devices)
    CAIRN_RETURN_IF_ERROR(ValidateIdentifier("device_id", d, kMaxDeviceIdBytes));
  const int64_t now = clock_->ExpiryNow();  // ttl by the deletion clock (clock_trust.h)
  std::vector<RecordRow> rows;
  std::vector<SeriesSnapshot> to_compute;
  {
    ReaderLock state(&state_mutex_);
    auto t = tables_.find(table);
    if (t == tables_.end()) return Status::NotFound("table '" + table + "' does not exist");
    const auto& all = t->second->series;
    for (const std::string& device : devices) {
      for (auto it = all.lower_bound(SeriesKey{device, "", ""}); it != all.end() && it->first.device_id == device;
           ++it) {
        if (!measure_name.empty() && it->first.measure_name != measure_name) continue;
        const Series& s = *it->second;
        if (!TagsMatch(s, tags)) continue;
        if (Head::LatestAnswers(s, now)) {
          if (std::optional<ChunkRecord> latest = Head::Latest(s)) {
            // The fast path: the index holds it and it is still visible.
            RecordRow row;
            row.device_id = s.device_id;
            row.measure_name = s.measure_name;
            row.dimensions = s.dimensions;
            row.attributes = s.attributes;
            row.shard = s.shard;
            row.timestamp = latest->timestamp;
            row.version = latest->version;
            row.ttl = latest->ttl;
            for (size_t i = 0; i < latest->values.size() && i < s.fields().size(); ++i) {
              if (!std::holds_alternative<std::monostate>(latest->values[i])) {
                row.fields.push_back(Field{s.fields()[i].name, latest->values[i]});
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
      WriterLock state(&state_mutex_);
      auto t = tables_.find(table);
      if (t != tables_.end()) {
        auto it = t->second->series.find(SeriesKey{snap.device_id, snap.measure_name, snap.dimensions_key});
        if (it != t->second->series.end() && it->second.get() == snap.series) {
          Head::CacheLatest(*it->second, snap.generation,
                            newest.empty() ? std::nullopt : std::optional<ChunkRecord>(newest.front()));
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

Result<std::vector<DeviceInfo>> EngineImpl::ListDevices(const std::string& table) {
  ReaderLock state(&state_mutex_);
  auto t = tables_.find(table);
  if (t == tables_.end()) return Status::NotFound("table '" + table + "' does not exist");
  std::vector<DeviceInfo> devices;
  for (const auto& [key, series] : t->second->series) {
    if (devices.empty() || devices.back().device_id != series->device_id)
      devices.push_back(DeviceInfo{series->device_id, {}});
    // A measure's dimension sets are adjacent: it is listed once.
    std::vector<std::string>& measures = devices.back().measures;
    if (measures.empty() || measures.back() != series->measure_name) measures.push_back(series->measure_name);
  }
  return devices;
}

Result<std::vector<MeasureInfo>> EngineImpl::ListMeasures(const std::string& table) {
  ReaderLock state(&state_mutex_);
  auto t = tables_.find(table);
  if (t == tables_.end()) return Status::NotFound("table '" + table + "' does not exist");
  std::map<std::string, MeasureInfo> measures;
  std::map<std::string, std::string> last_device;  // measure -> the device counted last
  for (const auto& [key, series] : t->second->series) {
    MeasureInfo& m = measures[series->measure_name];
    m.measure_name = series->measure_name;
    ++m.series;
    // Series are ordered by device, then measure: a device's series of one
    // measure are adjacent.
    auto [device, first] = last_device.try_emplace(series->measure_name, series->device_id);
    if (first || device->second != series->device_id) {
      ++m.devices;
      device->second = series->device_id;
    }
    for (const ChunkField& f : series->fields()) m.fields.emplace(f.name, f.type);
    for (const auto& [name, value] : series->dimensions) m.dimensions.insert(name);
    for (const auto& [name, value] : series->attributes) m.attributes.insert(name);
  }
  std::vector<MeasureInfo> out;
  for (auto& [name, m] : measures) out.push_back(std::move(m));
  return out;
}

}  // namespace cairn
