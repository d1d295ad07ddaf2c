#include "storage/period_columns.h"

#include <charconv>

#include "chunk/integer_sequence.h"
#include "storage/flat_json.h"

namespace cairn::period_columns {

std::string EncodeFields(const std::vector<ChunkField>& fields) {
  std::string text = "{";
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) text.push_back(',');
    AppendJsonString(fields[i].name, &text);
    text.push_back(':');
    text += std::to_string(static_cast<int>(fields[i].type));
  }
  text.push_back('}');
  return text;
}

Result<std::vector<ChunkField>> DecodeFields(std::string_view text) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<FlatJsonMember> members, ParseFlatJsonObject(text));
  std::vector<ChunkField> fields;
  fields.reserve(members.size());
  for (FlatJsonMember& member : members) {
    const int64_t* code = std::get_if<int64_t>(&member.value);
    if (code == nullptr || *code < static_cast<int64_t>(FieldType::kDouble) ||
        *code > static_cast<int64_t>(FieldType::kTimestamp)) {
      return Status::Corruption("field '" + member.key + "' has no valid type code");
    }
    fields.push_back(ChunkField{std::move(member.key), static_cast<FieldType>(*code)});
  }
  return fields;
}

std::string EncodeDimensions(const std::map<std::string, std::string>& dimensions) {
  std::string text = "{";
  bool first = true;
  for (const auto& [name, value] : dimensions) {
    if (!first) text.push_back(',');
    first = false;
    AppendJsonString(name, &text);
    text.push_back(':');
    AppendJsonString(value, &text);
  }
  text.push_back('}');
  return text;
}

Result<std::map<std::string, std::string>> DecodeDimensions(std::string_view text) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<FlatJsonMember> members, ParseFlatJsonObject(text));
  std::map<std::string, std::string> dimensions;
  for (FlatJsonMember& member : members) {
    std::string* value = std::get_if<std::string>(&member.value);
    if (value == nullptr) return Status::Corruption("dimension '" + member.key + "' is not a string");
    dimensions[std::move(member.key)] = std::move(*value);
  }
  return dimensions;
}

Result<int64_t> ParseStoredInteger(const std::map<std::string, std::string>& meta, const std::string& key) {
  auto it = meta.find(key);
  if (it == meta.end()) return Status::Corruption("meta has no '" + key + "'");
  int64_t value = 0;
  const char* begin = it->second.data();
  const char* end = begin + it->second.size();
  auto [stop, error] = std::from_chars(begin, end, value);
  if (error != std::errc() || stop != end) {
    return Status::Corruption("meta '" + key + "' is not an integer: '" + it->second + "'");
  }
  return value;
}

// A chunk's LSNs (period_format.md, `lsns`): one per record, in the order of
// the chunk's records, as one integer sequence. Neighbouring records of a
// series were usually written a few LSNs apart, so the packed deltas take
// a few bits each.
std::string EncodeLsns(const std::vector<uint64_t>& lsns) {
  std::vector<int64_t> values(lsns.begin(), lsns.end());
  std::string out;
  chunk_coding::EncodeIntegerSequence(values, &out);
  return out;
}

Result<std::vector<uint64_t>> DecodeLsns(std::string_view bytes, const ChunkRow& chunk) {
  std::vector<int64_t> values(chunk.count);
  chunk_coding::ByteReader reader(bytes);
  Status status = chunk_coding::DecodeIntegerSequence(&reader, values);
  if (!status.ok()) return Status::Corruption("lsns: " + std::string(status.message()));
  if (!reader.empty()) return Status::Corruption("lsns: trailing bytes");
  std::vector<uint64_t> lsns;
  lsns.reserve(values.size());
  for (int64_t value : values) {
    uint64_t lsn = static_cast<uint64_t>(value);
    if (lsn < chunk.min_lsn || lsn > chunk.max_lsn) {
      return Status::Corruption("lsns: LSN " + std::to_string(lsn) + " outside [min_lsn, max_lsn]");
    }
    lsns.push_back(lsn);
  }
  return lsns;
}

}  // namespace cairn::period_columns
