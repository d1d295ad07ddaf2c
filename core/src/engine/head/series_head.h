// SeriesHead: one series' head records (head.h), held as columns rather
// than as a record object per reading.
//
// A head holds up to seal_records records of every series until they are
// sealed, so its layout is most of the engine's memory and a good part of
// its write cost. A record object costs a heap block for its values (40
// bytes per value, plus the allocator's header) and an allocation per
// write; here a record is a timestamp, an LSN and, per field, 8 bytes and a
// presence byte, appended to arrays that grow geometrically: about 25 bytes
// for a one-field reading instead of about 120, and no allocation per write
// but the arrays' amortised growth. Versions and ttls take no memory while
// every record's is 0 (most data is never rewritten and has no expiry).
//
// Entries are ascending and unique by timestamp. Column f holds the series'
// field f (Series::fields, which only grows); a record that arrived before
// a field existed, or without it, has it absent. Records read back carry
// one value per field of the schema the caller names (absent:
// std::monostate), as the head's readers used to pad them.
//
// Thread-safety: none (a plain value; the engine's state lock guards it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "chunk/chunk_codec.h"

namespace cairn {

// One record in a head, as a seal or a reader takes it out.
struct HeadEntry {
  ChunkRecord record;
  uint64_t lsn = 0;
};

class SeriesHead {
 public:
  size_t size() const { return timestamps_.size(); }
  bool empty() const { return timestamps_.empty(); }

  int64_t timestamp(size_t i) const { return timestamps_[i]; }
  uint64_t lsn(size_t i) const { return lsns_[i]; }
  uint64_t version(size_t i) const { return versions_.empty() ? 0 : versions_[i]; }
  int64_t ttl(size_t i) const { return ttls_.empty() ? 0 : ttls_[i]; }

  // The first entry at or after `timestamp` (size() when none).
  size_t LowerBound(int64_t timestamp) const;
  // The entry with exactly this timestamp, or size().
  size_t Find(int64_t timestamp) const;
  // The smallest LSN held; UINT64_MAX when empty.
  uint64_t MinLsn() const;

  // Entry i with one value per field of `schema` (absent: monostate); its
  // lsn is set in the record too. Precondition: schema extends the one the
  // head was written with.
  ChunkRecord Record(size_t i, const std::vector<ChunkField>& schema) const;
  HeadEntry Entry(size_t i, const std::vector<ChunkField>& schema) const;

  // Inserts `record` (logged with `lsn`), or replaces the entry of its
  // timestamp; true when it was inserted. `schema` is the series' schema,
  // which types the record's values (record.values is a prefix of it; a
  // value past it is typed by itself).
  bool Upsert(const ChunkRecord& record, uint64_t lsn, const std::vector<ChunkField>& schema);

  // Keeps the entries for which keep(i) is true, in order, and gives back
  // memory the head no longer needs.
  template <typename Keep>
  void Retain(Keep keep) {
    std::vector<size_t> kept;
    kept.reserve(size());
    for (size_t i = 0; i < size(); ++i) {
      if (keep(i)) kept.push_back(i);
    }
    Compact(kept);
  }

  // Heap bytes the head's arrays take (capacity, not size: what the memory
  // budget must count).
  size_t bytes() const;

 private:
  struct Column {
    FieldType type = FieldType::kDouble;
    std::vector<uint8_t> present;
    std::vector<uint64_t> bits;        // double (bit pattern), int64, bool, timestamp
    std::vector<std::string> strings;  // kString
  };

  // Moves entries `kept` (ascending indexes) to the front and drops the rest.
  void Compact(const std::vector<size_t>& kept);
  // Sets entry i's value of column c (it exists) to `value`.
  void SetValue(size_t c, size_t i, const Value& value);
  // Opens a gap at i in every array (an entry inserted there).
  void InsertAt(size_t i);

  std::vector<int64_t> timestamps_;
  std::vector<uint64_t> lsns_;
  std::vector<uint64_t> versions_;  // empty while every entry's is 0
  std::vector<int64_t> ttls_;       // empty while every entry's is 0
  std::vector<Column> columns_;
  size_t string_bytes_ = 0;  // heap bytes of the strings in kString columns
};

}  // namespace cairn
