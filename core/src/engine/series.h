// In-memory state of tables and series: the head (recent records not yet
// sealed, sorted by timestamp) and the latest-reading index.
//
// Thread-safety: none here; EngineImpl guards every object with its state
// lock (shared for reads, exclusive for changes).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "cairn/core/table.h"

#include "chunk/chunk_codec.h"

namespace cairn {

// One record in a head: its values follow the series schema as it was when
// the record arrived (a prefix of the current schema, which only grows).
struct HeadEntry {
  ChunkRecord record;
  uint64_t lsn = 0;
};

// A series' identity within its table (DESIGN §3): the device, the measure
// and the dimensions (every tag but the device and the table's declared
// attributes), the latter in their canonical encoding (EncodeTagMap) so that
// equal tag sets compare equal byte for byte. Ordered by device first: one
// device's series are adjacent, then one measure's.
struct SeriesKey {
  std::string device_id;
  std::string measure_name;
  std::string dimensions_key;
  friend auto operator<=>(const SeriesKey&, const SeriesKey&) = default;
};

// The canonical encoding of a tag set: varint count, then (varint length,
// bytes) of each name and value in name order. The catalog and the period
// files store dimensions and attributes in it (period_format.md).
std::string EncodeTagMap(const TagMap& tags);
Result<TagMap> DecodeTagMap(std::string_view bytes);

// Splits a record's tags (all but the device) into the series' dimensions
// and its attributes, by the table's declared attribute names.
void SplitTags(const TableOptions& options, const TagMap& tags, TagMap* dimensions, TagMap* attributes);

struct Series {
  int64_t id = 0;
  std::string device_id;
  std::string measure_name;
  int shard = 0;
  std::vector<ChunkField> fields;  // grows by appending; never reorders
  std::unordered_map<std::string, size_t> field_index;
  // Part of the identity: fixed when the series is created.
  TagMap dimensions;
  std::string dimensions_key;  // EncodeTagMap(dimensions)
  // Metadata only (the table's declared attribute tags): the latest write
  // that carried any replaces them.
  TagMap attributes;

  SeriesKey Key() const { return SeriesKey{device_id, measure_name, dimensions_key}; }

  std::vector<HeadEntry> head;  // ascending, unique timestamps
  size_t head_bytes = 0;
  int64_t head_since_monotonic_ns = 0;  // when the head last became non-empty

  // Largest timestamp ever sealed into a period file for this series;
  // INT64_MIN when none. A write at or below it must check sealed chunks
  // for an existing version.
  int64_t sealed_max_timestamp = INT64_MIN;

  // Latest-reading index: the newest record (any expiry) when known.
  // It may have expired since; readers check, and recompute when it has.
  bool latest_known = false;
  std::optional<ChunkRecord> latest;
  // Bumped by every head change, so a latest value computed without the
  // state lock is cached only if nothing was written meanwhile.
  uint64_t generation = 0;

  // Index of the head entry with this timestamp, or head.size().
  size_t FindInHead(int64_t timestamp) const {
    auto it = std::lower_bound(head.begin(), head.end(), timestamp,
                               [](const HeadEntry& e, int64_t ts) { return e.record.timestamp < ts; });
    return (it != head.end() && it->record.timestamp == timestamp) ? static_cast<size_t>(it - head.begin())
                                                                   : head.size();
  }

  void AddField(const std::string& name, FieldType type) {
    field_index.emplace(name, fields.size());
    fields.push_back(ChunkField{name, type});
  }
};

// Approximate heap footprint of a head entry, for the memory budget.
inline size_t HeadEntryBytes(const HeadEntry& entry) {
  size_t bytes = sizeof(HeadEntry) + entry.record.values.capacity() * sizeof(Value);
  for (const Value& v : entry.record.values) {
    if (const auto* s = std::get_if<std::string>(&v)) bytes += s->capacity();
  }
  return bytes;
}

// Approximate heap footprint of a series apart from its head: the series
// itself, its names (also held by the table's map key), schema, dimensions,
// latest reading and the map and hash nodes that hold them.
inline size_t SeriesBytes(const Series& series) {
  constexpr size_t kNodeBytes = 48;  // a std::map / unordered_map node's own overhead
  size_t bytes =
      sizeof(Series) + kNodeBytes + 2 * (series.device_id.capacity() + series.measure_name.capacity());
  bytes += series.field_index.bucket_count() * sizeof(void*);
  for (const ChunkField& field : series.fields)
    bytes += sizeof(ChunkField) + kNodeBytes + 2 * field.name.capacity();
  bytes += series.dimensions_key.capacity();
  for (const TagMap* tags : {&series.dimensions, &series.attributes}) {
    for (const auto& [name, value] : *tags) bytes += kNodeBytes + name.capacity() + value.capacity();
  }
  if (series.latest) {
    bytes += sizeof(ChunkRecord) + series.latest->values.capacity() * sizeof(Value);
    for (const Value& v : series.latest->values) {
      if (const auto* s = std::get_if<std::string>(&v)) bytes += s->capacity();
    }
  }
  return bytes;
}

struct TableState {
  TableInfo info;
  // Keyed by identity: one device's series are adjacent, then one
  // measure's (a read of one measure scans the dimension sets under it).
  std::map<SeriesKey, std::unique_ptr<Series>> series;
  // Period files on disk, by period start.
  std::set<int64_t> period_starts;
  std::set<int64_t> compacted_periods;
};

}  // namespace cairn
