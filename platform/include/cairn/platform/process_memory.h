// How the process's allocator holds memory.
//
// glibc's malloc gives threads that allocate at once arenas of their own, up
// to eight per core, and memory freed in one arena serves only that arena.
// cairnd's connection threads parse and its sealer encodes at the same time,
// so each grew its own arena whose free space the others could not reuse:
// the resident size under ingest was tens of megabytes above what was live.
// A gateway's memory budget is for data, not for that slack.
//
// Thread-safety: call LimitAllocatorArenas before the process starts any
// thread.
#pragma once

namespace cairn {

// Caps the allocator's arenas at `arenas` (at least 1) where the C library
// allows it (glibc's M_ARENA_MAX); elsewhere nothing changes. Returns
// whether the cap was set.
bool LimitAllocatorArenas(int arenas);

}  // namespace cairn
