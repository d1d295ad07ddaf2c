// Splitting a shell command line into words.
//
// The rules are a small, predictable subset of a POSIX shell's:
//   - words are separated by runs of spaces, tabs, CR, LF, VT or FF;
//   - a backslash outside quotes makes the next byte literal (`a\ b` is one
//     word "a b", `\"` is a quote character);
//   - double quotes group text, spaces included (`"living room"`); inside
//     them only `\"` and `\\` are escapes, any other backslash is kept, so
//     `"C:\data"` stays as typed;
//   - quoted and unquoted parts next to each other join into one word
//     (`id="a b"` is "id=a b"); `""` is an empty word;
//   - single quotes, `$`, globs and the like have no special meaning.
// An unterminated quote or a line ending in a lone backslash is an error, not
// a guess.
//
// Thread-safety: pure function.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/platform/status.h"

namespace cairn {

struct CommandToken {
  std::string text;
  // True when any part of the word was quoted or escaped. Such a word is
  // always an argument, never an option, so `put "--json"` passes the text
  // "--json" through.
  bool literal = false;
  // Byte offset in the line where the word begins.
  size_t offset = 0;
};

// Splits `line` into words. InvalidArgument ("unterminated quote ...",
// "line ends with a backslash ...") on malformed input. Bytes are not
// interpreted beyond the rules above; UTF-8 passes through untouched.
Result<std::vector<CommandToken>> TokenizeCommandLine(std::string_view line);

// Reads the word that starts at or after byte `*position` of `line` and
// moves `*position` just past it; nullopt (with `*position` at the end) when
// only separators remain. Same rules and errors as TokenizeCommandLine, for
// callers that stop splitting where the rest of the line is not made of words
// (CommandSpec::verbatim_last_argument).
Result<std::optional<CommandToken>> NextCommandToken(std::string_view line, size_t* position);

// `text` in double quotes with `"` and `\` escaped: TokenizeCommandLine reads
// it back as one literal word equal to `text`, whatever bytes it holds.
std::string QuoteCommandWord(std::string_view text);

// How `text` must be typed to reach a command as one word: unchanged when it
// is not empty and holds no space, tab, quote, backslash or control byte,
// else QuoteCommandWord(text).
std::string CommandWord(std::string_view text);

}  // namespace cairn
