// The table commands of the shell (engine_commands.h): tables,
// create-table, alter-table and drop-table.
#include "table_commands.h"

#include <algorithm>
#include <charconv>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "cairn/shell/record_table.h"
#include "cairn/text/time_argument.h"

namespace cairn {

namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;

constexpr const char* kAttributesSummary =
    "tag names that are metadata, not identity: they do not split series (default none)";

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

class TableCommands {
 public:
  explicit TableCommands(std::shared_ptr<const EngineHolder> storage) : storage_(std::move(storage)) {}

  // Run before every handler, which then has the engine (engine_holder.h).
  Status CheckStorage() const { return storage_->Check(); }

  CommandResult Tables(const CommandInvocation&) {
    Result<std::vector<TableInfo>> tables = engine()->ListTables();
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
    Status created = engine()->CreateTable(name, table_options);
    if (!created.ok()) return CommandResult::Error(created);
    return DescribeTable("created", name, table_options);
  }

  CommandResult AlterTable(const CommandInvocation& invocation) {
    const std::string& name = invocation.arguments()[0];
    Result<TableInfo> table = engine()->GetTable(name);
    if (!table.ok()) return CommandResult::Error(ExplainTableError(table.status()));
    TableOptions table_options = table->options;
    if (Status changed = ApplyChangeableOptions(invocation, &table_options); !changed.ok()) {
      return CommandResult::Error(changed);
    }
    Status altered = engine()->AlterTable(name, table_options);
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
    Status dropped = engine()->DropTable(name);
    if (!dropped.ok()) return CommandResult::Error(ExplainTableError(dropped));
    return CommandResult::KeyValues({{"dropped", name}});
  }

 private:
  Engine* engine() const { return storage_->engine(); }

  const std::shared_ptr<const EngineHolder> storage_;
};

using Handler = CommandResult (TableCommands::*)(const CommandInvocation&);

}  // namespace

Status ExplainTableError(const Status& status) {
  if (status.Is(StatusCode::kNotFound) && status.message().rfind("table '", 0) == 0) {
    return Status::NotFound(status.message() + "; type tables to list them");
  }
  return status;
}

Status RegisterTableCommands(CommandRegistry* registry, std::shared_ptr<const EngineHolder> storage) {
  auto commands = std::make_shared<TableCommands>(std::move(storage));
  const auto add = [&](CommandSpec spec, Handler handler) {
    return registry->Register(std::move(spec), [commands, handler](const CommandInvocation& invocation) {
      if (Status storage = commands->CheckStorage(); !storage.ok()) return CommandResult::Error(storage);
      return ((*commands).*handler)(invocation);
    });
  };
  CAIRN_RETURN_IF_ERROR(add({.name = "tables",
                             .arguments = "",
                             .summary = "list the tables with their period, retention and default ttl",
                             .options = {},
                             .min_arguments = 0,
                             .max_arguments = 0},
                            &TableCommands::Tables));
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
      &TableCommands::CreateTable));
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
      &TableCommands::AlterTable));
  CAIRN_RETURN_IF_ERROR(add({.name = "drop-table",
                             .arguments = "NAME",
                             .summary = "delete a table and all of its data",
                             .options = {},
                             .min_arguments = 1,
                             .max_arguments = 1},
                            &TableCommands::DropTable));
  return Status::Ok();
}

}  // namespace cairn
