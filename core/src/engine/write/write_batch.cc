#include "engine/write/write_batch.h"

#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <tuple>
#include <unordered_map>

#include "chunk/coding.h"

namespace cairn {

using chunk_coding::ByteReader;
using chunk_coding::PutFixed64;
using chunk_coding::PutSignedVarint;
using chunk_coding::PutVarint;

namespace {

constexpr uint8_t kWriteBatchVersion = 1;

// Record flags.
constexpr uint8_t kHasVersion = 1, kHasTtl = 2, kHasDimensions = 4, kKnownFlags = 7;

// Field value tags: the FieldType codes, plus decimal doubles.
constexpr uint8_t kTagDecimalBase = 16;
constexpr int kMaxDecimalExponent = 15;
constexpr double kPowersOfTen[kMaxDecimalExponent + 1] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                                          1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
constexpr int kMaxTimeExponent = 18;

// The smallest exponent e with v == k / 10^e exactly, or -1.
int DecimalExponent(double v, int64_t* mantissa) {
  if (v == 0 && std::signbit(v)) return -1;  // -0.0 would come back as +0.0
  for (int e = 0; e <= kMaxDecimalExponent; ++e) {
    const double scaled = v * kPowersOfTen[e];
    if (!(std::fabs(scaled) < 9007199254740992.0)) return -1;  // 2^53: beyond it k is inexact
    const int64_t k = static_cast<int64_t>(std::nearbyint(scaled));
    if (static_cast<double>(k) / kPowersOfTen[e] == v) {
      *mantissa = k;
      return e;
    }
  }
  return -1;
}

int64_t PowerOfTen(int exponent) {
  int64_t p = 1;
  for (int i = 0; i < exponent; ++i) p *= 10;
  return p;
}

// Assigns dictionary indexes in first-use order.
template <typename Key>
class Dictionary {
 public:
  uint64_t Index(const Key& key) {
    auto [it, inserted] = index_.try_emplace(key, keys_.size());
    if (inserted) keys_.push_back(key);
    return it->second;
  }
  const std::vector<Key>& keys() const { return keys_; }

 private:
  std::map<Key, uint64_t> index_;
  std::vector<Key> keys_;
};

}  // namespace

std::string EncodeWriteBatch(const std::vector<LoggedRecord>& records) {
  Dictionary<std::string_view> strings;
  Dictionary<std::tuple<uint64_t, uint64_t, uint64_t>> series;
  // Sensors report in ms or s: dividing every timestamp by the largest
  // common power of ten makes the deltas a byte or two.
  int time_exponent = kMaxTimeExponent;
  for (const LoggedRecord& logged : records) {
    while (time_exponent > 0 && logged.record->timestamp % PowerOfTen(time_exponent) != 0) --time_exponent;
  }
  const int64_t time_unit = PowerOfTen(time_exponent);

  std::string body;
  body.reserve(records.size() * 24);
  PutVarint(&body, records.size());
  int64_t previous_units = 0;
  for (const LoggedRecord& logged : records) {
    const Record& r = *logged.record;
    PutVarint(&body, series.Index({strings.Index(*logged.table), strings.Index(r.device_id),
                                   strings.Index(r.measure_name)}));
    const int64_t units = r.timestamp / time_unit;
    // Unsigned subtraction: timestamps span the whole int64 range.
    PutSignedVarint(
        &body, static_cast<int64_t>(static_cast<uint64_t>(units) - static_cast<uint64_t>(previous_units)));
    previous_units = units;
    const uint8_t flags = (r.version != 0 ? kHasVersion : 0) | (logged.ttl != 0 ? kHasTtl : 0) |
                          (!r.dimensions.empty() ? kHasDimensions : 0);
    body.push_back(static_cast<char>(flags));
    if (flags & kHasVersion) PutVarint(&body, r.version);
    if (flags & kHasTtl) PutSignedVarint(&body, logged.ttl);
    PutVarint(&body, r.fields.size());
    for (const Field& field : r.fields) {
      PutVarint(&body, strings.Index(field.name));
      std::visit(
          [&](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, double>) {
              int64_t mantissa = 0;
              const int exponent = DecimalExponent(v, &mantissa);
              if (exponent >= 0) {
                body.push_back(static_cast<char>(kTagDecimalBase + exponent));
                PutSignedVarint(&body, mantissa);
              } else {
                body.push_back(static_cast<char>(FieldType::kDouble));
                uint64_t bits;
                std::memcpy(&bits, &v, sizeof bits);
                PutFixed64(&body, bits);
              }
            } else if constexpr (std::is_same_v<T, int64_t>) {
              body.push_back(static_cast<char>(FieldType::kInt64));
              PutSignedVarint(&body, v);
            } else if constexpr (std::is_same_v<T, bool>) {
              body.push_back(static_cast<char>(FieldType::kBool));
              body.push_back(v ? 1 : 0);
            } else if constexpr (std::is_same_v<T, std::string>) {
              body.push_back(static_cast<char>(FieldType::kString));
              PutVarint(&body, strings.Index(v));
            } else if constexpr (std::is_same_v<T, Timestamp>) {
              body.push_back(static_cast<char>(FieldType::kTimestamp));
              PutSignedVarint(&body, v.unix_nanos);
            }
          },
          field.value);
    }
    if (flags & kHasDimensions) {
      PutVarint(&body, r.dimensions.size());
      for (const auto& [key, value] : r.dimensions) {
        PutVarint(&body, strings.Index(key));
        PutVarint(&body, strings.Index(value));
      }
    }
  }

  std::string out;
  out.push_back(static_cast<char>(kWriteBatchVersion));
  PutVarint(&out, strings.keys().size());
  for (std::string_view s : strings.keys()) {
    PutVarint(&out, s.size());
    out.append(s);
  }
  PutVarint(&out, series.keys().size());
  for (const auto& [table, device, measure] : series.keys()) {
    PutVarint(&out, table);
    PutVarint(&out, device);
    PutVarint(&out, measure);
  }
  out.push_back(static_cast<char>(time_exponent));
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
  // Every entry takes at least one byte, which bounds a forged count.
  uint64_t string_count;
  if (!reader.ReadVarint(&string_count) || string_count > reader.remaining())
    return corrupt("bad dictionary size");
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
  const auto read_index = [&](uint64_t size, uint64_t* index) {
    return reader.ReadVarint(index) && *index < size;
  };
  uint64_t series_count;
  if (!reader.ReadVarint(&series_count) || series_count > reader.remaining())
    return corrupt("bad series count");
  std::vector<std::array<uint64_t, 3>> series(static_cast<size_t>(series_count));
  for (auto& s : series) {
    for (uint64_t& index : s) {
      if (!read_index(strings.size(), &index)) return corrupt("bad series name index");
    }
  }
  uint8_t time_exponent;
  if (!reader.ReadByte(&time_exponent) || time_exponent > kMaxTimeExponent)
    return corrupt("bad time exponent");
  const int64_t time_unit = PowerOfTen(time_exponent);
  const auto read_string = [&](std::string* out) {
    uint64_t index;
    if (!read_index(strings.size(), &index)) return false;
    out->assign(strings[static_cast<size_t>(index)]);
    return true;
  };

  uint64_t record_count;
  if (!reader.ReadVarint(&record_count) || record_count > reader.remaining())
    return corrupt("bad record count");
  std::vector<DecodedWriteRecord> records(static_cast<size_t>(record_count));
  int64_t previous_units = 0;
  for (DecodedWriteRecord& decoded : records) {
    Record& r = decoded.record;
    uint64_t series_index, field_count;
    int64_t delta;
    uint8_t flags;
    if (!read_index(series.size(), &series_index)) return corrupt("bad series index");
    const auto& names = series[static_cast<size_t>(series_index)];
    decoded.table.assign(strings[static_cast<size_t>(names[0])]);
    r.device_id.assign(strings[static_cast<size_t>(names[1])]);
    r.measure_name.assign(strings[static_cast<size_t>(names[2])]);
    if (!reader.ReadSignedVarint(&delta) || !reader.ReadByte(&flags) || (flags & ~kKnownFlags) != 0) {
      return corrupt("bad record header");
    }
    const int64_t units =
        static_cast<int64_t>(static_cast<uint64_t>(previous_units) + static_cast<uint64_t>(delta));
    previous_units = units;
    if (__builtin_mul_overflow(units, time_unit, &r.timestamp)) return corrupt("timestamp out of range");
    if ((flags & kHasVersion) && !reader.ReadVarint(&r.version)) return corrupt("truncated version");
    if ((flags & kHasTtl) && !reader.ReadSignedVarint(&r.ttl)) return corrupt("truncated ttl");
    if (!reader.ReadVarint(&field_count) || field_count > kMaxFieldsPerRecord)
      return corrupt("bad field count");
    r.fields.resize(static_cast<size_t>(field_count));
    for (Field& field : r.fields) {
      uint8_t tag;
      if (!read_string(&field.name) || !reader.ReadByte(&tag)) return corrupt("truncated field");
      if (tag >= kTagDecimalBase && tag <= kTagDecimalBase + kMaxDecimalExponent) {
        int64_t mantissa;
        if (!reader.ReadSignedVarint(&mantissa)) return corrupt("truncated decimal double");
        field.value = static_cast<double>(mantissa) / kPowersOfTen[tag - kTagDecimalBase];
        continue;
      }
      switch (static_cast<FieldType>(tag)) {
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
          return corrupt("unknown field tag " + std::to_string(tag));
      }
    }
    if (flags & kHasDimensions) {
      uint64_t dimension_count;
      if (!reader.ReadVarint(&dimension_count) || dimension_count > kMaxDimensionsPerSeries) {
        return corrupt("bad dimension count");
      }
      for (uint64_t i = 0; i < dimension_count; ++i) {
        std::string key, value;
        if (!read_string(&key) || !read_string(&value)) return corrupt("bad dimension index");
        r.dimensions.emplace(std::move(key), std::move(value));
      }
    }
  }
  if (!reader.empty()) return corrupt("trailing bytes");
  return records;
}

}  // namespace cairn
