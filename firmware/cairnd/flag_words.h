// How cairnd's command lines read one flag, shared by the daemon's flags
// (options.h) and its subcommands (token_command.h): "--name VALUE",
// "--name=VALUE" or a bare "--name", so that every command answers the same
// mistakes with the same words.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

#include "cairn/platform/status.h"

namespace cairn::cairnd {

// A word that starts a flag, split at its first '='.
struct FlagWord {
  std::string_view name;                  // "--name"
  std::optional<std::string_view> value;  // what followed '=', if there was one
};

FlagWord SplitFlagWord(std::string_view word);

// The value of the known flag `flag` read from words[*i]: the text after '='
// or, for a flag that takes a value, the next word (advancing *i past it).
// A flag that takes no value yields "". InvalidArgument naming the flag when
// a value is given to a flag that takes none, or is missing or empty;
// `usage` (e.g. "--baud N"), when not empty, ends the missing-value message.
Result<std::string_view> TakeFlagValue(std::span<const char* const> words, size_t* i, const FlagWord& flag,
                                       bool takes_value, std::string_view usage);

}  // namespace cairn::cairnd
