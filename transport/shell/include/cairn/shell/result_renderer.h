// Rendering a CommandResult for people (aligned text) or programs (JSON).
//
// Text: tables are a header line and one line per row, columns separated by
// two spaces, numeric columns right-aligned; key/values are one "key  value"
// line each; errors are "error: <message>". Every line ends with "\n" (the
// serial shell turns that into CRLF). All user-supplied text is made
// terminal-safe: control characters are shown as escapes and ill-formed
// UTF-8 as U+FFFD, so stored data can never drive the operator's terminal.
//
// JSON (one line, then "\n"):
//   table       {"columns":["a","b"],"rows":[{"a":1,"b":"x"}]}
//   key/values  {"version":"0.1.0","target_arch":"aarch64"}
//   error       {"error":{"code":"InvalidArgument","message":"..."}}
// Absent values are null; timestamps are RFC 3339 strings in UTC.
// Notes (CommandResult::Note) follow the result: in text one line each, in
// JSON one top-level member each, after the rows or entries.
//
// Output capping keeps a slow serial line usable when a query matches more
// than a person wants to see: at most `max_rows` rows (or entries), and rows
// stop being added once the output has reached `max_bytes` (a soft cap: it can
// be passed by one row plus the closing text). What was left out is reported:
// in text by a final line "more: N of M rows not shown; ...", in JSON by a
// "rows_not_shown" (or "entries_not_shown") member.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "cairn/core/record.h"
#include "cairn/shell/command_result.h"

namespace cairn {

struct RenderOptions {
  size_t max_rows = 0;   // 0: no limit
  size_t max_bytes = 0;  // 0: no limit
};

std::string RenderText(const CommandResult& result, const RenderOptions& options);
// With `rows_member` set, a table renders as {"<rows_member>":[{...},...]}
// without the "columns" member: the REST API names its collections
// ("tables", "records", ...). It must differ from every note's key.
std::string RenderJson(const CommandResult& result, const RenderOptions& options,
                       std::string_view rows_member = {});

// A table's rows for programs that read a record per line; notes are left
// out (the HTTP API sends them as headers). Rows are not capped.
//
// CSV (RFC 4180): the column names as the first line when `header`, then a
// line per row, "\n"-terminated (RFC 4180 readers, spreadsheets and the
// usual Unix tools all take LF; a CR would stick to the last field in awk
// and cut). Absent values are empty fields; values are written as the text
// renderer shows them (timestamps RFC 3339 UTC); a field holding a comma, a
// double quote, CR or LF, or leading or trailing blanks is quoted, with each
// double quote doubled. No terminal-safe escaping: CSV carries the data as
// stored.
std::string RenderCsv(const CommandResult& table, bool header);
// NDJSON: each row as the JSON object RenderJson makes of it, one per line.
std::string RenderNdjson(const CommandResult& table);

// One value as the text renderer shows it (before terminal-safe escaping):
// "-" for absent, "true"/"false", decimal integers, the shortest decimal that
// reads back as the same double, RFC 3339 UTC for timestamps, strings as is.
std::string ValueToText(const Value& value);

}  // namespace cairn
