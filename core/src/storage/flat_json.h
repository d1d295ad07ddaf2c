// Flat JSON objects: the text form of a period file's field lists and
// dimensions (period_format.md). JSON so that the sqlite3 shell's json_each()
// and json_extract() can look inside; flat (string keys, string or integer
// values, no nesting) because that is all cairn stores there.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "cairn/platform/status.h"
#include "cairn/util/json_escape.h"

namespace cairn {

// Members are written with util::AppendJsonString (cairn/util/json_escape.h):
// '"' and '\' escaped, control characters as \uXXXX (or \n, \t ...), every
// other byte as is.
using util::AppendJsonString;

struct FlatJsonMember {
  std::string key;
  std::variant<std::string, int64_t> value;
};

// Parses one JSON object whose member values are strings or integers, keeping
// the members in text order. Surrounding whitespace is allowed. Corruption,
// naming the offset, for anything else (nesting, floats, true/false/null,
// trailing bytes, bad escapes, integers out of int64 range).
Result<std::vector<FlatJsonMember>> ParseFlatJsonObject(std::string_view text);

}  // namespace cairn
