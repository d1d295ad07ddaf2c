// The data model: typed field values, records, and the identity rules that
// every entry point (C++ API, line protocol, JSON, MQTT) enforces.
//
// A record belongs to a series (table, device_id, measure_name, dimensions)
// and is identified by (table, device_id, measure_name, dimensions,
// timestamp). It carries one or more named, typed fields (a multi-measure
// record), an optional absolute expiry (ttl) and a version used to resolve
// rewrites of the same identity.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "cairn/platform/status.h"

namespace cairn {

// A point in time as nanoseconds since the Unix epoch, UTC. Used as a field
// type so that "a timestamp" and "a count of something" stay distinct.
struct Timestamp {
  int64_t unix_nanos = 0;
  friend auto operator<=>(const Timestamp&, const Timestamp&) = default;
};

// The field types. The numeric values are stored on disk (chunk format,
// catalog) and must never be renumbered.
enum class FieldType : uint8_t {
  kDouble = 1,
  kInt64 = 2,
  kBool = 3,
  kString = 4,
  kTimestamp = 5,
};

std::string_view FieldTypeName(FieldType type);

// One field value. monostate means "absent" and appears only in query results
// (a series' record that did not carry that field).
using Value = std::variant<std::monostate, double, int64_t, bool, std::string, Timestamp>;

// The type of a non-absent value. Precondition: !holds_alternative<monostate>.
FieldType TypeOf(const Value& value);

struct Field {
  std::string name;
  Value value;
};

// Tag name -> value, sorted by name.
using TagMap = std::map<std::string, std::string>;

// A record as written by a client.
struct Record {
  std::string device_id;      // UTF-8, 1-128 bytes, no control characters
  std::string measure_name;   // UTF-8, 1-256 bytes, no control characters; '#' separates levels
  int64_t timestamp = 0;      // nanoseconds since the Unix epoch, UTC
  std::vector<Field> fields;  // 1..kMaxFieldsPerRecord, unique names
  int64_t ttl = 0;            // absolute expiry in Unix seconds; 0 = none (table default applies)
  uint64_t version = 0;       // higher replaces, equal is a duplicate, lower is rejected
  // The tags other than the device (site, sensor, firmware ...). Those the
  // table declares as attributes (TableOptions::attributes) are series
  // metadata: stored once per series, the latest write that carries any
  // replaces them. All others are the series' dimensions, part of its
  // identity: `sensor=a` and `sensor=b` are two series.
  TagMap dimensions;
  // True when the client gave no timestamp and `timestamp` is the receiver's
  // clock at arrival: the engine then stamps the record itself with its
  // trusted clock, or holds it until the clock is trusted (cairn/core/clock.h).
  bool receiver_time = false;
};

// Limits of the data model (DESIGN §3).
inline constexpr size_t kMaxDeviceIdBytes = 128;
inline constexpr size_t kMaxMeasureNameBytes = 256;
inline constexpr size_t kMaxFieldNameBytes = 128;
inline constexpr size_t kMaxStringValueBytes = 4096;
inline constexpr size_t kMaxFieldsPerRecord = 128;
inline constexpr size_t kMaxDimensionsPerSeries = 64;
inline constexpr size_t kMaxDimensionBytes = 256;

// Validates an identifier (device id, measure name, field or dimension name):
// non-empty, at most `max_bytes`, well-formed UTF-8 (no overlong forms, no
// surrogates), no control characters (C0, DEL, C1) and no NUL.
// `what` names it in the error ("device_id").
Status ValidateIdentifier(std::string_view what, std::string_view value, size_t max_bytes);

// Validates a whole record against the limits above: identifiers, field
// names unique, no NaN or infinity, strings within kMaxStringValueBytes and
// valid UTF-8, ttl non-negative. Timestamp range checks that depend on the
// table (retention) are the engine's.
Status ValidateRecord(const Record& record);

}  // namespace cairn
