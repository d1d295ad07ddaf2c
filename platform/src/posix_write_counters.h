// Private to platform/: the Linux sources of Env's write counters and of
// the process's resident memory.
#pragma once

#include <cstdint>
#include <string>

#include "cairn/platform/status.h"
#include "cairn/platform/write_counters.h"

namespace cairn::platform_internal {

// Env::ProcessBytesWritten from /proc/self/io.
Result<uint64_t> ReadProcessBytesWritten();

// Env::ProcessResidentBytes from /proc/self/statm.
Result<uint64_t> ReadProcessResidentBytes();

// Env::BlockDeviceWritesOf from stat(2) and /sys/dev/block.
Result<BlockDeviceWrites> ReadBlockDeviceWrites(const std::string& path);

}  // namespace cairn::platform_internal
