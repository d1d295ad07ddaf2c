// `cairnd config`: the config file without starting the daemon.
//
//   cairnd config check [--config FILE] [flags]
//       reads the file (the default one unless --config names another) and
//       the flags as cairnd would at start; prints "FILE: ok" and exits 0,
//       or prints the error (file:line:column and key for the file) and
//       exits 2.
//   cairnd config show [--config FILE] [flags]
//       prints the effective configuration, the file under the flags, as
//       TOML (config_file.h RenderConfig; broker URI credentials redacted);
//       exit 2 on an error as for check.
//
// Thread-safety: as the Env it is given.
#pragma once

#include <span>
#include <string>

#include "cairn/platform/env.h"

namespace cairn::cairnd {

// Runs `cairnd config` with `words`, the command-line words after "config".
// Writes what it prints to `out` and `err`; returns the exit status.
int RunConfigCommand(Env* env, std::span<const char* const> words, std::string* out, std::string* err);

}  // namespace cairn::cairnd
