// The status commands, which RegisterEngineCommands registers last:
//   stats    the engine's counters (needs the engine)
//   health   ok / degraded / failing with the open problems and free space;
//            `unavailable` with the outage while the engine holder is empty
// Private to cairn_shell.
#pragma once

#include <memory>
#include <string>

#include "cairn/platform/env.h"
#include "cairn/platform/status.h"
#include "cairn/shell/command_registry.h"
#include "cairn/shell/engine_holder.h"

namespace cairn {

// Registers `stats` and `health` in `registry` over `storage` (shared with
// the other engine commands); `health` reports the free space of
// `data_dir`. `env` is not owned and must outlive every use of the
// registry. AlreadyExists if a name is taken.
Status RegisterStatusCommands(CommandRegistry* registry, std::shared_ptr<const EngineHolder> storage,
                              Env* env, std::string data_dir);

}  // namespace cairn
