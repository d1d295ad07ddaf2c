#include "engine/write_batch.h"

#include <cstring>
#include <unordered_map>

#include "chunk/coding.h"

namespace cairn {

using chunk_coding::ByteReader;
using chunk_coding::PutFixed64;
using chunk_coding::PutSignedVarint;
using chunk_coding::PutVarint;

namespace {

constexpr uint8_t kWriteBatchVersion = 1;

// Assigns dictionary indexes in first-use order.
class Dictionary {
 public:
  uint64_t Index(std::string_view s) {
    auto [it, inserted] = index_.try_emplace(s, strings_.size());
    if (inserted) strings_.push_back(s);
    return it->second;
  }
  const std::vector<std::string_view>& strings() const { return strings_; }

 private:
  std::unordered_map<std::string_view, uint64_t> index_;
  std::vector<std::string_view> strings_;
};

}  // namespace

std::string EncodeWriteBatch(const std::vector<LoggedRecord>& records) {
  Dictionary dictionary;
  std::string body;
  body.reserve(records.size() * 48);
  PutVarint(&body, records.size());
  int64_t previous_timestamp = 0;
  for (const LoggedRecord& logged : records) {
    const Record& r = *logged.record;
    PutVarint(&body, dictionary.Index(*logged.table));
    PutVarint(&body, dictionary.Index(r.device_id));
    PutVarint(&body, dictionary.Index(r.measure_name));
    // Unsigned subtraction: timestamps span the whole int64 range.
    PutSignedVarint(&body, static_cast<int64_t>(static_cast<uint64_t>(r.timestamp) -
                                                static_cast<uint64_t>(previous_timestamp)));
    previous_timestamp = r.timestamp;
    PutVarint(&body, r.version);
    PutSignedVarint(&body, logged.ttl);
    PutVarint(&body, r.fields.size());
    for (const Field& field : r.fields) {
      PutVarint(&body, dictionary.Index(field.name));
      body.push_back(static_cast<char>(TypeOf(field.value)));
      std::visit(
          [&](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, double>) {
              uint64_t bits;
              std::memcpy(&bits, &v, sizeof bits);
              PutFixed64(&body, bits);
            } else if constexpr (std::is_same_v<T, int64_t>) {
              PutSignedVarint(&body, v);
            } else if constexpr (std::is_same_v<T, bool>) {
              body.push_back(v ? 1 : 0);
            } else if constexpr (std::is_same_v<T, std::string>) {
              PutVarint(&body, dictionary.Index(v));
            } else if constexpr (std::is_same_v<T, Timestamp>) {
              PutSignedVarint(&body, v.unix_nanos);
            }
          },
          field.value);
    }
    PutVarint(&body, r.dimensions.size());
    for (const auto& [key, value] : r.dimensions) {
      PutVarint(&body, dictionary.Index(key));
      PutVarint(&body, dictionary.Index(value));
    }
  }
  std::string out;
  size_t dictionary_bytes = 0;
  for (std::string_view s : dictionary.strings()) dictionary_bytes += s.size() + 2;
  out.reserve(1 + 5 + dictionary_bytes + body.size());
  out.push_back(static_cast<char>(kWriteBatchVersion));
  PutVarint(&out, dictionary.strings().size());
  for (std::string_view s : dictionary.strings()) {
    PutVarint(&out, s.size());
    out.append(s);
  }
  out.append(body);
  return out;
}

Result<std::vector<DecodedWriteRecord>> DecodeWriteBatch(std::string_view payload) {
  ByteReader reader(payload);
  const auto corrupt = [&](std::string_view what) {
    return Status::Corruption("write batch: " + std::string(what) + " at byte " +
                              std::to_string(payload.size() - reader.remaining()));
  };
  uint8_t version;
  if (!reader.ReadByte(&version)) return corrupt("empty payload");
  if (version != kWriteBatchVersion) return corrupt("unknown version " + std::to_string(version));
  uint64_t string_count;
  // Each string takes at least one byte, which bounds a forged count.
  if (!reader.ReadVarint(&string_count) || string_count > reader.remaining()) return corrupt("bad dictionary size");
  std::vector<std::string_view> strings;
  strings.reserve(static_cast<size_t>(string_count));
  for (uint64_t i = 0; i < string_count; ++i) {
    uint64_t length;
    std::string_view s;
    if (!reader.ReadVarint(&length) || length > reader.remaining() ||
        !reader.ReadBytes(static_cast<size_t>(length), &s)) {
      return corrupt("truncated dictionary string");
    }
    strings.push_back(s);
  }
  const auto read_string = [&](std::string* out) {
    uint64_t index;
    if (!reader.ReadVarint(&index) || index >= strings.size()) return false;
    out->assign(strings[static_cast<size_t>(index)]);
    return true;
  };
  uint64_t record_count;
  if (!reader.ReadVarint(&record_count) || record_count > reader.remaining()) return corrupt("bad record count");
  std::vector<DecodedWriteRecord> records(static_cast<size_t>(record_count));
  int64_t previous_timestamp = 0;
  for (DecodedWriteRecord& decoded : records) {
    Record& r = decoded.record;
    int64_t delta;
    uint64_t field_count, dimension_count;
    if (!read_string(&decoded.table) || !read_string(&r.device_id) || !read_string(&r.measure_name)) {
      return corrupt("bad series name index");
    }
    if (!reader.ReadSignedVarint(&delta) || !reader.ReadVarint(&r.version) || !reader.ReadSignedVarint(&r.ttl)) {
      return corrupt("truncated record header");
    }
    r.timestamp = static_cast<int64_t>(static_cast<uint64_t>(previous_timestamp) + static_cast<uint64_t>(delta));
    previous_timestamp = r.timestamp;
    if (!reader.ReadVarint(&field_count) || field_count > kMaxFieldsPerRecord) return corrupt("bad field count");
    r.fields.resize(static_cast<size_t>(field_count));
    for (Field& field : r.fields) {
      uint8_t type;
      if (!read_string(&field.name) || !reader.ReadByte(&type)) return corrupt("truncated field");
      switch (static_cast<FieldType>(type)) {
        case FieldType::kDouble: {
          uint64_t bits;
          if (!reader.ReadFixed64(&bits)) return corrupt("truncated double");
          double d;
          std::memcpy(&d, &bits, sizeof d);
          field.value = d;
          break;
        }
        case FieldType::kInt64: {
          int64_t v;
          if (!reader.ReadSignedVarint(&v)) return corrupt("truncated int64");
          field.value = v;
          break;
        }
        case FieldType::kBool: {
          uint8_t b;
          if (!reader.ReadByte(&b) || b > 1) return corrupt("bad bool");
          field.value = b == 1;
          break;
        }
        case FieldType::kString: {
          std::string s;
          if (!read_string(&s)) return corrupt("bad string index");
          field.value = std::move(s);
          break;
        }
        case FieldType::kTimestamp: {
          int64_t v;
          if (!reader.ReadSignedVarint(&v)) return corrupt("truncated timestamp");
          field.value = Timestamp{v};
          break;
        }
        default:
          return corrupt("unknown field type " + std::to_string(type));
      }
    }
    if (!reader.ReadVarint(&dimension_count) || dimension_count > kMaxDimensionsPerSeries) {
      return corrupt("bad dimension count");
    }
    for (uint64_t i = 0; i < dimension_count; ++i) {
      std::string key, value;
      if (!read_string(&key) || !read_string(&value)) return corrupt("bad dimension index");
      r.dimensions.emplace(std::move(key), std::move(value));
    }
  }
  if (!reader.empty()) return corrupt("trailing bytes");
  return records;
}

}  // namespace cairn
