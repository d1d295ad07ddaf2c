// Random, reproducible write workloads for crash-safety tests.
//
// A WorkloadGenerator draws write batches that look like a gateway's traffic:
// a small pool of devices and multi-measure records, timestamps mostly
// increasing per series with some out-of-order ones, exact duplicates,
// re-versions (higher, equal, lower), ttls on some records, every field type
// with its extremes (int64 limits, -0.0, denormals, 4 KiB strings, NUL bytes
// in strings), and a few invalid records (NaN, infinities, empty or
// control-character identifiers, bad UTF-8 ...) that the engine must refuse
// one by one without failing the batch.
//
// Every draw comes from one seeded generator with fixed-width integer
// arithmetic, so a seed gives the same workload on x86-64, aarch64 and armhf.
//
// Header-only for the same reason as reference_model.h.
//
// Thread-safety: none.
#pragma once

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cairn/core/record.h"

#include "crash_rng.h"
#include "reference_model.h"

namespace cairn::crash {

inline constexpr int64_t kNanosPerSecond = 1'000'000'000;

// Reads a positive integer from the environment, or `fallback` when unset or
// malformed; lets a developer run longer than the bounded default.
inline uint64_t EnvironmentCount(const char* name, uint64_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (end == nullptr || *end != '\0' || value == 0) return fallback;
  return static_cast<uint64_t>(value);
}

// How the values of a field are drawn.
enum class ValueStyle : uint8_t {
  kSensorDouble,  // two-decimal readings around a level: what the codec sees most
  kAnyDouble,     // finite doubles of every kind: -0.0, denormals, limits, random bit patterns
  kSmallInt,      // small counters (aggregations sum these without overflow)
  kExtremeInt,    // int64 limits and random 64-bit values
  kBool,
  kText,     // strings: empty, UTF-8, NUL bytes, newlines, up to the 4 KiB limit
  kInstant,  // Timestamp values including 0 and the int64 limits
};

struct FieldSpec {
  const char* name;
  ValueStyle style;
  bool required;
};

struct MeasureSpec {
  const char* name;
  std::vector<FieldSpec> fields;
};

// Every measure carries a required numeric field "value" that aggregations
// use; the others are optional so that records differ in shape.
inline const std::vector<MeasureSpec>& MeasureSpecs() {
  static const std::vector<MeasureSpec> specs = {
      {"env#temperature",
       {{"value", ValueStyle::kSensorDouble, true},
        {"humidity", ValueStyle::kSensorDouble, false},
        {"label", ValueStyle::kText, false},
        {"ok", ValueStyle::kBool, false}}},
      {"env#pressure",
       {{"value", ValueStyle::kSensorDouble, true},
        {"bits", ValueStyle::kAnyDouble, false},
        {"raw", ValueStyle::kExtremeInt, false},
        {"sampled_at", ValueStyle::kInstant, false}}},
      {"power",
       {{"value", ValueStyle::kSmallInt, true},
        {"note", ValueStyle::kText, false},
        {"peak", ValueStyle::kExtremeInt, false}}},
      {"status#door",
       {{"value", ValueStyle::kSmallInt, true},
        {"open", ValueStyle::kBool, false},
        {"reason", ValueStyle::kText, false}}},
  };
  return specs;
}

inline const MeasureSpec* FindMeasureSpec(const std::string& name) {
  for (const MeasureSpec& spec : MeasureSpecs()) {
    if (name == spec.name) return &spec;
  }
  return nullptr;
}

inline const std::vector<std::string>& DevicePool() {
  static const std::vector<std::string> devices = {"gw-1", "sensor-02", "sens\xC3\xB6r-3", "rack/4#a", "d5"};
  return devices;
}

// One generated record and whether the engine must accept it.
struct GeneratedRecord {
  Record record;
  bool valid = true;
  std::string why_invalid;  // for failure messages
};

class WorkloadGenerator {
 public:
  // Timestamps are drawn no earlier than now - window_nanos so that they stay
  // inside the table's retention.
  WorkloadGenerator(uint64_t seed, int64_t window_nanos) : rng_(seed), window_nanos_(window_nanos) {}

  Rng& rng() { return rng_; }

  // Draws a batch. `model` holds the acknowledged state and `avoid` the
  // identities whose state is uncertain (an interrupted write touched them):
  // the batch neither rewrites nor reuses those, so every outcome stays
  // predictable. New identities also avoid every identity already in the
  // model so that an expired record is never rewritten (whether the version
  // rule applies to an expired record is not part of the contract).
  std::vector<GeneratedRecord> NextBatch(const ReferenceModel& model, const std::set<Identity>& avoid,
                                         int64_t now) {
    size_t size = static_cast<size_t>(rng_.Between(1, 24));
    if (rng_.Percent(5)) size = static_cast<size_t>(rng_.Between(100, 300));
    std::vector<GeneratedRecord> batch;
    std::set<Identity> fresh_in_batch;
    for (size_t i = 0; i < size; ++i) {
      const int kind = static_cast<int>(rng_.Between(0, 99));
      if (kind < 4) {
        batch.push_back(Invalid(now));
      } else if (kind < 8 && !batch.empty()) {
        // The same record again within the batch: a client retrying inside
        // one request.
        GeneratedRecord again = batch[rng_.Index(batch.size())];
        batch.push_back(std::move(again));
      } else if (kind < 22) {
        std::optional<GeneratedRecord> rewrite = Rewrite(model, avoid, now);
        if (rewrite) {
          batch.push_back(std::move(*rewrite));
        } else {
          batch.push_back(Fresh(model, avoid, &fresh_in_batch, now));
        }
      } else {
        batch.push_back(Fresh(model, avoid, &fresh_in_batch, now));
      }
    }
    return batch;
  }

  // A ttl (absolute seconds) for some records: between one second and three
  // hours after now, so that clock advances expire some of them. Zero (none)
  // for most.
  int64_t MaybeTtl(int64_t now) {
    if (!rng_.Percent(15)) return 0;
    return now / kNanosPerSecond + rng_.Between(1, 3 * 3600);
  }

  // Fields for a record of `spec`: the required ones and a random subset of
  // the others.
  std::vector<Field> Fields(const MeasureSpec& spec) {
    std::vector<Field> fields;
    for (const FieldSpec& field : spec.fields) {
      if (field.required || rng_.Percent(40)) fields.push_back(Field{field.name, DrawValue(field.style)});
    }
    // Callers may send fields in any order; the engine returns them sorted.
    if (fields.size() > 1 && rng_.Percent(50)) std::swap(fields.front(), fields.back());
    return fields;
  }

  Value DrawValue(ValueStyle style) {
    switch (style) {
      case ValueStyle::kSensorDouble: {
        const int64_t hundredths = rng_.Between(-4000, 12000);
        return static_cast<double>(hundredths) / 100.0;
      }
      case ValueStyle::kAnyDouble: {
        switch (rng_.Between(0, 11)) {
          case 0:
            return -0.0;
          case 1:
            return 0.0;
          case 2:
            return DBL_MAX;
          case 3:
            return -DBL_MAX;
          case 4:
            return DBL_MIN;
          case 5:
            return std::numeric_limits<double>::denorm_min();
          case 6:
            return -1e-300;
          case 7:
            return 3.141592653589793;
          default: {
            // A random bit pattern, redrawn until finite.
            for (;;) {
              const uint64_t bits = rng_.Next();
              double d;
              std::memcpy(&d, &bits, sizeof d);
              if (std::isfinite(d)) return d;
            }
          }
        }
      }
      case ValueStyle::kSmallInt:
        return rng_.Between(-1000, 100000);
      case ValueStyle::kExtremeInt: {
        switch (rng_.Between(0, 6)) {
          case 0:
            return std::numeric_limits<int64_t>::min();
          case 1:
            return std::numeric_limits<int64_t>::max();
          case 2:
            return int64_t{0};
          case 3:
            return int64_t{-1};
          case 4:
            return std::numeric_limits<int64_t>::min() + 1;
          default:
            return static_cast<int64_t>(rng_.Next());
        }
      }
      case ValueStyle::kBool:
        return rng_.Percent(50);
      case ValueStyle::kText: {
        switch (rng_.Between(0, 9)) {
          case 0:
            return std::string();
          case 1:
            return std::string("caf\xC3\xA9 \xE2\x9C\x93 \xF0\x9F\x94\xA5");
          case 2:
            return std::string("line one\nline two\ttab");
          case 3:
            return std::string("nul\0inside", 10);
          case 4:
            return std::string(kMaxStringValueBytes, 'x');
          case 5: {
            // Exactly at the limit with two-byte characters.
            std::string s;
            while (s.size() + 2 <= kMaxStringValueBytes) s += "\xC3\xA9";
            return s;
          }
          default: {
            std::string s;
            const int64_t length = rng_.Between(1, 40);
            for (int64_t k = 0; k < length; ++k) s.push_back(static_cast<char>('a' + rng_.Between(0, 25)));
            return s;
          }
        }
      }
      case ValueStyle::kInstant: {
        switch (rng_.Between(0, 4)) {
          case 0:
            return Timestamp{0};
          case 1:
            return Timestamp{std::numeric_limits<int64_t>::max()};
          case 2:
            return Timestamp{std::numeric_limits<int64_t>::min()};
          default:
            return Timestamp{rng_.Between(0, int64_t{4'000'000'000} * kNanosPerSecond)};
        }
      }
    }
    return std::monostate{};
  }

 private:
  // A series' dimensions. Records of the first measure carry a `sensor` tag
  // half of the time, so that one device and measure hold several series
  // and readings at one timestamp told apart by it; the other measures have
  // none, which keeps the number of series (and the run's length, under
  // qemu too) close to what it was before tags were identity.
  TagMap DrawDimensions(const MeasureSpec& spec) {
    TagMap dimensions;
    if (&spec != &MeasureSpecs().front() || rng_.Percent(50)) return dimensions;
    dimensions.emplace("sensor", rng_.Percent(50) ? "a" : "b");
    return dimensions;
  }

  // Some writes carry the table's attribute tag (crash::kAttributeTag),
  // which must not change the series they belong to.
  TagMap WithMaybeAttribute(TagMap dimensions) {
    if (rng_.Percent(25)) dimensions.emplace(kAttributeTag, rng_.Percent(50) ? "1.0" : "1.1");
    return dimensions;
  }

  // A record with an identity the model has never held.
  GeneratedRecord Fresh(const ReferenceModel& model, const std::set<Identity>& avoid,
                        std::set<Identity>* fresh_in_batch, int64_t now) {
    const std::string& device = DevicePool()[rng_.Index(DevicePool().size())];
    const MeasureSpec& spec = MeasureSpecs()[rng_.Index(MeasureSpecs().size())];
    const int64_t lowest = now - window_nanos_;
    int64_t& cursor = cursors_[{device, spec.name}];
    if (cursor < lowest) cursor = lowest + rng_.Between(0, window_nanos_ / 2);
    int64_t timestamp;
    if (rng_.Percent(80)) {
      // In order: a little after the series' previous reading.
      timestamp = cursor + rng_.Between(1'000'000, 90 * kNanosPerSecond);
      if (timestamp > now) timestamp = now - rng_.Between(0, 10 * kNanosPerSecond);
      cursor = std::max(cursor, timestamp);
    } else {
      // Out of order: anywhere in the window, often in an older period.
      timestamp = now - rng_.Between(0, window_nanos_);
    }
    Identity identity{device, spec.name, timestamp, DrawDimensions(spec)};
    while (model.Find(identity) != nullptr || avoid.count(identity) != 0 ||
           fresh_in_batch->count(identity) != 0) {
      --identity.timestamp;  // backwards keeps it at or before now
    }
    fresh_in_batch->insert(identity);
    GeneratedRecord generated;
    generated.record.device_id = device;
    generated.record.measure_name = spec.name;
    generated.record.timestamp = identity.timestamp;
    generated.record.dimensions = WithMaybeAttribute(identity.dimensions);
    generated.record.fields = Fields(spec);
    generated.record.ttl = MaybeTtl(now);
    const int64_t version_draw = rng_.Between(0, 9);
    generated.record.version = version_draw < 6 ? 0 : static_cast<uint64_t>(version_draw);
    return generated;
  }

  // A new version (higher, equal or lower) of a visible acknowledged record,
  // or nothing when there is none to pick.
  std::optional<GeneratedRecord> Rewrite(const ReferenceModel& model, const std::set<Identity>& avoid,
                                         int64_t now) {
    if (model.records().empty()) return std::nullopt;
    // Walk from a random starting point to the first eligible identity.
    const size_t start = rng_.Index(model.records().size());
    auto it = model.records().begin();
    std::advance(it, static_cast<std::ptrdiff_t>(start));
    for (size_t tried = 0; tried < model.records().size(); ++tried, ++it) {
      if (it == model.records().end()) it = model.records().begin();
      if (!IsVisible(it->second.ttl, now) || avoid.count(it->first) != 0) continue;
      const Identity& identity = it->first;
      const StoredRecord& stored = it->second;
      const MeasureSpec* spec = FindMeasureSpec(identity.measure_name);
      if (spec == nullptr) continue;
      GeneratedRecord generated;
      generated.record.device_id = identity.device_id;
      generated.record.measure_name = identity.measure_name;
      generated.record.timestamp = identity.timestamp;
      generated.record.dimensions = WithMaybeAttribute(identity.dimensions);
      generated.record.fields = Fields(*spec);
      generated.record.ttl = MaybeTtl(now);
      const int64_t draw = rng_.Between(0, 99);
      if (draw < 50 || (draw >= 85 && stored.version == 0)) {
        generated.record.version = stored.version + static_cast<uint64_t>(rng_.Between(1, 3));
      } else if (draw < 85) {
        generated.record.version = stored.version;
        if (draw < 67) {
          // A verbatim retry of what is stored.
          generated.record.fields = stored.fields;
          generated.record.ttl = stored.ttl;
        }
      } else {
        generated.record.version = stored.version - 1;
      }
      return generated;
    }
    return std::nullopt;
  }

  // A record that fails validation, each kind named for the failure message.
  GeneratedRecord Invalid(int64_t now) {
    GeneratedRecord generated;
    generated.valid = false;
    Record& record = generated.record;
    record.device_id = DevicePool()[rng_.Index(DevicePool().size())];
    record.measure_name = "env#temperature";
    record.timestamp = now - rng_.Between(0, window_nanos_);
    record.fields = {Field{"value", 20.5}};
    switch (rng_.Between(0, 15)) {
      case 0:
        record.fields[0].value = std::numeric_limits<double>::quiet_NaN();
        generated.why_invalid = "NaN";
        break;
      case 1:
        record.fields[0].value = std::numeric_limits<double>::infinity();
        generated.why_invalid = "+Inf";
        break;
      case 2:
        record.fields[0].value = -std::numeric_limits<double>::infinity();
        generated.why_invalid = "-Inf";
        break;
      case 3:
        record.device_id.clear();
        generated.why_invalid = "empty device id";
        break;
      case 4:
        record.device_id = "dev\x01ice";
        generated.why_invalid = "C0 control in device id";
        break;
      case 5:
        record.measure_name = "env\n";
        generated.why_invalid = "newline in measure name";
        break;
      case 6:
        record.device_id = "dev\x7F";
        generated.why_invalid = "DEL in device id";
        break;
      case 7:
        record.device_id = std::string(kMaxDeviceIdBytes + 1, 'd');
        generated.why_invalid = "device id over 128 bytes";
        break;
      case 8:
        record.device_id = "dev\xC0\xAF";
        generated.why_invalid = "overlong UTF-8 in device id";
        break;
      case 9:
        record.fields.push_back(Field{"value", 1.0});
        generated.why_invalid = "duplicate field name";
        break;
      case 10:
        record.fields.clear();
        generated.why_invalid = "no fields";
        break;
      case 11:
        record.ttl = -5;
        generated.why_invalid = "negative ttl";
        break;
      case 12:
        record.fields.push_back(Field{"label", std::string(kMaxStringValueBytes + 1, 'y')});
        generated.why_invalid = "string over 4 KiB";
        break;
      case 13:
        record.fields.push_back(Field{"label", std::string("bad \xFF byte")});
        generated.why_invalid = "invalid UTF-8 in string";
        break;
      case 14:
        record.device_id = std::string("dev\0x", 5);
        generated.why_invalid = "NUL in device id";
        break;
      default:
        record.measure_name = "env\xC2\x85";
        generated.why_invalid = "C1 control in measure name";
        break;
    }
    return generated;
  }

  Rng rng_;
  int64_t window_nanos_;
  // Per series, the highest in-order timestamp drawn so far.
  std::map<std::pair<std::string, std::string>, int64_t> cursors_;
};

}  // namespace cairn::crash
