// The bytes of <data_dir>/tokens (format in token_format.md): parsing
// versions 1 and 2, writing version 2, and salvaging the intact lines of a
// damaged file for `cairnd token repair`.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cairn/platform/crypto.h"
#include "cairn/platform/status.h"
#include "cairn/http/token_store.h"
#include "cairn/util/hex.h"

namespace cairn::token_file {

// One line of the file: what the store knows of a token.
struct StoredToken {
  TokenInfo info;
  Sha256Digest hash;
};

// The tokens of a whole file, in file order. Corruption naming `path` and
// the line for any deviation from the format (a version 2 line whose check
// does not match, a missing or wrong `end` line); FailedPrecondition for a
// version this code does not read.
Result<std::vector<StoredToken>> Parse(const std::string& path, std::string_view bytes);

// The file (version 2) holding `tokens`.
std::string Serialize(const std::vector<StoredToken>& tokens);

// What can be kept of a damaged file: every token line that is whole (a
// version 2 line whose check matches; in a version 1 file, any line that
// parses and ends in a newline), the first of any duplicated id or name.
struct Salvaged {
  std::vector<StoredToken> kept;
  // "line 3: <why>" for each line that was not kept.
  std::vector<std::string> dropped;
};
Salvaged Salvage(std::string_view bytes);

// ---- helpers shared with token_store.cc ----

// Text from a damaged file or a request, made short and printable for an
// error message.
std::string Shown(std::string_view text);
using util::IsLowerHex;
std::vector<std::string_view> Split(std::string_view text, char separator);
// The scopes of a token, parsed and without duplicates, in their first
// order. InvalidArgument for a bad scope or none.
Result<std::vector<TokenScope>> ParseScopeList(const std::vector<std::string_view>& texts);

}  // namespace cairn::token_file
