#include "cairn/transport/line_protocol.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "shell/utf8.h"

namespace cairn {

namespace {

// Bytes a backslash turns from delimiters into content, per element.
constexpr std::string_view kMeasurementSpecials = ", ";
constexpr std::string_view kKeySpecials = ",= ";

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
    record.measure_name = ReadElement(", ", kMeasurementSpecials);
    if (record.measure_name.empty()) return SyntaxError("missing measurement");

    std::map<std::string, std::string> tags;
    while (pos_ < line_.size() && line_[pos_] == ',') {
      ++pos_;
      const size_t key_start = pos_;
      std::string key = ReadElement(",= ", kKeySpecials);
      if (key.empty()) return SyntaxError("empty tag key", key_start);
      if (!Consume('=')) return SyntaxError("tag " + Quote(key) + " has no '=' and value");
      std::string value = ReadElement(", ", kKeySpecials);
      if (value.empty()) return SyntaxError("tag " + Quote(key) + " has an empty value");
      if (tags.count(key) != 0) return SyntaxError("tag " + Quote(key) + " appears twice", key_start);
      tags.emplace(std::move(key), std::move(value));
    }

    if (SkipSpaces() == 0 || pos_ == line_.size()) {
      return SyntaxError("no fields (expected a space, then field=value after the measurement and tags)");
    }
    for (;;) {
      Field field;
      const size_t key_start = pos_;
      field.name = ReadElement(",= ", kKeySpecials);
      if (field.name.empty()) return SyntaxError("empty field key", key_start);
      if (!Consume('=')) return SyntaxError("field " + Quote(field.name) + " has no '=' and value");
      CAIRN_ASSIGN_OR_RETURN(field.value, ReadFieldValue(field.name));
      record.fields.push_back(std::move(field));
      if (!Consume(',')) break;
    }

    // A field value ends at a space, a comma (consumed above) or the end.
    SkipSpaces();
    if (pos_ < line_.size()) {
      const size_t start = pos_;
      while (pos_ < line_.size() && line_[pos_] != ' ') ++pos_;
      CAIRN_ASSIGN_OR_RETURN(record.timestamp, ParseTimestamp(line_.substr(start, pos_ - start), start));
      SkipSpaces();
      if (pos_ < line_.size()) return SyntaxError("unexpected text after the timestamp");
    } else {
      record.timestamp = TruncateToUnit(options_.default_timestamp, NanosPerUnit(options_.precision));
      record.receiver_time = true;  // the engine stamps or holds it by its trusted clock
    }

    auto device = tags.find(options_.device_tag);
    if (device == tags.end()) return Status::InvalidArgument("no '" + options_.device_tag + "' tag");
    record.device_id = std::move(device->second);
    tags.erase(device);
    record.dimensions = std::move(tags);
    CAIRN_RETURN_IF_ERROR(ValidateRecord(record));
    return std::optional<Record>(std::move(record));
  }

 private:
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

  size_t SkipSpaces() {
    const size_t start = pos_;
    while (pos_ < line_.size() && line_[pos_] == ' ') ++pos_;
    return pos_ - start;
  }

  // Reads up to the first unescaped byte of `delimiters` (or the end). A
  // backslash always takes the byte after it along; it is dropped only
  // before one of `specials`.
  std::string ReadElement(std::string_view delimiters, std::string_view specials) {
    std::string out;
    while (pos_ < line_.size()) {
      const char c = line_[pos_];
      if (c == '\\' && pos_ + 1 < line_.size()) {
        const char next = line_[pos_ + 1];
        if (!Contains(specials, next)) out.push_back('\\');
        out.push_back(next);
        pos_ += 2;
        continue;
      }
      if (Contains(delimiters, c)) break;
      out.push_back(c);
      ++pos_;
    }
    return out;
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
                           " (expected a number, an integer like 12i or 12u, a boolean, or a string in "
                           "double quotes)",
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

LineProtocolBatch ParseLineProtocol(std::string_view body, const LineProtocolOptions& options) {
  LineProtocolBatch batch;
  size_t line_number = 0;
  size_t start = 0;
  while (start < body.size()) {
    size_t end = body.find('\n', start);
    if (end == std::string_view::npos) end = body.size();
    ++line_number;
    Result<std::optional<Record>> parsed = ParseLineProtocolLine(body.substr(start, end - start), options);
    if (!parsed.ok()) {
      batch.errors.push_back(LineProtocolError{line_number, parsed.status().message()});
    } else if (parsed->has_value()) {
      batch.records.push_back(LineProtocolRecord{line_number, std::move(**parsed)});
    }
    start = end + 1;
  }
  return batch;
}

}  // namespace cairn
