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

// The largest e in 0..kMaxTimeExponent such that every timestamp is a
// multiple of 10^e. Sensors report in ms or s: dividing every timestamp by
// that unit makes the deltas a byte or two.
int CommonTimeExponent(const std::vector<LoggedRecord>& records) {
  int time_exponent = kMaxTimeExponent;
  for (const LoggedRecord& logged : records) {
    while (time_exponent > 0 && logged.record->timestamp % PowerOfTen(time_exponent) != 0) --time_exponent;
  }
  return time_exponent;
}

// Builds the record section (the bytes after the time exponent), filling the
// dictionaries as names are first used; the header is written afterwards
// because it needs the complete dictionaries.
class BatchBodyEncoder {
 public:
  BatchBodyEncoder(int64_t time_unit, size_t record_count) : time_unit_(time_unit) {
    body_.reserve(record_count * 24);
    PutVarint(&body_, record_count);
  }

  void AddRecord(const LoggedRecord& logged) {
    const Record& r = *logged.record;
    PutVarint(&body_, series_.Index({strings_.Index(*logged.table), strings_.Index(r.device_id),
                                     strings_.Index(r.measure_name)}));
    const int64_t units = r.timestamp / time_unit_;
    // Unsigned subtraction: timestamps span the whole int64 range.
    PutSignedVarint(
        &body_, static_cast<int64_t>(static_cast<uint64_t>(units) - static_cast<uint64_t>(previous_units_)));
    previous_units_ = units;
    const uint8_t flags = (r.version != 0 ? kHasVersion : 0) | (logged.ttl != 0 ? kHasTtl : 0) |
                          (!r.dimensions.empty() ? kHasDimensions : 0);
    body_.push_back(static_cast<char>(flags));
    if (flags & kHasVersion) PutVarint(&body_, r.version);
    if (flags & kHasTtl) PutSignedVarint(&body_, logged.ttl);
    PutVarint(&body_, r.fields.size());
    for (const Field& field : r.fields) {
      PutVarint(&body_, strings_.Index(field.name));
      std::visit([&](const auto& v) { PutValue(v); }, field.value);
    }
    if (flags & kHasDimensions) {
      PutVarint(&body_, r.dimensions.size());
      for (const auto& [key, value] : r.dimensions) {
        PutVarint(&body_, strings_.Index(key));
        PutVarint(&body_, strings_.Index(value));
      }
    }
  }

  // The whole payload: header, dictionaries, then the records added so far.
  std::string Finish(int time_exponent) const {
    std::string out;
    out.push_back(static_cast<char>(kWriteBatchVersion));
    PutVarint(&out, strings_.keys().size());
    for (std::string_view s : strings_.keys()) {
      PutVarint(&out, s.size());
      out.append(s);
    }
    PutVarint(&out, series_.keys().size());
    for (const auto& [table, device, measure] : series_.keys()) {
      PutVarint(&out, table);
      PutVarint(&out, device);
      PutVarint(&out, measure);
    }
    out.push_back(static_cast<char>(time_exponent));
    out.append(body_);
    return out;
  }

 private:
  void PutTag(FieldType type) { body_.push_back(static_cast<char>(type)); }

  // A field's tag and value (the "tag, value" table of the format).
  void PutValue(std::monostate) {}
  void PutValue(double v) {
    int64_t mantissa = 0;
    const int exponent = DecimalExponent(v, &mantissa);
    if (exponent >= 0) {
      body_.push_back(static_cast<char>(kTagDecimalBase + exponent));
      PutSignedVarint(&body_, mantissa);
    } else {
      PutTag(FieldType::kDouble);
      uint64_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      PutFixed64(&body_, bits);
    }
  }
  void PutValue(int64_t v) {
    PutTag(FieldType::kInt64);
    PutSignedVarint(&body_, v);
  }
  void PutValue(bool v) {
    PutTag(FieldType::kBool);
    body_.push_back(v ? 1 : 0);
  }
  void PutValue(const std::string& v) {
    PutTag(FieldType::kString);
    PutVarint(&body_, strings_.Index(v));
  }
  void PutValue(Timestamp v) {
    PutTag(FieldType::kTimestamp);
    PutSignedVarint(&body_, v.unix_nanos);
  }

  const int64_t time_unit_;
  Dictionary<std::string_view> strings_;
  Dictionary<std::tuple<uint64_t, uint64_t, uint64_t>> series_;
  std::string body_;
  int64_t previous_units_ = 0;
};

// Reads one payload front to back. Every step returns Corruption naming what
// was wrong and the byte offset reached when the check failed.
class BatchDecoder {
 public:
  explicit BatchDecoder(std::string_view payload) : payload_(payload), reader_(payload) {}

  Status ReadHeader() {
    uint8_t version;
    if (!reader_.ReadByte(&version)) return Corrupt("empty payload");
    if (version != kWriteBatchVersion) return Corrupt("unknown version " + std::to_string(version));
    return Status::Ok();
  }

  // The string dictionary, the series triples and the time exponent.
  Status ReadDictionaries() {
    // Every entry takes at least one byte, which bounds a forged count.
    uint64_t string_count;
    if (!reader_.ReadVarint(&string_count) || string_count > reader_.remaining())
      return Corrupt("bad dictionary size");
    strings_.reserve(static_cast<size_t>(string_count));
    for (uint64_t i = 0; i < string_count; ++i) {
      uint64_t length;
      std::string_view s;
      if (!reader_.ReadVarint(&length) || length > reader_.remaining() ||
          !reader_.ReadBytes(static_cast<size_t>(length), &s)) {
        return Corrupt("truncated dictionary string");
      }
      strings_.push_back(s);
    }
    uint64_t series_count;
    if (!reader_.ReadVarint(&series_count) || series_count > reader_.remaining())
      return Corrupt("bad series count");
    series_.resize(static_cast<size_t>(series_count));
    for (auto& s : series_) {
      for (uint64_t& index : s) {
        if (!ReadIndex(strings_.size(), &index)) return Corrupt("bad series name index");
      }
    }
    uint8_t time_exponent;
    if (!reader_.ReadByte(&time_exponent) || time_exponent > kMaxTimeExponent)
      return Corrupt("bad time exponent");
    time_unit_ = PowerOfTen(time_exponent);
    return Status::Ok();
  }

  // The record count, every record, and the check that nothing follows.
  Status ReadRecords(std::vector<DecodedWriteRecord>* records) {
    uint64_t record_count;
    if (!reader_.ReadVarint(&record_count) || record_count > reader_.remaining())
      return Corrupt("bad record count");
    records->resize(static_cast<size_t>(record_count));
    for (DecodedWriteRecord& decoded : *records) {
      CAIRN_RETURN_IF_ERROR(ReadRecord(&decoded));
    }
    if (!reader_.empty()) return Corrupt("trailing bytes");
    return Status::Ok();
  }

 private:
  Status Corrupt(std::string_view what) const {
    return Status::Corruption("write batch: " + std::string(what) + " at byte " +
                              std::to_string(payload_.size() - reader_.remaining()));
  }

  bool ReadIndex(uint64_t size, uint64_t* index) { return reader_.ReadVarint(index) && *index < size; }

  bool ReadString(std::string* out) {
    uint64_t index;
    if (!ReadIndex(strings_.size(), &index)) return false;
    out->assign(strings_[static_cast<size_t>(index)]);
    return true;
  }

  Status ReadRecord(DecodedWriteRecord* decoded) {
    Record& r = decoded->record;
    uint64_t series_index, field_count;
    int64_t delta;
    uint8_t flags;
    if (!ReadIndex(series_.size(), &series_index)) return Corrupt("bad series index");
    const auto& names = series_[static_cast<size_t>(series_index)];
    decoded->table.assign(strings_[static_cast<size_t>(names[0])]);
    r.device_id.assign(strings_[static_cast<size_t>(names[1])]);
    r.measure_name.assign(strings_[static_cast<size_t>(names[2])]);
    if (!reader_.ReadSignedVarint(&delta) || !reader_.ReadByte(&flags) || (flags & ~kKnownFlags) != 0) {
      return Corrupt("bad record header");
    }
    const int64_t units =
        static_cast<int64_t>(static_cast<uint64_t>(previous_units_) + static_cast<uint64_t>(delta));
    previous_units_ = units;
    if (__builtin_mul_overflow(units, time_unit_, &r.timestamp)) return Corrupt("timestamp out of range");
    if ((flags & kHasVersion) && !reader_.ReadVarint(&r.version)) return Corrupt("truncated version");
    if ((flags & kHasTtl) && !reader_.ReadSignedVarint(&r.ttl)) return Corrupt("truncated ttl");
    if (!reader_.ReadVarint(&field_count) || field_count > kMaxFieldsPerRecord)
      return Corrupt("bad field count");
    r.fields.resize(static_cast<size_t>(field_count));
    for (Field& field : r.fields) {
      CAIRN_RETURN_IF_ERROR(ReadField(&field));
    }
    if (flags & kHasDimensions) return ReadDimensions(&r.dimensions);
    return Status::Ok();
  }

  Status ReadField(Field* field) {
    uint8_t tag;
    if (!ReadString(&field->name) || !reader_.ReadByte(&tag)) return Corrupt("truncated field");
    if (tag >= kTagDecimalBase && tag <= kTagDecimalBase + kMaxDecimalExponent) {
      int64_t mantissa;
      if (!reader_.ReadSignedVarint(&mantissa)) return Corrupt("truncated decimal double");
      field->value = static_cast<double>(mantissa) / kPowersOfTen[tag - kTagDecimalBase];
      return Status::Ok();
    }
    switch (static_cast<FieldType>(tag)) {
      case FieldType::kDouble: {
        uint64_t bits;
        if (!reader_.ReadFixed64(&bits)) return Corrupt("truncated double");
        double d;
        std::memcpy(&d, &bits, sizeof d);
        field->value = d;
        return Status::Ok();
      }
      case FieldType::kInt64: {
        int64_t v;
        if (!reader_.ReadSignedVarint(&v)) return Corrupt("truncated int64");
        field->value = v;
        return Status::Ok();
      }
      case FieldType::kBool: {
        uint8_t b;
        if (!reader_.ReadByte(&b) || b > 1) return Corrupt("bad bool");
        field->value = b == 1;
        return Status::Ok();
      }
      case FieldType::kString: {
        std::string s;
        if (!ReadString(&s)) return Corrupt("bad string index");
        field->value = std::move(s);
        return Status::Ok();
      }
      case FieldType::kTimestamp: {
        int64_t v;
        if (!reader_.ReadSignedVarint(&v)) return Corrupt("truncated timestamp");
        field->value = Timestamp{v};
        return Status::Ok();
      }
      default:
        return Corrupt("unknown field tag " + std::to_string(tag));
    }
  }

  Status ReadDimensions(TagMap* dimensions) {
    uint64_t dimension_count;
    if (!reader_.ReadVarint(&dimension_count) || dimension_count > kMaxDimensionsPerSeries) {
      return Corrupt("bad dimension count");
    }
    for (uint64_t i = 0; i < dimension_count; ++i) {
      std::string key, value;
      if (!ReadString(&key) || !ReadString(&value)) return Corrupt("bad dimension index");
      dimensions->emplace(std::move(key), std::move(value));
    }
    return Status::Ok();
  }

  const std::string_view payload_;
  ByteReader reader_;
  std::vector<std::string_view> strings_;
  std::vector<std::array<uint64_t, 3>> series_;
  int64_t time_unit_ = 1;
  int64_t previous_units_ = 0;
};

}  // namespace

std::string EncodeWriteBatch(const std::vector<LoggedRecord>& records) {
  const int time_exponent = CommonTimeExponent(records);
  BatchBodyEncoder encoder(PowerOfTen(time_exponent), records.size());
  for (const LoggedRecord& logged : records) encoder.AddRecord(logged);
  return encoder.Finish(time_exponent);
}

Result<std::vector<DecodedWriteRecord>> DecodeWriteBatch(std::string_view payload) {
  BatchDecoder decoder(payload);
  std::vector<DecodedWriteRecord> records;
  CAIRN_RETURN_IF_ERROR(decoder.ReadHeader());
  CAIRN_RETURN_IF_ERROR(decoder.ReadDictionaries());
  CAIRN_RETURN_IF_ERROR(decoder.ReadRecords(&records));
  return records;
}

}  // namespace cairn
