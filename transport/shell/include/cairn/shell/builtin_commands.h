// The commands every cairn shell has, whatever else is wired in:
//   help [command]   the list of commands, or one command's usage and options
//   version          cairn's version, target architecture and compiler
#pragma once

#include <string>

#include "cairn/platform/status.h"
#include "cairn/shell/command_registry.h"

namespace cairn {

// Facts fixed when this binary was built.
struct BuildInfo {
  std::string version;      // CMake project version, e.g. "0.1.0"
  std::string target_arch;  // CMAKE_SYSTEM_PROCESSOR: "x86_64", "aarch64", "armv7l"...
  std::string compiler;     // e.g. "gcc 12.2.0"
};

BuildInfo GetBuildInfo();

// Registers `help` and `version` in `registry`. `help` reads the registry at
// run time, so it also lists commands registered later; the registry must
// outlive its use. Fails only if one of the names is taken.
Status RegisterBuiltinCommands(CommandRegistry* registry);

}  // namespace cairn
