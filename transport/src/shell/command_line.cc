#include "cairn/transport/command_line.h"

#include "shell/utf8.h"

namespace cairn {

namespace {

bool IsSeparator(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

// 1-based column of byte `offset` as a person counts characters.
size_t ColumnOf(std::string_view line, size_t offset) {
  return shell::CountCodePoints(line.substr(0, offset)) + 1;
}

}  // namespace

Result<std::vector<CommandToken>> TokenizeCommandLine(std::string_view line) {
  std::vector<CommandToken> tokens;
  CommandToken current;
  bool in_word = false;
  size_t pos = 0;
  while (pos < line.size()) {
    const char c = line[pos];
    if (IsSeparator(c)) {
      if (in_word) {
        tokens.push_back(std::move(current));
        current = CommandToken();
        in_word = false;
      }
      ++pos;
      continue;
    }
    in_word = true;
    if (c == '\\') {
      if (pos + 1 == line.size()) {
        return Status::InvalidArgument("line ends with a backslash (nothing left to escape)");
      }
      current.text.push_back(line[pos + 1]);
      current.literal = true;
      pos += 2;
      continue;
    }
    if (c == '"') {
      const size_t open = pos;
      current.literal = true;
      ++pos;
      bool closed = false;
      while (pos < line.size()) {
        const char q = line[pos];
        if (q == '"') {
          closed = true;
          ++pos;
          break;
        }
        if (q == '\\' && pos + 1 < line.size() && (line[pos + 1] == '"' || line[pos + 1] == '\\')) {
          current.text.push_back(line[pos + 1]);
          pos += 2;
          continue;
        }
        current.text.push_back(q);
        ++pos;
      }
      if (!closed) {
        return Status::InvalidArgument("unterminated quote: the \" at column " +
                                       std::to_string(ColumnOf(line, open)) + " is never closed");
      }
      continue;
    }
    current.text.push_back(c);
    ++pos;
  }
  if (in_word) tokens.push_back(std::move(current));
  return tokens;
}

}  // namespace cairn
