#include "chunk/chunk_codec.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <type_traits>

#include "chunk/chunk_columns.h"
#include "chunk/coding.h"
#include "chunk/crc32c.h"
#include "chunk/integer_sequence.h"

namespace cairn {

using chunk_coding::ByteReader;
using chunk_coding::PutByte;
using chunk_coding::PutFixed32;
using chunk_coding::PutVarint;

namespace {

constexpr char kMagic[2] = {'C', 'K'};
constexpr uint8_t kFormatVersion = 1;
constexpr uint8_t kFlagVersions = 1u << 0;
constexpr uint8_t kFlagTtls = 1u << 1;
constexpr size_t kChecksumBytes = 4;

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
Result<DecodedChunk> DecodeChunkImpl(std::string_view bytes, const std::vector<std::string>* wanted,
                                     bool typed) {
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
    status = typed ? DecodeColumnTyped(body, count, &column, &scratch) : DecodeColumn(body, count, &column, &scratch);
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

Result<DecodedChunk> DecodeChunk(std::string_view bytes) { return DecodeChunkImpl(bytes, nullptr, false); }

Result<DecodedChunk> DecodeChunkFields(std::string_view bytes, const std::vector<std::string>& field_names) {
  return DecodeChunkImpl(bytes, &field_names, false);
}

Result<DecodedChunk> DecodeChunkTyped(std::string_view bytes, const std::vector<std::string>* field_names) {
  return DecodeChunkImpl(bytes, field_names, true);
}

Result<std::vector<ChunkField>> DecodeChunkSchema(std::string_view bytes) {
  CAIRN_ASSIGN_OR_RETURN(std::string_view payload, VerifiedPayload(bytes));
  ByteReader reader(payload);
  ChunkHeader header;
  CAIRN_RETURN_IF_ERROR(ReadHeader(&reader, &header));
  return std::move(header.schema);
}

}  // namespace cairn
