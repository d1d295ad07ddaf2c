// Private to platform/: what the POSIX sources share about descriptors and
// clocks.
#pragma once

#include <cstdint>
#include <ctime>

#include <unistd.h>

namespace cairn::platform_internal {

// Closes `fd`, retrying nothing: on Linux the descriptor is released even when
// close reports EINTR, so a retry could close a descriptor another thread just
// opened.
inline void CloseDescriptor(int fd) {
  if (fd >= 0) ::close(fd);
}

// `clock` (CLOCK_REALTIME, CLOCK_MONOTONIC) in nanoseconds.
inline int64_t ClockNanos(clockid_t clock) {
  struct timespec now = {};
  ::clock_gettime(clock, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000000000 + static_cast<int64_t>(now.tv_nsec);
}

}  // namespace cairn::platform_internal
