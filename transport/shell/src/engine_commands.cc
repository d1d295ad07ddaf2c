#include "cairn/shell/engine_commands.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "cairn/text/line_protocol.h"

#include "flash_wear_entries.h"
#include "cairn/shell/record_table.h"

namespace cairn {

namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;
constexpr int64_t kSecondsPerDay = 86400;

constexpr const char* kTimeForms =
    "expected RFC 3339 like 2026-11-21T09:41:07Z, nanoseconds since the epoch, now, or a time relative to "
    "now like -1h";
constexpr const char* kDurationForms =
    "expected numbers with units like 30d, 12h, 90m, 3600s or 1h30m (units ns, us, ms, s, m, h, d, w)";

constexpr const char* kTagsSummary =
    "only series whose tags (dimensions or attributes) have these values; '\\' escapes , = \\";
constexpr const char* kAttributesSummary =
    "tag names that are metadata, not identity: they do not split series (default none)";

// Default window of `agg` without --from: the day before --to.
constexpr int64_t kDefaultAggregateWindowNanos = kSecondsPerDay * kNanosPerSecond;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// ---- times and durations ------------------------------------------------------

// Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar.
int64_t DaysFromCivil(int64_t year, int month, int day) {
  year -= month <= 2 ? 1 : 0;
  const int64_t era = (year >= 0 ? year : year - 399) / 400;
  const int64_t year_of_era = year - era * 400;
  const int64_t day_of_year = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  return era * 146097 + day_of_era - 719468;
}

int DaysInMonth(int64_t year, int month) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return month == 2 && leap ? 29 : kDays[month - 1];
}

Status BadTime(std::string_view text, const std::string& why) {
  return Status::InvalidArgument("bad time '" + std::string(text) + "': " + why);
}

// Reads `count` digits at `*pos` into `*value`.
bool ReadDigits(std::string_view text, size_t* pos, size_t count, int* value) {
  if (*pos + count > text.size()) return false;
  int result = 0;
  for (size_t i = 0; i < count; ++i) {
    const char c = text[*pos + i];
    if (!IsDigit(c)) return false;
    result = result * 10 + (c - '0');
  }
  *pos += count;
  *value = result;
  return true;
}

bool ReadChar(std::string_view text, size_t* pos, char expected) {
  if (*pos >= text.size() || text[*pos] != expected) return false;
  ++*pos;
  return true;
}

// YYYY-MM-DD[(T|t| )HH:MM:SS[.fraction](Z|z|(+|-)HH:MM)]
Result<int64_t> ParseRfc3339(std::string_view text) {
  size_t pos = 0;
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!ReadDigits(text, &pos, 4, &year) || !ReadChar(text, &pos, '-') || !ReadDigits(text, &pos, 2, &month) ||
      !ReadChar(text, &pos, '-') || !ReadDigits(text, &pos, 2, &day)) {
    return BadTime(text, kTimeForms);
  }
  int64_t fraction_nanos = 0;
  int64_t offset_seconds = 0;
  if (pos < text.size()) {
    if (text[pos] != 'T' && text[pos] != 't' && text[pos] != ' ') return BadTime(text, kTimeForms);
    ++pos;
    if (!ReadDigits(text, &pos, 2, &hour) || !ReadChar(text, &pos, ':') ||
        !ReadDigits(text, &pos, 2, &minute) || !ReadChar(text, &pos, ':') ||
        !ReadDigits(text, &pos, 2, &second)) {
      return BadTime(text, kTimeForms);
    }
    if (ReadChar(text, &pos, '.')) {
      size_t digits = 0;
      while (pos < text.size() && IsDigit(text[pos])) {
        if (++digits > 9) return BadTime(text, "more than 9 fraction digits (cairn keeps nanoseconds)");
        fraction_nanos = fraction_nanos * 10 + (text[pos] - '0');
        ++pos;
      }
      if (digits == 0) return BadTime(text, "no digits after the decimal point");
      for (size_t i = digits; i < 9; ++i) fraction_nanos *= 10;
    }
    if (pos == text.size()) return BadTime(text, "no time zone; end it with Z or an offset like +01:00");
    if (text[pos] == 'Z' || text[pos] == 'z') {
      ++pos;
    } else if (text[pos] == '+' || text[pos] == '-') {
      const int sign = text[pos] == '-' ? -1 : 1;
      ++pos;
      int offset_hours = 0, offset_minutes = 0;
      if (!ReadDigits(text, &pos, 2, &offset_hours) || !ReadChar(text, &pos, ':') ||
          !ReadDigits(text, &pos, 2, &offset_minutes) || offset_hours > 23 || offset_minutes > 59) {
        return BadTime(text, "the offset must look like +01:00 or -05:30");
      }
      offset_seconds = sign * (offset_hours * 3600 + offset_minutes * 60);
    } else {
      return BadTime(text, kTimeForms);
    }
    if (pos != text.size()) return BadTime(text, kTimeForms);
  }
  if (month < 1 || month > 12) return BadTime(text, "month " + std::to_string(month) + " does not exist");
  if (day < 1 || day > DaysInMonth(year, month)) {
    return BadTime(text, "day " + std::to_string(day) + " does not exist in that month");
  }
  if (hour > 23) return BadTime(text, "hour " + std::to_string(hour) + " does not exist");
  if (minute > 59) return BadTime(text, "minute " + std::to_string(minute) + " does not exist");
  if (second > 59) {
    return BadTime(text, "second " + std::to_string(second) + " does not exist (leap seconds are not kept)");
  }
  // Years 0000-9999 keep these products far inside int64; only the final
  // scaling to nanoseconds can leave it.
  int64_t seconds =
      DaysFromCivil(year, month, day) * kSecondsPerDay + hour * 3600 + minute * 60 + second - offset_seconds;
  // Before 1970 the fraction is taken from the next second up, so that the
  // earliest instant int64 holds (1677-09-21T00:12:43.145224192Z) does not
  // overflow on the way.
  if (seconds < 0 && fraction_nanos > 0) {
    seconds += 1;
    fraction_nanos -= kNanosPerSecond;
  }
  int64_t nanos = 0;
  if (__builtin_mul_overflow(seconds, kNanosPerSecond, &nanos) ||
      __builtin_add_overflow(nanos, fraction_nanos, &nanos)) {
    return BadTime(text, "outside the times cairn can store (1677-09-21 to 2262-04-11)");
  }
  return nanos;
}

bool IsIntegerText(std::string_view text) {
  if (!text.empty() && text[0] == '-') text.remove_prefix(1);
  return !text.empty() && std::all_of(text.begin(), text.end(), IsDigit);
}

// ---- argument helpers -----------------------------------------------------------

Result<int64_t> TimeOption(const CommandInvocation& invocation, std::string_view option, int64_t fallback,
                           int64_t now) {
  std::optional<std::string_view> text = invocation.Value(option);
  if (!text) return fallback;
  Result<int64_t> parsed = ParseTimeArgument(*text, now);
  if (!parsed.ok()) return parsed.status().WithContext("--" + std::string(option));
  return parsed;
}

// A duration option in whole seconds.
Result<int64_t> SecondsOption(const CommandInvocation& invocation, std::string_view option,
                              int64_t fallback) {
  std::optional<std::string_view> text = invocation.Value(option);
  if (!text) return fallback;
  const std::string context = "--" + std::string(option);
  Result<int64_t> nanos = ParseDurationArgument(*text);
  if (!nanos.ok()) return nanos.status().WithContext(context);
  if (*nanos % kNanosPerSecond != 0) {
    return Status::InvalidArgument(context + ": '" + std::string(*text) +
                                   "' is not a whole number of seconds");
  }
  return *nanos / kNanosPerSecond;
}

// --max-series N: a count up to kMaxSeriesLimit; 0 means the engine's
// default.
Result<uint64_t> MaxSeriesOption(const CommandInvocation& invocation, uint64_t fallback) {
  std::optional<std::string_view> text = invocation.Value("max-series");
  if (!text) return fallback;
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (text->empty() || error != std::errc() || end != text->data() + text->size() ||
      value > kMaxSeriesLimit) {
    return Status::InvalidArgument("--max-series: '" + std::string(*text) + "' is not a count from 0 to " +
                                   std::to_string(kMaxSeriesLimit) + " (0: the engine's default)");
  }
  return value;
}

// Points the way out of the most common mistake.
Status ExplainTableError(const Status& status) {
  if (status.Is(StatusCode::kNotFound) && status.message().rfind("table '", 0) == 0) {
    return Status::NotFound(status.message() + "; type tables to list them");
  }
  return status;
}

// How `text` must be typed to reach a command as one word.
// Says that a query stepped over damaged stored data: in text a line after
// the result, in JSON "incomplete": true and "skipped": "what; ..."; the
// health command names the same damage with its remedy.
void AddSkippedNotes(const std::vector<SkippedDamage>& skipped, CommandResult* result) {
  if (skipped.empty()) return;
  uint64_t readings = 0;
  size_t parts = 0;
  std::string what;
  std::set<std::pair<std::string, std::string>> seen;  // an aligned agg asks twice
  for (const SkippedDamage& damage : skipped) {
    if (!seen.insert({damage.file, damage.where}).second) continue;
    ++parts;
    readings += damage.readings;
    if (!what.empty()) what += "; ";
    what += damage.file + ": " + damage.where + " (" + damage.reason + ")";
  }
  std::string text = "incomplete: " + std::to_string(parts) + " damaged part(s) of the stored data " +
                     "skipped";
  if (readings > 0) text += ", " + std::to_string(readings) + " reading(s) not shown";
  result->AddNote("incomplete", true, text + ": " + what + "; see `health`");
  result->AddNote("skipped", what, "");
}

std::string ShellWord(std::string_view text) {
  const bool plain = !text.empty() && std::none_of(text.begin(), text.end(), [](char c) {
    return c == ' ' || c == '\t' || c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20;
  });
  if (plain) return std::string(text);
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') quoted.push_back('\\');
    quoted.push_back(c);
  }
  quoted.push_back('"');
  return quoted;
}

std::string FormatBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, unit == 0 ? "%.0f %s" : "%.1f %s", value, kUnits[unit]);
  return buffer;
}

// ---- the commands -------------------------------------------------------------

class EngineCommands {
 public:
  EngineCommands(Engine* engine, Env* env, EngineCommandOptions options)
      : engine_(engine), env_(env), options_(std::move(options)) {}

  CommandResult Tables(const CommandInvocation&) {
    Result<std::vector<TableInfo>> tables = engine_->ListTables();
    if (!tables.ok()) return CommandResult::Error(tables.status());
    std::vector<CommandResult::Row> rows;
    for (const TableInfo& table : *tables) {
      const TableOptions& o = table.options;
      rows.push_back(
          {table.name, std::string(PeriodName(o.period)), FormatDurationSeconds(o.retention_seconds),
           o.default_ttl_seconds == 0 ? Value() : Value(FormatDurationSeconds(o.default_ttl_seconds)),
           o.max_series == 0 ? Value() : Count(o.max_series), std::string(ConflictPolicyName(o.on_conflict)),
           o.attributes.empty() ? Value() : Value(JoinNames(o.attributes)), TimeValue(table.created_unix_nanos)});
    }
    return CommandResult::Table(
        {"table", "period", "retention", "default_ttl", "max_series", "on_conflict", "attributes", "created"},
        std::move(rows));
  }

  CommandResult CreateTable(const CommandInvocation& invocation) {
    const std::string& name = invocation.arguments()[0];
    TableOptions table_options;
    if (std::optional<std::string_view> period = invocation.Value("period")) {
      Result<Period> parsed = ParsePeriod(*period);
      if (!parsed.ok()) return CommandResult::Error(parsed.status().WithContext("--period"));
      table_options.period = *parsed;
    }
    if (Status changed = ApplyChangeableOptions(invocation, &table_options); !changed.ok()) {
      return CommandResult::Error(changed);
    }
    Status created = engine_->CreateTable(name, table_options);
    if (!created.ok()) return CommandResult::Error(created);
    return DescribeTable("created", name, table_options);
  }

  CommandResult AlterTable(const CommandInvocation& invocation) {
    const std::string& name = invocation.arguments()[0];
    Result<TableInfo> table = engine_->GetTable(name);
    if (!table.ok()) return CommandResult::Error(ExplainTableError(table.status()));
    TableOptions table_options = table->options;
    if (Status changed = ApplyChangeableOptions(invocation, &table_options); !changed.ok()) {
      return CommandResult::Error(changed);
    }
    Status altered = engine_->AlterTable(name, table_options);
    if (!altered.ok()) return CommandResult::Error(ExplainTableError(altered));
    return DescribeTable("altered", name, table_options);
  }

  // --retention, --ttl, --max-series and --on-conflict, which create-table
  // and alter-table share, over `options`.
  static Status ApplyChangeableOptions(const CommandInvocation& invocation, TableOptions* options) {
    CAIRN_ASSIGN_OR_RETURN(const int64_t retention,
                           SecondsOption(invocation, "retention", options->retention_seconds));
    if (retention <= 0) return Status::InvalidArgument("--retention must be positive");
    options->retention_seconds = retention;
    CAIRN_ASSIGN_OR_RETURN(options->default_ttl_seconds,
                           SecondsOption(invocation, "ttl", options->default_ttl_seconds));
    CAIRN_ASSIGN_OR_RETURN(options->max_series, MaxSeriesOption(invocation, options->max_series));
    if (std::optional<std::string_view> policy = invocation.Value("on-conflict")) {
      Result<ConflictPolicy> parsed = ParseConflictPolicy(*policy);
      if (!parsed.ok()) return parsed.status().WithContext("--on-conflict");
      options->on_conflict = *parsed;
    }
    if (std::optional<std::string_view> attributes = invocation.Value("attributes")) {
      options->attributes.clear();
      for (size_t begin = 0; begin < attributes->size();) {
        const size_t end = std::min(attributes->find(',', begin), attributes->size());
        if (end > begin) options->attributes.emplace(attributes->substr(begin, end - begin));
        begin = end + 1;
      }
    }
    return Status::Ok();
  }

  // The --tags filter of the read commands; empty when not given.
  static Result<TagMap> TagsOption(const CommandInvocation& invocation) {
    std::optional<std::string_view> text = invocation.Value("tags");
    if (!text) return TagMap{};
    return ParseTagsOption(*text);
  }

  static CommandResult DescribeTable(const char* verb, const std::string& name, const TableOptions& options) {
    return CommandResult::KeyValues({
        {verb, name},
        {"period", std::string(PeriodName(options.period))},
        {"retention", FormatDurationSeconds(options.retention_seconds)},
        {"default_ttl", options.default_ttl_seconds == 0
                            ? Value()
                            : Value(FormatDurationSeconds(options.default_ttl_seconds))},
        {"max_series", options.max_series == 0 ? Value() : Count(options.max_series)},
        {"on_conflict", std::string(ConflictPolicyName(options.on_conflict))},
        {"attributes", options.attributes.empty() ? Value() : Value(JoinNames(options.attributes))},
    });
  }

  static std::string JoinNames(const std::set<std::string>& names) {
    std::string text;
    for (const std::string& name : names) text += (text.empty() ? "" : ",") + name;
    return text;
  }

  CommandResult DropTable(const CommandInvocation& invocation) {
    const std::string& name = invocation.arguments()[0];
    Status dropped = engine_->DropTable(name);
    if (!dropped.ok()) return CommandResult::Error(ExplainTableError(dropped));
    return CommandResult::KeyValues({{"dropped", name}});
  }

  CommandResult Devices(const CommandInvocation& invocation) {
    Result<std::vector<DeviceInfo>> devices = engine_->ListDevices(invocation.arguments()[0]);
    if (!devices.ok()) return CommandResult::Error(ExplainTableError(devices.status()));
    std::vector<CommandResult::Row> rows;
    for (const DeviceInfo& device : *devices) {
      std::string measures;
      for (const std::string& measure : device.measures) {
        if (!measures.empty()) measures += ", ";
        measures += measure;
      }
      rows.push_back({device.device_id, std::move(measures)});
    }
    return CommandResult::Table({"device", "measures"}, std::move(rows));
  }

  CommandResult Measures(const CommandInvocation& invocation) {
    Result<std::vector<MeasureInfo>> measures = engine_->ListMeasures(invocation.arguments()[0]);
    if (!measures.ok()) return CommandResult::Error(ExplainTableError(measures.status()));
    std::vector<CommandResult::Row> rows;
    for (const MeasureInfo& measure : *measures) {
      std::string fields;
      for (const auto& [name, type] : measure.fields) {
        if (!fields.empty()) fields += ", ";
        fields += name + ":" + std::string(FieldTypeName(type));
      }
      const auto names = [](const std::set<std::string>& set) -> Value {
        std::string text;
        for (const std::string& name : set) text += (text.empty() ? "" : ", ") + name;
        return text.empty() ? Value() : Value(std::move(text));
      };
      rows.push_back({measure.measure_name, std::move(fields), names(measure.dimensions),
                      names(measure.attributes), Count(measure.devices), Count(measure.series)});
    }
    return CommandResult::Table({"measure", "fields", "dimensions", "attributes", "devices", "series"},
                                std::move(rows));
  }

  CommandResult Latest(const CommandInvocation& invocation) {
    const std::vector<std::string>& args = invocation.arguments();
    Result<TagMap> tags = TagsOption(invocation);
    if (!tags.ok()) return CommandResult::Error(tags.status());
    Result<std::vector<RecordRow>> rows =
        engine_->Latest(args[0], args[1], args.size() > 2 ? args[2] : "", *tags);
    if (!rows.ok()) return CommandResult::Error(ExplainTableError(rows.status()));
    return RecordTable(*rows);
  }

  // Latest of many devices: a device column first, then as RecordTable.
  CommandResult LatestBatch(const CommandInvocation& invocation) {
    const std::vector<std::string>& args = invocation.arguments();
    const std::vector<std::string> devices(args.begin() + 1, args.end());
    const std::string measure(invocation.Value("measure").value_or(""));
    Result<TagMap> tags = TagsOption(invocation);
    if (!tags.ok()) return CommandResult::Error(tags.status());
    Result<std::vector<RecordRow>> rows = engine_->LatestBatch(args[0], devices, measure, *tags);
    if (!rows.ok()) return CommandResult::Error(ExplainTableError(rows.status()));
    CommandResult records = RecordTable(*rows);
    std::vector<std::string> columns = {"device"};
    std::set<std::string> used(records.columns().begin(), records.columns().end());
    used.insert("device");
    for (const std::string& column : records.columns()) {
      columns.push_back(column == "device" ? UniqueColumnName(column, &used) : column);
    }
    std::vector<CommandResult::Row> table_rows;
    table_rows.reserve(rows->size());
    for (size_t i = 0; i < rows->size(); ++i) {
      CommandResult::Row row = {(*rows)[i].device_id};
      row.insert(row.end(), records.rows()[i].begin(), records.rows()[i].end());
      table_rows.push_back(std::move(row));
    }
    return CommandResult::Table(std::move(columns), std::move(table_rows));
  }

  CommandResult Range(const CommandInvocation& invocation) {
    const std::vector<std::string>& args = invocation.arguments();
    RangeQuery query;
    query.table = args[0];
    query.device_id = args[1];
    std::optional<std::string_view> measure = invocation.Value("measure");
    std::optional<std::string_view> prefix = invocation.Value("prefix");
    if (measure && prefix) {
      return CommandResult::Error(Status::InvalidArgument("give --measure or --prefix, not both"));
    }
    if (measure) query.measure_name = std::string(*measure);
    if (prefix) query.measure_prefix = std::string(*prefix);
    Result<TagMap> tags = TagsOption(invocation);
    if (!tags.ok()) return CommandResult::Error(tags.status());
    query.tags = std::move(tags).value();
    const int64_t now = env_->NowUnixNanos();
    Result<int64_t> from = TimeOption(invocation, "from", std::numeric_limits<int64_t>::min(), now);
    if (!from.ok()) return CommandResult::Error(from.status());
    Result<int64_t> to = TimeOption(invocation, "to", std::numeric_limits<int64_t>::max(), now);
    if (!to.ok()) return CommandResult::Error(to.status());
    if (*from >= *to) return CommandResult::Error(Status::InvalidArgument("--from must be before --to"));
    query.from = *from;
    query.to = *to;
    query.order = invocation.Has("desc") ? Order::kDescending : Order::kAscending;
    query.limit = options_.default_limit;
    if (std::optional<std::string_view> limit = invocation.Value("limit")) {
      size_t parsed = 0;
      const auto [end, error] = std::from_chars(limit->data(), limit->data() + limit->size(), parsed);
      if (error != std::errc() || end != limit->data() + limit->size() || parsed == 0 ||
          parsed > options_.max_limit) {
        return CommandResult::Error(Status::InvalidArgument("--limit: '" + std::string(*limit) +
                                                            "' is not a number from 1 to " +
                                                            std::to_string(options_.max_limit)));
      }
      query.limit = parsed;
    }
    if (std::optional<std::string_view> page = invocation.Value("page"))
      query.page_token = std::string(*page);

    Result<RangeResult> result = engine_->Range(query);
    if (!result.ok()) {
      Status status = ExplainTableError(result.status());
      if (!query.page_token.empty() && status.message() == "malformed page token") {
        status = Status::InvalidArgument("--page: '" + query.page_token +
                                         "' is not a page token from an earlier range");
      }
      return CommandResult::Error(status);
    }
    CommandResult table = RecordTable(result->rows);
    AddSkippedNotes(result->skipped, &table);
    if (!result->next_page_token.empty()) {
      table.AddNote("next_page", result->next_page_token,
                    "more: use --page " + ShellWord(result->next_page_token));
    }
    return table;
  }

  CommandResult Aggregate(const CommandInvocation& invocation) {
    const std::vector<std::string>& args = invocation.arguments();
    AggregateQuery query;
    query.table = args[0];
    query.device_id = args[1];
    query.measure_name = args[2];
    query.field = args[3];
    Result<TagMap> tags = TagsOption(invocation);
    if (!tags.ok()) return CommandResult::Error(tags.status());
    query.tags = std::move(tags).value();
    if (std::optional<std::string_view> group_by = invocation.Value("group-by")) {
      std::set<std::string> seen;
      for (size_t begin = 0; begin <= group_by->size();) {
        const size_t end = std::min(group_by->find(',', begin), group_by->size());
        std::string name(group_by->substr(begin, end - begin));
        Status valid = ValidateIdentifier("--group-by: tag name", name, kMaxFieldNameBytes);
        if (!valid.ok()) return CommandResult::Error(valid);
        if (!seen.insert(name).second) {
          return CommandResult::Error(Status::InvalidArgument("--group-by: '" + name + "' is given twice"));
        }
        query.group_by.push_back(std::move(name));
        begin = end + 1;
      }
    }
    std::optional<std::string_view> step = invocation.Value("step");
    if (!step) return CommandResult::Error(Status::InvalidArgument("agg needs --step D, e.g. --step 15m"));
    Result<int64_t> step_nanos = ParseDurationArgument(*step);
    if (!step_nanos.ok()) return CommandResult::Error(step_nanos.status().WithContext("--step"));
    if (*step_nanos <= 0) return CommandResult::Error(Status::InvalidArgument("--step must be positive"));
    query.step = *step_nanos;

    std::string_view functions = invocation.Value("fn").value_or("count,min,max,avg");
    std::vector<std::string> names;
    while (true) {
      const size_t comma = functions.find(',');
      const std::string_view name = functions.substr(0, comma);
      Result<AggregateFunction> function = ParseAggregateFunction(name);
      if (!function.ok()) return CommandResult::Error(function.status().WithContext("--fn"));
      query.functions.push_back(*function);
      names.emplace_back(name);
      if (comma == std::string_view::npos) break;
      functions.remove_prefix(comma + 1);
    }

    const int64_t now = env_->NowUnixNanos();
    Result<int64_t> to = TimeOption(invocation, "to", now, now);
    if (!to.ok()) return CommandResult::Error(to.status());
    const int64_t default_from = *to < std::numeric_limits<int64_t>::min() + kDefaultAggregateWindowNanos
                                     ? std::numeric_limits<int64_t>::min()
                                     : *to - kDefaultAggregateWindowNanos;
    Result<int64_t> from = TimeOption(invocation, "from", default_from, now);
    if (!from.ok()) return CommandResult::Error(from.status());
    if (*from >= *to) return CommandResult::Error(Status::InvalidArgument("--from must be before --to"));
    query.from = *from;
    query.to = *to;

    Result<AggregateResult> result = AlignedAggregate(query);
    if (!result.ok()) return CommandResult::Error(ExplainTableError(result.status()));
    std::vector<std::string> columns;
    for (const std::string& name : query.group_by) {
      // A tag called like a column of its own keeps its value under another key.
      const bool taken = name == "start" || ParseAggregateFunction(name).ok();
      columns.push_back(taken ? name + " (tag)" : name);
    }
    columns.push_back("start");
    for (const std::string& name : names) {
      // The same function twice would make a duplicate JSON key.
      columns.push_back(std::find(columns.begin(), columns.end(), name) == columns.end()
                            ? name
                            : name + "#" + std::to_string(columns.size()));
    }
    std::vector<CommandResult::Row> rows;
    for (const AggregateBucket& bucket : result->buckets) {
      CommandResult::Row row;
      for (const std::string& name : query.group_by) row.push_back(bucket.group.at(name));
      row.push_back(TimeValue(bucket.start));
      row.insert(row.end(), bucket.values.begin(), bucket.values.end());
      row.resize(columns.size());
      rows.push_back(std::move(row));
    }
    CommandResult table = CommandResult::Table(std::move(columns), std::move(rows));
    AddSkippedNotes(result->skipped, &table);
    return table;
  }

  // Buckets at whole multiples of the step since the epoch (InfluxDB's
  // GROUP BY time), so that `--from -1h --step 15m` shows 09:45, 10:00 ...
  // instead of the instant the command ran. The first bucket then starts
  // before `from`: it is asked of the engine as one partial bucket from
  // `from` and labelled with its aligned start, so it counts nothing before
  // `from`.
  Result<AggregateResult> AlignedAggregate(const AggregateQuery& query) {
    int64_t remainder = query.from % query.step;
    if (remainder < 0) remainder += query.step;
    int64_t aligned = 0;
    if (remainder == 0 || __builtin_sub_overflow(query.from, remainder, &aligned)) {
      return engine_->Aggregate(query);
    }
    int64_t first_end = 0;
    if (__builtin_add_overflow(aligned, query.step, &first_end) || first_end > query.to) first_end = query.to;
    AggregateQuery first = query;
    first.to = first_end;
    first.step = first_end - query.from;
    CAIRN_ASSIGN_OR_RETURN(AggregateResult result, engine_->Aggregate(first));
    for (AggregateBucket& bucket : result.buckets) bucket.start = aligned;
    if (first_end < query.to) {
      AggregateQuery rest = query;
      rest.from = first_end;
      CAIRN_ASSIGN_OR_RETURN(AggregateResult more, engine_->Aggregate(rest));
      for (AggregateBucket& bucket : more.buckets) result.buckets.push_back(std::move(bucket));
      for (SkippedDamage& damage : more.skipped) result.skipped.push_back(std::move(damage));
      // Each group's first bucket came from the first query.
      std::stable_sort(result.buckets.begin(), result.buckets.end(),
                       [](const AggregateBucket& a, const AggregateBucket& b) {
                         return std::tie(a.group, a.start) < std::tie(b.group, b.start);
                       });
    }
    return result;
  }

  CommandResult Put(const CommandInvocation& invocation) {
    const std::string& table = invocation.arguments()[0];
    const std::string& line = invocation.arguments()[1];
    LineProtocolOptions parse_options;
    parse_options.device_tag = options_.device_tag;
    parse_options.default_timestamp = env_->NowUnixNanos();
    if (std::optional<std::string_view> precision = invocation.Value("precision")) {
      Result<TimestampPrecision> parsed = ParseTimestampPrecision(*precision);
      if (!parsed.ok()) return CommandResult::Error(parsed.status().WithContext("--precision"));
      parse_options.precision = *parsed;
    }
    Result<std::optional<Record>> record = ParseLineProtocolLine(line, parse_options);
    if (!record.ok()) return CommandResult::Error(record.status().WithContext("put: line protocol"));
    if (!record->has_value()) {
      return CommandResult::Error(
          Status::InvalidArgument("put: the line holds no point (it is blank or a comment)"));
    }
    const Record& point = **record;
    Result<WriteResult> written = engine_->Write(table, {point});
    if (!written.ok()) return CommandResult::Error(ExplainTableError(written.status()));
    const RecordResult& outcome = written->records.at(0);
    switch (outcome.outcome) {
      case WriteOutcome::kInvalid:
        return CommandResult::Error(Status::InvalidArgument("put: invalid: " + outcome.reason));
      case WriteOutcome::kRejectedVersion:
        return CommandResult::Error(Status::FailedPrecondition("put: rejected: " + outcome.reason));
      case WriteOutcome::kConflict:
        return CommandResult::Error(Status::FailedPrecondition("put: conflict: " + outcome.reason));
      case WriteOutcome::kStored:
      case WriteOutcome::kDuplicate:
        break;
    }
    const bool stored = outcome.outcome == WriteOutcome::kStored;
    // A point without a time that met an untrusted clock is stored in the
    // clock hold, without an LSN or a time yet (cairn/core/clock.h).
    const bool held = stored && written->first_lsn == 0;
    std::vector<CommandResult::Entry> entries = {
        {"outcome", std::string(held ? "held" : stored ? "stored" : "duplicate")},
        {"table", table},
        {"device", point.device_id},
        {"measure", point.measure_name},
    };
    // What the line's reserved fields _version and _ttl set.
    if (point.version != 0) entries.emplace_back("version", Count(point.version));
    if (point.ttl != 0) entries.emplace_back("ttl", ExpiryValue(point.ttl));
    if (held) {
      entries.emplace_back("time", std::string("stamped when the clock is trusted"));
    } else {
      entries.emplace_back("time", TimeValue(point.timestamp));
    }
    if (stored && !held) entries.emplace_back("lsn", Count(written->first_lsn));
    return CommandResult::KeyValues(std::move(entries));
  }

  CommandResult Stats(const CommandInvocation&) {
    const EngineStats stats = engine_->Stats();
    const ClockStatus clock = engine_->Clock();
    std::vector<CommandResult::Entry> entries = {
        {"records_written", Count(stats.records_written)},
        {"records_duplicate", Count(stats.records_duplicate)},
        {"records_rejected", Count(stats.records_rejected)},
        {"records_invalid", Count(stats.records_invalid)},
        {"records_conflict", Count(stats.records_conflict)},
        {"records_overwritten", Count(stats.records_overwritten)},
        {"last_lsn", Count(stats.last_lsn)},
        {"checkpoint_lsn", Count(stats.checkpoint_lsn)},
        {"series", Count(stats.series)},
        {"series_bytes", Count(stats.series_bytes)},
        {"records_over_series_limit", Count(stats.records_over_series_limit)},
        {"head_records", Count(stats.head_records)},
        {"head_bytes", Count(stats.head_bytes)},
        {"chunks_sealed", Count(stats.chunks_sealed)},
        {"chunks_decoded", Count(stats.chunks_decoded)},
        {"log_bytes", Count(stats.log_bytes)},
        {"period_file_bytes", Count(stats.period_file_bytes)},
        // Clock trust (cairn/core/clock.h): readings without a timestamp
        // waiting for a trusted clock, and what became of those that waited.
        {"clock_trusted", clock.trusted ? "yes" : "no"},
        {"clock_held_readings", Count(clock.held_readings)},
        {"clock_readings_restamped", Count(clock.readings_restamped)},
        {"clock_readings_estimated", Count(clock.readings_estimated)},
        {"clock_restamps_refused", Count(clock.restamps_refused)},
        {"clock_timestamps_refused", Count(clock.timestamps_refused)},
    };
    AppendFlashWearEntries(engine_->FlashWear(), /*full=*/true, &entries);
    return CommandResult::KeyValues(std::move(entries));
  }

  CommandResult Health(const CommandInvocation&) {
    Result<std::vector<TableInfo>> tables = engine_->ListTables();
    if (!tables.ok()) return CommandResult::Error(tables.status().WithContext("health: engine"));
    Result<uint64_t> free = env_->FreeSpace(options_.data_dir);
    if (!free.ok()) {
      return CommandResult::Error(
          free.status().WithContext("health: cannot read the free space of " + options_.data_dir));
    }
    const EngineHealth health = engine_->Health();
    std::vector<CommandResult::Entry> entries = {
        {"status", std::string(HealthLevelName(health.level))},
        {"data_dir", options_.data_dir},
        {"free_bytes", Count(*free)},
        {"free", FormatBytes(*free)},
        {"tables", Count(tables->size())},
        {"problems", Count(health.problems.size())},
    };
    AppendFlashWearEntries(engine_->FlashWear(), /*full=*/false, &entries);
    // One entry per open problem, named by its key, so that a script can
    // test for a condition and a person reads what to do.
    for (const HealthProblem& problem : health.problems) {
      std::string text = std::string(HealthLevelName(problem.level)) + ": " + problem.message;
      if (!problem.remedy.empty()) text += " (fix: " + problem.remedy + ")";
      entries.emplace_back("problem." + problem.key, std::move(text));
    }
    return CommandResult::KeyValues(std::move(entries));
  }

 private:
  Engine* const engine_;
  Env* const env_;
  const EngineCommandOptions options_;
};

using Handler = CommandResult (EngineCommands::*)(const CommandInvocation&);

}  // namespace

Result<int64_t> ParseDurationArgument(std::string_view text) {
  const auto bad = [&] {
    return Status::InvalidArgument("bad duration '" + std::string(text) + "': " + kDurationForms);
  };
  if (text.empty()) return bad();
  int64_t total = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t number_start = pos;
    while (pos < text.size() && IsDigit(text[pos])) ++pos;
    if (pos == number_start) return bad();
    int64_t number = 0;
    const auto [end, error] = std::from_chars(text.data() + number_start, text.data() + pos, number);
    const size_t unit_start = pos;
    while (pos < text.size() && !IsDigit(text[pos])) ++pos;
    const std::string_view unit = text.substr(unit_start, pos - unit_start);
    int64_t unit_nanos = 0;
    if (unit == "ns") {
      unit_nanos = 1;
    } else if (unit == "us") {
      unit_nanos = 1'000;
    } else if (unit == "ms") {
      unit_nanos = 1'000'000;
    } else if (unit == "s") {
      unit_nanos = kNanosPerSecond;
    } else if (unit == "m") {
      unit_nanos = 60 * kNanosPerSecond;
    } else if (unit == "h") {
      unit_nanos = 3600 * kNanosPerSecond;
    } else if (unit == "d") {
      unit_nanos = kSecondsPerDay * kNanosPerSecond;
    } else if (unit == "w") {
      unit_nanos = 7 * kSecondsPerDay * kNanosPerSecond;
    } else {
      return bad();
    }
    int64_t part = 0;
    if (error != std::errc() || __builtin_mul_overflow(number, unit_nanos, &part) ||
        __builtin_add_overflow(total, part, &total)) {
      return Status::InvalidArgument("bad duration '" + std::string(text) +
                                     "': too long (at most about 292 years)");
    }
  }
  return total;
}

Result<int64_t> ParseTimeArgument(std::string_view text, int64_t now_unix_nanos) {
  if (text == "now") return now_unix_nanos;
  if (IsIntegerText(text)) {
    int64_t nanos = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), nanos);
    if (error != std::errc()) return BadTime(text, "out of the range of int64 nanoseconds");
    return nanos;
  }
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    Result<int64_t> offset = ParseDurationArgument(text.substr(1));
    if (!offset.ok()) return BadTime(text, kTimeForms);
    int64_t result = 0;
    const bool overflow = text[0] == '-' ? __builtin_sub_overflow(now_unix_nanos, *offset, &result)
                                         : __builtin_add_overflow(now_unix_nanos, *offset, &result);
    if (overflow) return BadTime(text, "outside the times cairn can store (1677-09-21 to 2262-04-11)");
    return result;
  }
  return ParseRfc3339(text);
}

std::string FormatDurationSeconds(int64_t seconds) {
  if (seconds == 0) return "0s";
  if (seconds % kSecondsPerDay == 0) return std::to_string(seconds / kSecondsPerDay) + "d";
  if (seconds % 3600 == 0) return std::to_string(seconds / 3600) + "h";
  if (seconds % 60 == 0) return std::to_string(seconds / 60) + "m";
  return std::to_string(seconds) + "s";
}

Status RegisterEngineCommands(CommandRegistry* registry, Engine* engine, Env* env,
                              const EngineCommandOptions& options) {
  if (options.data_dir.empty()) return Status::InvalidArgument("engine commands need the data directory");
  if (options.default_limit == 0 || options.default_limit > options.max_limit) {
    return Status::InvalidArgument("engine commands: default_limit must be from 1 to max_limit");
  }
  auto commands = std::make_shared<EngineCommands>(engine, env, options);
  const auto add = [&](CommandSpec spec, Handler handler) {
    return registry->Register(std::move(spec), [commands, handler](const CommandInvocation& invocation) {
      return ((*commands).*handler)(invocation);
    });
  };
  const std::string limit_summary = "at most N rows (default " + std::to_string(options.default_limit) +
                                    ", at most " + std::to_string(options.max_limit) + ")";

  CAIRN_RETURN_IF_ERROR(add({.name = "tables",
                             .arguments = "",
                             .summary = "list the tables with their period, retention and default ttl",
                             .options = {},
                             .min_arguments = 0,
                             .max_arguments = 0},
                            &EngineCommands::Tables));
  CAIRN_RETURN_IF_ERROR(add(
      {.name = "create-table",
       .arguments = "NAME",
       .summary = "create a table (names: 1-64 of A-Z a-z 0-9 _ -)",
       .options = {{"period", "P", "one file per hour, day (default), week or month"},
                   {"retention", "D", "drop whole periods older than D (default 30d)"},
                   {"ttl", "D", "records without their own ttl expire D after their time (default never)"},
                   {"max-series", "N",
                    "refuse records that would start a series beyond N (default: the "
                    "daemon's --max-series, 100000)"},
                   {"on-conflict", "P",
                    "a rewrite of a stored point with the same version and other values: reject (default: "
                    "refused, reported) or overwrite (fields merged, the later write wins)"},
                   {"attributes", "A,...", kAttributesSummary}},
       .min_arguments = 1,
       .max_arguments = 1},
      &EngineCommands::CreateTable));
  CAIRN_RETURN_IF_ERROR(add(
      {.name = "alter-table",
       .arguments = "NAME",
       .summary = "change a table's retention, default ttl, series limit, conflict policy or attributes",
       .options = {{"retention", "D", "drop whole periods older than D"},
                   {"ttl", "D", "records without their own ttl expire D after their time (0: never)"},
                   {"max-series", "N", "refuse records that would start a series beyond N (0: the default)"},
                   {"on-conflict", "P", "reject or overwrite a rewrite with the same version and other values"},
                   {"attributes", "A,...", kAttributesSummary}},
       .min_arguments = 1,
       .max_arguments = 1},
      &EngineCommands::AlterTable));
  CAIRN_RETURN_IF_ERROR(add({.name = "drop-table",
                             .arguments = "NAME",
                             .summary = "delete a table and all of its data",
                             .options = {},
                             .min_arguments = 1,
                             .max_arguments = 1},
                            &EngineCommands::DropTable));
  CAIRN_RETURN_IF_ERROR(add({.name = "devices",
                             .arguments = "TABLE",
                             .summary = "list the devices of a table and the measures each reports",
                             .options = {},
                             .min_arguments = 1,
                             .max_arguments = 1},
                            &EngineCommands::Devices));
  CAIRN_RETURN_IF_ERROR(add({.name = "measures",
                             .arguments = "TABLE",
                             .summary = "list the measures of a table: field types, dimensions, devices",
                             .options = {},
                             .min_arguments = 1,
                             .max_arguments = 1},
                            &EngineCommands::Measures));
  CAIRN_RETURN_IF_ERROR(add({.name = "latest",
                             .arguments = "TABLE DEVICE [MEASURE]",
                             .summary = "the newest record of each of a device's series",
                             .options = {{"tags", "K=V,...", kTagsSummary}},
                             .min_arguments = 2,
                             .max_arguments = 3},
                            &EngineCommands::Latest));
  CAIRN_RETURN_IF_ERROR(add({.name = "latest-batch",
                             .arguments = "TABLE DEVICE...",
                             .summary = "the newest record per measure of several devices at once",
                             .options = {{"measure", "M", "only measure M"}, {"tags", "K=V,...", kTagsSummary}},
                             .min_arguments = 2,
                             .max_arguments = kMaxBatchDevices + 1},
                            &EngineCommands::LatestBatch));
  CAIRN_RETURN_IF_ERROR(add({.name = "range",
                             .arguments = "TABLE DEVICE",
                             .summary = "a device's records between two times, oldest first",
                             .options = {{"measure", "M", "only measure M"},
                                         {"prefix", "P", "only measures starting with P, e.g. env#"},
                                         {"tags", "K=V,...", kTagsSummary},
                                         {"from", "T", "from time T, inclusive (default: the beginning)"},
                                         {"to", "T", "up to time T, exclusive (default: the end)"},
                                         {"desc", "", "newest first"},
                                         {"limit", "N", limit_summary},
                                         {"page", "TOKEN", "continue a range that said 'more: use --page'"}},
                             .min_arguments = 2,
                             .max_arguments = 2},
                            &EngineCommands::Range));
  CAIRN_RETURN_IF_ERROR(
      add({.name = "agg",
           .arguments = "TABLE DEVICE MEASURE FIELD",
           .summary = "aggregate a numeric field per time step",
           .options = {{"step", "D", "bucket width, e.g. 15m (required); buckets start at multiples of D"},
                       {"fn", "F,...", "min, max, avg, sum, count, first, last (default count,min,max,avg)"},
                       {"tags", "K=V,...", kTagsSummary},
                       {"group-by", "TAG,...", "buckets of their own for each value of these tags"},
                       {"from", "T", "from time T, inclusive (default: one day before --to)"},
                       {"to", "T", "up to time T, exclusive (default: now)"}},
           .min_arguments = 4,
           .max_arguments = 4},
          &EngineCommands::Aggregate));
  CAIRN_RETURN_IF_ERROR(
      add({.name = "put",
           .arguments = "TABLE LINE",
           .summary = "write one line-protocol point: MEASURE," + options.device_tag +
                      "=D[,TAG=V...] FIELD=V[,...][,_version=Ni][,_ttl=UNIX_SECONDSi] [TIME]",
           .options = {{"precision", "P",
                        "unit of the line's time and t-suffixed values: ns (default), us, ms, s, m, h"}},
           .min_arguments = 2,
           .max_arguments = 2,
           .verbatim_last_argument = true},
          &EngineCommands::Put));
  CAIRN_RETURN_IF_ERROR(add({.name = "stats",
                             .arguments = "",
                             .summary = "engine counters: records, LSNs, head, chunks, bytes on disk",
                             .options = {},
                             .min_arguments = 0,
                             .max_arguments = 0},
                            &EngineCommands::Stats));
  return add({.name = "health",
              .arguments = "",
              .summary = "ok when the engine answers, and the data directory's free space",
              .options = {},
              .min_arguments = 0,
              .max_arguments = 0},
             &EngineCommands::Health);
}

}  // namespace cairn
