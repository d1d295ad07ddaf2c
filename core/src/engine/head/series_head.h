// SeriesHead: one series' head records (head.h), held as columns rather
// than as a record object per reading.
//
// A head holds up to seal_records records of every series until they are
// sealed, so its layout is most of the engine's memory and a good part of
// its write cost. A record object costs a heap block for its values (40
// bytes per value, plus the allocator's header) and an allocation per
// write; here a record is a timestamp, an LSN and, per field, 8 bytes and a
// presence byte: about 25 bytes for a one-field reading instead of about
// 120, and no allocation per write but the block's amortised growth.
// Versions and ttls take no memory while every record's is 0 (most data is
// never rewritten and has no expiry).
//
// Every array lives in ONE heap block (layout beside `block_`). A gateway
// with thousands of sensors holds thousands of small heads; an array per
// column cost each head an allocation per array (9 for three fields), each
// with the allocator's header and minimum size, which came to about 750
// bytes for a head of five records against 250 in one block.
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
#include <memory>
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
  SeriesHead() = default;
  SeriesHead(const SeriesHead& other);
  SeriesHead& operator=(const SeriesHead& other);
  SeriesHead(SeriesHead&&) noexcept = default;
  SeriesHead& operator=(SeriesHead&&) noexcept = default;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  int64_t timestamp(size_t i) const { return static_cast<int64_t>(block_[i]); }
  uint64_t lsn(size_t i) const { return block_[capacity_ + i]; }
  uint64_t version(size_t i) const { return rare_ == nullptr || rare_->versions.empty() ? 0 : rare_->versions[i]; }
  int64_t ttl(size_t i) const { return rare_ == nullptr || rare_->ttls.empty() ? 0 : rare_->ttls[i]; }

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
  // Word offsets of the block's regions for `capacity` entries and
  // `columns` columns.
  static size_t BitsWord(size_t capacity, size_t c) { return (2 + c) * capacity; }
  static size_t PresentWord(size_t capacity, size_t columns) { return (2 + columns) * capacity; }
  static size_t TypesWord(size_t capacity, size_t columns) {
    return PresentWord(capacity, columns) + (columns * capacity + 7) / 8;
  }
  static size_t BlockWords(size_t capacity, size_t columns) {
    return TypesWord(capacity, columns) + (columns + 7) / 8;
  }

  int64_t& timestamp_at(size_t i) { return reinterpret_cast<int64_t*>(block_.get())[i]; }
  uint64_t& lsn_at(size_t i) { return block_[capacity_ + i]; }
  uint64_t& bits_at(size_t c, size_t i) { return block_[BitsWord(capacity_, c) + i]; }
  uint64_t bits_at(size_t c, size_t i) const { return block_[BitsWord(capacity_, c) + i]; }
  uint8_t* present_column(size_t c) const {
    return reinterpret_cast<uint8_t*>(block_.get() + PresentWord(capacity_, columns_)) + c * capacity_;
  }
  FieldType* types() const {
    return reinterpret_cast<FieldType*>(block_.get() + TypesWord(capacity_, columns_));
  }
  FieldType type(size_t c) const { return types()[c]; }

  // Moves the entries into a block for `capacity` entries and `columns`
  // columns (the new ones typed by `new_types`, absent in every entry).
  void Reshape(size_t capacity, size_t columns, const std::vector<FieldType>& new_types);
  // Moves entries `kept` (ascending indexes) to the front and drops the rest.
  void Compact(const std::vector<size_t>& kept);
  // Sets entry i's value of column c (it exists) to `value`.
  void SetValue(size_t c, size_t i, const Value& value);
  // Opens a gap at i in every array (an entry inserted there); capacity
  // for it is there.
  void InsertAt(size_t i);

  // Layout, in 8-byte words, for capacity_ entries of columns_ columns:
  //   timestamps[capacity_] lsns[capacity_]
  //   bits[columns_][capacity_]     double bit pattern, int64, bool, timestamp
  //   present[columns_][capacity_]  one byte each, padded to a word
  //   types[columns_]               FieldType bytes, padded to a word
  // A kString column's bits are unused; its values live in strings_[c].
  std::unique_ptr<uint64_t[]> block_;
  uint32_t size_ = 0;
  uint32_t capacity_ = 0;
  uint32_t columns_ = 0;
  // What most heads never need: held apart, allocated when first needed and
  // dropped when no longer, so a head of plain numbers pays one pointer.
  struct Rare {
    std::vector<uint64_t> versions;  // empty while every entry's is 0
    std::vector<int64_t> ttls;       // empty while every entry's is 0
    // One vector per column once any column is kString (empty otherwise);
    // only kString columns' vectors hold size_ strings.
    std::vector<std::vector<std::string>> strings;
    size_t string_bytes = 0;  // heap bytes of the strings in kString columns
    bool empty() const { return versions.empty() && ttls.empty() && strings.empty(); }
  };
  Rare& rare() {
    if (rare_ == nullptr) rare_ = std::make_unique<Rare>();
    return *rare_;
  }
  // Drops rare_ once it holds nothing.
  void DropRareIfEmpty() {
    if (rare_ != nullptr && rare_->empty()) rare_.reset();
  }
  std::unique_ptr<Rare> rare_;
};

}  // namespace cairn
