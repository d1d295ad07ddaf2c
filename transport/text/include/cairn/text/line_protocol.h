// InfluxDB line protocol (1.x and 2.x) to cairn records.
//
//   measurement[,tag=value...] field=value[,field=value...] [timestamp]
//
// The full rules, and every difference from InfluxDB with its reason, are in
// transport/text/src/line_protocol.md. In short:
//
// - Lines as InfluxDB splits them: at LF, except inside a double-quoted
//   string field value. A CR before the LF, blank lines and `#` comments are
//   ignored; sections are separated by spaces (then spaces or tabs).
// - Escapes as InfluxDB's scanner reads them: a byte is escaped when the byte
//   before it is a backslash. The backslash is then removed before `,`, space
//   and `=` (tag keys and values), also before `"` (measurement, field keys),
//   and kept before any other byte: `reg\=ion=east` is the tag `reg\=ion`
//   = `east`. In a string value `"` is a quote and `\` a backslash.
// - Field values: floats (`21.5`, `21`), integers `12i`, unsigned `12u`
//   (int64 when they fit, refused otherwise), timestamps `1700000000t` (in the
//   write's precision), strings `"text"`, booleans t/T/true/True/TRUE and
//   f/F/false/False/FALSE. NaN, infinities and overflows are refused.
// - Reserved fields: `_ttl` (the record's absolute expiry, Unix seconds, an
//   integer after the record's time) and `_version` (a non-negative integer,
//   any uint64 as `...u`) set Record::ttl and Record::version instead of
//   being stored; a wrong type or value refuses the line, and so does any
//   other field name starting with `_`. A tag or field named `time` is
//   refused with InfluxDB's words.
// - The timestamp is an integer in the chosen precision; a line without one
//   gets the caller's default truncated to that precision (InfluxDB's
//   behaviour) and is marked Record::receiver_time, so that the engine stamps
//   it only with a trusted clock (cairn/core/clock.h).
// - Mapping to cairn (DESIGN §3): the tag named by `device_tag` is the
//   record's device_id (a line without it is an error), the measurement its
//   measure_name, the other tags its tags (Record::dimensions: the series'
//   identity, except the table's declared attributes), the fields its fields.
//
// Bad lines do not spoil good ones (InfluxDB's partial write): every line is
// parsed on its own, valid lines become records and each bad line becomes an
// error with its 1-based line number and the reason. A line is also refused
// for a NUL byte, ill-formed UTF-8 (anywhere, string values included), more
// than `max_line_bytes` bytes, or anything cairn's ValidateRecord refuses
// (identifier lengths, control characters, duplicate field names, ...).
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cairn/core/record.h"
#include "cairn/platform/status.h"

namespace cairn {

// The unit of the timestamps in a body. Minutes and hours are InfluxDB
// 1.x's coarsest precisions (`precision=m`, `precision=h`).
enum class TimestampPrecision : uint8_t {
  kNanoseconds,
  kMicroseconds,
  kMilliseconds,
  kSeconds,
  kMinutes,
  kHours
};

// "ns", "us", "ms", "s", "m" or "h".
std::string_view TimestampPrecisionName(TimestampPrecision precision);

// Parses the precision names of InfluxDB's write APIs: "ns" (or "n"), "us"
// (or "u"), "ms", "s", "m", "h". InvalidArgument naming the accepted values
// otherwise.
Result<TimestampPrecision> ParseTimestampPrecision(std::string_view name);

// Nanoseconds in one unit of `precision` (1 for ns ... 3.6e12 for h).
int64_t NanosPerUnit(TimestampPrecision precision);

struct LineProtocolOptions {
  TimestampPrecision precision = TimestampPrecision::kNanoseconds;
  // Nanoseconds since the epoch for lines without a timestamp: normally the
  // receiver's clock at the time of the request.
  int64_t default_timestamp = 0;
  // The tag that names the device.
  std::string device_tag = "device";
  // Longer lines are refused without being parsed.
  size_t max_line_bytes = 64 * 1024;
};

// A line that became a record.
struct LineProtocolRecord {
  size_t line_number = 0;  // 1-based, of the line the point starts on
  Record record;
};

// A line that did not.
struct LineProtocolError {
  size_t line_number = 0;  // 1-based
  std::string reason;      // e.g. "no 'device' tag"; syntax errors name the column
};

struct LineProtocolBatch {
  std::vector<LineProtocolRecord> records;  // in input order
  std::vector<LineProtocolError> errors;    // in input order
};

// The end of the line that starts at offset `start` of `body`: the offset of
// the LF that ends it (not one inside a quoted string value or after a
// backslash), or body.size(). ParseLineProtocol splits a body with it.
size_t LineProtocolLineEnd(std::string_view body, size_t start);

// Parses a whole body. Never fails as a whole: see LineProtocolBatch.
LineProtocolBatch ParseLineProtocol(std::string_view body, const LineProtocolOptions& options);

// A body parsed a slice of whole lines at a time, so that a receiver holds
// the records of one slice rather than of the whole body: a record takes
// several times the bytes of its line, and an 8 MiB body (64 MiB inflated)
// would otherwise take hundreds of MiB at once. Line numbers count from
// `first_line_number`: a receiver that reads a body in windows (inflating
// it a piece at a time) starts each window's reader where the last one
// stopped (line_number(), offset()). `body` must outlive the reader.
class LineProtocolReader {
 public:
  LineProtocolReader(std::string_view body, LineProtocolOptions options, size_t first_line_number = 1)
      : body_(body), options_(std::move(options)), line_number_(first_line_number) {}

  bool done() const { return offset_ >= body_.size(); }
  // Parses the next lines: whole lines until at least `slice_bytes` of the
  // body are consumed, or to its end. Empty at the end. With `body_complete`
  // false the body is a window that more bytes will follow: a last line
  // without its LF is left unread (offset() stops before it).
  LineProtocolBatch Next(size_t slice_bytes, bool body_complete = true);

  // The offset of the first byte not yet read, and its line's number.
  size_t offset() const { return offset_; }
  size_t line_number() const { return line_number_; }

 private:
  std::string_view body_;
  const LineProtocolOptions options_;
  size_t offset_ = 0;
  size_t line_number_ = 1;
};

// Parses one line (without its LF; a trailing CR is tolerated; a LF inside a
// quoted string value is part of the line). nullopt for a
// blank or comment line, which holds no point; InvalidArgument with the
// reason for a bad line.
Result<std::optional<Record>> ParseLineProtocolLine(std::string_view line,
                                                    const LineProtocolOptions& options);

}  // namespace cairn
