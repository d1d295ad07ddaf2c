#include "cairnd/config_tables.h"

#include <functional>

#include "cairn/text/time_argument.h"

#include "cairnd/flag_table.h"

namespace cairn::cairnd {

namespace {

// One table key: whether a declaration sets it, and how it reads and writes
// TableOptions, so that existing tables change one key at a time and an
// engine refusal names the key.
struct TableKey {
  const char* name;
  std::function<void(const TableOptions& from, TableOptions* to)> copy;
  std::function<std::string(const TableOptions&)> show;
};

const std::vector<TableKey>& TableKeys() {
  static const std::vector<TableKey> keys = {
      {"period", [](const TableOptions& f, TableOptions* t) { t->period = f.period; },
       [](const TableOptions& o) { return std::string(PeriodName(o.period)); }},
      {"retention",
       [](const TableOptions& f, TableOptions* t) { t->retention_seconds = f.retention_seconds; },
       [](const TableOptions& o) { return FormatDurationSeconds(o.retention_seconds); }},
      {"default_ttl",
       [](const TableOptions& f, TableOptions* t) { t->default_ttl_seconds = f.default_ttl_seconds; },
       [](const TableOptions& o) { return FormatDurationSeconds(o.default_ttl_seconds); }},
      {"on_conflict", [](const TableOptions& f, TableOptions* t) { t->on_conflict = f.on_conflict; },
       [](const TableOptions& o) { return std::string(ConflictPolicyName(o.on_conflict)); }},
      {"sync", [](const TableOptions& f, TableOptions* t) { t->sync = f.sync; },
       [](const TableOptions& o) { return std::string(o.sync ? "true" : "false"); }},
      {"max_series", [](const TableOptions& f, TableOptions* t) { t->max_series = f.max_series; },
       [](const TableOptions& o) { return std::to_string(o.max_series); }},
      {"attributes", [](const TableOptions& f, TableOptions* t) { t->attributes = f.attributes; },
       [](const TableOptions& o) {
         std::string names;
         for (const std::string& name : o.attributes) names += (names.empty() ? "" : ",") + name;
         return "[" + names + "]";
       }},
  };
  return keys;
}

Status AlterDeclaredTable(Engine* engine, const TableDeclaration& table, TableOptions current, Logger* log) {
  for (const TableKey& key : TableKeys()) {
    if (table.keys.count(key.name) == 0) continue;
    TableOptions wanted = current;
    key.copy(table.options, &wanted);
    const std::string was = key.show(current), now = key.show(wanted);
    if (was == now) continue;
    const std::string path = "tables." + table.name + "." + key.name;
    const Status altered = engine->AlterTable(table.name, wanted);
    if (!altered.ok()) {
      return Status::InvalidArgument(table.where + ": " + path + ": cannot change " + was + " to " + now +
                                     ": " + altered.message());
    }
    log->Info("config: " + path + " changed from " + was + " to " + now);
    current = wanted;
  }
  return Status::Ok();
}

}  // namespace

Status ApplyTableDeclarations(Engine* engine, const std::vector<TableDeclaration>& tables, Logger* log) {
  for (const TableDeclaration& table : tables) {
    Result<TableInfo> existing = engine->GetTable(table.name);
    if (existing.ok()) {
      CAIRN_RETURN_IF_ERROR(AlterDeclaredTable(engine, table, existing->options, log));
      continue;
    }
    if (!existing.status().Is(StatusCode::kNotFound))
      return existing.status().WithContext("tables." + table.name);
    const Status created = engine->CreateTable(table.name, table.options);
    if (!created.ok()) {
      return Status::InvalidArgument(table.where + ": tables." + table.name +
                                     ": cannot create: " + created.message());
    }
    log->Info("config: created table '" + table.name + "' (period " +
              std::string(PeriodName(table.options.period)) + ", retention " +
              FormatDurationSeconds(table.options.retention_seconds) + ")");
  }
  return Status::Ok();
}

std::vector<std::string> KeysNeedingRestart(const DaemonOptions& running, const DaemonOptions& reread) {
  std::vector<std::string> keys;
  for (const FlagSpec& flag : AllFlags()) {
    if (flag.key.empty()) continue;
    if (flag.show(running) != flag.show(reread)) keys.emplace_back(flag.key);
  }
  return keys;
}

}  // namespace cairn::cairnd
