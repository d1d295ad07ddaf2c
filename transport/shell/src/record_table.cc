#include "cairn/shell/record_table.h"

#include <algorithm>
#include <limits>
#include <set>
#include <utility>

namespace cairn {

namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;

}  // namespace

Value Count(uint64_t value) {
  return static_cast<int64_t>(
      std::min<uint64_t>(value, static_cast<uint64_t>(std::numeric_limits<int64_t>::max())));
}

Value TimeValue(int64_t unix_nanos) { return Timestamp{unix_nanos}; }

Value ExpiryValue(int64_t ttl_seconds) {
  if (ttl_seconds == 0) return std::monostate();
  if (ttl_seconds > std::numeric_limits<int64_t>::max() / kNanosPerSecond) return ttl_seconds;
  return TimeValue(ttl_seconds * kNanosPerSecond);
}

std::string UniqueColumnName(const std::string& name, std::set<std::string>* used) {
  std::string candidate = name + " (field)";
  while (used->count(candidate) != 0) candidate += " (field)";
  used->insert(candidate);
  return candidate;
}

CommandResult RecordTable(const std::vector<RecordRow>& rows) {
  std::set<std::string> tag_names, field_names;
  bool any_version = false, any_ttl = false;
  for (const RecordRow& row : rows) {
    for (const auto& [name, value] : row.dimensions) tag_names.insert(name);
    for (const auto& [name, value] : row.attributes) tag_names.insert(name);
    for (const Field& field : row.fields) field_names.insert(field.name);
    any_version = any_version || row.version != 0;
    any_ttl = any_ttl || row.ttl != 0;
  }
  std::vector<std::string> columns = {"time", "measure"};
  std::set<std::string> used(columns.begin(), columns.end());
  const size_t first_tag = columns.size();
  const std::vector<std::string> ordered_tags(tag_names.begin(), tag_names.end());
  for (const std::string& name : ordered_tags) {
    // A tag called time or measure keeps its value under another key.
    columns.push_back(used.count(name) != 0 ? UniqueColumnName(name, &used) : name);
    used.insert(columns.back());
  }
  if (any_version) columns.push_back("version");
  if (any_ttl) columns.push_back("ttl");
  used.insert(columns.begin(), columns.end());
  const size_t first_field = columns.size();
  const std::vector<std::string> ordered_fields(field_names.begin(), field_names.end());
  std::set<std::string> taken = used;
  taken.insert(field_names.begin(), field_names.end());
  for (const std::string& name : ordered_fields) {
    columns.push_back(used.count(name) != 0 ? UniqueColumnName(name, &taken) : name);
  }

  const auto index_of = [](const std::vector<std::string>& sorted, const std::string& name) {
    return static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(), name) - sorted.begin());
  };
  std::vector<CommandResult::Row> table_rows;
  table_rows.reserve(rows.size());
  for (const RecordRow& row : rows) {
    CommandResult::Row cells(columns.size());
    cells[0] = TimeValue(row.timestamp);
    cells[1] = row.measure_name;
    for (const TagMap* tags : {&row.dimensions, &row.attributes}) {
      for (const auto& [name, value] : *tags) cells[first_tag + index_of(ordered_tags, name)] = value;
    }
    size_t next = first_tag + ordered_tags.size();
    if (any_version) cells[next++] = Count(row.version);
    if (any_ttl) cells[next++] = ExpiryValue(row.ttl);
    for (const Field& field : row.fields) cells[first_field + index_of(ordered_fields, field.name)] = field.value;
    table_rows.push_back(std::move(cells));
  }
  std::string tag_columns;
  for (size_t i = 0; i < ordered_tags.size(); ++i) {
    tag_columns += (i == 0 ? "" : ",") + columns[first_tag + i];
  }
  CommandResult table = CommandResult::Table(std::move(columns), std::move(table_rows));
  // In JSON, which members of a record are tags rather than fields.
  if (!tag_columns.empty()) table.AddNote("tags", std::move(tag_columns), "");
  return table;
}

Result<TagMap> ParseTagsOption(std::string_view text) {
  TagMap tags;
  std::string name, value;
  bool in_value = false;
  const auto finish = [&]() -> Status {
    if (!in_value) return Status::InvalidArgument("--tags: '" + name + "' has no '=VALUE'");
    CAIRN_RETURN_IF_ERROR(ValidateIdentifier("--tags: tag name", name, kMaxFieldNameBytes));
    if (!value.empty()) CAIRN_RETURN_IF_ERROR(ValidateIdentifier("--tags: value of " + name, value, kMaxDimensionBytes));
    if (!tags.emplace(name, value).second) return Status::InvalidArgument("--tags: '" + name + "' is given twice");
    name.clear();
    value.clear();
    in_value = false;
    return Status::Ok();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\\') {
      if (i + 1 == text.size()) return Status::InvalidArgument("--tags: a backslash ends the text");
      c = text[++i];
    } else if (c == ',') {
      CAIRN_RETURN_IF_ERROR(finish());
      continue;
    } else if (c == '=' && !in_value) {
      in_value = true;
      continue;
    }
    (in_value ? value : name).push_back(c);
  }
  CAIRN_RETURN_IF_ERROR(finish());
  return tags;
}

std::string FormatTagsOption(const TagMap& tags) {
  std::string text;
  const auto append = [&text](const std::string& part) {
    for (char c : part) {
      if (c == ',' || c == '=' || c == '\\') text.push_back('\\');
      text.push_back(c);
    }
  };
  for (const auto& [name, value] : tags) {
    if (!text.empty()) text.push_back(',');
    append(name);
    text.push_back('=');
    append(value);
  }
  return text;
}

}  // namespace cairn
