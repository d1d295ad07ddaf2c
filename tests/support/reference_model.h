// An in-memory reference model of one cairn table, for crash-safety tests.
//
// It keeps what the engine acknowledged, identity (device, measure,
// timestamp) -> (version, ttl, fields), and answers the engine's queries the
// slow, obvious way so that a test can compare the two. It knows the data
// model's rules (DESIGN §3): a higher version replaces; an equal version with
// the same fields and values is a duplicate and is dropped, with other values
// a conflict, refused (on_conflict reject) or merged into the stored record
// (overwrite: the union of the fields, new values winning); a lower one is
// rejected; a record whose ttl has passed (ttl * 1e9 <= now) is invisible to
// every query.
//
// Header-only because it depends on the engine's public types and the test
// support library links the platform only.
//
// Thread-safety: none; one test thread owns a model.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "cairn/core/engine.h"
#include "cairn/core/record.h"
#include "cairn/core/table.h"

namespace cairn::crash {

// The tag the workload's table declares an attribute (metadata, not
// identity); every other tag of a record is one of its dimensions.
inline constexpr const char* kAttributeTag = "fw";

// A record's identity within one table.
struct Identity {
  std::string device_id;
  std::string measure_name;
  int64_t timestamp = 0;
  TagMap dimensions;
  friend auto operator<=>(const Identity&, const Identity&) = default;
  friend bool operator==(const Identity&, const Identity&) = default;
};

inline Identity IdentityOf(const Record& record) {
  Identity identity{record.device_id, record.measure_name, record.timestamp, record.dimensions};
  identity.dimensions.erase(kAttributeTag);
  return identity;
}

inline Identity IdentityOf(const RecordRow& row) {
  return Identity{row.device_id, row.measure_name, row.timestamp, row.dimensions};
}

// A series as the model names it: (device, measure, dimensions).
using SeriesName = std::tuple<std::string, std::string, TagMap>;
inline SeriesName SeriesOf(const Identity& identity) {
  return {identity.device_id, identity.measure_name, identity.dimensions};
}

// What the model keeps per identity: the version that won, its ttl and its
// fields sorted by name (the order in which queries return them).
struct StoredRecord {
  uint64_t version = 0;
  int64_t ttl = 0;
  std::vector<Field> fields;
};

inline std::vector<Field> SortedFields(std::vector<Field> fields) {
  std::sort(fields.begin(), fields.end(), [](const Field& a, const Field& b) { return a.name < b.name; });
  return fields;
}

inline StoredRecord StoredRecordOf(const Record& record) {
  return StoredRecord{record.version, record.ttl, SortedFields(record.fields)};
}

// A record is visible while it has no ttl or its ttl, in nanoseconds, is
// still after `now_unix_nanos`. ttl * 1e9 > now is computed as
// ttl > floor(now / 1e9), which cannot overflow (ttl * 1e9 does for ttls
// past the year 2262, and 32-bit targets have no 128-bit integers).
inline bool IsVisible(int64_t ttl, int64_t now_unix_nanos) {
  if (ttl == 0) return true;
  constexpr int64_t kNanos = 1'000'000'000;
  const int64_t now_seconds = now_unix_nanos / kNanos - (now_unix_nanos % kNanos < 0 ? 1 : 0);
  return ttl > now_seconds;
}

// Values compare exactly; doubles by bit pattern so that -0.0 and 0.0 differ
// (a store that turns one into the other is not lossless).
inline bool SameValue(const Value& a, const Value& b) {
  if (a.index() != b.index()) return false;
  if (const double* x = std::get_if<double>(&a)) {
    const double y = std::get<double>(b);
    uint64_t bits_x, bits_y;
    std::memcpy(&bits_x, x, sizeof bits_x);
    std::memcpy(&bits_y, &y, sizeof bits_y);
    return bits_x == bits_y;
  }
  return a == b;
}

inline bool SameFields(const std::vector<Field>& a, const std::vector<Field>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || !SameValue(a[i].value, b[i].value)) return false;
  }
  return true;
}

inline bool SameStoredRecord(const StoredRecord& a, const StoredRecord& b) {
  return a.version == b.version && a.ttl == b.ttl && SameFields(a.fields, b.fields);
}

inline RecordRow MakeRow(const Identity& identity, const StoredRecord& record) {
  RecordRow row;
  row.device_id = identity.device_id;
  row.measure_name = identity.measure_name;
  row.dimensions = identity.dimensions;
  row.shard = 0;
  row.timestamp = identity.timestamp;
  row.version = record.version;
  row.ttl = record.ttl;
  row.fields = record.fields;
  return row;
}

inline bool SameRow(const RecordRow& a, const RecordRow& b) {
  return a.device_id == b.device_id && a.measure_name == b.measure_name && a.dimensions == b.dimensions &&
         a.shard == b.shard &&
         a.timestamp == b.timestamp && a.version == b.version && a.ttl == b.ttl &&
         SameFields(a.fields, b.fields);
}

// What a valid write does to the record stored at its identity (`current`,
// nullptr when none), and what is stored afterwards when it stores.
struct Prediction {
  WriteOutcome outcome = WriteOutcome::kStored;
  StoredRecord stored;  // only for kStored
};

inline const Field* FindField(const std::vector<Field>& fields, const std::string& name) {
  for (const Field& f : fields) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

inline Prediction PredictWrite(const StoredRecord* current, const Record& record, ConflictPolicy on_conflict) {
  StoredRecord incoming = StoredRecordOf(record);
  if (current == nullptr || record.version > current->version) return {WriteOutcome::kStored, incoming};
  if (record.version < current->version) return {WriteOutcome::kRejectedVersion, {}};
  // Equal versions. The ttl is not compared: a retry resolves it the same way.
  if (SameFields(incoming.fields, current->fields)) return {WriteOutcome::kDuplicate, {}};
  if (on_conflict == ConflictPolicy::kReject) return {WriteOutcome::kConflict, {}};
  bool adds = false;  // a field absent from `current` or of another value
  for (const Field& f : incoming.fields) {
    const Field* old = FindField(current->fields, f.name);
    if (old == nullptr || !SameValue(old->value, f.value)) adds = true;
  }
  if (!adds) return {WriteOutcome::kDuplicate, {}};
  StoredRecord merged = incoming;  // version and ttl of the write
  for (const Field& f : current->fields) {
    if (FindField(incoming.fields, f.name) == nullptr) merged.fields.push_back(f);
  }
  if (merged.fields.size() > kMaxFieldsPerRecord) return {WriteOutcome::kConflict, {}};
  merged.fields = SortedFields(std::move(merged.fields));
  return {WriteOutcome::kStored, std::move(merged)};
}

// One aggregation bucket as the model computes it. Numeric values are kept
// both exactly (int64 fields) and as long double (for sums and averages).
struct ModelBucket {
  int64_t start = 0;
  uint64_t count = 0;
  Value min, max, first, last;
  long double sum = 0;
  int64_t int_sum = 0;  // exact sum when the field is int64
  bool is_int = false;
};

class ReferenceModel {
 public:
  // The table's on_conflict, which the model follows (default reject).
  void set_on_conflict(ConflictPolicy policy) { on_conflict_ = policy; }
  ConflictPolicy on_conflict() const { return on_conflict_; }

  // The outcome the engine must report for a valid record, given what the
  // model holds now. Validity is the generator's business.
  WriteOutcome Predict(const Record& record) const {
    return PredictWrite(Find(IdentityOf(record)), record, on_conflict_).outcome;
  }

  // Applies a valid record as an acknowledged write would and returns the
  // outcome it predicted.
  WriteOutcome Apply(const Record& record) {
    Prediction predicted = PredictWrite(Find(IdentityOf(record)), record, on_conflict_);
    if (predicted.outcome == WriteOutcome::kStored) records_[IdentityOf(record)] = std::move(predicted.stored);
    return predicted.outcome;
  }

  // Sets or erases what the model holds for `identity` (used when the state
  // of an uncertain write is learned from the engine after a crash).
  void Set(const Identity& identity, const std::optional<StoredRecord>& record) {
    if (record) {
      records_[identity] = *record;
    } else {
      records_.erase(identity);
    }
  }

  const StoredRecord* Find(const Identity& identity) const {
    auto it = records_.find(identity);
    return it == records_.end() ? nullptr : &it->second;
  }

  const std::map<Identity, StoredRecord>& records() const { return records_; }

  // Records that every series written with a valid record (acknowledged or
  // not) so that listings can be bounded from above.
  void NoteAttempted(const Record& record) {
    attempted_series_.insert({record.device_id, record.measure_name});
    TagMap& attributes = attempted_attributes_[SeriesOf(IdentityOf(record))];
    if (auto it = record.dimensions.find(kAttributeTag); it != record.dimensions.end()) {
      attributes.emplace(it->second, "");
    }
    for (const Field& field : record.fields) {
      attempted_fields_[record.measure_name].insert({field.name, TypeOf(field.value)});
    }
  }
  const std::set<std::pair<std::string, std::string>>& attempted_series() const { return attempted_series_; }
  const std::map<std::string, std::set<std::pair<std::string, FieldType>>>& attempted_fields() const {
    return attempted_fields_;
  }
  // Whether `attributes` can be what a row of `identity`'s series shows:
  // none, or the attribute tag with a value some write of that series
  // carried (acknowledged or not: a write the catalog recorded may have
  // crashed before its log write).
  bool PossibleAttributes(const Identity& identity, const TagMap& attributes) const {
    if (attributes.empty()) return true;
    if (attributes.size() != 1 || attributes.begin()->first != kAttributeTag) return false;
    auto it = attempted_attributes_.find(SeriesOf(identity));
    return it != attempted_attributes_.end() && it->second.count(attributes.begin()->second) != 0;
  }

  // ---- queries ---------------------------------------------------------------

  std::optional<RecordRow> Get(const Identity& identity, int64_t now) const {
    const StoredRecord* record = Find(identity);
    if (record == nullptr || !IsVisible(record->ttl, now)) return std::nullopt;
    return MakeRow(identity, *record);
  }

  // Every visible row matching the query, in the query's order, ignoring
  // limit and page token.
  std::vector<RecordRow> Range(const RangeQuery& query, int64_t now) const {
    std::vector<RecordRow> rows;
    for (const auto& [identity, record] : records_) {
      if (identity.device_id != query.device_id) continue;
      if (!query.measure_name.empty() && identity.measure_name != query.measure_name) continue;
      if (!query.measure_prefix.empty() && !identity.measure_name.starts_with(query.measure_prefix)) continue;
      if (identity.timestamp < query.from || identity.timestamp >= query.to) continue;
      if (!IsVisible(record.ttl, now)) continue;
      rows.push_back(MakeRow(identity, record));
    }
    std::sort(rows.begin(), rows.end(), [](const RecordRow& a, const RecordRow& b) {
      return std::tie(a.timestamp, a.measure_name, a.dimensions) <
             std::tie(b.timestamp, b.measure_name, b.dimensions);
    });
    if (query.order == Order::kDescending) std::reverse(rows.begin(), rows.end());
    return rows;
  }

  // The visible record with the highest timestamp per series of `device`
  // (or of `measure`'s alone), sorted by measure name, then dimensions.
  std::vector<RecordRow> Latest(const std::string& device, const std::string& measure, int64_t now) const {
    std::map<std::pair<std::string, TagMap>, RecordRow> latest;
    for (const auto& [identity, record] : records_) {
      if (identity.device_id != device) continue;
      if (!measure.empty() && identity.measure_name != measure) continue;
      if (!IsVisible(record.ttl, now)) continue;
      // Ascending map order: a later timestamp of the same measure overwrites.
      latest[{identity.measure_name, identity.dimensions}] = MakeRow(identity, record);
    }
    std::vector<RecordRow> rows;
    for (auto& [name, row] : latest) rows.push_back(std::move(row));
    return rows;
  }

  // Devices with at least one visible record, each with its measures that
  // have one, sorted.
  std::map<std::string, std::set<std::string>> VisibleSeries(int64_t now) const {
    std::map<std::string, std::set<std::string>> series;
    for (const auto& [identity, record] : records_) {
      if (IsVisible(record.ttl, now)) series[identity.device_id].insert(identity.measure_name);
    }
    return series;
  }

  // Non-empty buckets of [from, to) in steps of `step` over the visible
  // records of (device, measure) that carry `field`.
  std::vector<ModelBucket> Aggregate(const AggregateQuery& query, int64_t now) const {
    std::map<int64_t, ModelBucket> buckets;
    for (const auto& [identity, record] : records_) {
      if (identity.device_id != query.device_id || identity.measure_name != query.measure_name) continue;
      if (identity.timestamp < query.from || identity.timestamp >= query.to) continue;
      if (!IsVisible(record.ttl, now)) continue;
      const Field* field = nullptr;
      for (const Field& f : record.fields) {
        if (f.name == query.field) field = &f;
      }
      if (field == nullptr) continue;
      const int64_t start = query.from + (identity.timestamp - query.from) / query.step * query.step;
      ModelBucket& bucket = buckets[start];
      bucket.start = start;
      long double numeric;
      if (const int64_t* i = std::get_if<int64_t>(&field->value)) {
        bucket.is_int = true;
        numeric = static_cast<long double>(*i);
        bucket.int_sum += *i;
        if (bucket.count == 0 || *i < std::get<int64_t>(bucket.min)) bucket.min = *i;
        if (bucket.count == 0 || *i > std::get<int64_t>(bucket.max)) bucket.max = *i;
      } else {
        const double d = std::get<double>(field->value);
        numeric = static_cast<long double>(d);
        if (bucket.count == 0 || d < std::get<double>(bucket.min)) bucket.min = d;
        if (bucket.count == 0 || d > std::get<double>(bucket.max)) bucket.max = d;
      }
      // Records are visited in timestamp order within one series.
      if (bucket.count == 0) bucket.first = field->value;
      bucket.last = field->value;
      bucket.sum += numeric;
      ++bucket.count;
    }
    std::vector<ModelBucket> result;
    for (auto& [start, bucket] : buckets) result.push_back(std::move(bucket));
    return result;
  }

 private:
  ConflictPolicy on_conflict_ = ConflictPolicy::kReject;
  std::map<Identity, StoredRecord> records_;
  // Series -> the attribute values written with it (as TagMap keys).
  std::map<SeriesName, TagMap> attempted_attributes_;
  std::set<std::pair<std::string, std::string>> attempted_series_;
  std::map<std::string, std::set<std::pair<std::string, FieldType>>> attempted_fields_;
};

}  // namespace cairn::crash
