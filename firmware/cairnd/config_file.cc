// The only file that includes toml++: the library is used header-only
// (toolchains/Dependencies.cmake), so its parser is compiled here once.
#include "cairnd/config_file.h"

#include <algorithm>
#include <charconv>
#include <sstream>
#include <vector>

#include <toml++/toml.h>

#include "cairn/text/time_argument.h"

#include "cairnd/flag_table.h"

namespace cairn::cairnd {

namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;

std::string Where(const toml::source_region& source) {
  const std::string path = source.path ? *source.path : std::string("config");
  return path + ":" + std::to_string(source.begin.line) + ":" + std::to_string(source.begin.column);
}

Status ErrorAt(const toml::source_region& source, std::string_view key, std::string_view why) {
  return Status::InvalidArgument(Where(source) + ": " + std::string(key) + ": " + std::string(why));
}

std::string_view TypeName(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    default:
      return "a date or time";
  }
}

// A table's entries in the order the file gives them (toml++ keeps them
// sorted by name), so that the first error reported is the first in the
// file and tables are created in the order they are declared.
struct Entry {
  const toml::key* name;
  const toml::node* node;
};

std::vector<Entry> InFileOrder(const toml::table& table) {
  std::vector<Entry> entries;
  for (const auto& [name, node] : table) entries.push_back(Entry{&name, &node});
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    const toml::source_position &pa = a.name->source().begin, &pb = b.name->source().begin;
    return pa.line != pb.line ? pa.line < pb.line : pa.column < pb.column;
  });
  return entries;
}

std::string DecimalText(double value) {
  char buffer[64];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return error == std::errc() ? std::string(buffer, end) : std::string("nan");
}

// The value of `node` as the text its flag takes, or nullopt when its type
// is not the key's kind (the caller names what was expected).
std::optional<std::string> FlagText(const toml::node& node, KeyKind kind) {
  switch (kind) {
    case KeyKind::kBool:
      if (const auto* b = node.as_boolean()) return std::string(b->get() ? "true" : "false");
      return std::nullopt;
    case KeyKind::kInteger:
      if (const auto* i = node.as_integer()) return std::to_string(i->get());
      return std::nullopt;
    case KeyKind::kNumber:
      if (const auto* i = node.as_integer()) return std::to_string(i->get());
      if (const auto* f = node.as_floating_point()) return DecimalText(f->get());
      return std::nullopt;
    case KeyKind::kSize:
      if (const auto* i = node.as_integer()) return std::to_string(i->get());
      if (const auto* s = node.as_string()) return s->get();
      return std::nullopt;
    case KeyKind::kText:
      if (const auto* s = node.as_string()) return s->get();
      return std::nullopt;
  }
  return std::nullopt;
}

std::string_view ExpectedType(KeyKind kind) {
  switch (kind) {
    case KeyKind::kBool:
      return "true or false";
    case KeyKind::kInteger:
      return "an integer";
    case KeyKind::kNumber:
      return "a number";
    case KeyKind::kSize:
      return "an integer (bytes) or a size string like \"512M\"";
    case KeyKind::kText:
      return "a string";
  }
  return "";
}

// The flag's messages start "flag --name: "; in the file the key names it.
std::string WithoutFlagPrefix(const std::string& message, std::string_view flag) {
  const std::string prefix = "flag " + std::string(flag) + ": ";
  return message.compare(0, prefix.size(), prefix) == 0 ? message.substr(prefix.size()) : message;
}

Status ApplyKey(const FlagSpec& flag, const toml::node& node, ParsedCommandLine* parsed,
                std::set<std::string_view>* seen) {
  const std::optional<std::string> text = FlagText(node, flag.kind());
  if (!text) {
    return ErrorAt(
        node.source(), flag.key,
        "expected " + std::string(ExpectedType(flag.kind())) + ", found " + std::string(TypeName(node)));
  }
  if (flag.kind() == KeyKind::kBool && *text == "false") return Status::Ok();  // the default
  const Status applied = flag.apply(flag.name, *text, parsed);
  if (!applied.ok()) return ErrorAt(node.source(), flag.key, WithoutFlagPrefix(applied.message(), flag.name));
  seen->insert(flag.name);
  return Status::Ok();
}

Status ApplySection(std::string_view section, const toml::table& table, ParsedCommandLine* parsed,
                    std::set<std::string_view>* seen) {
  for (const Entry& entry : InFileOrder(table)) {
    const toml::key& name = *entry.name;
    const toml::node& node = *entry.node;
    const std::string key = std::string(section) + "." + std::string(name.str());
    const std::optional<FlagSpec> flag = FindFlagByKey(key);
    if (!flag) return ErrorAt(name.source(), key, "unknown key");
    CAIRN_RETURN_IF_ERROR(ApplyKey(*flag, node, parsed, seen));
  }
  return Status::Ok();
}

// ---- [tables.NAME] ---------------------------------------------------------------

Result<int64_t> DurationSeconds(const toml::node& node, const std::string& key) {
  const auto* text = node.as_string();
  if (text == nullptr) {
    return ErrorAt(node.source(), key,
                   "expected a duration string like \"30d\", found " + std::string(TypeName(node)));
  }
  Result<int64_t> nanos = ParseDurationArgument(text->get());
  if (!nanos.ok()) return ErrorAt(node.source(), key, nanos.status().message());
  if (*nanos % kNanosPerSecond != 0) return ErrorAt(node.source(), key, "not a whole number of seconds");
  return *nanos / kNanosPerSecond;
}

Result<std::string> TableText(const toml::node& node, const std::string& key) {
  if (const auto* text = node.as_string()) return text->get();
  return ErrorAt(node.source(), key, "expected a string, found " + std::string(TypeName(node)));
}

// `where`: the key's position, for an unknown key.
Status ApplyTableKey(std::string_view name, const toml::node& node, const std::string& key,
                     const toml::source_region& where, TableOptions* options) {
  if (name == "period") {
    CAIRN_ASSIGN_OR_RETURN(const std::string text, TableText(node, key));
    Result<Period> period = ParsePeriod(text);
    if (!period.ok()) return ErrorAt(node.source(), key, period.status().message());
    options->period = *period;
  } else if (name == "retention") {
    CAIRN_ASSIGN_OR_RETURN(options->retention_seconds, DurationSeconds(node, key));
  } else if (name == "default_ttl") {
    CAIRN_ASSIGN_OR_RETURN(options->default_ttl_seconds, DurationSeconds(node, key));
  } else if (name == "on_conflict") {
    CAIRN_ASSIGN_OR_RETURN(const std::string text, TableText(node, key));
    Result<ConflictPolicy> policy = ParseConflictPolicy(text);
    if (!policy.ok()) return ErrorAt(node.source(), key, policy.status().message());
    options->on_conflict = *policy;
  } else if (name == "sync") {
    const auto* flag = node.as_boolean();
    if (flag == nullptr)
      return ErrorAt(node.source(), key, "expected true or false, found " + std::string(TypeName(node)));
    options->sync = flag->get();
  } else if (name == "max_series") {
    const auto* count = node.as_integer();
    if (count == nullptr || count->get() < 0) {
      return ErrorAt(node.source(), key, "expected an integer >= 0 (0: the engine's default)");
    }
    options->max_series = static_cast<uint64_t>(count->get());
  } else if (name == "attributes") {
    const auto* names = node.as_array();
    if (names == nullptr) return ErrorAt(node.source(), key, "expected an array of tag names");
    options->attributes.clear();
    for (const toml::node& element : *names) {
      CAIRN_ASSIGN_OR_RETURN(std::string attribute, TableText(element, key));
      options->attributes.insert(std::move(attribute));
    }
  } else {
    return ErrorAt(
        where, key,
        "unknown key (a table takes period, retention, default_ttl, on_conflict, sync, max_series, "
        "attributes)");
  }
  return Status::Ok();
}

Status ApplyTables(const toml::node& node, DaemonOptions* options) {
  const toml::table* tables = node.as_table();
  if (tables == nullptr) return ErrorAt(node.source(), "tables", "expected [tables.NAME] sections");
  for (const Entry& table_entry : InFileOrder(*tables)) {
    const toml::key& name = *table_entry.name;
    const toml::node& declared = *table_entry.node;
    const std::string prefix = "tables." + std::string(name.str());
    const Status valid_name = ValidateTableName(name.str());
    if (!valid_name.ok()) return ErrorAt(name.source(), prefix, valid_name.message());
    const toml::table* keys = declared.as_table();
    if (keys == nullptr) return ErrorAt(declared.source(), prefix, "expected a [" + prefix + "] section");
    TableDeclaration table{std::string(name.str()), TableOptions{}, {}, Where(name.source())};
    for (const Entry& key_entry : InFileOrder(*keys)) {
      const toml::key& key_name = *key_entry.name;
      const toml::node& value = *key_entry.node;
      const std::string key = prefix + "." + std::string(key_name.str());
      CAIRN_RETURN_IF_ERROR(ApplyTableKey(key_name.str(), value, key, key_name.source(), &table.options));
      table.keys.insert(std::string(key_name.str()));
    }
    const Status valid = ValidateTableOptions(table.options);
    if (!valid.ok()) return ErrorAt(name.source(), prefix, valid.message());
    options->tables.push_back(std::move(table));
  }
  return Status::Ok();
}

// ---- showing -------------------------------------------------------------------

std::string Quoted(const std::string& text) {
  std::ostringstream out;
  out << toml::value<std::string>(text);
  return out.str();
}

// tcp://USER:PASSWORD@host:1883 -> tcp://<redacted>@host:1883.
std::string RedactUri(const std::string& uri) {
  const size_t scheme = uri.find("://");
  const size_t start = scheme == std::string::npos ? 0 : scheme + 3;
  const size_t at = uri.find('@', start);
  if (at == std::string::npos || uri.find('/', start) < at) return uri;
  return uri.substr(0, start) + "<redacted>" + uri.substr(at);
}

std::string TomlValue(const FlagSpec& flag, const std::string& text) {
  if (flag.key == "sync.broker" || flag.key == "mqtt_input.broker") return Quoted(RedactUri(text));
  return flag.kind() == KeyKind::kText ? Quoted(text) : text;
}

// The sync keys other than the broker are errors without one, so while sync
// is off they are shown as comments.
bool KeyActive(const FlagSpec& flag, const DaemonOptions& options) {
  return flag.section() != "sync" || flag.key == "sync.broker" || !options.sync_broker.empty();
}

void RenderTable(const TableDeclaration& table, std::string* out) {
  const TableOptions& o = table.options;
  *out += "\n[tables." + table.name + "]\n";
  const auto line = [&](std::string_view key, const std::string& value) {
    if (table.keys.count(std::string(key)) != 0) *out += std::string(key) + " = " + value + "\n";
  };
  line("period", Quoted(std::string(PeriodName(o.period))));
  line("retention", Quoted(FormatDurationSeconds(o.retention_seconds)));
  line("default_ttl", Quoted(FormatDurationSeconds(o.default_ttl_seconds)));
  line("on_conflict", Quoted(std::string(ConflictPolicyName(o.on_conflict))));
  line("sync", o.sync ? "true" : "false");
  line("max_series", std::to_string(o.max_series));
  std::string attributes;
  for (const std::string& name : o.attributes) attributes += (attributes.empty() ? "" : ", ") + Quoted(name);
  line("attributes", "[" + attributes + "]");
}

}  // namespace

Result<std::optional<ConfigText>> ReadConfigFile(Env* env, const std::string& path, bool named) {
  if (path.empty()) return std::optional<ConfigText>();
  if (!env->FileExists(path)) {
    if (!named) return std::optional<ConfigText>();
    return Status::NotFound("config file " + path + " does not exist (--config none: flags only)");
  }
  Result<std::string> text = env->ReadFileToString(path);
  if (!text.ok()) return text.status().WithContext("cannot read config file " + path);
  return std::optional<ConfigText>(ConfigText{path, std::move(*text)});
}

Status ApplyConfigText(const ConfigText& config, ParsedCommandLine* parsed,
                       std::set<std::string_view>* seen) {
  toml::parse_result result = toml::parse(config.text, config.path);
  if (!result) {
    const toml::parse_error& error = result.error();
    return Status::InvalidArgument(Where(error.source()) + ": " + std::string(error.description()));
  }
  for (const Entry& entry : InFileOrder(result.table())) {
    const toml::key& name = *entry.name;
    const toml::node& node = *entry.node;
    if (name.str() == "tables") {
      CAIRN_RETURN_IF_ERROR(ApplyTables(node, &parsed->options));
      continue;
    }
    const toml::table* section = node.as_table();
    const std::string_view section_name = name.str();  // a lambda may not capture a structured binding
    const bool known = std::any_of(AllFlags().begin(), AllFlags().end(), [&](const FlagSpec& flag) {
      return !flag.key.empty() && flag.section() == section_name;
    });
    if (!known) return ErrorAt(name.source(), name.str(), "unknown section");
    if (section == nullptr) {
      return ErrorAt(node.source(), name.str(), "expected a [" + std::string(name.str()) + "] section");
    }
    CAIRN_RETURN_IF_ERROR(ApplySection(name.str(), *section, parsed, seen));
  }
  return Status::Ok();
}

std::string RenderConfig(const DaemonOptions& options) {
  std::string out;
  std::string_view section;
  for (const FlagSpec& flag : AllFlags()) {
    if (flag.key.empty()) continue;
    if (flag.section() != section) {
      section = flag.section();
      out += (out.empty() ? "[" : "\n[") + std::string(section) + "]\n";
    }
    const std::optional<std::string> value = flag.show(options);
    if (!value) {
      out += "# " + std::string(flag.key_name()) + " =\n";
    } else {
      out += (KeyActive(flag, options) ? "" : "# ") + std::string(flag.key_name()) + " = " +
             TomlValue(flag, *value) + "\n";
    }
  }
  for (const TableDeclaration& table : options.tables) RenderTable(table, &out);
  return out;
}

}  // namespace cairn::cairnd
