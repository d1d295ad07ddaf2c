// The table commands (tables, create-table, alter-table, drop-table), which
// RegisterEngineCommands registers first. Private to cairn_shell.
#pragma once

#include "cairn/core/engine.h"
#include "cairn/platform/status.h"
#include "cairn/shell/command_registry.h"

namespace cairn {

// Registers the four table commands in `registry`; `engine` is not owned and
// must outlive every use of the registry. AlreadyExists if a name is taken.
Status RegisterTableCommands(CommandRegistry* registry, Engine* engine);

// `status` with a hint to type `tables` when it names a table that does not
// exist (the most common mistake); any other status unchanged.
Status ExplainTableError(const Status& status);

}  // namespace cairn
