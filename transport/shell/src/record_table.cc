#include "cairn/shell/record_table.h"

#include <algorithm>
#include <limits>
#include <map>
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
  RangeColumns columns;
  std::map<std::pair<std::string, FieldType>, size_t> column_of;
  for (const RecordRow& row : rows) {
    for (const Field& field : row.fields) column_of.emplace(std::make_pair(field.name, TypeOf(field.value)), 0);
  }
  for (auto& [key, index] : column_of) {
    index = columns.columns.size();
    ValueColumn& column = columns.columns.emplace_back();
    column.name = key.first;
    column.type = key.second;
  }
  for (const RecordRow& row : rows) {
    const size_t r = columns.size();
    columns.row_series.push_back(static_cast<uint32_t>(columns.series.size()));
    columns.series.push_back(ColumnSeries{row.device_id, row.measure_name, row.dimensions, row.attributes, row.shard});
    columns.timestamps.push_back(row.timestamp);
    columns.versions.push_back(row.version);
    columns.ttls.push_back(row.ttl);
    for (const Field& field : row.fields) columns.columns[column_of[{field.name, TypeOf(field.value)}]].Append(field.value);
    for (ValueColumn& column : columns.columns) {
      if (column.size() == r) column.AppendAbsent();
    }
  }
  return RecordTable(columns);
}

RecordLayout LayoutOf(const RangeColumns& records) {
  RecordLayout layout;
  for (const ColumnSeries& series : records.series) {
    for (const auto& [name, value] : series.dimensions) layout.tags.insert(name);
    for (const auto& [name, value] : series.attributes) layout.tags.insert(name);
  }
  for (const ValueColumn& column : records.columns) layout.fields.insert(column.name);
  for (size_t i = 0; i < records.size() && !(layout.version && layout.ttl); ++i) {
    layout.version = layout.version || records.version(i) != 0;
    layout.ttl = layout.ttl || records.ttl(i) != 0;
  }
  return layout;
}

RecordLayout LayoutOf(const std::vector<MeasureInfo>& measures) {
  RecordLayout layout;
  layout.version = layout.ttl = true;
  for (const MeasureInfo& measure : measures) {
    layout.tags.insert(measure.dimensions.begin(), measure.dimensions.end());
    layout.tags.insert(measure.attributes.begin(), measure.attributes.end());
    for (const auto& [name, type] : measure.fields) layout.fields.insert(name);
  }
  return layout;
}

CommandResult RecordTable(const RangeColumns& records) { return RecordTable(records, LayoutOf(records)); }

CommandResult RecordTable(const RangeColumns& records, const RecordLayout& given) {
  RecordLayout layout = LayoutOf(records);
  layout.tags.insert(given.tags.begin(), given.tags.end());
  layout.fields.insert(given.fields.begin(), given.fields.end());
  layout.version = layout.version || given.version;
  layout.ttl = layout.ttl || given.ttl;
  const std::set<std::string>& tag_names = layout.tags;
  const std::set<std::string>& field_names = layout.fields;
  const bool any_version = layout.version, any_ttl = layout.ttl;
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
  // Where each series' tags and each value column land, worked out once.
  std::vector<std::vector<std::pair<size_t, const std::string*>>> series_cells(records.series.size());
  for (size_t s = 0; s < records.series.size(); ++s) {
    for (const TagMap* tags : {&records.series[s].dimensions, &records.series[s].attributes}) {
      for (const auto& [name, value] : *tags) series_cells[s].emplace_back(first_tag + index_of(ordered_tags, name), &value);
    }
  }
  std::vector<size_t> cell_of_column;
  for (const ValueColumn& column : records.columns) cell_of_column.push_back(first_field + index_of(ordered_fields, column.name));
  std::vector<CommandResult::Row> table_rows;
  table_rows.reserve(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    CommandResult::Row cells(columns.size());
    const uint32_t s = records.row_series[i];
    cells[0] = TimeValue(records.timestamps[i]);
    cells[1] = records.series[s].measure_name;
    for (const auto& [cell, value] : series_cells[s]) cells[cell] = *value;
    size_t next = first_tag + ordered_tags.size();
    if (any_version) cells[next++] = Count(records.version(i));
    if (any_ttl) cells[next++] = ExpiryValue(records.ttl(i));
    for (size_t c = 0; c < records.columns.size(); ++c) {
      if (records.columns[c].present[i]) cells[cell_of_column[c]] = records.columns[c].ValueAt(i);
    }
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
