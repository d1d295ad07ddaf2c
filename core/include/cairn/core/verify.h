// What Engine::Verify found in a stopped data directory, file by file, and
// what its repair did. Readings are counted by LSN (one per stored reading).
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cairn {

struct VerifiedFile {
  std::string path;
  // "catalog", "period", "log", "tokens" (checked by cairnd), or
  // "quarantined": a file in <data_dir>/quarantine, out of service already,
  // described in `summary` and never counted as damage.
  std::string kind;
  // Empty when the file is intact; otherwise one line per damage found.
  std::vector<std::string> problems;
  // Readings the damage makes unreadable, as far as the file tells
  // (chunk row counts, LSN ranges of damaged log records); nullopt when
  // the file cannot say (its header or its chunk table is unreadable).
  std::optional<uint64_t> readings_affected = 0;
  // What the repair did to the file, one line each (moved, cut out, ...).
  std::vector<std::string> actions;
  // Readings the repair gave up: what was damaged and is no longer served.
  // nullopt when unknown (a whole unreadable file was moved aside).
  std::optional<uint64_t> readings_lost = 0;
  // Facts about an intact file worth showing (e.g. "12 chunks, 3400 readings").
  std::string summary;

  bool damaged() const { return !problems.empty(); }

  static VerifiedFile Of(std::string path, std::string kind) {
    VerifiedFile file;
    file.path = std::move(path);
    file.kind = std::move(kind);
    return file;
  }
};

struct VerifyReport {
  std::vector<VerifiedFile> files;
  // The log checkpoint from the catalog: readings below it are in period
  // files, readings at or above it only in the log.
  uint64_t checkpoint_lsn = 0;
  // LSNs below the checkpoint that no period file holds (LSNs are also
  // given up by compaction of overwritten versions, retention, the sync
  // quota and refused writes, so this is a hint, not damage on its own).
  uint64_t lsns_below_checkpoint_not_in_period_files = 0;
  bool repaired = false;  // Verify ran with repair

  bool damaged() const {
    for (const VerifiedFile& f : files)
      if (f.damaged()) return true;
    return false;
  }
  // Sum of readings_lost over the files; `unknown` set when one is nullopt.
  uint64_t ReadingsLost(bool* unknown) const {
    uint64_t total = 0;
    for (const VerifiedFile& f : files) {
      if (f.readings_lost) {
        total += *f.readings_lost;
      } else if (unknown) {
        *unknown = true;
      }
    }
    return total;
  }
};

}  // namespace cairn
