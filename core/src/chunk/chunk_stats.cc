// Chunk statistics: computed at seal time, stored beside each chunk
// (chunk_format.md §5) so that count/min/max/sum/first/last over whole chunks
// need no decoding.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>

#include "chunk/chunk_codec.h"
#include "chunk/coding.h"
#include "chunk/crc32c.h"

namespace cairn {

using chunk_coding::ByteReader;
using chunk_coding::PutByte;
using chunk_coding::PutFixed32;
using chunk_coding::PutFixed64;
using chunk_coding::PutSignedVarint;
using chunk_coding::PutVarint;

namespace {

// Version 2 stores an int64 field's sum exactly (128 bits); version 1
// stored it as a double. Both are read; version 1 is written only to give
// back version 1 statistics unchanged (see EncodeChunkStats).
constexpr uint8_t kStatsFormatVersion = 2;
constexpr uint8_t kDoubleSumsVersion = 1;
constexpr uint8_t kHasMin = 1u << 0;
constexpr uint8_t kHasMax = 1u << 1;
constexpr uint8_t kHasFirst = 1u << 2;
constexpr uint8_t kHasLast = 1u << 3;
constexpr size_t kChecksumBytes = 4;

bool HasType(const Value& value, FieldType type) { return value.index() == static_cast<size_t>(type); }

bool IsOrdered(FieldType type) {
  return type == FieldType::kDouble || type == FieldType::kInt64 || type == FieldType::kTimestamp;
}

bool IsSummed(FieldType type) { return type == FieldType::kDouble || type == FieldType::kInt64; }

// Compares two values of the same ordered type.
bool LessThan(const Value& a, const Value& b) {
  if (const double* x = std::get_if<double>(&a)) return *x < std::get<double>(b);
  if (const int64_t* x = std::get_if<int64_t>(&a)) return *x < std::get<int64_t>(b);
  return std::get<Timestamp>(a) < std::get<Timestamp>(b);
}

void ComputeFieldStats(FieldType type, size_t field, std::span<const ChunkRecord> records,
                       FieldStats* stats) {
  constexpr size_t kNone = std::numeric_limits<size_t>::max();
  size_t first = kNone, last = kNone, lowest = kNone, highest = kNone;
  const bool ordered = IsOrdered(type);
  const bool summed = IsSummed(type);
  for (size_t i = 0; i < records.size(); ++i) {
    if (field >= records[i].values.size()) continue;
    const Value& value = records[i].values[field];
    if (!HasType(value, type)) continue;
    ++stats->count;
    if (first == kNone || records[i].timestamp < records[first].timestamp) first = i;
    if (last == kNone || records[i].timestamp >= records[last].timestamp) last = i;
    if (ordered) {
      if (lowest == kNone || LessThan(value, records[lowest].values[field])) lowest = i;
      if (highest == kNone || LessThan(records[highest].values[field], value)) highest = i;
    }
    if (type == FieldType::kInt64) {
      stats->integer_sum->Add(std::get<int64_t>(value));
    } else if (summed) {
      stats->sum += std::get<double>(value);
    }
  }
  if (type == FieldType::kInt64) stats->sum = stats->integer_sum->ToDouble();
  if (first == kNone) return;
  stats->first = records[first].values[field];
  stats->last = records[last].values[field];
  if (ordered) {
    stats->min = records[lowest].values[field];
    stats->max = records[highest].values[field];
  }
}

void PutValue(std::string* out, FieldType type, const Value& value) {
  switch (type) {
    case FieldType::kDouble:
      PutFixed64(out, std::bit_cast<uint64_t>(std::get<double>(value)));
      return;
    case FieldType::kInt64:
      PutSignedVarint(out, std::get<int64_t>(value));
      return;
    case FieldType::kBool:
      PutByte(out, std::get<bool>(value) ? 1 : 0);
      return;
    case FieldType::kString: {
      const std::string& text = std::get<std::string>(value);
      PutVarint(out, text.size());
      out->append(text);
      return;
    }
    case FieldType::kTimestamp:
      PutSignedVarint(out, std::get<Timestamp>(value).unix_nanos);
      return;
  }
}

Status ReadValue(ByteReader* reader, FieldType type, Value* value) {
  switch (type) {
    case FieldType::kDouble: {
      uint64_t bits;
      if (!reader->ReadFixed64(&bits)) return Status::Corruption("truncated double");
      double number = std::bit_cast<double>(bits);
      if (!std::isfinite(number)) return Status::Corruption("non-finite double");
      *value = number;
      return Status::Ok();
    }
    case FieldType::kInt64: {
      int64_t number;
      if (!reader->ReadSignedVarint(&number)) return Status::Corruption("truncated int64");
      *value = number;
      return Status::Ok();
    }
    case FieldType::kBool: {
      uint8_t byte;
      if (!reader->ReadByte(&byte)) return Status::Corruption("truncated bool");
      if (byte > 1) return Status::Corruption("bool byte " + std::to_string(byte));
      *value = byte == 1;
      return Status::Ok();
    }
    case FieldType::kString: {
      uint64_t length;
      std::string_view text;
      if (!reader->ReadVarint(&length)) return Status::Corruption("truncated string length");
      if (length > kMaxStringValueBytes) {
        return Status::Corruption("string of " + std::to_string(length) + " bytes exceeds " +
                                  std::to_string(kMaxStringValueBytes));
      }
      if (!reader->ReadBytes(static_cast<size_t>(length), &text))
        return Status::Corruption("truncated string");
      *value = std::string(text);
      return Status::Ok();
    }
    case FieldType::kTimestamp: {
      int64_t nanos;
      if (!reader->ReadSignedVarint(&nanos)) return Status::Corruption("truncated timestamp");
      *value = Timestamp{nanos};
      return Status::Ok();
    }
  }
  return Status::Corruption("unknown field type");
}

// An int64 field's exact sum (version 2): the high word as svarint, then
// the low word as fixed64.
Status ReadIntegerSum(ByteReader* reader, FieldStats* stats) {
  int64_t high;
  uint64_t low;
  if (!reader->ReadSignedVarint(&high) || !reader->ReadFixed64(&low))
    return Status::Corruption("truncated sum");
  const ExactSum sum = ExactSum::FromWords(high, low);
  // No `count` int64 values sum outside [count * INT64_MIN, count * INT64_MAX].
  if (sum < ExactSum::Product(INT64_MIN, stats->count) || ExactSum::Product(INT64_MAX, stats->count) < sum) {
    return Status::Corruption("sum " + sum.ToString() + " impossible for " + std::to_string(stats->count) +
                              " int64 values");
  }
  stats->integer_sum = sum;
  stats->sum = sum.ToDouble();
  return Status::Ok();
}

Status ReadFieldStats(ByteReader* reader, uint8_t version, FieldType type, uint32_t record_count,
                      FieldStats* stats) {
  uint8_t mask;
  if (!reader->ReadVarint(&stats->count)) return Status::Corruption("truncated count");
  if (stats->count > record_count) {
    return Status::Corruption("count " + std::to_string(stats->count) + " exceeds " +
                              std::to_string(record_count) + " records");
  }
  if (!reader->ReadByte(&mask)) return Status::Corruption("truncated mask");
  uint8_t allowed = kHasFirst | kHasLast | (IsOrdered(type) ? kHasMin | kHasMax : 0);
  if ((mask & ~allowed) != 0) return Status::Corruption("invalid mask " + std::to_string(mask));
  if (stats->count == 0 && mask != 0) return Status::Corruption("values present with count 0");
  if (version >= 2 && type == FieldType::kInt64) {
    CAIRN_RETURN_IF_ERROR(ReadIntegerSum(reader, stats));
  } else if (IsSummed(type)) {
    uint64_t bits;
    if (!reader->ReadFixed64(&bits)) return Status::Corruption("truncated sum");
    stats->sum = std::bit_cast<double>(bits);
  }
  if (mask & kHasMin) CAIRN_RETURN_IF_ERROR(ReadValue(reader, type, &stats->min));
  if (mask & kHasMax) CAIRN_RETURN_IF_ERROR(ReadValue(reader, type, &stats->max));
  if (mask & kHasFirst) CAIRN_RETURN_IF_ERROR(ReadValue(reader, type, &stats->first));
  if (mask & kHasLast) CAIRN_RETURN_IF_ERROR(ReadValue(reader, type, &stats->last));
  return Status::Ok();
}

}  // namespace

ChunkStats ComputeChunkStats(const std::vector<ChunkField>& schema, std::span<const ChunkRecord> records) {
  ChunkStats stats;
  stats.fields.resize(schema.size());
  for (size_t f = 0; f < schema.size(); ++f) {
    if (schema[f].type == FieldType::kInt64) stats.fields[f].integer_sum = ExactSum();
  }
  if (records.empty()) return stats;
  stats.count = static_cast<uint32_t>(records.size());
  stats.min_timestamp = records[0].timestamp;
  stats.max_timestamp = records[0].timestamp;
  stats.all_have_ttl = true;
  for (const ChunkRecord& record : records) {
    stats.min_timestamp = std::min(stats.min_timestamp, record.timestamp);
    stats.max_timestamp = std::max(stats.max_timestamp, record.timestamp);
    stats.max_version = std::max(stats.max_version, record.version);
    if (record.ttl == 0) {
      stats.all_have_ttl = false;
    } else if (stats.min_ttl == 0 || record.ttl < stats.min_ttl) {
      stats.min_ttl = record.ttl;
    }
  }
  for (size_t f = 0; f < schema.size(); ++f) ComputeFieldStats(schema[f].type, f, records, &stats.fields[f]);
  return stats;
}

std::string EncodeChunkStats(const ChunkStats& stats, const std::vector<ChunkField>& schema) {
  // Statistics read from version 1 lack exact int64 sums: they are written
  // back as version 1, so that decoding and encoding give the same bytes.
  bool exact = true;
  for (size_t f = 0; f < stats.fields.size() && f < schema.size(); ++f) {
    if (schema[f].type == FieldType::kInt64 && !stats.fields[f].integer_sum) exact = false;
  }
  std::string out;
  PutByte(&out, exact ? kStatsFormatVersion : kDoubleSumsVersion);
  PutVarint(&out, stats.count);
  PutSignedVarint(&out, stats.min_timestamp);
  PutSignedVarint(&out, stats.max_timestamp);
  PutVarint(&out, stats.max_version);
  PutSignedVarint(&out, stats.min_ttl);
  PutByte(&out, stats.all_have_ttl ? 1 : 0);
  PutVarint(&out, stats.fields.size());
  for (size_t f = 0; f < stats.fields.size(); ++f) {
    const FieldStats& field = stats.fields[f];
    PutVarint(&out, field.count);
    if (f >= schema.size()) {
      // Violated precondition: without a type nothing more can be written;
      // the decoder rejects the field count mismatch.
      PutByte(&out, 0);
      continue;
    }
    const FieldType type = schema[f].type;
    const bool ordered = IsOrdered(type);
    uint8_t mask = 0;
    if (ordered && HasType(field.min, type)) mask |= kHasMin;
    if (ordered && HasType(field.max, type)) mask |= kHasMax;
    if (HasType(field.first, type)) mask |= kHasFirst;
    if (HasType(field.last, type)) mask |= kHasLast;
    if (field.count == 0) mask = 0;
    PutByte(&out, mask);
    if (exact && type == FieldType::kInt64) {
      PutSignedVarint(&out, field.integer_sum->high());
      PutFixed64(&out, field.integer_sum->low());
    } else if (IsSummed(type)) {
      PutFixed64(&out, std::bit_cast<uint64_t>(field.sum));
    }
    if (mask & kHasMin) PutValue(&out, type, field.min);
    if (mask & kHasMax) PutValue(&out, type, field.max);
    if (mask & kHasFirst) PutValue(&out, type, field.first);
    if (mask & kHasLast) PutValue(&out, type, field.last);
  }
  PutFixed32(&out, Crc32c(out));
  return out;
}

Result<ChunkStats> DecodeChunkStats(std::string_view bytes, const std::vector<ChunkField>& schema) {
  if (bytes.size() < 1 + kChecksumBytes) {
    return Status::Corruption("chunk stats: " + std::to_string(bytes.size()) + " bytes is too short");
  }
  CAIRN_ASSIGN_OR_RETURN(std::string_view payload, VerifyTrailingCrc32c(bytes, "chunk stats"));
  ByteReader reader(payload);
  uint8_t version = 0;
  if (!reader.ReadByte(&version)) return Status::Corruption("chunk stats: no format version");
  if (version != kStatsFormatVersion && version != kDoubleSumsVersion) {
    return Status::Corruption("chunk stats: unknown format version " + std::to_string(version));
  }
  ChunkStats stats;
  uint64_t count, max_version, field_count;
  uint8_t all_have_ttl;
  if (!reader.ReadVarint(&count) || !reader.ReadSignedVarint(&stats.min_timestamp) ||
      !reader.ReadSignedVarint(&stats.max_timestamp) || !reader.ReadVarint(&max_version) ||
      !reader.ReadSignedVarint(&stats.min_ttl) || !reader.ReadByte(&all_have_ttl) ||
      !reader.ReadVarint(&field_count)) {
    return Status::Corruption("chunk stats: truncated header");
  }
  if (count > std::numeric_limits<uint32_t>::max()) {
    return Status::Corruption("chunk stats: record count " + std::to_string(count) + " out of range");
  }
  if (all_have_ttl > 1)
    return Status::Corruption("chunk stats: all_have_ttl byte " + std::to_string(all_have_ttl));
  if (field_count != schema.size()) {
    return Status::Corruption("chunk stats: " + std::to_string(field_count) + " fields, schema has " +
                              std::to_string(schema.size()));
  }
  stats.count = static_cast<uint32_t>(count);
  stats.max_version = max_version;
  stats.all_have_ttl = all_have_ttl == 1;
  stats.fields.resize(schema.size());
  for (size_t f = 0; f < schema.size(); ++f) {
    Status status = ReadFieldStats(&reader, version, schema[f].type, stats.count, &stats.fields[f]);
    if (!status.ok()) {
      return Status::Corruption("chunk stats field \"" + schema[f].name + "\": " + status.message());
    }
  }
  if (!reader.empty()) {
    return Status::Corruption("chunk stats: " + std::to_string(reader.remaining()) +
                              " unexpected trailing bytes");
  }
  return stats;
}

}  // namespace cairn
