#include "cairn/shell/command_result.h"

#include <cassert>

namespace cairn {

CommandResult CommandResult::Table(std::vector<std::string> columns, std::vector<Row> rows) {
  CommandResult result;
  result.kind_ = Kind::kTable;
  for ([[maybe_unused]] const Row& row : rows) assert(row.size() == columns.size());
  result.columns_ = std::move(columns);
  result.rows_ = std::move(rows);
  return result;
}

CommandResult CommandResult::KeyValues(std::vector<Entry> entries) {
  CommandResult result;
  result.kind_ = Kind::kKeyValues;
  result.entries_ = std::move(entries);
  return result;
}

CommandResult CommandResult::Error(Status status) {
  assert(!status.ok());
  if (status.ok()) status = Status::Internal("a command failed without saying why");
  CommandResult result;
  result.kind_ = Kind::kError;
  result.error_ = std::move(status);
  return result;
}

void CommandResult::AddNote(std::string key, Value value, std::string text) {
  if (kind_ == Kind::kError) return;
  notes_.push_back(Note{std::move(key), std::move(value), std::move(text)});
}

}  // namespace cairn
