// Checking a SQLite WAL file (the `-wal` beside a period file) before SQLite
// opens it. SQLite reads a WAL up to the first frame whose checksum or salt
// does not match and silently ignores the rest: damage in the middle of a
// WAL drops every commit after it without an error. This reads the frames
// the way SQLite does (the WAL format of sqlite.org/fileformat2.html §4) and
// tells such damage apart from a transaction a crash cut short.
//
// Thread-safety: pure function over one file.
#pragma once

#include <cstdint>
#include <string>

#include "cairn/platform/env.h"

namespace cairn {

struct WalCheck {
  uint64_t frames_in_file = 0;    // whole frames the file's size holds
  uint64_t frames_committed = 0;  // frames SQLite will use: up to the last commit of the valid prefix
  // Commit frames of this WAL generation (its salts) after the valid
  // prefix: committed transactions that SQLite will ignore. A crash during
  // an append leaves at most an uncommitted tail, never one of these.
  uint64_t commits_lost = 0;
  // True when the header itself is unreadable while frames follow.
  bool header_damaged = false;

  bool damaged() const { return commits_lost > 0 || header_damaged; }
};

// Reads `wal_path` through `env`. A missing or empty file is an empty
// WalCheck; a file shorter than a header with nothing else is not damage
// (a creation cut short).
Result<WalCheck> CheckSqliteWal(Env* env, const std::string& wal_path);

}  // namespace cairn
