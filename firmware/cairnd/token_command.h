// `cairnd token`: managing the HTTP shell's API tokens from a root shell on
// the gateway (DESIGN §7, format in transport/http/src/auth/token_format.md).
//
//   cairnd token create --name NAME --scope SCOPE [--scope SCOPE ...] [--data-dir DIR]
//   cairnd token list [--json] [--data-dir DIR]
//   cairnd token revoke ID|NAME [--data-dir DIR]
//   cairnd token repair [--data-dir DIR]
//   cairnd token --help
//
// `create` prints the new token alone on the first line of standard output,
// so that `TOKEN=$(cairnd token create ...)` captures exactly the token, and
// a reminder that it is shown only once on standard error. `list` prints an
// aligned table (or JSON) of id, name, scopes and creation time; secrets are
// never shown again. `revoke` removes a token. `repair` rewrites a damaged
// tokens file keeping its intact tokens (TokenStore::Repair).
//
// Works while cairnd runs: it never touches <data_dir>/LOCK, only
// <data_dir>/tokens.lock for the moment of a change, and cairnd picks the
// change up within a second or on SIGHUP. It never creates the data
// directory: a mistyped --data-dir fails instead of starting a second,
// empty token file that nothing reads.
//
// Flags take their value as the next word or after '=' (--name=grafana).
// --scope may be repeated and takes comma-separated scopes too
// (--scope read:a,write:a); every other flag may be given once.
//
// Exit status: 0 done; 1 the command failed (the reason on `err`: no such
// data directory or token, name taken, damaged token file, lock busy, I/O);
// 2 usage error (unknown subcommand or flag, missing or malformed value,
// bad name or scope), with a hint to --help.
//
// Thread-safety: may run concurrently with itself and with a TokenStore on
// the same directory in this or another process.
#pragma once

#include <span>
#include <string>

#include "cairn/platform/env.h"

namespace cairn::cairnd {

// Runs `cairnd token` with `words`, the command-line words after "token".
// Appends what belongs on standard output to `*out` and what belongs on
// standard error to `*err` (every message ends with "\n") and returns the
// exit status. `env` is not owned.
int RunTokenCommand(Env* env, std::span<const char* const> words, std::string* out, std::string* err);

// The text of `cairnd token --help`.
std::string TokenCommandUsage();

}  // namespace cairn::cairnd
