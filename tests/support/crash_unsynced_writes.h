// What a power cut leaves of one file's unsynced writes: the sector-level
// models behind FaultInjectionEnv's power cuts. SQLite's test6.c is the
// model: between two syncs a disk may persist the writes it was given in
// order and tear the one in flight, or persist any subset of the sectors
// they touched.
//
// Every function is pure: it takes what is durable, the writes since the
// last sync and a seeded Rng, and returns the bytes a reboot would find.
//
// Thread-safety: none needed (no shared state).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "crash_rng.h"

namespace cairn::crash {

// One change to a file's bytes that no sync has made durable yet.
struct UnsyncedWrite {
  bool truncate = false;
  uint64_t offset = 0;  // write: where `bytes` go; truncate: the new size
  std::string bytes;    // write only; never empty
};

// Applies `write` to `contents` as a file system does: a write past the end
// extends the file with zeros up to it, a truncation drops or zero-extends
// the tail.
void ApplyUnsyncedWrite(const UnsyncedWrite& write, std::string* contents);

// Bytes of data an UnsyncedWrite carries or, for a truncation, the bytes it
// added or removed given the size before it.
uint64_t UnsyncedBytes(const UnsyncedWrite& write, uint64_t size_before);

// How the bytes of a torn sector that did not get their new value look.
enum class TornFill : uint8_t {
  kOldBytes,  // what was there before (nothing, past the old end of file)
  kZeros,     // a sector the device erased before programming it
  kGarbage,   // a sector the device half programmed
};

std::string_view TornFillName(TornFill fill);  // "old bytes", "zeros", "garbage"

// What one file looks like after a cut, and what happened to it.
struct FileAfterCut {
  std::string contents;
  // One line for a failure message, e.g. "torn write 3 of 4 at [8192, 12288):
  // 1536 bytes kept, the torn sector's next 512 bytes garbage, 2048 later
  // bytes and 1 later write lost".
  std::string description;
  bool torn = false;          // a write was cut inside a sector
  uint64_t sectors_kept = 0;  // reordered: touched sectors whose new bytes persisted
  uint64_t sectors_lost = 0;  // reordered: touched sectors that kept their old bytes
};

// The disk persisted the file's unsynced writes in order up to one of them
// (the last one half of the time, any of them otherwise), which was torn: its
// bytes reached the disk up to a random byte, the rest of the sector it fell
// in (within the write) holds old bytes, zeros or garbage, and its later
// sectors and every later write are lost. A truncation in flight is either
// done or not (it is a metadata change). Bytes outside the writes' ranges are
// never damaged (SQLite's powersafe-overwrite assumption, which cairn's VFS
// declares). Precondition: !writes.empty(), sector_bytes > 0.
FileAfterCut CutWithTornWrite(const std::string& durable, const std::vector<UnsyncedWrite>& writes,
                              uint32_t sector_bytes, Rng& rng);

// The disk persisted an arbitrary subset of the sectors the unsynced writes
// touched, each sector whole with its newest bytes, each kept with
// probability one half and independently of the others; a change of the
// file's size is kept or not, independently too (sectors past the kept size
// are cut off, a kept size past the kept sectors reads as zeros).
// Precondition: !writes.empty(), sector_bytes > 0.
FileAfterCut CutWithReorderedWrites(const std::string& durable, const std::vector<UnsyncedWrite>& writes,
                                    uint32_t sector_bytes, Rng& rng);

}  // namespace cairn::crash
