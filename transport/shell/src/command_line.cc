#include "cairn/shell/command_line.h"

#include <algorithm>

#include "cairn/text/utf8.h"

namespace cairn {

namespace {

bool IsSeparator(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

// 1-based column of byte `offset` as a person counts characters.
size_t ColumnOf(std::string_view line, size_t offset) {
  return shell::CountCodePoints(line.substr(0, offset)) + 1;
}

}  // namespace

Result<std::optional<CommandToken>> NextCommandToken(std::string_view line, size_t* position) {
  size_t pos = *position;
  while (pos < line.size() && IsSeparator(line[pos])) ++pos;
  if (pos >= line.size()) {
    *position = line.size();
    return std::optional<CommandToken>();
  }
  CommandToken token;
  token.offset = pos;
  while (pos < line.size() && !IsSeparator(line[pos])) {
    const char c = line[pos];
    if (c == '\\') {
      if (pos + 1 == line.size()) {
        return Status::InvalidArgument("line ends with a backslash (nothing left to escape)");
      }
      token.text.push_back(line[pos + 1]);
      token.literal = true;
      pos += 2;
      continue;
    }
    if (c == '"') {
      const size_t open = pos;
      token.literal = true;
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
          token.text.push_back(line[pos + 1]);
          pos += 2;
          continue;
        }
        token.text.push_back(q);
        ++pos;
      }
      if (!closed) {
        return Status::InvalidArgument("unterminated quote: the \" at column " +
                                       std::to_string(ColumnOf(line, open)) + " is never closed");
      }
      continue;
    }
    token.text.push_back(c);
    ++pos;
  }
  *position = pos;
  return std::optional<CommandToken>(std::move(token));
}

Result<std::vector<CommandToken>> TokenizeCommandLine(std::string_view line) {
  std::vector<CommandToken> tokens;
  size_t position = 0;
  for (;;) {
    CAIRN_ASSIGN_OR_RETURN(std::optional<CommandToken> token, NextCommandToken(line, &position));
    if (!token) return tokens;
    tokens.push_back(std::move(*token));
  }
}

std::string QuoteCommandWord(std::string_view text) {
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') quoted.push_back('\\');
    quoted.push_back(c);
  }
  quoted.push_back('"');
  return quoted;
}

std::string CommandWord(std::string_view text) {
  const bool plain = !text.empty() && std::none_of(text.begin(), text.end(), [](char c) {
    return c == ' ' || c == '\t' || c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20;
  });
  return plain ? std::string(text) : QuoteCommandWord(text);
}

}  // namespace cairn
