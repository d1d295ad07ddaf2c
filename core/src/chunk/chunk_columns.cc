#include "chunk/chunk_columns.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "chunk/coding.h"
#include "chunk/double_column.h"
#include "chunk/integer_sequence.h"

namespace cairn {

using chunk_coding::BitReader;
using chunk_coding::BitWriter;
using chunk_coding::ByteReader;
using chunk_coding::PutByte;
using chunk_coding::PutSignedVarint;
using chunk_coding::PutVarint;

namespace {

constexpr int kMaxTimestampScaleExponent = 18;

enum class PresenceMode : uint8_t { kAll = 0, kNone = 1, kBitmap = 2, kRuns = 3 };

uint64_t PowerOfTen(int exponent) {
  uint64_t power = 1;
  for (int i = 0; i < exponent; ++i) power *= 10;
  return power;
}


Status ExpectConsumed(const ByteReader& reader) {
  if (!reader.empty())
    return Status::Corruption(std::to_string(reader.remaining()) + " unexpected trailing bytes");
  return Status::Ok();
}

void AppendBitmap(const std::vector<uint8_t>& bits, std::string* out) {
  BitWriter writer(out);
  for (uint8_t bit : bits) writer.Write(bit, 1);
  writer.Flush();
}

void EncodePresence(const std::vector<uint8_t>& present, size_t present_count, std::string* body) {
  if (present_count == present.size()) {
    PutByte(body, static_cast<uint8_t>(PresenceMode::kAll));
    return;
  }
  if (present_count == 0) {
    PutByte(body, static_cast<uint8_t>(PresenceMode::kNone));
    return;
  }
  // Runs alternate present/absent starting with present; the first may be empty.
  std::vector<uint64_t> runs;
  uint8_t current = 1;
  uint64_t length = 0;
  for (uint8_t bit : present) {
    if (bit != current) {
      runs.push_back(length);
      current = bit;
      length = 0;
    }
    ++length;
  }
  runs.push_back(length);
  size_t runs_size = chunk_coding::VarintSize(runs.size());
  for (uint64_t run : runs) runs_size += chunk_coding::VarintSize(run);
  size_t bitmap_size = (present.size() + 7) / 8;
  if (bitmap_size <= runs_size) {
    PutByte(body, static_cast<uint8_t>(PresenceMode::kBitmap));
    AppendBitmap(present, body);
  } else {
    PutByte(body, static_cast<uint8_t>(PresenceMode::kRuns));
    PutVarint(body, runs.size());
    for (uint64_t run : runs) PutVarint(body, run);
  }
}

void EncodeStrings(std::span<const ChunkRecord> records, size_t field, std::string* body) {
  std::vector<std::string_view> dictionary;
  std::vector<uint32_t> indexes;
  std::unordered_map<std::string_view, uint32_t> index_of;
  for (const ChunkRecord& record : records) {
    const std::string* text = std::get_if<std::string>(&record.values[field]);
    if (text == nullptr) continue;
    auto [it, inserted] = index_of.try_emplace(*text, static_cast<uint32_t>(dictionary.size()));
    if (inserted) dictionary.push_back(*text);
    indexes.push_back(it->second);
  }
  PutVarint(body, dictionary.size());
  for (std::string_view entry : dictionary) {
    PutVarint(body, entry.size());
    body->append(entry);
  }
  unsigned width = chunk_coding::BitWidth(dictionary.size() - 1);
  BitWriter writer(body);
  for (uint32_t index : indexes) writer.Write(index, width);
  writer.Flush();
}

// Reads bitmap(count) as one byte (0 or 1) per entry; returns the number of set bits.
Status ReadBitmap(ByteReader* reader, size_t count, std::vector<uint8_t>* bits, size_t* set_count) {
  size_t bytes = (count + 7) / 8;
  if (reader->remaining() < bytes) return Status::Corruption("truncated bitmap");
  const unsigned char* data = reader->position();
  if (count % 8 != 0 && (data[bytes - 1] >> (count % 8)) != 0) {
    return Status::Corruption("bitmap padding bits set");
  }
  bits->resize(count);
  size_t set = 0;
  for (size_t i = 0; i < count; ++i) {
    uint8_t bit = (data[i >> 3] >> (i & 7)) & 1u;
    (*bits)[i] = bit;
    set += bit;
  }
  reader->Skip(bytes);
  *set_count = set;
  return Status::Ok();
}

Status DecodePresence(ByteReader* reader, size_t count, std::vector<uint8_t>* present,
                      size_t* present_count) {
  uint8_t mode;
  if (!reader->ReadByte(&mode)) return Status::Corruption("truncated presence mode");
  switch (static_cast<PresenceMode>(mode)) {
    case PresenceMode::kAll:
      present->assign(count, 1);
      *present_count = count;
      return Status::Ok();
    case PresenceMode::kNone:
      present->assign(count, 0);
      *present_count = 0;
      return Status::Ok();
    case PresenceMode::kBitmap:
      return ReadBitmap(reader, count, present, present_count);
    case PresenceMode::kRuns: {
      uint64_t run_count;
      if (!reader->ReadVarint(&run_count)) return Status::Corruption("truncated presence run count");
      if (run_count == 0 || run_count > static_cast<uint64_t>(count) + 1) {
        return Status::Corruption("presence run count " + std::to_string(run_count) + " invalid for " +
                                  std::to_string(count) + " records");
      }
      present->assign(count, 0);
      size_t filled = 0;
      size_t set = 0;
      for (uint64_t run = 0; run < run_count; ++run) {
        uint64_t length;
        if (!reader->ReadVarint(&length)) return Status::Corruption("truncated presence run");
        if ((length == 0 && run != 0) || length > count - filled) {
          return Status::Corruption("presence run length " + std::to_string(length) + " invalid with " +
                                    std::to_string(count - filled) + " records left");
        }
        if (run % 2 == 0) {
          std::fill(present->begin() + filled, present->begin() + filled + length, 1);
          set += static_cast<size_t>(length);
        }
        filled += static_cast<size_t>(length);
      }
      if (filled != count) {
        return Status::Corruption("presence runs cover " + std::to_string(filled) + " of " +
                                  std::to_string(count) + " records");
      }
      *present_count = set;
      return Status::Ok();
    }
  }
  return Status::Corruption("unknown presence mode " + std::to_string(mode));
}

// Fills `values` with one entry per record: a T built from get(j) for the
// j-th present record, monostate for absent ones. Each Value is constructed
// once, in place.
template <typename T, typename Get>
void AppendValues(const std::vector<uint8_t>& present, size_t present_count, std::vector<Value>* values,
                  Get get) {
  values->clear();
  values->reserve(present.size());
  if (present_count == present.size()) {
    for (size_t j = 0; j < present_count; ++j) values->emplace_back(std::in_place_type<T>, get(j));
    return;
  }
  size_t j = 0;
  for (uint8_t is_present : present) {
    if (is_present) {
      values->emplace_back(std::in_place_type<T>, get(j++));
    } else {
      values->emplace_back();
    }
  }
}

Status DecodeStrings(ByteReader* reader, const std::vector<uint8_t>& present, size_t present_count,
                     std::vector<Value>* values, DecodeScratch* scratch) {
  uint64_t dictionary_size;
  if (!reader->ReadVarint(&dictionary_size)) return Status::Corruption("truncated dictionary size");
  // Every entry takes at least its length byte.
  if (dictionary_size == 0 || dictionary_size > present_count || dictionary_size > reader->remaining()) {
    return Status::Corruption("dictionary size " + std::to_string(dictionary_size) + " invalid for " +
                              std::to_string(present_count) + " values");
  }
  std::vector<std::string_view>& dictionary = scratch->dictionary;
  dictionary.clear();
  dictionary.reserve(static_cast<size_t>(dictionary_size));
  for (uint64_t i = 0; i < dictionary_size; ++i) {
    uint64_t length;
    std::string_view entry;
    if (!reader->ReadVarint(&length)) return Status::Corruption("truncated dictionary entry length");
    if (length > kMaxStringValueBytes) {
      return Status::Corruption("dictionary entry of " + std::to_string(length) + " bytes exceeds " +
                                std::to_string(kMaxStringValueBytes));
    }
    if (!reader->ReadBytes(static_cast<size_t>(length), &entry)) {
      return Status::Corruption("truncated dictionary entry");
    }
    dictionary.push_back(entry);
  }
  unsigned width = chunk_coding::BitWidth(dictionary_size - 1);
  uint64_t index_bytes = (static_cast<uint64_t>(present_count) * width + 7) / 8;
  if (index_bytes != reader->remaining()) {
    return Status::Corruption("dictionary indexes take " + std::to_string(reader->remaining()) +
                              " bytes, expected " + std::to_string(index_bytes));
  }
  // Indexes and sizes are checked before any string is built.
  std::vector<int64_t>& indexes = scratch->integers;
  indexes.resize(present_count);
  BitReader bits(reader->position(), reader->remaining());
  for (size_t j = 0; j < present_count; ++j) {
    uint64_t index = bits.Read(width);
    if (index >= dictionary_size) {
      return Status::Corruption("dictionary index " + std::to_string(index) + " out of range");
    }
    scratch->string_bytes += dictionary[static_cast<size_t>(index)].size();
    if (scratch->string_bytes > kMaxChunkStringBytes) {
      return Status::Corruption("string values exceed " + std::to_string(kMaxChunkStringBytes) + " bytes");
    }
    indexes[j] = static_cast<int64_t>(index);
  }
  reader->Skip(reader->remaining());
  AppendValues<std::string>(present, present_count, values,
                            [&](size_t j) { return dictionary[static_cast<size_t>(indexes[j])]; });
  return Status::Ok();
}

}  // namespace

void EncodeTimestamps(std::span<const ChunkRecord> records, std::string* body) {
  const uint64_t first = static_cast<uint64_t>(records[0].timestamp);
  int exponent = records.size() > 1 ? kMaxTimestampScaleExponent : 0;
  for (size_t i = 1; i < records.size() && exponent > 0; ++i) {
    uint64_t offset = static_cast<uint64_t>(records[i].timestamp) - first;
    while (exponent > 0 && offset % PowerOfTen(exponent) != 0) --exponent;
  }
  const uint64_t scale = PowerOfTen(exponent);
  std::vector<int64_t> deltas(records.size() - 1);
  for (size_t i = 1; i < records.size(); ++i) {
    uint64_t delta =
        static_cast<uint64_t>(records[i].timestamp) - static_cast<uint64_t>(records[i - 1].timestamp);
    deltas[i - 1] = static_cast<int64_t>(delta / scale);
  }
  PutByte(body, static_cast<uint8_t>(exponent));
  PutSignedVarint(body, records[0].timestamp);
  chunk_coding::EncodeIntegerSequence(deltas, body);
}

void EncodeColumn(std::span<const ChunkRecord> records, size_t field, FieldType type, std::string* body) {
  std::vector<uint8_t> present(records.size());
  size_t present_count = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    present[i] = !std::holds_alternative<std::monostate>(records[i].values[field]);
    present_count += present[i];
  }
  EncodePresence(present, present_count, body);
  if (present_count == 0) return;
  switch (type) {
    case FieldType::kDouble: {
      std::vector<double> values;
      values.reserve(present_count);
      for (const ChunkRecord& record : records) {
        if (const double* v = std::get_if<double>(&record.values[field])) values.push_back(*v);
      }
      chunk_coding::EncodeDoubles(values, body);
      return;
    }
    case FieldType::kInt64:
    case FieldType::kTimestamp: {
      std::vector<int64_t> values;
      values.reserve(present_count);
      for (const ChunkRecord& record : records) {
        if (const int64_t* v = std::get_if<int64_t>(&record.values[field])) values.push_back(*v);
        if (const Timestamp* v = std::get_if<Timestamp>(&record.values[field]))
          values.push_back(v->unix_nanos);
      }
      chunk_coding::EncodeIntegerSequence(values, body);
      return;
    }
    case FieldType::kBool: {
      std::vector<uint8_t> values;
      values.reserve(present_count);
      for (const ChunkRecord& record : records) {
        if (const bool* v = std::get_if<bool>(&record.values[field])) values.push_back(*v ? 1 : 0);
      }
      AppendBitmap(values, body);
      return;
    }
    case FieldType::kString:
      EncodeStrings(records, field, body);
      return;
  }
}

Status DecodeTimestamps(std::string_view body, size_t count, std::vector<int64_t>* timestamps) {
  ByteReader reader(body);
  uint8_t exponent;
  int64_t first;
  if (!reader.ReadByte(&exponent)) return Status::Corruption("truncated scale exponent");
  if (exponent > kMaxTimestampScaleExponent) {
    return Status::Corruption("scale exponent " + std::to_string(exponent) + " exceeds " +
                              std::to_string(kMaxTimestampScaleExponent));
  }
  if (!reader.ReadSignedVarint(&first)) return Status::Corruption("truncated first timestamp");
  timestamps->resize(count);
  int64_t* out = timestamps->data();
  out[0] = first;
  CAIRN_RETURN_IF_ERROR(chunk_coding::DecodeIntegerSequence(&reader, std::span<int64_t>(out + 1, count - 1)));
  const uint64_t scale = PowerOfTen(exponent);
  constexpr uint64_t kLargest = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  for (size_t i = 1; i < count; ++i) {
    uint64_t step = static_cast<uint64_t>(out[i]);
    if (scale != 1 && __builtin_mul_overflow(step, scale, &step)) {
      return Status::Corruption("timestamp delta overflows at record " + std::to_string(i));
    }
    uint64_t previous = static_cast<uint64_t>(out[i - 1]);
    if (step == 0)
      return Status::Corruption("timestamps not strictly ascending at record " + std::to_string(i));
    if (step > kLargest - previous) {
      return Status::Corruption("timestamp beyond the int64 range at record " + std::to_string(i));
    }
    out[i] = static_cast<int64_t>(previous + step);
  }
  return ExpectConsumed(reader);
}

Status DecodeIntegerColumn(std::string_view body, size_t count, int64_t* out) {
  ByteReader reader(body);
  CAIRN_RETURN_IF_ERROR(chunk_coding::DecodeIntegerSequence(&reader, std::span<int64_t>(out, count)));
  return ExpectConsumed(reader);
}

Status DecodeColumn(std::string_view body, size_t count, ChunkColumn* column, DecodeScratch* scratch) {
  ByteReader reader(body);
  size_t present_count = 0;
  CAIRN_RETURN_IF_ERROR(DecodePresence(&reader, count, &column->present, &present_count));
  std::vector<Value>* values = &column->values;
  if (present_count == 0) {
    values->assign(count, Value());
    return ExpectConsumed(reader);
  }
  const std::vector<uint8_t>& present = column->present;
  switch (column->field.type) {
    case FieldType::kDouble: {
      scratch->doubles.resize(present_count);
      CAIRN_RETURN_IF_ERROR(
          chunk_coding::DecodeDoubles(&reader, scratch->doubles, &scratch->decimal_integers));
      const double* decoded = scratch->doubles.data();
      AppendValues<double>(present, present_count, values, [decoded](size_t j) { return decoded[j]; });
      return Status::Ok();
    }
    case FieldType::kInt64:
    case FieldType::kTimestamp: {
      scratch->integers.resize(present_count);
      CAIRN_RETURN_IF_ERROR(chunk_coding::DecodeIntegerSequence(&reader, scratch->integers));
      CAIRN_RETURN_IF_ERROR(ExpectConsumed(reader));
      const int64_t* decoded = scratch->integers.data();
      if (column->field.type == FieldType::kInt64) {
        AppendValues<int64_t>(present, present_count, values, [decoded](size_t j) { return decoded[j]; });
      } else {
        AppendValues<Timestamp>(present, present_count, values,
                                [decoded](size_t j) { return Timestamp{decoded[j]}; });
      }
      return Status::Ok();
    }
    case FieldType::kBool: {
      size_t ignored;
      CAIRN_RETURN_IF_ERROR(ReadBitmap(&reader, present_count, &scratch->bits, &ignored));
      CAIRN_RETURN_IF_ERROR(ExpectConsumed(reader));
      const uint8_t* decoded = scratch->bits.data();
      AppendValues<bool>(present, present_count, values, [decoded](size_t j) { return decoded[j] != 0; });
      return Status::Ok();
    }
    case FieldType::kString:
      return DecodeStrings(&reader, present, present_count, values, scratch);
  }
  return Status::Corruption("unknown field type");
}

namespace {

// Spreads the present values `src` over one slot per record of `out`
// (zero where absent).
template <typename T>
void Scatter(const std::vector<uint8_t>& present, const T* src, std::vector<T>* out) {
  out->assign(present.size(), T{});
  size_t j = 0;
  for (size_t i = 0; i < present.size(); ++i) {
    if (present[i]) (*out)[i] = src[j++];
  }
}

}  // namespace

Status DecodeColumnTyped(std::string_view body, size_t count, ChunkColumn* column, DecodeScratch* scratch) {
  ValueColumn& typed = column->typed;
  typed.name = column->field.name;
  typed.type = column->field.type;
  if (column->field.type == FieldType::kString) {
    // Dictionary strings are materialised either way: decode as values and
    // move them.
    CAIRN_RETURN_IF_ERROR(DecodeColumn(body, count, column, scratch));
    typed.present = column->present;
    typed.strings.assign(count, std::string());
    for (size_t i = 0; i < count; ++i) {
      if (column->present[i]) typed.strings[i] = std::move(std::get<std::string>(column->values[i]));
    }
    column->values.clear();
    return Status::Ok();
  }
  ByteReader reader(body);
  size_t present_count = 0;
  CAIRN_RETURN_IF_ERROR(DecodePresence(&reader, count, &typed.present, &present_count));
  column->present = typed.present;
  const bool all = present_count == count;
  switch (column->field.type) {
    case FieldType::kDouble: {
      if (present_count == 0) {
        typed.doubles.assign(count, 0);
        return ExpectConsumed(reader);
      }
      std::vector<double>& target = all ? typed.doubles : scratch->doubles;
      target.resize(present_count);
      CAIRN_RETURN_IF_ERROR(chunk_coding::DecodeDoubles(&reader, target, &scratch->decimal_integers));
      if (!all) Scatter(typed.present, scratch->doubles.data(), &typed.doubles);
      return Status::Ok();
    }
    case FieldType::kInt64:
    case FieldType::kTimestamp: {
      std::vector<int64_t>& target = all ? typed.integers : scratch->integers;
      target.resize(present_count);
      if (present_count > 0) CAIRN_RETURN_IF_ERROR(chunk_coding::DecodeIntegerSequence(&reader, target));
      CAIRN_RETURN_IF_ERROR(ExpectConsumed(reader));
      if (!all) Scatter(typed.present, scratch->integers.data(), &typed.integers);
      return Status::Ok();
    }
    case FieldType::kBool: {
      size_t ignored;
      if (present_count > 0) CAIRN_RETURN_IF_ERROR(ReadBitmap(&reader, present_count, &scratch->bits, &ignored));
      CAIRN_RETURN_IF_ERROR(ExpectConsumed(reader));
      Scatter(typed.present, scratch->bits.data(), &typed.bools);
      return Status::Ok();
    }
    case FieldType::kString:
      break;
  }
  return Status::Corruption("unknown field type");
}

}  // namespace cairn
