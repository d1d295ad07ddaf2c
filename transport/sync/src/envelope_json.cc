// The JSON encoding of sync envelopes and receipts (sync_envelope.h,
// envelope_format.md beside this file): signed with an HMAC trailer and
// read back member by member, so that an unknown member is refused.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <utility>

#include "cairn/core/table.h"
#include "cairn/platform/crypto.h"
#include "cairn/sync/sync_envelope.h"
#include "cairn/text/json_value.h"
#include "cairn/text/json_writer.h"
#include "cairn/util/hex.h"
#include "envelope_codec.h"

namespace cairn {

using namespace envelope_detail;

namespace {

constexpr std::string_view kEnvelopeType = "cairn.sync.envelope";
constexpr std::string_view kReceiptType = "cairn.sync.receipt";

// The JSON signature trailer: `,"mac":"` + 64 hex digits + `"}`.
constexpr std::string_view kJsonMacOpening = ",\"mac\":\"";
constexpr std::string_view kJsonMacClosing = "\"}";
constexpr size_t kJsonTrailerBytes = kJsonMacOpening.size() + 2 * kMacBytes + kJsonMacClosing.size();

constexpr uint64_t kMaxShard = INT32_MAX;

using util::IsLowerHex;

// ---------------------------------------------------------------------------
// Signature

// `object` is a complete JSON object; returns it signed (envelope_format.md §2).
std::string SignJson(std::string object, std::string_view key) {
  object.pop_back();  // the closing brace
  const Sha256Digest mac = HmacSha256(key, object);
  object.append(kJsonMacOpening);
  object.append(util::HexEncode(mac));
  object.append(kJsonMacClosing);
  return object;
}

Status VerifyJsonMac(std::string_view payload, std::string_view key, std::string_view what) {
  if (payload.size() < kJsonTrailerBytes + 1) {
    return Status::Corruption(std::string(what) + ": " + std::to_string(payload.size()) +
                              " bytes is too short for a signed JSON message");
  }
  const std::string_view trailer = payload.substr(payload.size() - kJsonTrailerBytes);
  const std::string_view hex = trailer.substr(kJsonMacOpening.size(), 2 * kMacBytes);
  if (!trailer.starts_with(kJsonMacOpening) || !trailer.ends_with(kJsonMacClosing) || !IsLowerHex(hex)) {
    return Status::Corruption(std::string(what) +
                              ": does not end with ,\"mac\":\"<64 lowercase hex digits>\"}");
  }
  const Sha256Digest expected = HmacSha256(key, payload.substr(0, payload.size() - kJsonTrailerBytes));
  const std::string expected_hex = util::HexEncode(expected);
  if (!ConstantTimeEqual(AsBytes(expected_hex), AsBytes(hex))) {
    return Status::PermissionDenied(std::string(what) +
                                    ": MAC does not match (forged, altered, or another key)");
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// JSON helpers

void WriteHeaderMembers(JsonWriter* json, std::string_view type, const EnvelopeHeader& header) {
  json->Key("type");
  json->String(type);
  json->Key("version");
  json->Uint(kFormatVersion);
  json->Key("gateway_id");
  json->String(header.gateway_id);
  json->Key("table");
  json->String(header.table);
  json->Key("lane");
  json->String(SyncLaneName(header.lane));
  json->Key("batch_sequence");
  json->Uint(header.batch_sequence);
  json->Key("first_lsn");
  json->Uint(header.first_lsn);
  json->Key("last_lsn");
  json->Uint(header.last_lsn);
}

void WriteSeriesMembers(JsonWriter* json, std::string_view device_id, std::string_view measure_name,
                        int shard) {
  json->Key("device_id");
  json->String(device_id);
  json->Key("measure_name");
  json->String(measure_name);
  json->Key("shard");
  json->Int(shard);
}

// An object member name -> string value; left out when `tags` is empty, so
// a record without tags reads as it did before records carried them.
void WriteTags(JsonWriter* json, std::string_view member, const TagMap& tags) {
  if (tags.empty()) return;
  json->Key(member);
  json->BeginObject();
  for (const auto& [name, value] : tags) {
    json->Key(name);
    json->String(value);
  }
  json->EndObject();
}

void WriteValue(JsonWriter* json, const Value& value) {
  json->BeginObject();
  json->Key(FieldTypeName(TypeOf(value)));
  switch (TypeOf(value)) {
    case FieldType::kDouble:
      json->Double(std::get<double>(value));
      break;
    case FieldType::kInt64:
      json->Int(std::get<int64_t>(value));
      break;
    case FieldType::kBool:
      json->Bool(std::get<bool>(value));
      break;
    case FieldType::kString:
      json->String(std::get<std::string>(value));
      break;
    case FieldType::kTimestamp:
      json->Int(std::get<Timestamp>(value).unix_nanos);
      break;
  }
  json->EndObject();
}

// Reads the members of a JSON object by name, and at the end rejects any
// member it was not asked for.
class MemberReader {
 public:
  MemberReader(const JsonValue& object, std::string what) : object_(object), what_(std::move(what)) {}

  // Accepts member `name` without reading it.
  void Allow(std::string_view name) { known_.push_back(name); }

  const JsonValue* Optional(std::string_view name) {
    known_.push_back(name);
    return object_.Find(name);
  }

  Result<const JsonValue*> Required(std::string_view name) {
    const JsonValue* value = Optional(name);
    if (value == nullptr) return Error("lacks member \"" + std::string(name) + "\"");
    return value;
  }

  Result<std::string> String(std::string_view name) {
    CAIRN_ASSIGN_OR_RETURN(const JsonValue* value, Required(name));
    if (!value->is_string()) return Error("member \"" + std::string(name) + "\" is not a string");
    return value->text();
  }

  Result<uint64_t> Unsigned(std::string_view name) {
    CAIRN_ASSIGN_OR_RETURN(const JsonValue* value, Required(name));
    return UnsignedOf(*value, name);
  }

  Result<uint64_t> OptionalUnsigned(std::string_view name) {
    const JsonValue* value = Optional(name);
    if (value == nullptr) return uint64_t{0};
    return UnsignedOf(*value, name);
  }

  Result<int64_t> Signed(std::string_view name) {
    CAIRN_ASSIGN_OR_RETURN(const JsonValue* value, Required(name));
    return SignedOf(*value, name);
  }

  Result<int64_t> OptionalSigned(std::string_view name) {
    const JsonValue* value = Optional(name);
    if (value == nullptr) return int64_t{0};
    return SignedOf(*value, name);
  }

  // Call last: an unknown member is an error.
  Status CheckNoOtherMembers() const {
    for (const auto& [name, value] : object_.members()) {
      if (std::find(known_.begin(), known_.end(), name) == known_.end()) {
        return Error("has unknown member \"" + name + "\"");
      }
    }
    return Status::Ok();
  }

  Status Error(const std::string& problem) const { return Status::Corruption(what_ + " " + problem); }

 private:
  // Integers must be written as integers: no sign for unsigned ones, no
  // fraction, no exponent, and within 64 bits.
  Result<uint64_t> UnsignedOf(const JsonValue& value, std::string_view name) const {
    uint64_t number = 0;
    const std::string& text = value.text();
    if (value.is_number() && !text.empty() && text.find_first_not_of("0123456789") == std::string::npos) {
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
      if (error == std::errc() && end == text.data() + text.size()) return number;
    }
    return Error("member \"" + std::string(name) + "\" is not an unsigned 64-bit integer");
  }

  Result<int64_t> SignedOf(const JsonValue& value, std::string_view name) const {
    int64_t number = 0;
    const std::string& text = value.text();
    const size_t digits_start = (!text.empty() && text[0] == '-') ? 1 : 0;
    if (value.is_number() && text.size() > digits_start &&
        text.find_first_not_of("0123456789", digits_start) == std::string::npos) {
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
      if (error == std::errc() && end == text.data() + text.size()) return number;
    }
    return Error("member \"" + std::string(name) + "\" is not a signed 64-bit integer");
  }

  const JsonValue& object_;
  std::string what_;
  std::vector<std::string_view> known_;
};

// Parses a verified JSON message and checks its type and version.
Result<JsonValue> ParseJsonMessage(std::string_view payload, std::string_view expected_type,
                                   std::string_view what) {
  Result<JsonValue> parsed = JsonValue::Parse(payload);
  if (!parsed.ok()) return Status::Corruption(std::string(what) + ": " + parsed.status().message());
  if (!parsed->is_object()) return Status::Corruption(std::string(what) + ": not a JSON object");
  const JsonValue* type = parsed->Find("type");
  if (type == nullptr || !type->is_string()) {
    return Status::Corruption(std::string(what) + ": lacks its string member \"type\"");
  }
  if (type->text() != expected_type) {
    return Status::Corruption(std::string(what) + ": is a \"" + type->text() + "\", not a \"" +
                              std::string(expected_type) + "\"");
  }
  const JsonValue* version = parsed->Find("version");
  if (version == nullptr || !version->is_number()) {
    return Status::Corruption(std::string(what) + ": lacks its number member \"version\"");
  }
  if (version->text() != "1") {
    return Status::InvalidArgument(std::string(what) + ": unsupported format version " + version->text());
  }
  return parsed;
}

Status ReadHeaderMembers(MemberReader* reader, EnvelopeHeader* header) {
  CAIRN_RETURN_IF_ERROR(reader->Required("type").status());
  CAIRN_RETURN_IF_ERROR(reader->Required("version").status());
  CAIRN_ASSIGN_OR_RETURN(header->gateway_id, reader->String("gateway_id"));
  CAIRN_ASSIGN_OR_RETURN(header->table, reader->String("table"));
  CAIRN_ASSIGN_OR_RETURN(std::string lane, reader->String("lane"));
  Result<SyncLane> parsed_lane = ParseSyncLane(lane);
  if (!parsed_lane.ok()) return reader->Error("has unknown lane \"" + lane + "\"");
  header->lane = *parsed_lane;
  CAIRN_ASSIGN_OR_RETURN(header->batch_sequence, reader->Unsigned("batch_sequence"));
  CAIRN_ASSIGN_OR_RETURN(header->first_lsn, reader->Unsigned("first_lsn"));
  CAIRN_ASSIGN_OR_RETURN(header->last_lsn, reader->Unsigned("last_lsn"));
  return Status::Ok();
}

Result<int> ReadShard(MemberReader* reader) {
  CAIRN_ASSIGN_OR_RETURN(uint64_t shard, reader->OptionalUnsigned("shard"));
  if (shard > kMaxShard) return reader->Error("has shard " + std::to_string(shard) + ", too large");
  return static_cast<int>(shard);
}

Result<Value> ReadTypedValue(const JsonValue& json, const std::string& field_name) {
  MemberReader reader(json, "field \"" + field_name + "\"");
  if (!json.is_object() || json.members().size() != 1) {
    return reader.Error("is not an object with one member named after its type");
  }
  const auto& [type_name, value] = json.members().front();
  if (type_name == "double") {
    if (!value.is_number()) return reader.Error("is not a number");
    double number = 0;
    const std::string& text = value.text();
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error != std::errc() || end != text.data() + text.size()) return reader.Error("is not a double");
    return Value(number);
  }
  if (type_name == "int64") {
    CAIRN_ASSIGN_OR_RETURN(int64_t number, reader.Signed("int64"));
    return Value(number);
  }
  if (type_name == "timestamp") {
    CAIRN_ASSIGN_OR_RETURN(int64_t number, reader.Signed("timestamp"));
    return Value(Timestamp{number});
  }
  if (type_name == "bool") {
    if (value.kind() != JsonValue::Kind::kBool) return reader.Error("is not a bool");
    return Value(value.boolean());
  }
  if (type_name == "string") {
    if (!value.is_string()) return reader.Error("is not a string");
    return Value(value.text());
  }
  return reader.Error("has unknown type \"" + type_name + "\"");
}

// Reads the optional object member `member` of name -> string value into
// `tags`, each name and value checked as the record block checks them
// (`what` names one entry in messages).
Status ReadTags(MemberReader* reader, std::string_view member, const std::string& what, TagMap* tags) {
  const JsonValue* object = reader->Optional(member);
  if (object == nullptr) return Status::Ok();
  if (!object->is_object()) return reader->Error("member \"" + std::string(member) + "\" is not an object");
  if (object->members().size() > kMaxDimensionsPerSeries) {
    return reader->Error("has " + std::to_string(object->members().size()) + " " + std::string(member) +
                         "; the limit is " + std::to_string(kMaxDimensionsPerSeries));
  }
  for (const auto& [name, value] : object->members()) {
    if (!value.is_string()) return reader->Error(what + " \"" + name + "\" is not a string");
    Status valid = ValidateIdentifier(what + " name", name, kMaxFieldNameBytes);
    if (valid.ok() && !value.text().empty()) {
      valid = ValidateIdentifier(what + " '" + name + "' value", value.text(), kMaxDimensionBytes);
    }
    if (!valid.ok()) return reader->Error(valid.message());
    if (!tags->emplace(name, value.text()).second)
      return reader->Error("repeats " + what + " \"" + name + "\"");
  }
  return Status::Ok();
}

Result<RecordRow> ReadRecord(const JsonValue& json, size_t index) {
  MemberReader reader(json, "envelope: record " + std::to_string(index));
  if (!json.is_object()) return reader.Error("is not an object");
  RecordRow row;
  CAIRN_ASSIGN_OR_RETURN(row.device_id, reader.String("device_id"));
  CAIRN_ASSIGN_OR_RETURN(row.measure_name, reader.String("measure_name"));
  CAIRN_ASSIGN_OR_RETURN(row.shard, ReadShard(&reader));
  CAIRN_RETURN_IF_ERROR(ReadTags(&reader, "dimensions", "dimension", &row.dimensions));
  CAIRN_RETURN_IF_ERROR(ReadTags(&reader, "attributes", "attribute", &row.attributes));
  CAIRN_ASSIGN_OR_RETURN(row.timestamp, reader.Signed("timestamp"));
  CAIRN_ASSIGN_OR_RETURN(row.version, reader.OptionalUnsigned("version"));
  CAIRN_ASSIGN_OR_RETURN(row.ttl, reader.OptionalSigned("ttl"));
  CAIRN_ASSIGN_OR_RETURN(row.lsn, reader.OptionalUnsigned("lsn"));
  CAIRN_ASSIGN_OR_RETURN(const JsonValue* fields, reader.Required("fields"));
  if (!fields->is_object()) return reader.Error("member \"fields\" is not an object");
  row.fields.reserve(fields->members().size());
  for (const auto& [name, value] : fields->members()) {
    Result<Value> typed = ReadTypedValue(value, name);
    if (!typed.ok()) return typed.status().WithContext("envelope: record " + std::to_string(index));
    row.fields.push_back(Field{name, std::move(typed).value()});
  }
  std::sort(row.fields.begin(), row.fields.end(),
            [](const Field& a, const Field& b) { return a.name < b.name; });
  CAIRN_RETURN_IF_ERROR(reader.CheckNoOtherMembers());
  return row;
}

// One entry of the top-level "dimensions" list that envelopes of older
// gateways carry (envelope_format.md §5.1): the dimensions of one
// (device_id, measure_name, shard), which are now its records' identity.
struct LegacySeriesDimensions {
  std::string device_id;
  std::string measure_name;
  int shard = 0;
  TagMap dimensions;
};

Result<LegacySeriesDimensions> ReadLegacyDimensions(const JsonValue& json, size_t index) {
  MemberReader reader(json, "envelope: dimensions entry " + std::to_string(index));
  if (!json.is_object()) return reader.Error("is not an object");
  LegacySeriesDimensions entry;
  CAIRN_ASSIGN_OR_RETURN(entry.device_id, reader.String("device_id"));
  CAIRN_ASSIGN_OR_RETURN(entry.measure_name, reader.String("measure_name"));
  CAIRN_ASSIGN_OR_RETURN(entry.shard, ReadShard(&reader));
  CAIRN_RETURN_IF_ERROR(ReadTags(&reader, "dimensions", "dimension", &entry.dimensions));
  if (entry.dimensions.empty()) return reader.Error("member \"dimensions\" is not a non-empty object");
  CAIRN_RETURN_IF_ERROR(reader.CheckNoOtherMembers());
  return entry;
}

// Gives the records of each series named in an older gateway's top-level
// "dimensions" list those dimensions, as the identity of its records. The
// records are indexed by series once, so a long list costs no more than a
// short one per entry.
Status ApplyLegacyDimensions(const JsonValue& list, std::vector<RecordRow>* records) {
  using SeriesKey = std::tuple<std::string_view, std::string_view, int>;
  std::map<SeriesKey, std::vector<RecordRow*>> series;
  for (RecordRow& row : *records)
    series[SeriesKey(row.device_id, row.measure_name, row.shard)].push_back(&row);
  std::set<std::tuple<std::string, std::string, int>> named;
  for (size_t i = 0; i < list.elements().size(); ++i) {
    CAIRN_ASSIGN_OR_RETURN(LegacySeriesDimensions entry, ReadLegacyDimensions(list.elements()[i], i));
    const std::string context = "envelope: dimensions entry " + std::to_string(i);
    if (!named.emplace(entry.device_id, entry.measure_name, entry.shard).second) {
      return Status::Corruption(context + " names a series named before");
    }
    const auto found = series.find(SeriesKey(entry.device_id, entry.measure_name, entry.shard));
    if (found == series.end())
      return Status::Corruption(context + " names a series without records in the batch");
    for (RecordRow* row : found->second) {
      if (!row->dimensions.empty()) {
        return Status::Corruption(context + ": the records of its series carry dimensions themselves");
      }
      row->dimensions = entry.dimensions;
    }
  }
  return Status::Ok();
}

}  // namespace

namespace envelope_detail {

// ---------------------------------------------------------------------------
// JSON envelope

Result<std::string> EncodeJsonEnvelope(const EnvelopeHeader& header, std::span<const RecordRow> records,
                                       std::string_view key, const EnvelopeLimits& limits) {
  CAIRN_RETURN_IF_ERROR(ValidateRecordBlock(records, limits.records));
  JsonWriter json;
  json.BeginObject();
  WriteHeaderMembers(&json, kEnvelopeType, header);
  json.Key("record_count");
  json.Uint(records.size());
  json.Key("records");
  json.BeginArray();
  for (const RecordRow& row : records) {
    json.BeginObject();
    WriteSeriesMembers(&json, row.device_id, row.measure_name, row.shard);
    WriteTags(&json, "dimensions", row.dimensions);
    WriteTags(&json, "attributes", row.attributes);
    json.Key("timestamp");
    json.Int(row.timestamp);
    json.Key("version");
    json.Uint(row.version);
    json.Key("ttl");
    json.Int(row.ttl);
    json.Key("lsn");
    json.Uint(row.lsn);
    json.Key("fields");
    json.BeginObject();
    for (const Field& field : row.fields) {
      json.Key(field.name);
      WriteValue(&json, field.value);
    }
    json.EndObject();
    json.EndObject();
  }
  json.EndArray();
  json.EndObject();
  return SignJson(json.text(), key);
}

Result<DecodedEnvelope> DecodeJsonEnvelope(std::string_view payload, std::string_view key,
                                           const EnvelopeLimits& limits) {
  CAIRN_RETURN_IF_ERROR(VerifyJsonMac(payload, key, "envelope"));
  CAIRN_ASSIGN_OR_RETURN(JsonValue json, ParseJsonMessage(payload, kEnvelopeType, "envelope"));
  MemberReader reader(json, "envelope:");
  DecodedEnvelope envelope;
  envelope.encoding = EnvelopeEncoding::kJson;
  CAIRN_RETURN_IF_ERROR(ReadHeaderMembers(&reader, &envelope.header));
  CAIRN_ASSIGN_OR_RETURN(uint64_t record_count, reader.Unsigned("record_count"));
  CAIRN_ASSIGN_OR_RETURN(const JsonValue* records, reader.Required("records"));
  if (records->kind() != JsonValue::Kind::kArray) return reader.Error("member \"records\" is not an array");
  const JsonValue* dimensions = reader.Optional("dimensions");
  if (dimensions != nullptr && dimensions->kind() != JsonValue::Kind::kArray) {
    return reader.Error("member \"dimensions\" is not an array");
  }
  reader.Allow("mac");  // verified before parsing
  CAIRN_RETURN_IF_ERROR(reader.CheckNoOtherMembers());
  CAIRN_RETURN_IF_ERROR(AsCorruption(ValidateHeader(envelope.header), "envelope"));
  CAIRN_RETURN_IF_ERROR(AsCorruption(ValidateRecordCount(envelope.header, record_count), "envelope"));
  if (records->elements().size() != record_count) {
    return reader.Error("declares " + std::to_string(record_count) + " records and holds " +
                        std::to_string(records->elements().size()));
  }
  if (record_count > limits.records.max_records) {
    return Status::ResourceExhausted("envelope of " + std::to_string(record_count) +
                                     " records exceeds the limit of " +
                                     std::to_string(limits.records.max_records));
  }
  envelope.records.reserve(records->elements().size());
  for (size_t i = 0; i < records->elements().size(); ++i) {
    CAIRN_ASSIGN_OR_RETURN(RecordRow row, ReadRecord(records->elements()[i], i));
    envelope.records.push_back(std::move(row));
  }
  if (dimensions != nullptr) CAIRN_RETURN_IF_ERROR(ApplyLegacyDimensions(*dimensions, &envelope.records));
  CAIRN_RETURN_IF_ERROR(AsCorruption(ValidateRecordBlock(envelope.records, limits.records), "envelope"));
  return envelope;
}

Result<std::string> EncodeJsonReceipt(const SyncReceipt& receipt, std::string_view key) {
  const EnvelopeHeader& batch = receipt.batch;
  JsonWriter json;
  json.BeginObject();
  WriteHeaderMembers(&json, kReceiptType, batch);
  json.Key("status");
  json.String(ReceiptStatusName(receipt.status));
  json.Key("reason");
  json.String(receipt.reason);
  json.EndObject();
  return SignJson(json.text(), key);
}

Result<SyncReceipt> DecodeJsonReceipt(std::string_view payload, std::string_view key) {
  CAIRN_RETURN_IF_ERROR(VerifyJsonMac(payload, key, "receipt"));
  CAIRN_ASSIGN_OR_RETURN(JsonValue json, ParseJsonMessage(payload, kReceiptType, "receipt"));
  MemberReader reader(json, "receipt:");
  SyncReceipt receipt;
  CAIRN_RETURN_IF_ERROR(ReadHeaderMembers(&reader, &receipt.batch));
  CAIRN_ASSIGN_OR_RETURN(std::string status, reader.String("status"));
  if (status == ReceiptStatusName(ReceiptStatus::kOk)) {
    receipt.status = ReceiptStatus::kOk;
  } else if (status == ReceiptStatusName(ReceiptStatus::kRejected)) {
    receipt.status = ReceiptStatus::kRejected;
  } else {
    return reader.Error("has unknown status \"" + status + "\"");
  }
  if (const JsonValue* reason = reader.Optional("reason")) {
    if (!reason->is_string()) return reader.Error("member \"reason\" is not a string");
    receipt.reason = reason->text();
  }
  reader.Allow("mac");  // verified before parsing
  CAIRN_RETURN_IF_ERROR(reader.CheckNoOtherMembers());
  CAIRN_RETURN_IF_ERROR(AsCorruption(ValidateHeader(receipt.batch), "receipt"));
  CAIRN_RETURN_IF_ERROR(AsCorruption(ValidateReason(receipt), "receipt"));
  return receipt;
}

}  // namespace envelope_detail
}  // namespace cairn
