// CommandResult: what a shell command produced, independent of how it is
// shown. The serial shell renders it as aligned text, `--json` and the HTTP
// API as JSON (result_renderer.h); handlers never format output themselves.
//
// A result is exactly one of:
//   - a table: named columns and rows of typed cells (a query's answer);
//   - key/values: an ordered list of named typed values (a status report);
//   - an error: a non-OK Status whose message tells the user what was wrong.
// A table or key/values may carry notes after it: how to continue a query
// that has more rows, and the like.
//
// Cells are cairn::Value (core/record.h), so query results keep their types
// through to JSON: numbers stay numbers, absent fields become null.
//
// Thread-safety: a plain value.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cairn/core/record.h"
#include "cairn/platform/status.h"

namespace cairn {

class CommandResult {
 public:
  enum class Kind : uint8_t { kTable, kKeyValues, kError };

  using Row = std::vector<Value>;
  using Entry = std::pair<std::string, Value>;

  // A trailer of a table or key/values: shown in text as `text` on a line of
  // its own after the result, in JSON as the member `key` of the top-level
  // object with `value`. E.g. a query's continuation: text "more: use --page
  // T", key "next_page", value "T". `key` must differ from the result's own
  // members ("columns", "rows", the entry keys ...). A note with empty
  // `text` is shown in JSON only.
  struct Note {
    std::string key;
    Value value;
    std::string text;
  };

  // A table. Precondition: every row has one cell per column.
  static CommandResult Table(std::vector<std::string> columns, std::vector<Row> rows);

  // Named values, shown in the given order.
  static CommandResult KeyValues(std::vector<Entry> entries);

  // A failure. Precondition: !status.ok(). The code lets the HTTP API pick a
  // status; the message is what the user reads.
  static CommandResult Error(Status status);

  Kind kind() const { return kind_; }
  bool ok() const { return kind_ != Kind::kError; }

  // Meaningful for kTable only (empty otherwise).
  const std::vector<std::string>& columns() const { return columns_; }
  const std::vector<Row>& rows() const { return rows_; }

  // Meaningful for kKeyValues only (empty otherwise).
  const std::vector<Entry>& entries() const { return entries_; }

  // Meaningful for kError only (OK otherwise).
  const Status& error() const { return error_; }

  // Appends a note. An error result shows no notes, so this is a no-op there.
  void AddNote(std::string key, Value value, std::string text);
  const std::vector<Note>& notes() const { return notes_; }

 private:
  CommandResult() = default;

  Kind kind_ = Kind::kKeyValues;
  std::vector<std::string> columns_;
  std::vector<Row> rows_;
  std::vector<Entry> entries_;
  Status error_;
  std::vector<Note> notes_;
};

}  // namespace cairn
