// Record blocks (record_codec.h). Layout, as specified in
// transport/sync/src/envelope_format.md §4:
//
//   block  := magic "CR", version 0x02, series_count uvarint, series...
//   series := device_id, measure_name (uvarint length + bytes), shard uvarint,
//             dimension_count uvarint, (name, value) pairs sorted by name,
//             attribute_count uvarint, (name, value) pairs sorted by name,
//             chunk_count uvarint, chunks (uvarint length + chunk bytes,
//             then the LSNs of the chunk's records as an integer sequence)
//
// Version 1 had no attributes and no LSNs; its records decode with LSN 0.
//
// Version 1 blocks (no attribute list; their dimensions were series
// metadata) are still read: their dimensions are taken as the identity, as
// the catalog's migration takes them.
//
// A chunk needs strictly ascending timestamps, but a batch may carry the same
// identity twice (a rewrite with a higher version, a retried write). The
// encoder therefore deals a series' records into layers: layer k holds the
// k-th record of each timestamp, so each layer is strictly ascending and the
// common case (no repeats) is one layer, one chunk.
#include "cairn/core/record_codec.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "chunk/chunk_codec.h"
#include "chunk/coding.h"
#include "chunk/integer_sequence.h"

namespace cairn {

using chunk_coding::ByteReader;
using chunk_coding::PutByte;
using chunk_coding::PutLengthPrefixed;
using chunk_coding::PutVarint;

namespace {

constexpr char kBlockMagic[2] = {'C', 'R'};
constexpr uint8_t kBlockVersion = 2;
// Version 1: no attribute list, no LSNs.
constexpr uint8_t kFirstBlockVersion = 1;
// The chunk header fields a block reader peeks at to charge a chunk against
// the limits before decoding it (chunk_format.md §3).
constexpr char kChunkMagic[2] = {'C', 'K'};
constexpr uint8_t kChunkVersion = 1;
constexpr uint64_t kMaxShard = INT32_MAX;

// A series of a block: (device, measure, shard, dimensions).
struct SeriesKey {
  std::string_view device_id, measure_name;
  int shard = 0;
  const TagMap* dimensions = nullptr;
  bool operator<(const SeriesKey& o) const {
    return std::tie(device_id, measure_name, shard, *dimensions) <
           std::tie(o.device_id, o.measure_name, o.shard, *o.dimensions);
  }
};

std::string DescribeSeries(std::string_view device_id, std::string_view measure_name, int shard,
                           const TagMap& dimensions) {
  std::string text = "series (" + std::string(device_id) + ", " + std::string(measure_name);
  for (const auto& [name, value] : dimensions) text += ", " + name + "=" + value;
  return text + ", shard " + std::to_string(shard) + ")";
}

// The decoder reports what the encoder would call InvalidArgument as
// Corruption: in a block, invalid content means damaged or forged bytes.
Status AsCorruption(const Status& status, std::string_view context) {
  if (status.ok()) return status;
  if (status.Is(StatusCode::kInvalidArgument)) {
    return Status::Corruption("record block: " + std::string(context) + ": " + status.message());
  }
  return status.WithContext(context);
}

// Dimensions and attributes follow the same limits (`what` names which).
Status ValidateTags(const TagMap& tags, const std::string& what) {
  if (tags.size() > kMaxDimensionsPerSeries) {
    return Status::InvalidArgument(std::to_string(tags.size()) + " " + what + "s; the limit is " +
                                   std::to_string(kMaxDimensionsPerSeries));
  }
  for (const auto& [name, value] : tags) {
    CAIRN_RETURN_IF_ERROR(ValidateIdentifier(what + " name", name, kMaxFieldNameBytes));
    // A value follows the identifier rules except that it may be empty.
    if (!value.empty()) {
      CAIRN_RETURN_IF_ERROR(ValidateIdentifier(what + " '" + name + "' value", value, kMaxDimensionBytes));
    }
  }
  return Status::Ok();
}

Status ValidateRow(const RecordRow& row) {
  if (row.shard < 0) return Status::InvalidArgument("shard " + std::to_string(row.shard) + " is negative");
  Record probe;
  probe.device_id = row.device_id;
  probe.measure_name = row.measure_name;
  probe.timestamp = row.timestamp;
  probe.fields = row.fields;
  probe.ttl = row.ttl;
  probe.version = row.version;
  return ValidateRecord(probe);
}

// How the encoder sees one series of the input.
struct SeriesPlan {
  const RecordRow* first = nullptr;  // names the series
  std::vector<size_t> record_indexes;
  std::map<std::string, FieldType> fields;  // the chunk schema, by name
  // The attributes of the series' last record: a series' attributes are
  // sent once, as they last were.
  const TagMap* attributes = nullptr;
};

Result<std::vector<SeriesPlan>> PlanBlock(std::span<const RecordRow> records, const RecordBlockLimits& limits) {
  if (records.size() > limits.max_records) {
    return Status::ResourceExhausted("record block of " + std::to_string(records.size()) +
                                     " records exceeds the limit of " + std::to_string(limits.max_records));
  }
  std::vector<SeriesPlan> plan;
  std::map<SeriesKey, size_t> series_index;
  uint64_t string_bytes = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    const RecordRow& row = records[i];
    Status status = ValidateRow(row);
    if (!status.ok()) return status.WithContext("record " + std::to_string(i));
    auto [it, inserted] =
        series_index.emplace(SeriesKey{row.device_id, row.measure_name, row.shard, &row.dimensions}, plan.size());
    if (inserted) {
      status = ValidateTags(row.dimensions, "dimension");
      if (!status.ok()) return status.WithContext("record " + std::to_string(i));
      plan.push_back(SeriesPlan{&row, {}, {}, nullptr});
    }
    SeriesPlan& series = plan[it->second];
    series.record_indexes.push_back(i);
    series.attributes = &row.attributes;
    for (const Field& field : row.fields) {
      const FieldType type = TypeOf(field.value);
      auto [field_it, added] = series.fields.emplace(field.name, type);
      if (!added && field_it->second != type) {
        return Status::InvalidArgument("record " + std::to_string(i) + ": field '" + field.name + "' is " +
                                       std::string(FieldTypeName(type)) + " but an earlier record of " +
                                       DescribeSeries(row.device_id, row.measure_name, row.shard,
                                                      row.dimensions) +
                                       " has it as " + std::string(FieldTypeName(field_it->second)));
      }
      if (const auto* text = std::get_if<std::string>(&field.value)) string_bytes += text->size();
    }
    if (series.fields.size() > kMaxChunkFields) {
      return Status::InvalidArgument(DescribeSeries(row.device_id, row.measure_name, row.shard, row.dimensions) +
                                     " has " +
                                     std::to_string(series.fields.size()) +
                                     " distinct fields; the limit is " + std::to_string(kMaxChunkFields));
    }
  }
  if (string_bytes > limits.max_string_bytes) {
    return Status::ResourceExhausted("record block holds " + std::to_string(string_bytes) +
                                     " bytes of strings; the limit is " +
                                     std::to_string(limits.max_string_bytes));
  }
  for (const SeriesPlan& series : plan) {
    Status status = ValidateTags(*series.attributes, "attribute");
    if (!status.ok()) {
      return status.WithContext(DescribeSeries(series.first->device_id, series.first->measure_name,
                                               series.first->shard, series.first->dimensions));
    }
  }
  uint64_t cells = 0;
  for (const SeriesPlan& series : plan) {
    cells +=
        static_cast<uint64_t>(series.record_indexes.size()) * std::max<uint64_t>(series.fields.size(), 1);
  }
  if (cells > limits.max_cells) {
    return Status::ResourceExhausted("record block of " + std::to_string(cells) +
                                     " cells (records x fields per series) exceeds the limit of " +
                                     std::to_string(limits.max_cells));
  }
  return plan;
}


// Encodes one series' records as chunks and appends their count and bytes.
Status EncodeSeriesChunks(std::span<const RecordRow> records, const SeriesPlan& series, std::string* out) {
  std::vector<ChunkField> schema;
  schema.reserve(series.fields.size());
  for (const auto& [name, type] : series.fields) schema.push_back(ChunkField{name, type});
  auto position_of = [&schema](const std::string& name) {
    return static_cast<size_t>(
        std::lower_bound(schema.begin(), schema.end(), name,
                         [](const ChunkField& field, const std::string& key) { return field.name < key; }) -
        schema.begin());
  };

  std::vector<size_t> order = series.record_indexes;
  std::stable_sort(order.begin(), order.end(),
                   [&records](size_t a, size_t b) { return records[a].timestamp < records[b].timestamp; });
  std::vector<std::vector<size_t>> layers;
  size_t layer = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    layer = (k > 0 && records[order[k]].timestamp == records[order[k - 1]].timestamp) ? layer + 1 : 0;
    if (layer == layers.size()) layers.emplace_back();
    layers[layer].push_back(order[k]);
  }

  const size_t records_per_chunk =
      std::min(kMaxChunkRecords, kMaxChunkCells / std::max<size_t>(schema.size(), 1));
  std::vector<std::string> chunks;
  std::vector<ChunkRecord> piece;
  std::vector<int64_t> lsns;
  for (const std::vector<size_t>& indexes : layers) {
    for (size_t begin = 0; begin < indexes.size(); begin += records_per_chunk) {
      const size_t end = std::min(indexes.size(), begin + records_per_chunk);
      piece.clear();
      lsns.clear();
      for (size_t k = begin; k < end; ++k) {
        const RecordRow& row = records[indexes[k]];
        lsns.push_back(static_cast<int64_t>(row.lsn));
        ChunkRecord& record = piece.emplace_back();
        record.timestamp = row.timestamp;
        record.version = row.version;
        record.ttl = row.ttl;
        record.values.resize(schema.size());
        for (const Field& field : row.fields) record.values[position_of(field.name)] = field.value;
      }
      Result<std::string> chunk = EncodeChunk(schema, piece, nullptr);
      if (!chunk.ok()) {
        return chunk.status().WithContext(DescribeSeries(series.first->device_id, series.first->measure_name,
                                                         series.first->shard, series.first->dimensions));
      }
      PutLengthPrefixed(&chunks.emplace_back(), *chunk);
      chunk_coding::EncodeIntegerSequence(lsns, &chunks.back());
    }
  }
  PutVarint(out, chunks.size());
  for (const std::string& chunk : chunks) out->append(chunk);
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Decoding

// Running totals checked against the limits.
struct DecodeBudget {
  const RecordBlockLimits& limits;
  uint64_t records = 0;
  uint64_t cells = 0;
  uint64_t string_bytes = 0;
};

// Reads the record and field counts of a chunk without decoding it, and
// charges them against the budget, so that a chunk whose few bytes stand for
// millions of cells is refused before it is expanded.
Status ChargeChunk(std::string_view chunk, DecodeBudget* budget) {
  ByteReader reader(chunk);
  std::string_view magic;
  uint8_t version = 0;
  uint64_t record_count = 0;
  uint64_t field_count = 0;
  if (!reader.ReadBytes(sizeof(kChunkMagic), &magic) || magic != std::string_view(kChunkMagic, 2) ||
      !reader.ReadByte(&version) || version != kChunkVersion || !reader.ReadVarint(&record_count) ||
      !reader.ReadVarint(&field_count)) {
    return Status::Corruption("record block: a chunk has a malformed header");
  }
  // The chunk decoder checks these bounds too; checking them here first keeps
  // the products below from overflowing.
  if (record_count == 0 || record_count > kMaxChunkRecords || field_count > kMaxChunkFields) {
    return Status::Corruption("record block: a chunk declares " + std::to_string(record_count) +
                              " records of " + std::to_string(field_count) + " fields");
  }
  budget->records += record_count;
  budget->cells += record_count * std::max<uint64_t>(field_count, 1);
  if (budget->records > budget->limits.max_records) {
    return Status::ResourceExhausted("record block holds more than " +
                                     std::to_string(budget->limits.max_records) + " records");
  }
  if (budget->cells > budget->limits.max_cells) {
    return Status::ResourceExhausted("record block holds more than " +
                                     std::to_string(budget->limits.max_cells) + " cells");
  }
  return Status::Ok();
}

Status ReadLengthPrefixed(ByteReader* reader, std::string_view what, uint64_t max_length,
                          std::string_view* out) {
  uint64_t length = 0;
  if (!reader->ReadVarint(&length)) return Status::Corruption("record block: truncated " + std::string(what));
  if (length > max_length) {
    return Status::Corruption("record block: " + std::string(what) + " of " + std::to_string(length) +
                              " bytes exceeds " + std::to_string(max_length));
  }
  if (!reader->ReadBytes(static_cast<size_t>(length), out)) {
    return Status::Corruption("record block: truncated " + std::string(what));
  }
  return Status::Ok();
}

struct DecodedSeriesHeader {
  std::string device_id;
  std::string measure_name;
  int shard = 0;
  TagMap dimensions;
  TagMap attributes;
};

// A tag list: count, then (name, value) pairs with strictly ascending names.
Status ReadTags(ByteReader* reader, const std::string& what, TagMap* tags) {
  uint64_t count = 0;
  if (!reader->ReadVarint(&count)) return Status::Corruption("record block: truncated " + what + " count");
  if (count > kMaxDimensionsPerSeries) {
    return Status::Corruption("record block: " + std::to_string(count) + " " + what + "s exceed " +
                              std::to_string(kMaxDimensionsPerSeries));
  }
  const std::string* previous_name = nullptr;
  for (uint64_t d = 0; d < count; ++d) {
    std::string_view name, value;
    CAIRN_RETURN_IF_ERROR(ReadLengthPrefixed(reader, what + " name", kMaxFieldNameBytes, &name));
    CAIRN_RETURN_IF_ERROR(ReadLengthPrefixed(reader, what + " value", kMaxDimensionBytes, &value));
    if (previous_name != nullptr && !(*previous_name < name)) {
      return Status::Corruption("record block: " + what + " names are not strictly ascending");
    }
    auto it = tags->emplace_hint(tags->end(), std::string(name), std::string(value));
    previous_name = &it->first;
  }
  return Status::Ok();
}

Status ReadSeriesHeader(ByteReader* reader, uint8_t version, DecodedSeriesHeader* header) {
  std::string_view device_id, measure_name;
  CAIRN_RETURN_IF_ERROR(ReadLengthPrefixed(reader, "device_id", kMaxDeviceIdBytes, &device_id));
  CAIRN_RETURN_IF_ERROR(ReadLengthPrefixed(reader, "measure_name", kMaxMeasureNameBytes, &measure_name));
  CAIRN_RETURN_IF_ERROR(
      AsCorruption(ValidateIdentifier("device_id", device_id, kMaxDeviceIdBytes), "series header"));
  CAIRN_RETURN_IF_ERROR(
      AsCorruption(ValidateIdentifier("measure_name", measure_name, kMaxMeasureNameBytes), "series header"));
  header->device_id = std::string(device_id);
  header->measure_name = std::string(measure_name);
  uint64_t shard = 0;
  if (!reader->ReadVarint(&shard)) return Status::Corruption("record block: truncated shard");
  if (shard > kMaxShard)
    return Status::Corruption("record block: shard " + std::to_string(shard) + " too large");
  header->shard = static_cast<int>(shard);
  CAIRN_RETURN_IF_ERROR(ReadTags(reader, "dimension", &header->dimensions));
  if (version >= 2) CAIRN_RETURN_IF_ERROR(ReadTags(reader, "attribute", &header->attributes));
  const std::string series =
      DescribeSeries(header->device_id, header->measure_name, header->shard, header->dimensions);
  CAIRN_RETURN_IF_ERROR(AsCorruption(ValidateTags(header->dimensions, "dimension"), series));
  return AsCorruption(ValidateTags(header->attributes, "attribute"), series);
}

// Decodes one chunk of a series into rows appended to `rows`, and then
// (`lsns`, version 2) the LSNs that follow it in `reader`.
Status DecodeSeriesChunk(std::string_view bytes, const DecodedSeriesHeader& header,
                         std::map<std::string, FieldType>* series_fields, DecodeBudget* budget, ByteReader* lsns,
                         std::vector<RecordRow>* rows) {
  CAIRN_RETURN_IF_ERROR(ChargeChunk(bytes, budget));
  const std::string series =
      DescribeSeries(header.device_id, header.measure_name, header.shard, header.dimensions);
  Result<DecodedChunk> decoded = DecodeChunk(bytes);
  if (!decoded.ok()) return AsCorruption(decoded.status(), series);
  DecodedChunk& chunk = *decoded;

  bool sorted_by_name = true;
  for (size_t c = 0; c < chunk.columns.size(); ++c) {
    const ChunkField& field = chunk.columns[c].field;
    auto [it, added] = series_fields->emplace(field.name, field.type);
    if (!added && it->second != field.type) {
      return Status::Corruption("record block: " + series + ": field '" + field.name +
                                "' changes type between chunks");
    }
    if (c > 0 && !(chunk.columns[c - 1].field.name < field.name)) sorted_by_name = false;
  }
  if (series_fields->size() > kMaxChunkFields) {
    return Status::Corruption("record block: " + series + " has more than " +
                              std::to_string(kMaxChunkFields) + " distinct fields");
  }
  std::vector<int64_t> chunk_lsns(chunk.size());
  if (lsns != nullptr) {
    Status read = chunk_coding::DecodeIntegerSequence(lsns, chunk_lsns);
    if (!read.ok()) return Status::Corruption("record block: " + series + ": LSNs: " + read.message());
  }

  for (size_t i = 0; i < chunk.size(); ++i) {
    Record probe;
    probe.device_id = header.device_id;
    probe.measure_name = header.measure_name;
    probe.timestamp = chunk.timestamps[i];
    probe.version = chunk.versions[i];
    probe.ttl = chunk.ttls[i];
    for (ChunkColumn& column : chunk.columns) {
      if (column.present[i] == 0) continue;
      Value& value = column.values[i];
      if (const auto* text = std::get_if<std::string>(&value)) budget->string_bytes += text->size();
      probe.fields.push_back(Field{column.field.name, std::move(value)});
    }
    if (budget->string_bytes > budget->limits.max_string_bytes) {
      return Status::ResourceExhausted("record block holds more than " +
                                       std::to_string(budget->limits.max_string_bytes) + " bytes of strings");
    }
    if (!sorted_by_name) {
      std::sort(probe.fields.begin(), probe.fields.end(),
                [](const Field& a, const Field& b) { return a.name < b.name; });
    }
    CAIRN_RETURN_IF_ERROR(
        AsCorruption(ValidateRecord(probe), series + " record at " + std::to_string(probe.timestamp)));
    RecordRow& row = rows->emplace_back();
    row.device_id = std::move(probe.device_id);
    row.measure_name = std::move(probe.measure_name);
    row.dimensions = header.dimensions;
    row.attributes = header.attributes;
    row.shard = header.shard;
    row.timestamp = probe.timestamp;
    row.version = probe.version;
    row.ttl = probe.ttl;
    row.fields = std::move(probe.fields);
    row.lsn = static_cast<uint64_t>(chunk_lsns[i]);
  }
  return Status::Ok();
}

}  // namespace

Status ValidateRecordBlock(std::span<const RecordRow> records, const RecordBlockLimits& limits) {
  return PlanBlock(records, limits).status();
}

Result<std::string> EncodeRecordBlock(std::span<const RecordRow> records,
                                      const RecordBlockLimits& limits) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<SeriesPlan> plan, PlanBlock(records, limits));
  std::string out;
  out.append(kBlockMagic, sizeof(kBlockMagic));
  PutByte(&out, kBlockVersion);
  PutVarint(&out, plan.size());
  for (const SeriesPlan& series : plan) {
    PutLengthPrefixed(&out, series.first->device_id);
    PutLengthPrefixed(&out, series.first->measure_name);
    PutVarint(&out, static_cast<uint64_t>(series.first->shard));
    for (const TagMap* tags : {&series.first->dimensions, series.attributes}) {
      PutVarint(&out, tags->size());
      for (const auto& [name, value] : *tags) {
        PutLengthPrefixed(&out, name);
        PutLengthPrefixed(&out, value);
      }
    }
    CAIRN_RETURN_IF_ERROR(EncodeSeriesChunks(records, series, &out));
  }
  return out;
}

Result<RecordBlock> DecodeRecordBlock(std::string_view bytes, const RecordBlockLimits& limits) {
  ByteReader reader(bytes);
  std::string_view magic;
  uint8_t version = 0;
  if (!reader.ReadBytes(sizeof(kBlockMagic), &magic) ||
      magic != std::string_view(kBlockMagic, sizeof(kBlockMagic))) {
    return Status::Corruption("record block: bad magic");
  }
  if (!reader.ReadByte(&version)) return Status::Corruption("record block: truncated format version");
  if (version != kBlockVersion && version != kFirstBlockVersion) {
    return Status::InvalidArgument("record block: unsupported format version " + std::to_string(version));
  }
  uint64_t series_count = 0;
  if (!reader.ReadVarint(&series_count)) return Status::Corruption("record block: truncated series count");
  // Every series holds at least one record.
  if (series_count > limits.max_records) {
    return Status::ResourceExhausted("record block declares " + std::to_string(series_count) +
                                     " series, more than the limit of " + std::to_string(limits.max_records) +
                                     " records");
  }

  RecordBlock block;
  DecodeBudget budget{limits};
  std::set<std::tuple<std::string, std::string, int, TagMap>> seen;
  std::vector<RecordRow> rows;
  for (uint64_t s = 0; s < series_count; ++s) {
    DecodedSeriesHeader header;
    CAIRN_RETURN_IF_ERROR(ReadSeriesHeader(&reader, version, &header));
    if (!seen.emplace(header.device_id, header.measure_name, header.shard, header.dimensions).second) {
      return Status::Corruption("record block: " +
                                DescribeSeries(header.device_id, header.measure_name, header.shard,
                                               header.dimensions) +
                                " appears twice");
    }
    uint64_t chunk_count = 0;
    if (!reader.ReadVarint(&chunk_count)) return Status::Corruption("record block: truncated chunk count");
    if (chunk_count == 0) return Status::Corruption("record block: a series without chunks");
    std::map<std::string, FieldType> series_fields;
    rows.clear();
    for (uint64_t c = 0; c < chunk_count; ++c) {
      std::string_view chunk;
      CAIRN_RETURN_IF_ERROR(ReadLengthPrefixed(&reader, "chunk", reader.remaining(), &chunk));
      CAIRN_RETURN_IF_ERROR(DecodeSeriesChunk(chunk, header, &series_fields, &budget,
                                              version == kBlockVersion ? &reader : nullptr, &rows));
    }
    std::stable_sort(rows.begin(), rows.end(),
                     [](const RecordRow& a, const RecordRow& b) { return a.timestamp < b.timestamp; });
    block.records.insert(block.records.end(), std::make_move_iterator(rows.begin()),
                         std::make_move_iterator(rows.end()));
  }
  if (!reader.empty()) {
    return Status::Corruption("record block: " + std::to_string(reader.remaining()) +
                              " unexpected bytes after the last series");
  }
  return block;
}

}  // namespace cairn
