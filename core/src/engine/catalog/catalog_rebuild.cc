#include "engine/catalog/catalog_rebuild.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <memory>

#include "log/log_reader.h"
#include "storage/flat_json.h"
#include "storage/period_file.h"

namespace cairn {

namespace {

// Names in a data directory that are never a table's directory.
bool IsTableDirName(const std::string& name) {
  if (!ValidateTableName(name).ok()) return false;
  for (std::string_view reserved : kReservedTableNames) {
    if (name == reserved) return false;
  }
  return true;
}

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The period files of every table directory, by table.
Result<std::map<std::string, std::vector<std::string>>> ListPeriodFiles(Env* env, const std::string& data_dir) {
  std::map<std::string, std::vector<std::string>> files;
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> names, env->ListDir(data_dir));
  for (const std::string& name : names) {
    if (!IsTableDirName(name)) continue;
    Result<std::vector<std::string>> entries = env->ListDir(JoinPath(data_dir, name));
    if (!entries.ok()) continue;  // a file, not a directory
    for (const std::string& entry : *entries) {
      if (EndsWith(entry, ".db")) files[name].push_back(JoinPath(JoinPath(data_dir, name), entry));
    }
  }
  return files;
}

Status Untrusted(const std::string& path, const std::string& why) {
  return Status::FailedPrecondition(
      "catalog.db is missing and cannot be rebuilt from the period files: " + path + ": " + why +
      ". Move that file out of the data directory (it stays readable with the sqlite3 shell) and start "
      "cairnd again to rebuild the catalog without it, or put back a copy of catalog.db");
}

}  // namespace

std::string EncodeTableOptions(const TableInfo& table) {
  const TableOptions& o = table.options;
  std::string out = "{\"period\":";
  AppendJsonString(PeriodName(o.period), &out);
  out += ",\"retention_seconds\":" + std::to_string(o.retention_seconds);
  out += ",\"default_ttl_seconds\":" + std::to_string(o.default_ttl_seconds);
  out += ",\"sync\":" + std::to_string(o.sync ? 1 : 0);
  out += ",\"shards\":" + std::to_string(o.shards);
  out += ",\"shard_by\":";
  AppendJsonString(o.shard_by, &out);
  out += ",\"max_series\":" + std::to_string(o.max_series);
  out += ",\"on_conflict\":";
  AppendJsonString(ConflictPolicyName(o.on_conflict), &out);
  if (!o.attributes.empty()) {
    // Names hold no control characters (ValidateTableOptions): a newline
    // separates them in one string, as the flat object holds no arrays.
    std::string names;
    for (const std::string& name : o.attributes) names += (names.empty() ? "" : "\n") + name;
    out += ",\"attributes\":";
    AppendJsonString(names, &out);
  }
  out += ",\"created_ns\":" + std::to_string(table.created_unix_nanos) + "}";
  return out;
}

Status DecodeTableOptions(std::string_view text, TableInfo* table) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<FlatJsonMember> members, ParseFlatJsonObject(text));
  TableInfo decoded = *table;
  TableOptions& o = decoded.options;
  for (const FlatJsonMember& m : members) {
    const auto* number = std::get_if<int64_t>(&m.value);
    const auto* string = std::get_if<std::string>(&m.value);
    if (m.key == "period" && string) {
      CAIRN_ASSIGN_OR_RETURN(o.period, ParsePeriod(*string));
    } else if (m.key == "retention_seconds" && number) {
      o.retention_seconds = *number;
    } else if (m.key == "default_ttl_seconds" && number) {
      o.default_ttl_seconds = *number;
    } else if (m.key == "sync" && number) {
      o.sync = *number != 0;
    } else if (m.key == "shards" && number) {
      o.shards = static_cast<int>(*number);
    } else if (m.key == "shard_by" && string) {
      o.shard_by = *string;
    } else if (m.key == "max_series" && number && *number >= 0) {
      o.max_series = static_cast<uint64_t>(*number);
    } else if (m.key == "attributes" && string) {
      o.attributes.clear();
      for (size_t begin = 0; begin <= string->size();) {
        const size_t end = std::min(string->find('\n', begin), string->size());
        o.attributes.insert(string->substr(begin, end - begin));
        begin = end + 1;
      }
    } else if (m.key == "on_conflict" && string) {
      CAIRN_ASSIGN_OR_RETURN(o.on_conflict, ParseConflictPolicy(*string));
    } else if (m.key == "created_ns" && number) {
      decoded.created_unix_nanos = *number;
    }
  }
  CAIRN_RETURN_IF_ERROR(ValidateTableOptions(o));
  *table = std::move(decoded);
  return Status::Ok();
}

Result<bool> DataWithoutCatalog(Env* env, const std::string& data_dir) {
  if (!env->FileExists(data_dir)) return false;
  CAIRN_ASSIGN_OR_RETURN(auto files, ListPeriodFiles(env, data_dir));
  if (!files.empty()) return true;
  CAIRN_ASSIGN_OR_RETURN(std::optional<uint64_t> log_first, LogFirstSegmentLsn(env, JoinPath(data_dir, "log")));
  return log_first.has_value();
}

// Reads the files of each table newest period first, so that the first
// options and the first row of a series seen are the latest ones.
Result<CatalogRebuildPlan> PlanCatalogRebuild(Env* env, const std::string& vfs_name,
                                              const std::string& data_dir) {
  CAIRN_ASSIGN_OR_RETURN(auto files_by_table, ListPeriodFiles(env, data_dir));
  CatalogRebuildPlan plan;
  // Every series id seen, with its identity and the file that first named it.
  std::map<int64_t, std::pair<CatalogSeries, std::string>> by_id;
  std::map<std::tuple<std::string, std::string, std::string, TagMap>, int64_t> by_identity;
  for (auto& [table_name, paths] : files_by_table) {
    TableInfo table;
    table.name = table_name;
    bool have_period = false, have_options = false;
    std::vector<std::unique_ptr<PeriodFile>> opened;
    for (const std::string& path : paths) {
      // A file whose creation a crash cut before its first byte holds
      // nothing (the engine finishes such files when it next opens them).
      if (Result<uint64_t> size = env->FileSize(path); size.ok() && *size == 0) continue;
      Result<std::unique_ptr<PeriodFile>> file = PeriodFile::OpenReadOnly(env, vfs_name, path, /*cache_kib=*/64);
      if (!file.ok()) return Untrusted(path, file.status().ToString());
      if ((*file)->table() != table_name) {
        return Untrusted(path, "its meta names table '" + (*file)->table() + "', not '" + table_name + "'");
      }
      if (have_period && (*file)->period() != table.options.period) {
        return Untrusted(path, "its period differs from the other files of table '" + table_name + "'");
      }
      table.options.period = (*file)->period();
      have_period = true;
      opened.push_back(std::move(file).value());
    }
    if (opened.empty()) continue;  // only the log can tell of this table
    std::sort(opened.begin(), opened.end(),
              [](const auto& a, const auto& b) { return a->period_start_ns() > b->period_start_ns(); });
    for (const auto& file : opened) {
      const std::string& path = file->path();
      ++plan.files;
      if (!have_options) {
        CAIRN_ASSIGN_OR_RETURN(std::string text, file->TableOptionsText());
        if (!text.empty()) {
          if (Status decoded = DecodeTableOptions(text, &table); !decoded.ok())
            return Untrusted(path, "its table_options cannot be read: " + decoded.ToString());
          have_options = true;
        }
      }
      Result<std::vector<PeriodSeries>> series = file->ListSeries();
      if (!series.ok()) return Untrusted(path, series.status().ToString());
      for (PeriodSeries& s : *series) {
        auto identity = std::make_tuple(table_name, s.device_id, s.measure_name, s.dimensions);
        auto seen = by_id.find(s.series_id);
        if (seen != by_id.end()) {
          const CatalogSeries& c = seen->second.first;
          if (c.table != table_name || c.device_id != s.device_id || c.measure_name != s.measure_name) {
            return Untrusted(path, "series id " + std::to_string(s.series_id) + " is device '" + s.device_id +
                                       "' here but device '" + c.device_id + "' in " + seen->second.second);
          }
          continue;  // a newer file gave its fields already
        }
        if (auto other = by_identity.find(identity); other != by_identity.end()) {
          return Untrusted(path, "device '" + s.device_id + "' measure '" + s.measure_name +
                                     "' with the same dimensions has id " +
                                     std::to_string(s.series_id) + " here and " +
                                     std::to_string(other->second) + " in another file");
        }
        by_identity.emplace(identity, s.series_id);
        CatalogSeries c{s.series_id, table_name, s.device_id, s.measure_name, s.shard,
                        std::move(s.fields), std::move(s.dimensions), TagMap{}};
        plan.max_series_id = std::max(plan.max_series_id, c.series_id);
        by_id.emplace(c.series_id, std::make_pair(std::move(c), path));
      }
      Result<uint64_t> max_lsn = file->MaxLsn();
      if (!max_lsn.ok()) return Untrusted(path, max_lsn.status().ToString());
      plan.max_lsn = std::max(plan.max_lsn, *max_lsn);
      if (*max_lsn != 0) plan.marks.push_back({table_name, file->period_start_ns(), *max_lsn});
    }
    for (auto& file : opened) (void)file->Close();
    if (!have_options) plan.default_option_tables.push_back(table_name);
    plan.tables.push_back(std::move(table));
  }
  for (auto& [id, entry] : by_id) plan.series.push_back(std::move(entry.first));
  return plan;
}

}  // namespace cairn
