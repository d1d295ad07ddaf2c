// Private to platform/: serial ports for PosixEnv (env.h's OpenSerialPort).
#pragma once

#include <memory>
#include <string>

#include "cairn/platform/env.h"
#include "cairn/platform/status.h"

namespace cairn::platform_internal {

// Opens the tty at `path` raw, 8N1, without flow control, at `baud` (one of
// the termios rates; InvalidArgument otherwise), as Env::OpenSerialPort
// promises.
Result<std::unique_ptr<SerialPort>> PosixOpenSerialPort(const std::string& path, int baud);

}  // namespace cairn::platform_internal
