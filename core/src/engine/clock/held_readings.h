// HeldReadings: the durable hold for readings the engine had to stamp while
// the wall clock was untrusted (<data_dir>/held.log, clock_format.md).
//
// Each reading is kept with the boot id and the monotonic time of its
// arrival, and with the last trusted time known then. Once a boot's offset
// (wall - monotonic) is decided, a resolution frame records it before any
// held reading is written to its table, so that a crash in between stamps
// them identically again (the rewrite is then a duplicate, not a second copy).
//
// Thread-safety: not thread-safe; the engine serialises calls.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cairn/core/record.h"
#include "cairn/platform/env.h"

namespace cairn {

struct HeldReading {
  std::string table;
  Record record;  // timestamp: the untrusted clock at arrival, unused
  std::string boot_id;
  int64_t monotonic_ns = 0;
  int64_t last_trusted_ns = 0;  // the last trusted time known at arrival (0: none)
};

// How one boot's held readings are stamped: wall = monotonic + offset.
struct BootResolution {
  int64_t offset_ns = 0;
  bool estimated = false;  // the boot never saw trust: the offset is a guess
};

class HeldReadings {
 public:
  // Reads <dir>/held.log (missing: empty). A frame cut short at the end (a
  // crash during its append, never acknowledged) is dropped; a damaged frame
  // before the end is Corruption naming the file and offset.
  static Result<std::unique_ptr<HeldReadings>> Open(Env* env, const std::string& dir);

  const std::vector<HeldReading>& readings() const { return readings_; }
  const std::map<std::string, BootResolution>& resolutions() const { return resolutions_; }

  // Appends `readings` as one frame and syncs it (and the directory when the
  // file is new): held readings are acknowledged as stored.
  Status Append(std::vector<HeldReading> readings);

  // Appends and syncs the resolution of `boot_id`.
  Status Resolve(const std::string& boot_id, BootResolution resolution);

  // Replaces the file with only `keep` (the readings still waiting) and the
  // resolutions of their boots, atomically; removes it when nothing is kept.
  Status Rewrite(std::vector<HeldReading> keep);

 private:
  HeldReadings(Env* env, std::string path) : env_(env), path_(std::move(path)) {}
  Status AppendFrame(const std::string& payload);

  Env* const env_;
  const std::string path_;
  std::unique_ptr<File> file_;  // open for appending once something is held
  std::vector<HeldReading> readings_;
  std::map<std::string, BootResolution> resolutions_;
};

}  // namespace cairn
