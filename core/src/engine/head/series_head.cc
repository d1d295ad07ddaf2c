#include "engine/head/series_head.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

namespace cairn {

namespace {

template <typename T>
void SetMostlyZero(std::vector<T>* values, size_t size, size_t i, T value) {
  if (values->empty()) {
    if (value == 0) return;
    values->assign(size, 0);
  }
  (*values)[i] = value;
}

// The capacity after `capacity`: a quarter more, rather than the library's
// doubling. Series written at one rate fill their heads in step, so with
// doubling thousands of heads would double in the same group commit: the
// heads' memory would jump by up to 2x at once and waste up to half of
// itself. A quarter keeps both to 25 % for an amortised copy cost of about
// five moves per entry instead of two. It starts at one entry and grows by
// one at a time while small: most heads of a gateway with thousands of slow
// sensors hold a handful, and a spare entry of three fields is 40 bytes per
// series.
size_t GrownCapacity(size_t capacity) { return capacity + capacity / 4 + 1; }

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

// Opens a gap at i of the `size` elements at `values` (room for one more).
template <typename T>
void OpenGap(T* values, size_t size, size_t i) {
  std::memmove(values + i + 1, values + i, (size - i) * sizeof(T));
  values[i] = T{};
}

}  // namespace

SeriesHead::SeriesHead(const SeriesHead& other)
    : size_(other.size_),
      capacity_(other.capacity_),
      columns_(other.columns_),
      rare_(other.rare_ != nullptr ? std::make_unique<Rare>(*other.rare_) : nullptr) {
  if (other.block_ != nullptr) {
    const size_t words = BlockWords(capacity_, columns_);
    block_ = std::make_unique<uint64_t[]>(words);
    std::memcpy(block_.get(), other.block_.get(), words * sizeof(uint64_t));
  }
}

SeriesHead& SeriesHead::operator=(const SeriesHead& other) {
  if (this != &other) *this = SeriesHead(other);
  return *this;
}

size_t SeriesHead::LowerBound(int64_t timestamp) const {
  const auto* timestamps = reinterpret_cast<const int64_t*>(block_.get());
  return static_cast<size_t>(std::lower_bound(timestamps, timestamps + size_, timestamp) - timestamps);
}

size_t SeriesHead::Find(int64_t timestamp) const {
  const size_t i = LowerBound(timestamp);
  return i < size() && this->timestamp(i) == timestamp ? i : size();
}

uint64_t SeriesHead::MinLsn() const {
  uint64_t floor = std::numeric_limits<uint64_t>::max();
  for (size_t i = 0; i < size_; ++i) floor = std::min(floor, lsn(i));
  return floor;
}

ChunkRecord SeriesHead::Record(size_t i, const std::vector<ChunkField>& schema) const {
  ChunkRecord record;
  record.timestamp = timestamp(i);
  record.version = version(i);
  record.ttl = ttl(i);
  record.lsn = lsn(i);
  record.values.resize(std::max<size_t>(schema.size(), columns_));
  for (size_t c = 0; c < columns_; ++c) {
    if (!present_column(c)[i]) continue;
    const uint64_t bits = bits_at(c, i);
    switch (type(c)) {
      case FieldType::kDouble:
        record.values[c] = std::bit_cast<double>(bits);
        break;
      case FieldType::kInt64:
        record.values[c] = static_cast<int64_t>(bits);
        break;
      case FieldType::kBool:
        record.values[c] = bits != 0;
        break;
      case FieldType::kTimestamp:
        record.values[c] = Timestamp{static_cast<int64_t>(bits)};
        break;
      case FieldType::kString:
        record.values[c] = rare_->strings[c][i];
        break;
    }
  }
  return record;
}

HeadEntry SeriesHead::Entry(size_t i, const std::vector<ChunkField>& schema) const {
  return HeadEntry{Record(i, schema), lsn(i)};
}

void SeriesHead::SetValue(size_t c, size_t i, const Value& value) {
  present_column(c)[i] = std::holds_alternative<std::monostate>(value) ? 0 : 1;
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
  if (type(c) == FieldType::kString) {
    std::string& slot = rare_->strings[c][i];
    const auto* s = std::get_if<std::string>(&value);
    rare_->string_bytes -= StringHeapBytes(slot);
    slot = s != nullptr ? *s : std::string();
    rare_->string_bytes += StringHeapBytes(slot);
  } else {
    bits_at(c, i) = bits;
  }
}

void SeriesHead::Reshape(size_t capacity, size_t columns, const std::vector<FieldType>& new_types) {
  auto block = std::make_unique<uint64_t[]>(BlockWords(capacity, columns));
  if (block_ != nullptr && size_ > 0) {
    std::memcpy(block.get(), block_.get(), size_ * sizeof(uint64_t));
    std::memcpy(block.get() + capacity, block_.get() + capacity_, size_ * sizeof(uint64_t));
    for (size_t c = 0; c < columns_; ++c) {
      std::memcpy(block.get() + BitsWord(capacity, c), block_.get() + BitsWord(capacity_, c),
                  size_ * sizeof(uint64_t));
      std::memcpy(reinterpret_cast<uint8_t*>(block.get() + PresentWord(capacity, columns)) + c * capacity,
                  present_column(c), size_);
    }
  }
  auto* types_out = reinterpret_cast<FieldType*>(block.get() + TypesWord(capacity, columns));
  if (block_ != nullptr) std::memcpy(types_out, types(), columns_);
  for (size_t c = columns_; c < columns; ++c) types_out[c] = new_types[c - columns_];
  block_ = std::move(block);
  capacity_ = static_cast<uint32_t>(capacity);
  columns_ = static_cast<uint32_t>(columns);
}

void SeriesHead::InsertAt(size_t i) {
  OpenGap(reinterpret_cast<int64_t*>(block_.get()), size_, i);
  OpenGap(block_.get() + capacity_, size_, i);
  for (size_t c = 0; c < columns_; ++c) {
    OpenGap(block_.get() + BitsWord(capacity_, c), size_, i);
    OpenGap(present_column(c), size_, i);
  }
  const auto at = [i](auto& values) { return values.begin() + static_cast<std::ptrdiff_t>(i); };
  if (rare_ != nullptr) {
    Rare& r = *rare_;
    if (!r.versions.empty()) r.versions.insert(at(r.versions), 0);
    if (!r.ttls.empty()) r.ttls.insert(at(r.ttls), 0);
    for (size_t c = 0; c < r.strings.size(); ++c) {
      if (type(c) == FieldType::kString) r.strings[c].insert(at(r.strings[c]), std::string());
    }
  }
  ++size_;
}

bool SeriesHead::Upsert(const ChunkRecord& record, uint64_t lsn, const std::vector<ChunkField>& schema) {
  // New fields get a column, absent in every entry so far.
  if (columns_ < record.values.size()) {
    std::vector<FieldType> new_types;
    for (size_t c = columns_; c < record.values.size(); ++c) {
      // Past the schema (a caller that has not added the field yet), the
      // value itself types the column.
      const Value& value = record.values[c];
      new_types.push_back(c < schema.size()                               ? schema[c].type
                          : std::holds_alternative<std::monostate>(value) ? FieldType::kDouble
                                                                          : TypeOf(value));
    }
    Reshape(capacity_, record.values.size(), new_types);
    const bool any_string =
        std::any_of(new_types.begin(), new_types.end(), [](FieldType t) { return t == FieldType::kString; });
    if (any_string || (rare_ != nullptr && !rare_->strings.empty())) {
      std::vector<std::vector<std::string>>& strings = rare().strings;
      strings.resize(columns_);
      for (size_t c = 0; c < columns_; ++c) {
        if (type(c) == FieldType::kString) strings[c].resize(size_);
      }
    }
  }
  const size_t i = LowerBound(record.timestamp);
  const bool inserted = i == size() || timestamp(i) != record.timestamp;
  if (inserted) {
    if (size_ == capacity_) Reshape(GrownCapacity(capacity_), columns_, {});
    if (i == size_) {
      // The common case: a record newer than every other one.
      ++size_;
      if (rare_ != nullptr) {
        Rare& r = *rare_;
        if (!r.versions.empty()) r.versions.push_back(0);
        if (!r.ttls.empty()) r.ttls.push_back(0);
        for (size_t c = 0; c < r.strings.size(); ++c) {
          if (type(c) == FieldType::kString) r.strings[c].emplace_back();
        }
      }
    } else {
      InsertAt(i);
    }
  }
  timestamp_at(i) = record.timestamp;
  lsn_at(i) = lsn;
  if (record.version != 0 || rare_ != nullptr) SetMostlyZero(&rare().versions, size(), i, record.version);
  if (record.ttl != 0 || rare_ != nullptr) SetMostlyZero(&rare().ttls, size(), i, record.ttl);
  for (size_t c = 0; c < columns_; ++c) {
    SetValue(c, i, c < record.values.size() ? record.values[c] : Value());
  }
  return inserted;
}

void SeriesHead::Compact(const std::vector<size_t>& kept) {
  const auto keep_words = [&](uint64_t* words) {
    for (size_t k = 0; k < kept.size(); ++k) words[k] = words[kept[k]];
  };
  const auto keep = [&kept](auto* values) {
    if (values->empty()) return;
    for (size_t k = 0; k < kept.size(); ++k) {
      if (kept[k] != k) (*values)[k] = std::move((*values)[kept[k]]);
    }
    values->resize(kept.size());
    Trim(values);
  };
  if (block_ != nullptr) {
    keep_words(block_.get());
    keep_words(block_.get() + capacity_);
    for (size_t c = 0; c < columns_; ++c) {
      keep_words(block_.get() + BitsWord(capacity_, c));
      uint8_t* present = present_column(c);
      for (size_t k = 0; k < kept.size(); ++k) present[k] = present[kept[k]];
    }
  }
  size_ = static_cast<uint32_t>(kept.size());
  if (rare_ != nullptr) {
    Rare& r = *rare_;
    keep(&r.versions);
    keep(&r.ttls);
    r.string_bytes = 0;
    for (std::vector<std::string>& column : r.strings) {
      keep(&column);
      for (const std::string& text : column) r.string_bytes += StringHeapBytes(text);
    }
    if (size_ == 0) std::vector<std::vector<std::string>>().swap(r.strings);
    if (std::all_of(r.versions.begin(), r.versions.end(), [](uint64_t v) { return v == 0; })) {
      std::vector<uint64_t>().swap(r.versions);
    }
    if (std::all_of(r.ttls.begin(), r.ttls.end(), [](int64_t t) { return t == 0; })) {
      std::vector<int64_t>().swap(r.ttls);
    }
    DropRareIfEmpty();
  }
  if (size_ == 0) {
    // Nothing held: no block at all. The columns come back typed by the
    // schema with the next record.
    block_.reset();
    capacity_ = 0;
    columns_ = 0;
  } else if (capacity_ > 2 * size_ + 16) {
    Reshape(size_, columns_, {});
  }
}

size_t SeriesHead::bytes() const {
  size_t bytes = block_ != nullptr ? BlockWords(capacity_, columns_) * sizeof(uint64_t) : 0;
  if (rare_ != nullptr) {
    const Rare& r = *rare_;
    bytes += sizeof(Rare) + CapacityBytes(r.versions) + CapacityBytes(r.ttls) + CapacityBytes(r.strings) +
             r.string_bytes;
    for (const std::vector<std::string>& column : r.strings) bytes += CapacityBytes(column);
  }
  return bytes;
}

}  // namespace cairn
