#include "engine/head/series_head.h"

#include <algorithm>
#include <bit>
#include <limits>

namespace cairn {

namespace {

// Inserts `value` at i of a vector that stays empty while every element is
// 0 (versions, ttls).
template <typename T>
void InsertMostlyZero(std::vector<T>* values, size_t size_before, size_t i, T value) {
  if (values->empty()) {
    if (value == 0) return;
    values->assign(size_before, 0);
  }
  values->insert(values->begin() + static_cast<std::ptrdiff_t>(i), value);
}

template <typename T>
void SetMostlyZero(std::vector<T>* values, size_t size, size_t i, T value) {
  if (values->empty()) {
    if (value == 0) return;
    values->assign(size, 0);
  }
  (*values)[i] = value;
}

// Appends `value`, growing the array by a quarter rather than the library's
// doubling. Series written at one rate fill their heads in step, so with
// doubling thousands of heads would double in the same group commit: the
// heads' memory would jump by up to 2x at once and waste up to half of
// itself. A quarter keeps both to 25 % for an amortised copy cost of about
// five moves per entry instead of two.
template <typename T>
void Append(std::vector<T>* values, T value) {
  if (values->size() == values->capacity()) values->reserve(values->size() + values->size() / 4 + 8);
  values->push_back(std::move(value));
}

// What a string holds outside itself (beyond the small-string buffer).
size_t StringHeapBytes(const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; }

template <typename T>
size_t CapacityBytes(const std::vector<T>& values) {
  return values.capacity() * sizeof(T);
}

// Gives back a vector's spare room once it holds far less than it could.
template <typename T>
void Trim(std::vector<T>* values) {
  if (values->empty()) {
    std::vector<T>().swap(*values);
  } else if (values->capacity() > 2 * values->size() + 16) {
    values->shrink_to_fit();
  }
}

}  // namespace

size_t SeriesHead::LowerBound(int64_t timestamp) const {
  return static_cast<size_t>(std::lower_bound(timestamps_.begin(), timestamps_.end(), timestamp) -
                             timestamps_.begin());
}

size_t SeriesHead::Find(int64_t timestamp) const {
  const size_t i = LowerBound(timestamp);
  return i < size() && timestamps_[i] == timestamp ? i : size();
}

uint64_t SeriesHead::MinLsn() const {
  uint64_t floor = std::numeric_limits<uint64_t>::max();
  for (uint64_t lsn : lsns_) floor = std::min(floor, lsn);
  return floor;
}

ChunkRecord SeriesHead::Record(size_t i, const std::vector<ChunkField>& schema) const {
  ChunkRecord record;
  record.timestamp = timestamps_[i];
  record.version = version(i);
  record.ttl = ttl(i);
  record.lsn = lsns_[i];
  record.values.resize(std::max(schema.size(), columns_.size()));
  for (size_t c = 0; c < columns_.size(); ++c) {
    const Column& column = columns_[c];
    if (!column.present[i]) continue;
    switch (column.type) {
      case FieldType::kDouble:
        record.values[c] = std::bit_cast<double>(column.bits[i]);
        break;
      case FieldType::kInt64:
        record.values[c] = static_cast<int64_t>(column.bits[i]);
        break;
      case FieldType::kBool:
        record.values[c] = column.bits[i] != 0;
        break;
      case FieldType::kTimestamp:
        record.values[c] = Timestamp{static_cast<int64_t>(column.bits[i])};
        break;
      case FieldType::kString:
        record.values[c] = column.strings[i];
        break;
    }
  }
  return record;
}

HeadEntry SeriesHead::Entry(size_t i, const std::vector<ChunkField>& schema) const {
  return HeadEntry{Record(i, schema), lsns_[i]};
}

void SeriesHead::SetValue(size_t c, size_t i, const Value& value) {
  Column& column = columns_[c];
  column.present[i] = std::holds_alternative<std::monostate>(value) ? 0 : 1;
  uint64_t bits = 0;
  if (const auto* d = std::get_if<double>(&value)) {
    bits = std::bit_cast<uint64_t>(*d);
  } else if (const auto* n = std::get_if<int64_t>(&value)) {
    bits = static_cast<uint64_t>(*n);
  } else if (const auto* b = std::get_if<bool>(&value)) {
    bits = *b ? 1 : 0;
  } else if (const auto* t = std::get_if<Timestamp>(&value)) {
    bits = static_cast<uint64_t>(t->unix_nanos);
  }
  if (column.type == FieldType::kString) {
    const auto* s = std::get_if<std::string>(&value);
    string_bytes_ -= StringHeapBytes(column.strings[i]);
    column.strings[i] = s != nullptr ? *s : std::string();
    string_bytes_ += StringHeapBytes(column.strings[i]);
  } else {
    column.bits[i] = bits;
  }
}

void SeriesHead::InsertAt(size_t i) {
  const auto at = [i](auto& values) { return values.begin() + static_cast<std::ptrdiff_t>(i); };
  timestamps_.insert(at(timestamps_), 0);
  lsns_.insert(at(lsns_), 0);
  if (!versions_.empty()) versions_.insert(at(versions_), 0);
  if (!ttls_.empty()) ttls_.insert(at(ttls_), 0);
  for (Column& column : columns_) {
    column.present.insert(at(column.present), 0);
    if (column.type == FieldType::kString) {
      column.strings.insert(at(column.strings), std::string());
    } else {
      column.bits.insert(at(column.bits), 0);
    }
  }
}

bool SeriesHead::Upsert(const ChunkRecord& record, uint64_t lsn, const std::vector<ChunkField>& schema) {
  // New fields get a column, absent in every entry so far.
  while (columns_.size() < record.values.size()) {
    const size_t c = columns_.size();
    Column& column = columns_.emplace_back();
    // Past the schema (a caller that has not added the field yet), the
    // value itself types the column.
    const Value& value = record.values[c];
    column.type = c < schema.size()                               ? schema[c].type
                  : std::holds_alternative<std::monostate>(value) ? FieldType::kDouble
                                                                  : TypeOf(value);
    column.present.assign(size(), 0);
    if (column.type == FieldType::kString) {
      column.strings.resize(size());
    } else {
      column.bits.assign(size(), 0);
    }
  }
  size_t i = LowerBound(record.timestamp);
  const bool inserted = i == size() || timestamps_[i] != record.timestamp;
  if (inserted) {
    const size_t before = size();
    if (i == before) {
      // The common case: a record newer than every other one.
      Append(&timestamps_, record.timestamp);
      Append(&lsns_, lsn);
      if (!versions_.empty()) Append<uint64_t>(&versions_, 0);
      if (!ttls_.empty()) Append<int64_t>(&ttls_, 0);
      for (Column& column : columns_) {
        Append<uint8_t>(&column.present, 0);
        if (column.type == FieldType::kString) {
          Append(&column.strings, std::string());
        } else {
          Append<uint64_t>(&column.bits, 0);
        }
      }
    } else {
      InsertAt(i);
    }
  }
  timestamps_[i] = record.timestamp;
  lsns_[i] = lsn;
  SetMostlyZero(&versions_, size(), i, record.version);
  SetMostlyZero(&ttls_, size(), i, record.ttl);
  for (size_t c = 0; c < columns_.size(); ++c) {
    SetValue(c, i, c < record.values.size() ? record.values[c] : Value());
  }
  return inserted;
}

void SeriesHead::Compact(const std::vector<size_t>& kept) {
  const auto keep = [&kept](auto* values) {
    if (values->empty()) return;
    for (size_t k = 0; k < kept.size(); ++k) {
      if (kept[k] != k) (*values)[k] = std::move((*values)[kept[k]]);
    }
    values->resize(kept.size());
    Trim(values);
  };
  keep(&timestamps_);
  keep(&lsns_);
  keep(&versions_);
  keep(&ttls_);
  string_bytes_ = 0;
  for (Column& column : columns_) {
    keep(&column.present);
    keep(&column.bits);
    keep(&column.strings);
    for (const std::string& s : column.strings) string_bytes_ += StringHeapBytes(s);
  }
  if (std::all_of(versions_.begin(), versions_.end(), [](uint64_t v) { return v == 0; })) {
    std::vector<uint64_t>().swap(versions_);
  }
  if (std::all_of(ttls_.begin(), ttls_.end(), [](int64_t t) { return t == 0; })) std::vector<int64_t>().swap(ttls_);
}

size_t SeriesHead::bytes() const {
  size_t bytes = CapacityBytes(timestamps_) + CapacityBytes(lsns_) + CapacityBytes(versions_) +
                 CapacityBytes(ttls_) + CapacityBytes(columns_) + string_bytes_;
  for (const Column& column : columns_) {
    bytes += CapacityBytes(column.present) + CapacityBytes(column.bits) + CapacityBytes(column.strings);
  }
  return bytes;
}

}  // namespace cairn
