// The table commands (tables, create-table, alter-table, drop-table), which
// RegisterEngineCommands registers first. Private to cairn_shell.
#pragma once

#include <memory>

#include "cairn/core/engine.h"
#include "cairn/platform/status.h"
#include "cairn/shell/command_registry.h"
#include "cairn/shell/engine_holder.h"

namespace cairn {

// Registers the four table commands in `registry` over `storage` (shared
// with the other engine commands); each answers the holder's outage while
// it has no engine. AlreadyExists if a name is taken.
Status RegisterTableCommands(CommandRegistry* registry, std::shared_ptr<const EngineHolder> storage);

// `status` with a hint to type `tables` when it names a table that does not
// exist (the most common mistake); any other status unchanged.
Status ExplainTableError(const Status& status);

}  // namespace cairn
