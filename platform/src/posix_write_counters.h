// Private to platform/: the Linux sources of Env's write counters.
#pragma once

#include <cstdint>
#include <string>

#include "cairn/platform/status.h"
#include "cairn/platform/write_counters.h"

namespace cairn::platform_internal {

// Env::ProcessBytesWritten from /proc/self/io.
Result<uint64_t> ReadProcessBytesWritten();

// Env::BlockDeviceWritesOf from stat(2) and /sys/dev/block.
Result<BlockDeviceWrites> ReadBlockDeviceWrites(const std::string& path);

}  // namespace cairn::platform_internal
