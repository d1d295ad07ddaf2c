// What the deletion clock (clock_trust.h) removes on its own, apart from
// the sync quota (reclaimer.h): whole period files past their table's
// retention, and records past their ttl.
//
// Records past their ttl are hidden by every read at once, and leave the
// disk when their period file is compacted or dropped. A period file goes
// only when every reading it can hold is past retention.
#pragma once

#include <cstdint>

#include "cairn/core/table.h"

namespace cairn {

// True when the period file (`period`, `start`) may be dropped at `now_ns`
// (the deletion clock) under a retention of `retention_seconds`: its whole
// period ended at least that long ago, so no reading in it is younger.
// Whether a synced table's file must first be confirmed
// (EngineOptions::retention_waits_for_sync) is the caller's decision.
bool PastRetention(Period period, int64_t start, int64_t retention_seconds, int64_t now_ns);

// The expiry (Unix seconds, 0: none) stored with a record written with
// `ttl` at `timestamp_ns` into a table whose default is
// `default_ttl_seconds`: its own, else the default counted from the
// reading's own time, so that replaying the log later resolves it
// identically (at least 1: 0 means none).
int64_t RecordExpiry(int64_t ttl, int64_t timestamp_ns, int64_t default_ttl_seconds);

// True when a record whose expiry is `ttl` is gone at `now_ns` (the
// deletion clock).
inline bool TtlExpired(int64_t ttl, int64_t now_ns) { return ttl != 0 && ttl <= now_ns / 1'000'000'000; }

}  // namespace cairn
