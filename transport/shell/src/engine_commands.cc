#include "cairn/shell/engine_commands.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "cairn/shell/command_line.h"
#include "cairn/text/line_protocol.h"
#include "cairn/text/time_argument.h"

#include "aggregate_arguments.h"
#include "status_commands.h"
#include "table_commands.h"
#include "cairn/shell/record_table.h"

namespace cairn {

namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;
constexpr int64_t kSecondsPerDay = 86400;

constexpr const char* kTagsSummary =
    "only series whose tags (dimensions or attributes) have these values; '\\' escapes , = \\";
// Default window of `agg` without --from: the day before --to.
constexpr int64_t kDefaultAggregateWindowNanos = kSecondsPerDay * kNanosPerSecond;

// ---- argument helpers -----------------------------------------------------------

Result<int64_t> TimeOption(const CommandInvocation& invocation, std::string_view option, int64_t fallback,
                           int64_t now) {
  std::optional<std::string_view> text = invocation.Value(option);
  if (!text) return fallback;
  Result<int64_t> parsed = ParseTimeArgument(*text, now);
  if (!parsed.ok()) return parsed.status().WithContext("--" + std::string(option));
  return parsed;
}

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

// ---- the commands -------------------------------------------------------------

class EngineCommands {
 public:
  EngineCommands(std::shared_ptr<const EngineHolder> storage, Env* env, EngineCommandOptions options)
      : storage_(std::move(storage)), env_(env), options_(std::move(options)) {}

  // Whether the engine is there; a handler runs only after this said OK, and
  // a published engine stays (engine_holder.h), so engine() is not null in
  // a handler.
  Status CheckStorage() const { return storage_->Check(); }

  // The --tags filter of the read commands; empty when not given.
  static Result<TagMap> TagsOption(const CommandInvocation& invocation) {
    std::optional<std::string_view> text = invocation.Value("tags");
    if (!text) return TagMap{};
    return ParseTagsOption(*text);
  }

  // devices [--after D] [--limit N]: devices are listed in id order, so a
  // page continues after the last id of the one before (the note
  // next_after), however devices come and go in between.
  CommandResult Devices(const CommandInvocation& invocation) {
    size_t limit = 0;
    if (std::optional<std::string_view> text = invocation.Value("limit")) {
      const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), limit);
      if (error != std::errc() || end != text->data() + text->size() || limit == 0) {
        return CommandResult::Error(
            Status::InvalidArgument("--limit: '" + std::string(*text) + "' is not a positive number"));
      }
    }
    const std::string after(invocation.Value("after").value_or(""));
    Result<std::vector<DeviceInfo>> devices = engine()->ListDevices(invocation.arguments()[0]);
    if (!devices.ok()) return CommandResult::Error(ExplainTableError(devices.status()));
    auto first = devices->begin();
    if (invocation.Has("after")) {
      first = std::upper_bound(devices->begin(), devices->end(), after,
                               [](const std::string& id, const DeviceInfo& d) { return id < d.device_id; });
    }
    auto last = devices->end();
    if (limit != 0 && static_cast<size_t>(last - first) > limit) last = first + static_cast<std::ptrdiff_t>(limit);
    std::vector<CommandResult::Row> rows;
    for (auto it = first; it != last; ++it) {
      const DeviceInfo& device = *it;
      std::string measures;
      for (const std::string& measure : device.measures) {
        if (!measures.empty()) measures += ", ";
        measures += measure;
      }
      rows.push_back({device.device_id, std::move(measures)});
    }
    CommandResult table = CommandResult::Table({"device", "measures"}, std::move(rows));
    if (last != devices->end()) {
      const std::string& next = (last - 1)->device_id;
      table.AddNote("next_after", next, "more: use --after " + CommandWord(next));
    }
    return table;
  }

  CommandResult Measures(const CommandInvocation& invocation) {
    Result<std::vector<MeasureInfo>> measures = engine()->ListMeasures(invocation.arguments()[0]);
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
        engine()->Latest(args[0], args[1], args.size() > 2 ? args[2] : "", *tags);
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
    Result<std::vector<RecordRow>> rows = engine()->LatestBatch(args[0], devices, measure, *tags);
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

    Result<ColumnarRangeResult> result = engine()->RangeColumnar(query);
    if (!result.ok()) {
      Status status = ExplainTableError(result.status());
      if (!query.page_token.empty() && status.message() == "malformed page token") {
        status = Status::InvalidArgument("--page: '" + query.page_token +
                                         "' is not a page token from an earlier range");
      }
      return CommandResult::Error(status);
    }
    Result<RecordLayout> layout = invocation.Has("all-columns") ? AllColumns(query) : LayoutOf(result->columns);
    if (!layout.ok()) return CommandResult::Error(ExplainTableError(layout.status()));
    CommandResult table = RecordTable(result->columns, *layout);
    AddSkippedNotes(result->skipped, &table);
    if (!result->next_page_token.empty()) {
      table.AddNote("next_page", result->next_page_token,
                    "more: use --page " + CommandWord(result->next_page_token));
    }
    return table;
  }

  // range --all-columns: every tag and field of the measures the query asks
  // for, so that each page of a range has the same columns.
  Result<RecordLayout> AllColumns(const RangeQuery& query) {
    CAIRN_ASSIGN_OR_RETURN(std::vector<MeasureInfo> measures, engine()->ListMeasures(query.table));
    std::erase_if(measures, [&](const MeasureInfo& m) {
      if (!query.measure_name.empty()) return m.measure_name != query.measure_name;
      return !m.measure_name.starts_with(query.measure_prefix);
    });
    return LayoutOf(measures);
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
      if (Status parsed = ParseGroupBy(*group_by, &query.group_by); !parsed.ok()) return CommandResult::Error(parsed);
    }
    std::optional<std::string_view> step = invocation.Value("step");
    if (!step) return CommandResult::Error(Status::InvalidArgument("agg needs --step D, e.g. --step 15m"));
    Result<int64_t> step_nanos = ParseDurationArgument(*step);
    if (!step_nanos.ok()) return CommandResult::Error(step_nanos.status().WithContext("--step"));
    if (*step_nanos <= 0) return CommandResult::Error(Status::InvalidArgument("--step must be positive"));
    query.step = *step_nanos;

    std::vector<std::string> names;
    Status functions = ParseAggregateFunctions(invocation.Value("fn").value_or("count,min,max,avg"), &query, &names);
    if (!functions.ok()) return CommandResult::Error(functions);

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
    return BucketTable(query, names, *result);
  }

  // One row per bucket: its group's tags, its start, then each function.
  static CommandResult BucketTable(const AggregateQuery& query, const std::vector<std::string>& names,
                                   const AggregateResult& result) {
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
    for (const AggregateBucket& bucket : result.buckets) {
      CommandResult::Row row;
      for (const std::string& name : query.group_by) row.push_back(bucket.group.at(name));
      row.push_back(TimeValue(bucket.start));
      row.insert(row.end(), bucket.values.begin(), bucket.values.end());
      row.resize(columns.size());
      rows.push_back(std::move(row));
    }
    CommandResult table = CommandResult::Table(std::move(columns), std::move(rows));
    AddSkippedNotes(result.skipped, &table);
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
      return engine()->Aggregate(query);
    }
    int64_t first_end = 0;
    if (__builtin_add_overflow(aligned, query.step, &first_end) || first_end > query.to) first_end = query.to;
    AggregateQuery first = query;
    first.to = first_end;
    first.step = first_end - query.from;
    CAIRN_ASSIGN_OR_RETURN(AggregateResult result, engine()->Aggregate(first));
    for (AggregateBucket& bucket : result.buckets) bucket.start = aligned;
    if (first_end < query.to) {
      AggregateQuery rest = query;
      rest.from = first_end;
      CAIRN_ASSIGN_OR_RETURN(AggregateResult more, engine()->Aggregate(rest));
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
    Result<WriteResult> written = engine()->Write(table, {point});
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

 private:
  Engine* engine() const { return storage_->engine(); }

  const std::shared_ptr<const EngineHolder> storage_;
  Env* const env_;
  const EngineCommandOptions options_;
};

using Handler = CommandResult (EngineCommands::*)(const CommandInvocation&);

// Registers a command whose handler is a member of the shared EngineCommands.
using AddCommand = std::function<Status(CommandSpec, Handler)>;

// devices, measures: what a table holds.
Status RegisterCatalogCommands(const AddCommand& add) {
  CAIRN_RETURN_IF_ERROR(add({.name = "devices",
                             .arguments = "TABLE",
                             .summary = "list the devices of a table and the measures each reports",
                             .options = {{"after", "D", "only devices whose id sorts after D"},
                                         {"limit", "N", "at most N devices (then: more: use --after D)"}},
                             .min_arguments = 1,
                             .max_arguments = 1},
                            &EngineCommands::Devices));
  return add({.name = "measures",
              .arguments = "TABLE",
              .summary = "list the measures of a table: field types, dimensions, devices",
              .options = {},
              .min_arguments = 1,
              .max_arguments = 1},
             &EngineCommands::Measures);
}

// latest, latest-batch, range, agg: the readings themselves.
Status RegisterReadCommands(const AddCommand& add, const EngineCommandOptions& options) {
  const std::string limit_summary = "at most N rows (default " + std::to_string(options.default_limit) +
                                    ", at most " + std::to_string(options.max_limit) + ")";
  CAIRN_RETURN_IF_ERROR(add({.name = "latest",
                             .arguments = "TABLE DEVICE [MEASURE]",
                             .summary = "the newest record of each of a device's series",
                             .options = {{"tags", "K=V,...", kTagsSummary}},
                             .min_arguments = 2,
                             .max_arguments = 3},
                            &EngineCommands::Latest));
  CAIRN_RETURN_IF_ERROR(
      add({.name = "latest-batch",
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
                                         {"page", "TOKEN", "continue a range that said 'more: use --page'"},
                                         {"all-columns", "",
                                          "a column for every tag and field of the measures asked for, and "
                                          "version and ttl, even where no row has one (the same columns page "
                                          "after page)"}},
                             .min_arguments = 2,
                             .max_arguments = 2},
                            &EngineCommands::Range));
  return add(
      {.name = "agg",
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
      &EngineCommands::Aggregate);
}

// put: one line-protocol point.
Status RegisterWriteCommands(const AddCommand& add, const EngineCommandOptions& options) {
  return add({.name = "put",
              .arguments = "TABLE LINE",
              .summary = "write one line-protocol point: MEASURE," + options.device_tag +
                         "=D[,TAG=V...] FIELD=V[,...][,_version=Ni][,_ttl=UNIX_SECONDSi] [TIME]",
              .options = {{"precision", "P",
                           "unit of the line's time and t-suffixed values: ns (default), us, ms, s, m, h"}},
              .min_arguments = 2,
              .max_arguments = 2,
              .verbatim_last_argument = true},
             &EngineCommands::Put);
}

// Registers every engine command over `storage`, which the handlers share
// (and keep alive when it is theirs alone).
Status RegisterOverHolder(CommandRegistry* registry, const std::shared_ptr<const EngineHolder>& storage,
                          Env* env, const EngineCommandOptions& options) {
  if (options.data_dir.empty()) return Status::InvalidArgument("engine commands need the data directory");
  if (options.default_limit == 0 || options.default_limit > options.max_limit) {
    return Status::InvalidArgument("engine commands: default_limit must be from 1 to max_limit");
  }
  auto commands = std::make_shared<EngineCommands>(storage, env, options);
  const AddCommand add = [registry, commands](CommandSpec spec, Handler handler) {
    return registry->Register(std::move(spec), [commands, handler](const CommandInvocation& invocation) {
      if (Status storage = commands->CheckStorage(); !storage.ok()) return CommandResult::Error(storage);
      return ((*commands).*handler)(invocation);
    });
  };
  // tables, create-table, alter-table, drop-table (table_commands.cc).
  CAIRN_RETURN_IF_ERROR(RegisterTableCommands(registry, storage));
  CAIRN_RETURN_IF_ERROR(RegisterCatalogCommands(add));
  CAIRN_RETURN_IF_ERROR(RegisterReadCommands(add, options));
  CAIRN_RETURN_IF_ERROR(RegisterWriteCommands(add, options));
  // stats, health (status_commands.cc).
  return RegisterStatusCommands(registry, storage, env, options.data_dir);
}

}  // namespace

Status RegisterEngineCommands(CommandRegistry* registry, Engine* engine, Env* env,
                              const EngineCommandOptions& options) {
  return RegisterOverHolder(registry, std::make_shared<const EngineHolder>(engine), env, options);
}

Status RegisterEngineCommands(CommandRegistry* registry, const EngineHolder* storage, Env* env,
                              const EngineCommandOptions& options) {
  // Not owned: an aliasing pointer without an owner.
  return RegisterOverHolder(registry, std::shared_ptr<const EngineHolder>(std::shared_ptr<void>(), storage),
                            env, options);
}

}  // namespace cairn
