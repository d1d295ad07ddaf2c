// What the reads (engine_query.cc, engine_aggregate.cc) share: a series'
// snapshot taken under the state lock, and the version and expiry rules
// every read applies to what it collects.
//
// Thread-safety: a snapshot is a copy, read without the state lock; the
// functions are pure.
#pragma once

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "engine/engine_impl.h"
#include "engine/reclaim/retention.h"

namespace cairn {

inline constexpr int64_t kReadNanosPerSecond = 1'000'000'000;

// Whether a record's ttl has passed at `now_ns`.
inline bool Expired(const ChunkRecord& r, int64_t now_ns) { return TtlExpired(r.ttl, now_ns); }

// Sorts by timestamp and keeps the highest version of each, of equal
// versions the later arrival (higher LSN: on_conflict overwrite). Expired
// records stay: an expired newest version must still hide the older ones.
inline void MergeVersions(std::vector<ChunkRecord>* records) {
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
inline void MergeVisible(std::vector<ChunkRecord>* records, int64_t now_ns) {
  MergeVersions(records);
  std::erase_if(*records, [&](const ChunkRecord& r) { return Expired(r, now_ns); });
}

// RangeQuery::tags: each named tag is one of the series' dimensions or
// attributes, with that value.
inline bool TagsMatch(const Series& series, const TagMap& filter) {
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

// Copies what a query needs of a series while the state lock is held.
template <typename Snapshot>
Snapshot TakeSnapshot(const TableState& table, const Series& s, int64_t from, int64_t to) {
  Snapshot snap;
  snap.series = &s;
  snap.id = s.id;
  snap.device_id = s.device_id;
  snap.measure_name = s.measure_name;
  snap.shard = s.shard;
  snap.fields = s.fields();
  snap.dimensions = s.dimensions;
  snap.attributes = s.attributes;
  snap.dimensions_key = s.dimensions_key;
  snap.fields_by_name.resize(s.fields().size());
  for (size_t i = 0; i < s.fields().size(); ++i) snap.fields_by_name[i] = i;
  std::sort(snap.fields_by_name.begin(), snap.fields_by_name.end(),
            [&](size_t a, size_t b) { return s.fields()[a].name < s.fields()[b].name; });
  snap.period = table.info.options.period;
  snap.period_starts = table.period_starts;
  snap.generation = s.generation;
  for (size_t i = s.head.LowerBound(from); i < s.head.size() && s.head.timestamp(i) < to; ++i) {
    snap.head.push_back(s.head.Record(i, s.fields()));
  }
  return snap;
}

}  // namespace cairn
