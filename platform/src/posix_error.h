// Private to platform/: the one translation from errno to Status.
#pragma once

#include <string>
#include <string_view>

#include "cairn/platform/status.h"

namespace cairn::platform_internal {

// What an errno means depends a little on the kind of object: EIO on a tty is
// the peer hanging up, on a disk it is a failing medium.
enum class ErrorSource { kFilesystem, kSerialPort, kProcess };

// Builds the Status for a failed system call. `operation` names the call,
// `subject` the path (or other object) it worked on; the message reads
// "<operation> <subject>: <strerror>". ENOENT is NotFound, EEXIST
// AlreadyExists, ENOSPC/EDQUOT ResourceExhausted, EACCES/EPERM
// PermissionDenied, EIO/ENXIO on a serial port Unavailable, anything else
// IOError. Thread-safe.
Status PosixError(std::string_view operation, std::string_view subject, int error_number,
                  ErrorSource source = ErrorSource::kFilesystem);

}  // namespace cairn::platform_internal
