#include "chunk/chunk_codec.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <type_traits>
#include <unordered_map>

#include "chunk/coding.h"
#include "chunk/crc32c.h"
#include "chunk/double_column.h"
#include "chunk/integer_sequence.h"

namespace cairn {

using chunk_coding::BitReader;
using chunk_coding::BitWriter;
using chunk_coding::ByteReader;
using chunk_coding::PutByte;
using chunk_coding::PutFixed32;
using chunk_coding::PutSignedVarint;
using chunk_coding::PutVarint;

namespace {

constexpr char kMagic[2] = {'C', 'K'};
constexpr uint8_t kFormatVersion = 1;
constexpr uint8_t kFlagVersions = 1u << 0;
constexpr uint8_t kFlagTtls = 1u << 1;
constexpr size_t kChecksumBytes = 4;
constexpr int kMaxTimestampScaleExponent = 18;

enum class PresenceMode : uint8_t { kAll = 0, kNone = 1, kBitmap = 2, kRuns = 3 };

// A field type's code is the index of its alternative in Value, which lets
// type checks compare indexes without visiting.
static_assert(
    std::is_same_v<std::variant_alternative_t<static_cast<size_t>(FieldType::kDouble), Value>, double>);
static_assert(
    std::is_same_v<std::variant_alternative_t<static_cast<size_t>(FieldType::kInt64), Value>, int64_t>);
static_assert(std::is_same_v<std::variant_alternative_t<static_cast<size_t>(FieldType::kBool), Value>, bool>);
static_assert(
    std::is_same_v<std::variant_alternative_t<static_cast<size_t>(FieldType::kString), Value>, std::string>);
static_assert(
    std::is_same_v<std::variant_alternative_t<static_cast<size_t>(FieldType::kTimestamp), Value>, Timestamp>);

bool IsKnownType(uint8_t code) {
  return code >= static_cast<uint8_t>(FieldType::kDouble) &&
         code <= static_cast<uint8_t>(FieldType::kTimestamp);
}

bool HasType(const Value& value, FieldType type) { return value.index() == static_cast<size_t>(type); }

std::string_view ValueLabel(const Value& value) {
  if (std::holds_alternative<std::monostate>(value)) return "absent";
  return FieldTypeName(TypeOf(value));
}

uint64_t PowerOfTen(int exponent) {
  uint64_t power = 1;
  for (int i = 0; i < exponent; ++i) power *= 10;
  return power;
}

// ---------------------------------------------------------------------------
// Encoding

Status ValidateForEncoding(const std::vector<ChunkField>& schema, std::span<const ChunkRecord> records) {
  if (records.empty()) return Status::InvalidArgument("chunk needs at least one record");
  if (records.size() > kMaxChunkRecords) {
    return Status::InvalidArgument("chunk of " + std::to_string(records.size()) + " records exceeds " +
                                   std::to_string(kMaxChunkRecords));
  }
  if (schema.size() > kMaxChunkFields) {
    return Status::InvalidArgument("chunk schema of " + std::to_string(schema.size()) + " fields exceeds " +
                                   std::to_string(kMaxChunkFields));
  }
  if (records.size() * std::max<size_t>(schema.size(), 1) > kMaxChunkCells) {
    return Status::InvalidArgument("chunk of " + std::to_string(records.size()) + " records x " +
                                   std::to_string(schema.size()) + " fields exceeds " +
                                   std::to_string(kMaxChunkCells) + " cells");
  }
  std::vector<std::string_view> names;
  names.reserve(schema.size());
  for (const ChunkField& field : schema) {
    if (field.name.empty() || field.name.size() > kMaxFieldNameBytes) {
      return Status::InvalidArgument("chunk field name must be 1.." + std::to_string(kMaxFieldNameBytes) +
                                     " bytes, got " + std::to_string(field.name.size()));
    }
    if (!IsKnownType(static_cast<uint8_t>(field.type))) {
      return Status::InvalidArgument("chunk field \"" + field.name + "\" has unknown type code " +
                                     std::to_string(static_cast<int>(field.type)));
    }
    names.push_back(field.name);
  }
  std::sort(names.begin(), names.end());
  if (auto duplicate = std::adjacent_find(names.begin(), names.end()); duplicate != names.end()) {
    return Status::InvalidArgument("chunk schema names field \"" + std::string(*duplicate) + "\" twice");
  }
  size_t string_bytes = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    const ChunkRecord& record = records[i];
    if (i > 0 && record.timestamp <= records[i - 1].timestamp) {
      return Status::InvalidArgument("chunk record " + std::to_string(i) + " timestamp " +
                                     std::to_string(record.timestamp) + " does not follow " +
                                     std::to_string(records[i - 1].timestamp));
    }
    if (record.values.size() != schema.size()) {
      return Status::InvalidArgument("chunk record " + std::to_string(i) + " has " +
                                     std::to_string(record.values.size()) + " values for " +
                                     std::to_string(schema.size()) + " fields");
    }
    for (size_t f = 0; f < schema.size(); ++f) {
      const Value& value = record.values[f];
      if (std::holds_alternative<std::monostate>(value)) continue;
      if (!HasType(value, schema[f].type)) {
        return Status::InvalidArgument("chunk record " + std::to_string(i) + " field \"" + schema[f].name +
                                       "\" holds a " + std::string(ValueLabel(value)) +
                                       " value, field type is " + std::string(FieldTypeName(schema[f].type)));
      }
      if (const double* number = std::get_if<double>(&value); number != nullptr && !std::isfinite(*number)) {
        return Status::InvalidArgument("chunk record " + std::to_string(i) + " field \"" + schema[f].name +
                                       "\" is not finite");
      }
      if (const std::string* text = std::get_if<std::string>(&value); text != nullptr) {
        if (text->size() > kMaxStringValueBytes) {
          return Status::InvalidArgument("chunk record " + std::to_string(i) + " field \"" + schema[f].name +
                                         "\" string of " + std::to_string(text->size()) + " bytes exceeds " +
                                         std::to_string(kMaxStringValueBytes));
        }
        string_bytes += text->size();
        if (string_bytes > kMaxChunkStringBytes) {
          return Status::InvalidArgument("chunk string values exceed " +
                                         std::to_string(kMaxChunkStringBytes) + " bytes");
        }
      }
    }
  }
  return Status::Ok();
}

void AppendSection(std::string* out, std::string_view body) {
  PutVarint(out, body.size());
  out->append(body);
}

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

// ---------------------------------------------------------------------------
// Decoding

struct ChunkHeader {
  uint64_t record_count = 0;
  std::vector<ChunkField> schema;
  uint8_t flags = 0;
};

// Checks the checksum and returns the bytes it covers.
Result<std::string_view> VerifiedPayload(std::string_view bytes) {
  constexpr size_t kMinimumChunkBytes = sizeof(kMagic) + 1 + kChecksumBytes;
  if (bytes.size() < kMinimumChunkBytes) {
    return Status::Corruption("chunk: " + std::to_string(bytes.size()) + " bytes is too short for a chunk");
  }
  return VerifyTrailingCrc32c(bytes, "chunk");
}

Status ReadHeader(ByteReader* reader, ChunkHeader* header) {
  std::string_view magic;
  uint8_t version;
  if (!reader->ReadBytes(sizeof(kMagic), &magic) || magic != std::string_view(kMagic, sizeof(kMagic))) {
    return Status::Corruption("chunk: bad magic");
  }
  if (!reader->ReadByte(&version)) return Status::Corruption("chunk: truncated format version");
  if (version != kFormatVersion) {
    return Status::Corruption("chunk: unknown format version " + std::to_string(version));
  }
  uint64_t field_count;
  if (!reader->ReadVarint(&header->record_count)) return Status::Corruption("chunk: truncated record count");
  if (header->record_count == 0 || header->record_count > kMaxChunkRecords) {
    return Status::Corruption("chunk: record count " + std::to_string(header->record_count) + " outside 1.." +
                              std::to_string(kMaxChunkRecords));
  }
  if (!reader->ReadVarint(&field_count)) return Status::Corruption("chunk: truncated field count");
  if (field_count > kMaxChunkFields) {
    return Status::Corruption("chunk: field count " + std::to_string(field_count) + " exceeds " +
                              std::to_string(kMaxChunkFields));
  }
  if (header->record_count * std::max<uint64_t>(field_count, 1) > kMaxChunkCells) {
    return Status::Corruption("chunk: " + std::to_string(header->record_count) + " records x " +
                              std::to_string(field_count) + " fields exceeds " +
                              std::to_string(kMaxChunkCells) + " cells");
  }
  // A field takes at least three bytes (length, one name byte, type).
  if (field_count > reader->remaining() / 3) {
    return Status::Corruption("chunk: field count " + std::to_string(field_count) + " exceeds the " +
                              std::to_string(reader->remaining()) + " bytes left");
  }
  header->schema.reserve(static_cast<size_t>(field_count));
  for (uint64_t i = 0; i < field_count; ++i) {
    uint64_t name_length;
    std::string_view name;
    uint8_t type;
    if (!reader->ReadVarint(&name_length)) return Status::Corruption("chunk: truncated field name length");
    if (name_length == 0 || name_length > kMaxFieldNameBytes) {
      return Status::Corruption("chunk: field name length " + std::to_string(name_length) + " outside 1.." +
                                std::to_string(kMaxFieldNameBytes));
    }
    if (!reader->ReadBytes(static_cast<size_t>(name_length), &name)) {
      return Status::Corruption("chunk: truncated field name");
    }
    if (!reader->ReadByte(&type)) return Status::Corruption("chunk: truncated field type");
    if (!IsKnownType(type)) {
      return Status::Corruption("chunk: field \"" + std::string(name) + "\" has unknown type code " +
                                std::to_string(type));
    }
    header->schema.push_back(ChunkField{std::string(name), static_cast<FieldType>(type)});
  }
  std::vector<std::string_view> names;
  names.reserve(header->schema.size());
  for (const ChunkField& field : header->schema) names.push_back(field.name);
  std::sort(names.begin(), names.end());
  if (auto duplicate = std::adjacent_find(names.begin(), names.end()); duplicate != names.end()) {
    return Status::Corruption("chunk: field \"" + std::string(*duplicate) + "\" appears twice");
  }
  if (!reader->ReadByte(&header->flags)) return Status::Corruption("chunk: truncated flags");
  if ((header->flags & ~(kFlagVersions | kFlagTtls)) != 0) {
    return Status::Corruption("chunk: unknown flags " + std::to_string(header->flags));
  }
  return Status::Ok();
}

Status ReadSection(ByteReader* reader, std::string_view* body) {
  uint64_t length;
  if (!reader->ReadVarint(&length)) return Status::Corruption("truncated section length");
  if (length > reader->remaining()) {
    return Status::Corruption("section of " + std::to_string(length) + " bytes exceeds the " +
                              std::to_string(reader->remaining()) + " bytes left");
  }
  reader->ReadBytes(static_cast<size_t>(length), body);
  return Status::Ok();
}

Status ExpectConsumed(const ByteReader& reader) {
  if (!reader.empty())
    return Status::Corruption(std::to_string(reader.remaining()) + " unexpected trailing bytes");
  return Status::Ok();
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

// Buffers reused across the columns of one decode.
struct DecodeScratch {
  std::vector<int64_t> integers;
  std::vector<int64_t> decimal_integers;
  std::vector<double> doubles;
  std::vector<uint8_t> bits;
  std::vector<std::string_view> dictionary;
  size_t string_bytes = 0;  // decoded so far, across columns
};

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

Status DecodeOptionalIntegers(ByteReader* reader, bool stored, size_t count, const char* what, int64_t* out) {
  if (!stored) {
    std::fill(out, out + count, 0);
    return Status::Ok();
  }
  std::string_view body;
  Status status = ReadSection(reader, &body);
  if (status.ok()) status = DecodeIntegerColumn(body, count, out);
  if (!status.ok()) return Status::Corruption(std::string("chunk ") + what + ": " + status.message());
  return Status::Ok();
}

// Decodes a chunk; with `wanted` non-null only the columns named there.
Result<DecodedChunk> DecodeChunkImpl(std::string_view bytes, const std::vector<std::string>* wanted) {
  CAIRN_ASSIGN_OR_RETURN(std::string_view payload, VerifiedPayload(bytes));
  ByteReader reader(payload);
  ChunkHeader header;
  CAIRN_RETURN_IF_ERROR(ReadHeader(&reader, &header));
  const size_t count = static_cast<size_t>(header.record_count);

  DecodedChunk chunk;
  std::string_view body;
  Status status = ReadSection(&reader, &body);
  if (status.ok()) status = DecodeTimestamps(body, count, &chunk.timestamps);
  if (!status.ok()) return Status::Corruption("chunk timestamps: " + status.message());

  chunk.versions.resize(count);
  CAIRN_RETURN_IF_ERROR(DecodeOptionalIntegers(&reader, (header.flags & kFlagVersions) != 0, count,
                                               "versions",
                                               reinterpret_cast<int64_t*>(chunk.versions.data())));
  chunk.ttls.resize(count);
  CAIRN_RETURN_IF_ERROR(
      DecodeOptionalIntegers(&reader, (header.flags & kFlagTtls) != 0, count, "ttls", chunk.ttls.data()));

  DecodeScratch scratch;
  chunk.columns.reserve(header.schema.size());
  for (ChunkField& field : header.schema) {
    Status section = ReadSection(&reader, &body);
    if (!section.ok()) return Status::Corruption("chunk column \"" + field.name + "\": " + section.message());
    if (wanted != nullptr && std::find(wanted->begin(), wanted->end(), field.name) == wanted->end()) continue;
    ChunkColumn& column = chunk.columns.emplace_back();
    column.field = std::move(field);
    status = DecodeColumn(body, count, &column, &scratch);
    if (!status.ok())
      return Status::Corruption("chunk column \"" + column.field.name + "\": " + status.message());
  }
  if (!reader.empty()) {
    return Status::Corruption("chunk: " + std::to_string(reader.remaining()) +
                              " unexpected bytes after the last column");
  }
  return chunk;
}

}  // namespace

ChunkRecord DecodedChunk::RecordAt(size_t i) const {
  ChunkRecord record;
  record.timestamp = timestamps[i];
  record.version = versions[i];
  record.ttl = ttls[i];
  record.values.reserve(columns.size());
  for (const ChunkColumn& column : columns) record.values.push_back(column.values[i]);
  return record;
}

std::vector<ChunkField> DecodedChunk::Schema() const {
  std::vector<ChunkField> schema;
  schema.reserve(columns.size());
  for (const ChunkColumn& column : columns) schema.push_back(column.field);
  return schema;
}

Result<std::string> EncodeChunk(const std::vector<ChunkField>& schema, std::span<const ChunkRecord> records,
                                ChunkStats* stats_out) {
  CAIRN_RETURN_IF_ERROR(ValidateForEncoding(schema, records));
  std::string out;
  out.append(kMagic, sizeof(kMagic));
  PutByte(&out, kFormatVersion);
  PutVarint(&out, records.size());
  PutVarint(&out, schema.size());
  for (const ChunkField& field : schema) {
    PutVarint(&out, field.name.size());
    out.append(field.name);
    PutByte(&out, static_cast<uint8_t>(field.type));
  }
  bool any_version = false;
  bool any_ttl = false;
  for (const ChunkRecord& record : records) {
    any_version |= record.version != 0;
    any_ttl |= record.ttl != 0;
  }
  PutByte(&out, static_cast<uint8_t>((any_version ? kFlagVersions : 0) | (any_ttl ? kFlagTtls : 0)));

  std::string body;
  EncodeTimestamps(records, &body);
  AppendSection(&out, body);
  std::vector<int64_t> integers(records.size());
  if (any_version) {
    for (size_t i = 0; i < records.size(); ++i) integers[i] = static_cast<int64_t>(records[i].version);
    body.clear();
    chunk_coding::EncodeIntegerSequence(integers, &body);
    AppendSection(&out, body);
  }
  if (any_ttl) {
    for (size_t i = 0; i < records.size(); ++i) integers[i] = records[i].ttl;
    body.clear();
    chunk_coding::EncodeIntegerSequence(integers, &body);
    AppendSection(&out, body);
  }
  for (size_t f = 0; f < schema.size(); ++f) {
    body.clear();
    EncodeColumn(records, f, schema[f].type, &body);
    AppendSection(&out, body);
  }
  PutFixed32(&out, Crc32c(out));
  if (stats_out != nullptr) *stats_out = ComputeChunkStats(schema, records);
  return out;
}

Result<DecodedChunk> DecodeChunk(std::string_view bytes) { return DecodeChunkImpl(bytes, nullptr); }

Result<DecodedChunk> DecodeChunkFields(std::string_view bytes, const std::vector<std::string>& field_names) {
  return DecodeChunkImpl(bytes, &field_names);
}

Result<std::vector<ChunkField>> DecodeChunkSchema(std::string_view bytes) {
  CAIRN_ASSIGN_OR_RETURN(std::string_view payload, VerifiedPayload(bytes));
  ByteReader reader(payload);
  ChunkHeader header;
  CAIRN_RETURN_IF_ERROR(ReadHeader(&reader, &header));
  return std::move(header.schema);
}

}  // namespace cairn
