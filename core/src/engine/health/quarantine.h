// The quarantine of a data directory: where damaged period files, and copies
// of period files taken before a repair removed chunks from them, are kept
// instead of being deleted.
//
//   <data_dir>/quarantine/<table>/<period>.db        (and its -wal, -journal)
//   <data_dir>/quarantine/<table>/<period>.1.db      a second one of that name
//
// Nothing in cairn deletes from it: an operator restores a file from it or
// removes it to accept the loss. While it holds a period file, Health()
// reports it (see EngineImpl::RaiseQuarantinedFiles).
//
// Thread-safety: plain functions; the caller owns the files they move.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cairn/platform/env.h"
#include "cairn/platform/status.h"

namespace cairn {

// <data_dir>/quarantine/<table>
std::string QuarantineDir(const std::string& data_dir, const std::string& table);

// Moves the SQLite file `path` with its "-wal" and "-journal" (when present)
// into `dir` (created if missing) under the first free name
// "<stem>[.<n>]<ext>", syncing both directories. Returns the new path of
// `path`.
Result<std::string> MoveIntoQuarantine(Env* env, const std::string& path, const std::string& dir);

// Copies the SQLite file `path` with its "-wal" (when present) into `dir`
// under the first free name "<stem>.<label>[.<n>]<ext>", synced. The caller
// has no connection open on the file. Returns the path of the copy.
Result<std::string> CopyIntoQuarantine(Env* env, const std::string& path, const std::string& dir,
                                       std::string_view label);

// The period files ("*.db") in `dir`; empty when `dir` does not exist.
std::vector<std::string> QuarantinedPeriodFiles(Env* env, const std::string& dir);

}  // namespace cairn
