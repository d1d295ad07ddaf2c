// Compactor: rewrites a closed period file once, merging each series'
// chunks into as few as the chunk limit allows (kChunkRecordLimit), keeping
// the highest version of each timestamp and dropping expired readings.
//
// Thread-safety: any thread; the file is rewritten under its handle's mutex,
// so readers of the same file wait for it.
#pragma once

#include <cstdint>
#include <string>

#include "engine/catalog/catalog.h"
#include "engine/sealing/period_files.h"

namespace cairn {

class Compactor {
 public:
  // `files` and `catalog` must outlive this object.
  Compactor(PeriodFiles* files, Catalog* catalog);

  // Compacts `table`'s period file at `start` unless it is compacted
  // already. Readings whose TTL lies at or before `expiry_now_ns` (the
  // deletion clock's now, or 0 for none: clock_trust.h) are dropped for
  // good. Forgets the file's seal mark first: an expired reading may have
  // held its highest LSN. NotFound when the file is missing; Corruption
  // when a chunk does not decode (the file is left as it was).
  Status CompactPeriod(const std::string& table, Period period, int64_t start, int64_t expiry_now_ns);

 private:
  PeriodFiles* const files_;
  Catalog* const catalog_;
};

}  // namespace cairn
