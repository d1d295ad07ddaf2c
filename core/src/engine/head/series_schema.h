// SeriesSchema: a series' fields in the order they were first written, and
// SchemaPool, which holds one copy of each distinct schema of a table.
//
// A gateway's sensors of one kind write the same fields, so ten thousand
// series share a handful of schemas. Held per series, the field names, the
// vector and a name index cost every series about 250 bytes; interned, a
// series holds a pointer. A schema never changes once made: a series that
// gains a field moves to the schema that has it (SchemaPool::Extend), and
// readers that copied the pointer keep the schema they read.
//
// Thread-safety: a SeriesSchema is immutable and may be read from any
// thread. SchemaPool is not thread-safe: the engine calls it under its state
// lock held exclusively.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "chunk/chunk_codec.h"

namespace cairn {

class SeriesSchema {
 public:
  // The schema of no fields, shared by every series until its first field.
  static const std::shared_ptr<const SeriesSchema>& Empty();

  SeriesSchema(std::vector<ChunkField> fields, std::string key);

  const std::vector<ChunkField>& fields() const { return fields_; }
  size_t size() const { return fields_.size(); }
  // The index of the field named `name`, or nullopt.
  std::optional<size_t> Find(std::string_view name) const;
  // The schema's identity in its pool: names and types in order.
  const std::string& key() const { return key_; }

 private:
  // Past this many fields a name is looked up by hash; below it a scan of
  // a few short names beats hashing one.
  static constexpr size_t kScanFields = 8;

  std::vector<ChunkField> fields_;
  std::string key_;
  std::unordered_map<std::string_view, size_t> by_name_;  // only past kScanFields; views into fields_
};

class SchemaPool {
 public:
  // The schema of `base`'s fields followed by `field`, made once and shared
  // by every series that asks for it while any holds it. Precondition:
  // `base` has no field of that name.
  std::shared_ptr<const SeriesSchema> Extend(const SeriesSchema& base, const ChunkField& field);

  // Distinct schemas held by some series (for tests and stats).
  size_t size() const;

 private:
  // Drops the entries of schemas no series holds any more, once the map
  // has doubled since the last sweep: a client that writes a new field name
  // per record leaves dead entries behind, and a sweep keeps their number
  // proportional to the live ones.
  void SweepIfGrown();

  std::unordered_map<std::string, std::weak_ptr<const SeriesSchema>> schemas_;
  size_t sweep_at_ = 64;
};

}  // namespace cairn
