// Head: the records accepted and not yet sealed, held per series
// (Series::head, series.h, ascending and unique by timestamp), what they
// cost against the head's memory budget, and the latest-reading index
// (Series::latest).
//
// A record enters the head once its group commit is logged (Insert) and
// leaves it once a seal has committed it to its period file (RemoveSealed);
// a record overwritten meanwhile (same timestamp, another LSN) stays. The
// head is full for a series at seal_records entries, and over budget when
// all heads together take more than memory_budget_bytes; the maintenance
// round then seals the largest heads first (SealForBudget).
//
// Series and TableState hold a table's series and each series' head; the
// Head class keeps their totals and applies the rules above.
//
// Thread-safety: none. The engine guards every object here with its state
// lock, and calls every method under it: exclusive for the non-const ones
// (and CacheLatest), shared for the rest.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/core/table.h"
#include "cairn/platform/env.h"

#include "chunk/chunk_codec.h"
#include "engine/head/series.h"
#include "engine/head/series_head.h"
#include "engine/head/series_schema.h"

namespace cairn {

struct Series {
  int64_t id = 0;
  std::string device_id;
  std::string measure_name;
  int shard = 0;
  // The fields in the order first written (interned: SchemaPool); grows by
  // moving to an extended schema, never reorders. Never null.
  std::shared_ptr<const SeriesSchema> schema = SeriesSchema::Empty();
  // Part of the identity: fixed when the series is created.
  TagMap dimensions;
  std::string dimensions_key;  // EncodeTagMap(dimensions)
  // Metadata only (the table's declared attribute tags): the latest write
  // that carried any replaces them.
  TagMap attributes;

  SeriesKey Key() const { return SeriesKey{device_id, measure_name, dimensions_key}; }
  // The key of TableState::series, viewing this series' names.
  SeriesKeyRef KeyRef() const { return SeriesKeyRef(device_id, measure_name, dimensions_key); }

  SeriesHead head;        // ascending, unique timestamps
  size_t head_bytes = 0;  // head.bytes() as the Head last counted it
  int64_t head_since_monotonic_ns = 0;  // when the head last became non-empty

  // Largest timestamp ever sealed into a period file for this series;
  // INT64_MIN when none. A write at or below it must check sealed chunks
  // for an existing version.
  int64_t sealed_max_timestamp = INT64_MIN;

  // Latest-reading index: the newest record (any expiry) when known.
  // It may have expired since; readers check, and recompute when it has.
  // While that record is the head's last entry (latest_in_head), `latest`
  // holds no copy of it: most series' newest reading is in their head, and
  // a copy cost every series about 180 bytes. Head::Latest reads either.
  bool latest_known = false;
  bool latest_in_head = false;
  // Null while latest_in_head, and when the series holds none. Apart from
  // the series: a record's fields take room only in series that need them.
  std::unique_ptr<ChunkRecord> latest;
  // Bumped by every head change, so a latest value computed without the
  // state lock is cached only if nothing was written meanwhile.
  uint64_t generation = 0;

  // Index of the head entry with this timestamp, or head.size().
  size_t FindInHead(int64_t timestamp) const { return head.Find(timestamp); }

  const std::vector<ChunkField>& fields() const { return schema->fields(); }
  // The index of field `name` in fields(), or nullopt.
  std::optional<size_t> FieldIndex(std::string_view name) const { return schema->Find(name); }
  // Why a value of `type` cannot be stored as field `name` of this series
  // (the series holds it with another type), or "" when it can.
  std::string TypeConflict(std::string_view name, FieldType type) const {
    const std::optional<size_t> i = FieldIndex(name);
    if (!i || fields()[*i].type == type) return "";
    return "field '" + std::string(name) + "' is " + std::string(FieldTypeName(fields()[*i].type)) +
           " in this series, not " + std::string(FieldTypeName(type));
  }
  // Moves the series to its schema extended by the field (pool: the
  // table's, TableState::schemas).
  void AddField(SchemaPool& pool, const std::string& name, FieldType type) {
    schema = pool.Extend(*schema, ChunkField{name, type});
  }
};

// Approximate heap footprint of a series apart from its head: the series
// itself, its names (also held by the table's map key), dimensions, latest
// reading and the map node that holds it. Its schema is shared (SchemaPool)
// and counted nowhere: a table holds a handful.
inline size_t SeriesBytes(const Series& series) {
  constexpr size_t kNodeBytes = 48;  // a std::map / unordered_map node's own overhead
  size_t bytes =
      sizeof(Series) + kNodeBytes + 2 * (series.device_id.capacity() + series.measure_name.capacity());
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

// A head entry a seal committed: its timestamp and the LSN it had then.
struct SealedEntry {
  int64_t timestamp = 0;
  uint64_t lsn = 0;
};

struct TableState {
  TableInfo info;
  // Keyed by identity: one device's series are adjacent, then one
  // measure's (a read of one measure scans the dimension sets under it).
  // Keyed by views of each series' own names (SeriesKeyRef); searched with
  // a SeriesKey or a SeriesKeyRef.
  std::map<SeriesKeyRef, std::unique_ptr<Series>, SeriesKeyLess> series;
  // The distinct schemas of the table's series.
  SchemaPool schemas;
  // Period files on disk, by period start.
  std::set<int64_t> period_starts;
  std::set<int64_t> compacted_periods;
};

class Head {
 public:
  // `env` (its monotonic clock stamps when a head became non-empty) must
  // outlive the head.
  Head(Env* env, size_t memory_budget_bytes, size_t seal_records);

  Head(const Head&) = delete;
  Head& operator=(const Head&) = delete;

  // Inserts `record` (logged with `lsn`) into `series`' head, replacing the
  // entry of the same timestamp if any; keeps the latest index and bumps
  // the series' generation (a latest value computed meanwhile is not
  // cached, CacheLatest).
  void Insert(Series& series, ChunkRecord record, uint64_t lsn);

  // Removes from `series`' head the entries a seal committed (`sealed`:
  // taken from the head before the seal, any order); an entry whose LSN
  // changed since (a newer version) stays. Raises the series'
  // sealed_max_timestamp, and restarts its head's age when entries remain.
  void RemoveSealed(Series& series, std::vector<SealedEntry> sealed);
  // Brings `series`' share of the total up to date after its head changed.
  void Recount(Series& series);

  // Takes `series`' entries out of the totals (its table is dropped; the
  // series itself is destroyed by the caller).
  void Forget(const Series& series);

  // True when `series`' head holds seal_records entries or more.
  bool Full(const Series& series) const { return series.head.size() >= seal_records_; }
  // True when all heads, with the copies a running seal holds, exceed the
  // memory budget.
  bool OverBudget() const { return bytes() > memory_budget_bytes_; }
  // The series to seal for the budget, among `heads` (every series whose
  // head is not empty): the largest heads first, until what is left is at
  // most half the budget. Empty when within budget.
  std::set<const Series*> SealForBudget(std::vector<const Series*> heads) const;

  // A seal copies the heads it takes (SealJob) and holds the copies until
  // its chunks are committed: they count against the budget meanwhile, so
  // that heads and copies together keep to it. Safe under the shared state
  // lock (a seal collects its jobs under it).
  void AddSealing(size_t bytes) { sealing_bytes_.fetch_add(bytes, std::memory_order_relaxed); }
  void RemoveSealing(size_t bytes) { sealing_bytes_.fetch_sub(bytes, std::memory_order_relaxed); }

  // Every head's bytes and the copies of running seals.
  size_t bytes() const { return bytes_ + sealing_bytes_.load(std::memory_order_relaxed); }
  size_t records() const { return records_; }

  // True when `series`' latest index answers a reader at `now_ns` (the
  // deletion clock): known, and not expired since. Series::latest is then
  // the latest visible record (Latest), empty when the series holds none. False:
  // the reader computes it from the head and the period files.
  static bool LatestAnswers(const Series& series, int64_t now_ns);
  // `series`' latest record as the index holds it (see Series::latest);
  // empty when none. Meaningful when latest_known.
  static std::optional<ChunkRecord> Latest(const Series& series);
  // Stores `newest` (computed from a snapshot taken at `generation`) as
  // `series`' latest, unless the head changed since.
  static void CacheLatest(Series& series, uint64_t generation, const std::optional<ChunkRecord>& newest);

 private:
  Env* const env_;
  const size_t memory_budget_bytes_;
  const size_t seal_records_;
  size_t bytes_ = 0;    // SeriesHead::bytes over every head
  std::atomic<size_t> sealing_bytes_{0};  // SeriesHead::bytes of running seals' copies
  size_t records_ = 0;  // entries in every head
};

}  // namespace cairn
