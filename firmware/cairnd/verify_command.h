// `cairnd verify [--repair] [--data-dir DIR]`: checks every file of a stopped
// data directory and, with --repair, makes it one cairnd serves again without
// destroying anything (Engine::Verify, cairn/core/verify.h; the tokens file
// through TokenStore).
//
// Output (stdout), one block per file:
//   ok       <path>  <summary>
//   DAMAGED  <path>
//            - <what is wrong> ...
//            readings affected: N | unknown
//            repaired: <what was done>
// then the totals:
//   result: ok | damaged (K file(s))
//   readings affected: N [+ an unknown number in files that cannot be read]
//   readings lost: N [...]                       (with --repair)
//
// Takes <data_dir>/LOCK as cairnd does, so it refuses while cairnd runs.
//
// Exit status: 0 nothing damaged, or --repair mended every damage found;
// 1 damage found and not (all) repaired, or the directory could not be
// checked (in use, missing: the reason on `err`); 2 usage error.
#pragma once

#include <span>
#include <string>

#include "cairn/platform/env.h"

namespace cairn::cairnd {

// Runs `cairnd verify` with `words`, the words after "verify". Appends what
// belongs on standard output to `*out` and on standard error to `*err`;
// returns the exit status. `env` is not owned.
int RunVerifyCommand(Env* env, std::span<const char* const> words, std::string* out, std::string* err);

// The text of `cairnd verify --help`.
std::string VerifyCommandUsage();

}  // namespace cairn::cairnd
