#include "cairn/text/line_protocol.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "cairn/text/utf8.h"

namespace cairn {

namespace {

// The escapes InfluxDB removes, per element: in tag keys and values a
// backslash before a comma, equals sign or space; in measurements and field
// keys also before a double quote (its escape.Unescape). A backslash before
// any other byte is kept.
constexpr std::string_view kTagEscapes = ",= ";
constexpr std::string_view kNameEscapes = ",= \"";

// Reserved field names (see line_protocol.h).
constexpr std::string_view kTtlField = "_ttl";
constexpr std::string_view kVersionField = "_version";

// Longest excerpt of the input quoted back in an error message.
constexpr size_t kMaxQuotedBytes = 40;

bool IsBlank(char c) { return c == ' ' || c == '\t'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool Contains(std::string_view set, char c) { return set.find(c) != std::string_view::npos; }

// `text` for an error message: shortened at a character boundary when long.
std::string Quote(std::string_view text) {
  if (text.size() <= kMaxQuotedBytes) return "'" + std::string(text) + "'";
  size_t cut = kMaxQuotedBytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return "'" + std::string(text.substr(0, cut)) + "...'";
}

// `timestamp` rounded down to a whole number of `unit` nanoseconds; the
// first representable multiple when rounding down would leave int64.
int64_t TruncateToUnit(int64_t timestamp, int64_t unit) {
  int64_t remainder = timestamp % unit;
  if (remainder < 0) remainder += unit;
  if (remainder == 0) return timestamp;
  if (timestamp < std::numeric_limits<int64_t>::min() + remainder) return timestamp + (unit - remainder);
  return timestamp - remainder;
}

bool IsBoolTrue(std::string_view text) {
  return text == "t" || text == "T" || text == "true" || text == "True" || text == "TRUE";
}
bool IsBoolFalse(std::string_view text) {
  return text == "f" || text == "F" || text == "false" || text == "False" || text == "FALSE";
}

std::string AsciiLower(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return lower;
}

// [-]digits, nothing else.
bool IsIntegerLiteral(std::string_view text, bool allow_sign) {
  if (allow_sign && !text.empty() && text[0] == '-') text.remove_prefix(1);
  if (text.empty()) return false;
  for (char c : text) {
    if (!IsDigit(c)) return false;
  }
  return true;
}

// [-] (digits [. digits?] | . digits) [(e|E) [+|-] digits]: what InfluxDB
// takes as a float. from_chars alone would also take "inf" and "nan".
bool IsFloatLiteral(std::string_view text) {
  size_t i = 0;
  if (i < text.size() && text[i] == '-') ++i;
  size_t digits = 0;
  while (i < text.size() && IsDigit(text[i])) ++i, ++digits;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && IsDigit(text[i])) ++i, ++digits;
  }
  if (digits == 0) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    size_t exponent_digits = 0;
    while (i < text.size() && IsDigit(text[i])) ++i, ++exponent_digits;
    if (exponent_digits == 0) return false;
  }
  return i == text.size();
}

// The end of the line starting at `start` (the offset of its LF, or the
// body's size), as InfluxDB's scanLine finds it: a backslash takes the byte
// after it along, and a LF inside a double-quoted field value belongs to the
// value. Quotes count only after the first space, in a field value (more
// '=' than ',' seen since). A comment line ends at its first LF whatever it
// holds, so that a trailing backslash cannot swallow the point below it.
size_t FindLineEnd(std::string_view body, size_t start) {
  size_t i = start;
  while (i < body.size() && IsBlank(body[i])) ++i;
  if (i < body.size() && body[i] == '#') return std::min(body.find('\n', i), body.size());
  bool quoted = false;
  bool fields = false;
  size_t equals = 0;
  size_t commas = 0;
  while (i < body.size()) {
    const char c = body[i];
    if (c == '\\') {
      i += 2;
      continue;
    }
    if (c == ' ') fields = true;
    if (fields && !quoted && c == '=') {
      ++equals;
    } else if (fields && !quoted && c == ',') {
      ++commas;
    } else if (fields && c == '"' && equals > commas) {
      quoted = !quoted;
    } else if (c == '\n' && !quoted) {
      return i;
    }
    ++i;
  }
  return body.size();
}

// Parses one line. Positions are byte offsets into the line as given, so
// that error columns match what the sender wrote.
class LineParser {
 public:
  LineParser(std::string_view line, const LineProtocolOptions& options) : line_(line), options_(options) {}

  Result<std::optional<Record>> Parse() {
    if (!line_.empty() && line_.back() == '\r') line_.remove_suffix(1);
    if (line_.size() > options_.max_line_bytes) {
      return Status::InvalidArgument("line is " + std::to_string(line_.size()) +
                                     " bytes long; the limit is " + std::to_string(options_.max_line_bytes));
    }
    while (!line_.empty() && IsBlank(line_.back())) line_.remove_suffix(1);
    while (pos_ < line_.size() && IsBlank(line_[pos_])) ++pos_;
    if (pos_ == line_.size() || line_[pos_] == '#') return std::optional<Record>();
    CAIRN_RETURN_IF_ERROR(CheckBytes());

    Record record;
    CAIRN_ASSIGN_OR_RETURN(record.measure_name, ReadMeasurement());
    std::map<std::string, std::string> tags;
    CAIRN_RETURN_IF_ERROR(ReadTags(&tags));

    // InfluxDB skips any run of spaces and tabs before the fields.
    while (pos_ < line_.size() && IsBlank(line_[pos_])) ++pos_;
    if (pos_ == line_.size()) {
      return SyntaxError("no fields (expected a space, then field=value after the measurement and tags)");
    }
    for (;;) {
      const size_t key_start = pos_;
      CAIRN_ASSIGN_OR_RETURN(std::string name, ReadFieldKey());
      if (name == kTtlField || name == kVersionField) {
        CAIRN_ASSIGN_OR_RETURN(const uint64_t value, ReadReservedInteger(name));
        if (name == kTtlField) {
          if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
            return Status::InvalidArgument("_ttl " + std::to_string(value) + " is beyond int64 seconds");
          }
          record.ttl = static_cast<int64_t>(value);
        } else {
          record.version = value;
        }
        reserved_.push_back(std::move(name));
      } else {
        if (!name.empty() && name[0] == '_') {
          return SyntaxError("field names starting with '_' are reserved (" + std::string(kTtlField) +
                                 " and " + std::string(kVersionField) + " are defined); " + Quote(name) +
                                 " is not one",
                             key_start);
        }
        Field field{std::move(name), Value()};
        CAIRN_ASSIGN_OR_RETURN(field.value, ReadFieldValue(field.name));
        record.fields.push_back(std::move(field));
      }
      if (!Consume(',')) break;
    }

    // A field value ends at a space, a comma (consumed above) or the end.
    while (pos_ < line_.size() && IsBlank(line_[pos_])) ++pos_;
    if (pos_ < line_.size()) {
      const size_t start = pos_;
      while (pos_ < line_.size() && !IsBlank(line_[pos_])) ++pos_;
      CAIRN_ASSIGN_OR_RETURN(record.timestamp, ParseTimestamp(line_.substr(start, pos_ - start), start));
      while (pos_ < line_.size() && IsBlank(line_[pos_])) ++pos_;
      if (pos_ < line_.size()) return SyntaxError("unexpected text after the timestamp");
    } else {
      record.timestamp = TruncateToUnit(options_.default_timestamp, NanosPerUnit(options_.precision));
      record.receiver_time = true;  // the engine stamps or holds it by its trusted clock
    }

    return Finish(std::move(record), std::move(tags));
  }

 private:
  // The device, the dimensions and the checks that need the whole line.
  Result<std::optional<Record>> Finish(Record record, std::map<std::string, std::string> tags) const {
    auto device = tags.find(options_.device_tag);
    if (device == tags.end()) return Status::InvalidArgument("no '" + options_.device_tag + "' tag");
    record.device_id = std::move(device->second);
    tags.erase(device);
    // InfluxDB 1.x refuses these names: its queries could not tell them from
    // the point's time.
    if (tags.count("time") != 0) {
      return Status::InvalidArgument("invalid tag key: input tag \"time\" on measurement \"" +
                                     record.measure_name + "\" is invalid");
    }
    for (const Field& field : record.fields) {
      if (field.name == "time") {
        return Status::InvalidArgument("invalid field name: input field \"time\" on measurement \"" +
                                       record.measure_name + "\" is invalid");
      }
    }
    record.dimensions = std::move(tags);
    CAIRN_RETURN_IF_ERROR(CheckReserved(record));
    CAIRN_RETURN_IF_ERROR(ValidateRecord(record));
    return std::optional<Record>(std::move(record));
  }

  // NUL bytes and ill-formed UTF-8 are refused before any parsing, so that
  // no element (string values included) can carry them.
  Status CheckBytes() const {
    for (size_t i = 0; i < line_.size();) {
      if (line_[i] == '\0') return Status::InvalidArgument("NUL byte at column " + std::to_string(Column(i)));
      const shell::Utf8Unit unit = shell::DecodeUtf8(line_, i);
      if (!unit.valid) return Status::InvalidArgument("invalid UTF-8 at column " + std::to_string(Column(i)));
      i += unit.length;
    }
    return Status::Ok();
  }

  // 1-based column of byte `offset`, counted in characters.
  size_t Column(size_t offset) const { return shell::CountCodePoints(line_.substr(0, offset)) + 1; }

  Status SyntaxError(std::string message) const { return SyntaxError(std::move(message), pos_); }
  Status SyntaxError(std::string message, size_t offset) const {
    return Status::InvalidArgument(message + " (column " + std::to_string(Column(offset)) + ")");
  }

  bool Consume(char c) {
    if (pos_ < line_.size() && line_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  // True when the byte at `i` is escaped. InfluxDB's scanner decides this
  // by the byte before it alone, so in `a\\,b` the comma is escaped too.
  bool Escaped(size_t i) const { return i > 0 && line_[i - 1] == '\\'; }

  // `raw` without the backslash of each escape in `escapes`; one pass from
  // the left, as InfluxDB's unescape does (`\\=` becomes `\=`).
  static std::string Unescape(std::string_view raw, std::string_view escapes) {
    std::string out;
    out.reserve(raw.size());
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '\\' && i + 1 < raw.size() && Contains(escapes, raw[i + 1])) ++i;
      out.push_back(raw[i]);
    }
    return out;
  }

  // The measurement: up to the first comma or space not escaped. Its first
  // byte may be anything but a comma (InfluxDB's scanMeasurement).
  Result<std::string> ReadMeasurement() {
    if (line_[pos_] == ',') return SyntaxError("missing measurement");
    const size_t start = pos_++;
    while (pos_ < line_.size() && !((line_[pos_] == ',' || line_[pos_] == ' ') && !Escaped(pos_))) ++pos_;
    if (pos_ == line_.size()) {
      return SyntaxError("no fields (expected a space, then field=value after the measurement and tags)");
    }
    return Unescape(line_.substr(start, pos_ - start), kNameEscapes);
  }

  // `,key=value` pairs up to the space before the fields (InfluxDB's
  // scanTagsKey and scanTagsValue): a key ends at an unescaped '='; a value
  // at an unescaped comma or space, and holds no unescaped '=' after its
  // first byte.
  Status ReadTags(std::map<std::string, std::string>* tags) {
    while (pos_ < line_.size() && line_[pos_] == ',') {
      const size_t key_start = ++pos_;
      if (pos_ == line_.size() || Contains(",= ", line_[pos_])) return SyntaxError("empty tag key");
      for (++pos_;; ++pos_) {
        if (pos_ == line_.size() || ((line_[pos_] == ' ' || line_[pos_] == ',') && !Escaped(pos_))) {
          return SyntaxError("tag " +
                             Quote(Unescape(line_.substr(key_start, pos_ - key_start), kTagEscapes)) +
                             " has no '=' and value");
        }
        if (line_[pos_] == '=' && !Escaped(pos_)) break;
      }
      std::string key = Unescape(line_.substr(key_start, pos_ - key_start), kTagEscapes);
      const size_t value_start = ++pos_;
      if (pos_ == line_.size() || line_[pos_] == ',' || line_[pos_] == ' ') {
        return SyntaxError("tag " + Quote(key) + " has an empty value");
      }
      for (++pos_; pos_ < line_.size(); ++pos_) {
        if (Escaped(pos_)) continue;
        if (line_[pos_] == ',' || line_[pos_] == ' ') break;
        if (line_[pos_] == '=') {
          return SyntaxError("tag " + Quote(key) + " has an unescaped '=' in its value (write \\=)");
        }
      }
      if (pos_ == line_.size()) {
        return SyntaxError("no fields (expected a space, then field=value after the measurement and tags)");
      }
      std::string value = Unescape(line_.substr(value_start, pos_ - value_start), kTagEscapes);
      if (tags->count(key) != 0) return SyntaxError("tag " + Quote(key) + " appears twice", key_start);
      tags->emplace(std::move(key), std::move(value));
    }
    return Status::Ok();
  }

  // A field key and its '=': up to the first unescaped '='; an unescaped
  // comma or space before it is an error.
  Result<std::string> ReadFieldKey() {
    const size_t start = pos_;
    for (; pos_ < line_.size(); ++pos_) {
      const bool escaped = pos_ > start && Escaped(pos_);
      if (!escaped && (line_[pos_] == '=' || line_[pos_] == ',' || line_[pos_] == ' ')) break;
    }
    std::string name = Unescape(line_.substr(start, pos_ - start), kNameEscapes);
    if (pos_ == start) return SyntaxError("empty field key", start);
    if (!Consume('=')) return SyntaxError("field " + Quote(name) + " has no '=' and value");
    return name;
  }

  // The value of `_ttl` or `_version`: an integer written 12i or 12u, not
  // negative. Anything else refuses the line, so that a reserved name never
  // quietly becomes an ordinary field.
  Result<uint64_t> ReadReservedInteger(const std::string& name) {
    const size_t start = pos_;
    while (pos_ < line_.size() && line_[pos_] != ',' && line_[pos_] != ' ') ++pos_;
    const std::string_view text = line_.substr(start, pos_ - start);
    const std::string usage = name == kTtlField
                                  ? " (the absolute expiry in Unix seconds, e.g. _ttl=1700003600i)"
                                  : " (e.g. _version=3i or _version=3u)";
    const char suffix = text.empty() ? '\0' : text.back();
    const std::string_view digits = text.substr(0, text.empty() ? 0 : text.size() - 1);
    if ((suffix == 'i' || suffix == 'u') && IsIntegerLiteral(digits, /*allow_sign=*/suffix == 'i')) {
      if (digits[0] == '-') {
        return SyntaxError("reserved field " + name + " must not be negative" + usage, start);
      }
      uint64_t value = 0;
      const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
      if (error == std::errc()) return value;
      return SyntaxError("reserved field " + name + ": " + Quote(text) + " overflows uint64", start);
    }
    return SyntaxError("reserved field " + name + " must be an integer" + usage + ", not " + Quote(text),
                       start);
  }

  // A `_ttl` that is not after the record's own time would expire the
  // record as it is written: most likely a duration sent where a time is
  // meant.
  Status CheckReserved(const Record& record) const {
    if (std::find(reserved_.begin(), reserved_.end(), kTtlField) != reserved_.end() && record.ttl != 0) {
      const int64_t seconds =
          record.timestamp / 1'000'000'000 - (record.timestamp % 1'000'000'000 < 0 ? 1 : 0);
      if (record.ttl <= seconds) {
        return Status::InvalidArgument("_ttl " + std::to_string(record.ttl) +
                                       " is not after the record's time (" + std::to_string(seconds) +
                                       " s): _ttl is an absolute Unix time in seconds, not a duration");
      }
    }
    for (size_t i = 0; i < reserved_.size(); ++i) {
      for (size_t j = i + 1; j < reserved_.size(); ++j) {
        if (reserved_[i] == reserved_[j])
          return Status::InvalidArgument("field '" + reserved_[i] + "' appears twice");
      }
    }
    if (record.fields.empty()) {
      return Status::InvalidArgument("no fields besides " + std::string(kTtlField) + " and " +
                                     std::string(kVersionField));
    }
    return Status::Ok();
  }

  Result<Value> ReadFieldValue(const std::string& name) {
    if (pos_ < line_.size() && line_[pos_] == '"') return ReadStringValue(name);
    const size_t start = pos_;
    while (pos_ < line_.size() && line_[pos_] != ',' && line_[pos_] != ' ') ++pos_;
    const std::string_view text = line_.substr(start, pos_ - start);
    if (text.empty()) return SyntaxError("field " + Quote(name) + " has an empty value", start);
    if (IsBoolTrue(text)) return Value(true);
    if (IsBoolFalse(text)) return Value(false);

    const char suffix = text.back();
    if (suffix == 'i' && IsIntegerLiteral(text.substr(0, text.size() - 1), /*allow_sign=*/true)) {
      int64_t value = 0;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size() - 1, value);
      if (error != std::errc()) {
        return Status::InvalidArgument("field " + Quote(name) + ": " + Quote(text) + " overflows int64");
      }
      return Value(value);
    }
    if (suffix == 't' && IsIntegerLiteral(text.substr(0, text.size() - 1), /*allow_sign=*/true)) {
      // A timestamp-typed value, in the write's precision like the line's
      // own timestamp.
      int64_t value = 0;
      int64_t nanos = 0;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size() - 1, value);
      if (error != std::errc() || __builtin_mul_overflow(value, NanosPerUnit(options_.precision), &nanos)) {
        return Status::InvalidArgument("field " + Quote(name) + ": timestamp " + Quote(text) +
                                       " at precision " +
                                       std::string(TimestampPrecisionName(options_.precision)) +
                                       " is out of range (int64 nanoseconds reach from 1677-09-21 to "
                                       "2262-04-11)");
      }
      return Value(Timestamp{nanos});
    }
    if (suffix == 'u' && IsIntegerLiteral(text.substr(0, text.size() - 1), /*allow_sign=*/false)) {
      uint64_t value = 0;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size() - 1, value);
      if (error != std::errc() || value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Status::InvalidArgument("field " + Quote(name) + ": unsigned " + Quote(text) +
                                       " does not fit in int64, cairn's integer type");
      }
      return Value(static_cast<int64_t>(value));
    }
    if (IsFloatLiteral(text)) {
      double value = 0;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (error != std::errc() || !std::isfinite(value)) {
        return Status::InvalidArgument("field " + Quote(name) + ": " + Quote(text) +
                                       " is out of the range of a 64-bit float");
      }
      return Value(value);
    }
    const std::string lower = AsciiLower(text);
    std::string_view unsigned_lower = lower;
    if (unsigned_lower[0] == '-' || unsigned_lower[0] == '+') unsigned_lower.remove_prefix(1);
    if (unsigned_lower == "nan") {
      return Status::InvalidArgument("field " + Quote(name) + " is NaN; NaN and infinities are not accepted");
    }
    if (unsigned_lower == "inf" || unsigned_lower == "infinity") {
      return Status::InvalidArgument("field " + Quote(name) +
                                     " is infinite; NaN and infinities are not accepted");
    }
    return SyntaxError("field " + Quote(name) + " has an invalid value " + Quote(text) +
                           " (expected a number, an integer like 12i or 12u, a timestamp like 1700000000t, "
                           "a boolean, or a string in double quotes)",
                       start);
  }

  Result<Value> ReadStringValue(const std::string& name) {
    const size_t open = pos_++;
    std::string out;
    bool closed = false;
    while (pos_ < line_.size()) {
      const char c = line_[pos_];
      if (c == '"') {
        closed = true;
        ++pos_;
        break;
      }
      if (c == '\\' && pos_ + 1 < line_.size() && (line_[pos_ + 1] == '"' || line_[pos_ + 1] == '\\')) {
        out.push_back(line_[pos_ + 1]);
        pos_ += 2;
        continue;
      }
      out.push_back(c);
      ++pos_;
    }
    if (!closed) {
      return SyntaxError("string value of field " + Quote(name) + " has no closing quote", open);
    }
    if (pos_ < line_.size() && line_[pos_] != ',' && line_[pos_] != ' ') {
      return SyntaxError("unexpected " + Quote(line_.substr(pos_, 1)) + " after the string value of field " +
                         Quote(name));
    }
    return Value(std::move(out));
  }

  Result<int64_t> ParseTimestamp(std::string_view text, size_t start) const {
    if (!IsIntegerLiteral(text, /*allow_sign=*/true)) {
      return SyntaxError("timestamp " + Quote(text) + " is not an integer", start);
    }
    int64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    int64_t nanos = 0;
    if (error != std::errc() || __builtin_mul_overflow(value, NanosPerUnit(options_.precision), &nanos)) {
      return Status::InvalidArgument("timestamp " + Quote(text) + " at precision " +
                                     std::string(TimestampPrecisionName(options_.precision)) +
                                     " is out of range (int64 nanoseconds reach from 1677-09-21 to "
                                     "2262-04-11)");
    }
    return nanos;
  }

  std::string_view line_;
  const LineProtocolOptions& options_;
  size_t pos_ = 0;
  std::vector<std::string> reserved_;  // the reserved fields the line set, in order
};

}  // namespace

int64_t NanosPerUnit(TimestampPrecision precision) {
  switch (precision) {
    case TimestampPrecision::kNanoseconds:
      return 1;
    case TimestampPrecision::kMicroseconds:
      return 1'000;
    case TimestampPrecision::kMilliseconds:
      return 1'000'000;
    case TimestampPrecision::kSeconds:
      return 1'000'000'000;
    case TimestampPrecision::kMinutes:
      return 60'000'000'000;
    case TimestampPrecision::kHours:
      return 3'600'000'000'000;
  }
  return 1;
}

std::string_view TimestampPrecisionName(TimestampPrecision precision) {
  switch (precision) {
    case TimestampPrecision::kNanoseconds:
      return "ns";
    case TimestampPrecision::kMicroseconds:
      return "us";
    case TimestampPrecision::kMilliseconds:
      return "ms";
    case TimestampPrecision::kSeconds:
      return "s";
    case TimestampPrecision::kMinutes:
      return "m";
    case TimestampPrecision::kHours:
      return "h";
  }
  return "?";
}

Result<TimestampPrecision> ParseTimestampPrecision(std::string_view name) {
  if (name == "ns" || name == "n") return TimestampPrecision::kNanoseconds;
  if (name == "us" || name == "u") return TimestampPrecision::kMicroseconds;
  if (name == "ms") return TimestampPrecision::kMilliseconds;
  if (name == "s") return TimestampPrecision::kSeconds;
  if (name == "m") return TimestampPrecision::kMinutes;
  if (name == "h") return TimestampPrecision::kHours;
  return Status::InvalidArgument("unknown timestamp precision " + Quote(name) + " (ns, us, ms, s, m or h)");
}

Result<std::optional<Record>> ParseLineProtocolLine(std::string_view line,
                                                    const LineProtocolOptions& options) {
  return LineParser(line, options).Parse();
}

size_t LineProtocolLineEnd(std::string_view body, size_t start) { return FindLineEnd(body, start); }

LineProtocolBatch ParseLineProtocol(std::string_view body, const LineProtocolOptions& options) {
  return LineProtocolReader(body, options).Next(body.size());
}

LineProtocolBatch LineProtocolReader::Next(size_t slice_bytes, bool body_complete) {
  LineProtocolBatch batch;
  const size_t slice_start = offset_;
  while (offset_ < body_.size() && offset_ - slice_start < std::max<size_t>(slice_bytes, 1)) {
    const size_t end = FindLineEnd(body_, offset_);
    if (end == body_.size() && !body_complete) break;  // its LF is yet to come
    const std::string_view line = body_.substr(offset_, end - offset_);
    Result<std::optional<Record>> parsed = ParseLineProtocolLine(line, options_);
    if (!parsed.ok()) {
      batch.errors.push_back(LineProtocolError{line_number_, parsed.status().message()});
    } else if (parsed->has_value()) {
      batch.records.push_back(LineProtocolRecord{line_number_, std::move(**parsed)});
    }
    line_number_ += static_cast<size_t>(std::count(line.begin(), line.end(), '\n')) + 1;
    offset_ = end + 1;
  }
  return batch;
}

}  // namespace cairn
