#include "cairn/shell/result_renderer.h"

#include <algorithm>
#include <charconv>
#include <type_traits>
#include <variant>

#include "cairn/text/json_writer.h"
#include "cairn/text/timestamp_format.h"

#include "cairn/text/utf8.h"

namespace cairn {

namespace {

constexpr const char* kPagingHint = "narrow the query or page with --limit/--from";

std::string DoubleToText(double value) {
  char buffer[32];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  if (error != std::errc()) return "?";
  return std::string(buffer, end);
}

bool IsNumeric(const Value& value) {
  return std::holds_alternative<int64_t>(value) || std::holds_alternative<double>(value);
}

// Left- or right-aligns `text` (already terminal-safe) in `width` columns.
void AppendPadded(std::string* out, const std::string& text, size_t width, bool right_align,
                  bool last_column) {
  const size_t length = shell::CountCodePoints(text);
  const size_t padding = width > length ? width - length : 0;
  if (right_align) out->append(padding, ' ');
  *out += text;
  if (!right_align && !last_column) out->append(padding, ' ');
}

void AppendMoreLine(std::string* out, size_t not_shown, size_t total, const char* noun) {
  *out += "more: " + std::to_string(not_shown) + " of " + std::to_string(total) + " " + noun +
          " not shown; " + kPagingHint + "\n";
}

// How many of `total` items the row cap lets through.
size_t RowsAllowed(size_t total, const RenderOptions& options) {
  return options.max_rows == 0 ? total : std::min(total, options.max_rows);
}

bool BytesExhausted(const std::string& out, const RenderOptions& options) {
  return options.max_bytes != 0 && out.size() >= options.max_bytes;
}

std::string RenderTableText(const CommandResult& result, const RenderOptions& options) {
  const std::vector<std::string>& columns = result.columns();
  const std::vector<CommandResult::Row>& rows = result.rows();
  const size_t candidates = RowsAllowed(rows.size(), options);

  std::vector<std::vector<std::string>> cells(candidates);
  std::vector<size_t> widths(columns.size());
  std::vector<bool> numeric(columns.size(), false);
  std::vector<bool> non_numeric(columns.size(), false);
  for (size_t c = 0; c < columns.size(); ++c) {
    widths[c] = shell::CountCodePoints(shell::MakeTerminalSafe(columns[c]));
  }
  for (size_t r = 0; r < candidates; ++r) {
    cells[r].resize(columns.size());
    for (size_t c = 0; c < columns.size() && c < rows[r].size(); ++c) {
      const Value& value = rows[r][c];
      cells[r][c] = shell::MakeTerminalSafe(ValueToText(value));
      widths[c] = std::max(widths[c], shell::CountCodePoints(cells[r][c]));
      if (IsNumeric(value)) {
        numeric[c] = true;
      } else if (!std::holds_alternative<std::monostate>(value)) {
        non_numeric[c] = true;
      }
    }
  }

  std::string out;
  for (size_t c = 0; c < columns.size(); ++c) {
    if (c > 0) out += "  ";
    const bool right = numeric[c] && !non_numeric[c];
    AppendPadded(&out, shell::MakeTerminalSafe(columns[c]), widths[c], right, c + 1 == columns.size());
  }
  out += "\n";
  if (rows.empty()) {
    out += "(no rows)\n";
    return out;
  }
  size_t shown = 0;
  while (shown < candidates && !BytesExhausted(out, options)) {
    for (size_t c = 0; c < columns.size(); ++c) {
      if (c > 0) out += "  ";
      const bool right = numeric[c] && !non_numeric[c];
      AppendPadded(&out, cells[shown][c], widths[c], right, c + 1 == columns.size());
    }
    out += "\n";
    ++shown;
  }
  if (shown < rows.size()) AppendMoreLine(&out, rows.size() - shown, rows.size(), "rows");
  return out;
}

std::string RenderKeyValuesText(const CommandResult& result, const RenderOptions& options) {
  const std::vector<CommandResult::Entry>& entries = result.entries();
  const size_t candidates = RowsAllowed(entries.size(), options);
  size_t key_width = 0;
  std::vector<std::string> keys(candidates);
  for (size_t i = 0; i < candidates; ++i) {
    keys[i] = shell::MakeTerminalSafe(entries[i].first);
    key_width = std::max(key_width, shell::CountCodePoints(keys[i]));
  }
  std::string out;
  size_t shown = 0;
  while (shown < candidates && !BytesExhausted(out, options)) {
    AppendPadded(&out, keys[shown], key_width, false, false);
    out += "  ";
    out += shell::MakeTerminalSafe(ValueToText(entries[shown].second));
    out += "\n";
    ++shown;
  }
  if (shown < entries.size()) AppendMoreLine(&out, entries.size() - shown, entries.size(), "entries");
  return out;
}

void WriteJsonValue(JsonWriter* json, const Value& value) {
  std::visit(
      [json](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          json->Null();
        } else if constexpr (std::is_same_v<T, double>) {
          json->Double(v);
        } else if constexpr (std::is_same_v<T, int64_t>) {
          json->Int(v);
        } else if constexpr (std::is_same_v<T, bool>) {
          json->Bool(v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          json->String(v);
        } else {
          static_assert(std::is_same_v<T, Timestamp>);
          json->String(FormatTimestampUtc(v.unix_nanos));
        }
      },
      value);
}

bool JsonBytesExhausted(const JsonWriter& json, const RenderOptions& options) {
  return options.max_bytes != 0 && json.text().size() >= options.max_bytes;
}

}  // namespace

std::string ValueToText(const Value& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return "-";
        } else if constexpr (std::is_same_v<T, double>) {
          return DoubleToText(v);
        } else if constexpr (std::is_same_v<T, int64_t>) {
          return std::to_string(v);
        } else if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::string>) {
          return v;
        } else {
          static_assert(std::is_same_v<T, Timestamp>);
          return FormatTimestampUtc(v.unix_nanos);
        }
      },
      value);
}

std::string RenderText(const CommandResult& result, const RenderOptions& options) {
  std::string out;
  switch (result.kind()) {
    case CommandResult::Kind::kTable:
      out = RenderTableText(result, options);
      break;
    case CommandResult::Kind::kKeyValues:
      out = RenderKeyValuesText(result, options);
      break;
    case CommandResult::Kind::kError:
      return "error: " + shell::MakeTerminalSafe(result.error().message()) + "\n";
  }
  for (const CommandResult::Note& note : result.notes()) {
    if (!note.text.empty()) out += shell::MakeTerminalSafe(note.text) + "\n";
  }
  return out;
}

namespace {

void AppendCsvField(std::string_view text, std::string* out) {
  const bool quote = text.find_first_of(",\"\r\n") != std::string_view::npos ||
                     (!text.empty() && (text.front() == ' ' || text.back() == ' ' || text.front() == '\t' ||
                                        text.back() == '\t'));
  if (!quote) {
    out->append(text);
    return;
  }
  out->push_back('"');
  for (char c : text) {
    if (c == '"') out->push_back('"');
    out->push_back(c);
  }
  out->push_back('"');
}

// About what `rows` rows of `columns` take as JSON objects: each member's
// quoted name and a value of about a dozen characters (a number, a time).
// Within the byte limit when there is one; a guess, not a bound.
size_t EstimatedJsonBytes(const std::vector<std::string>& columns, size_t rows, const RenderOptions& options) {
  constexpr size_t kValueBytes = 14;
  size_t row_bytes = 2;
  for (const std::string& column : columns) row_bytes += column.size() + 4 + kValueBytes;
  const size_t estimate = rows * row_bytes + 64;
  return options.max_bytes != 0 ? std::min(estimate, options.max_bytes + 64) : estimate;
}

void WriteJsonRow(JsonWriter* json, const std::vector<std::string>& columns, const CommandResult::Row& row) {
  json->BeginObject();
  for (size_t c = 0; c < columns.size(); ++c) {
    json->Key(columns[c]);
    if (c < row.size()) {
      WriteJsonValue(json, row[c]);
    } else {
      json->Null();
    }
  }
  json->EndObject();
}

}  // namespace

std::string RenderCsv(const CommandResult& table, bool header) {
  std::string out;
  const std::vector<std::string>& columns = table.columns();
  if (header) {
    for (size_t c = 0; c < columns.size(); ++c) {
      if (c > 0) out.push_back(',');
      AppendCsvField(columns[c], &out);
    }
    out.push_back('\n');
  }
  for (const CommandResult::Row& row : table.rows()) {
    for (size_t c = 0; c < columns.size(); ++c) {
      if (c > 0) out.push_back(',');
      if (c < row.size() && !std::holds_alternative<std::monostate>(row[c])) AppendCsvField(ValueToText(row[c]), &out);
    }
    out.push_back('\n');
  }
  return out;
}

std::string RenderNdjson(const CommandResult& table) {
  std::string out;
  for (const CommandResult::Row& row : table.rows()) {
    JsonWriter json;
    WriteJsonRow(&json, table.columns(), row);
    out += json.text();
    out.push_back('\n');
  }
  return out;
}

std::string RenderJson(const CommandResult& result, const RenderOptions& options,
                       std::string_view rows_member) {
  JsonWriter json;
  json.BeginObject();
  switch (result.kind()) {
    case CommandResult::Kind::kTable: {
      const std::vector<std::string>& columns = result.columns();
      if (rows_member.empty()) {
        json.Key("columns");
        json.BeginArray();
        for (const std::string& column : columns) json.String(column);
        json.EndArray();
        json.Key("rows");
      } else {
        json.Key(rows_member);
      }
      json.BeginArray();
      const size_t candidates = RowsAllowed(result.rows().size(), options);
      json.Reserve(EstimatedJsonBytes(columns, candidates, options));
      size_t shown = 0;
      while (shown < candidates && !JsonBytesExhausted(json, options)) {
        WriteJsonRow(&json, columns, result.rows()[shown]);
        ++shown;
      }
      json.EndArray();
      if (shown < result.rows().size()) {
        json.Key("rows_not_shown");
        json.Uint(result.rows().size() - shown);
      }
      break;
    }
    case CommandResult::Kind::kKeyValues: {
      const size_t candidates = RowsAllowed(result.entries().size(), options);
      size_t shown = 0;
      while (shown < candidates && !JsonBytesExhausted(json, options)) {
        json.Key(result.entries()[shown].first);
        WriteJsonValue(&json, result.entries()[shown].second);
        ++shown;
      }
      if (shown < result.entries().size()) {
        json.Key("entries_not_shown");
        json.Uint(result.entries().size() - shown);
      }
      break;
    }
    case CommandResult::Kind::kError:
      json.Key("error");
      json.BeginObject();
      json.Key("code");
      json.String(StatusCodeName(result.error().code()));
      json.Key("message");
      json.String(result.error().message());
      json.EndObject();
      break;
  }
  for (const CommandResult::Note& note : result.notes()) {
    json.Key(note.key);
    WriteJsonValue(&json, note.value);
  }
  json.EndObject();
  std::string text = std::move(json).TakeText();
  text.push_back('\n');
  return text;
}

}  // namespace cairn
