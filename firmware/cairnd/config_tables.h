// What cairnd does with the config file beyond the options it starts with:
// the tables it declares, at start and on SIGHUP, and which changed keys a
// SIGHUP cannot apply.
//
// Thread-safety: as the Engine given; the functions keep no state.
#pragma once

#include <string>
#include <vector>

#include "cairn/core/engine.h"
#include "cairn/platform/status.h"

#include "cairnd/log.h"
#include "cairnd/options.h"

namespace cairn::cairnd {

// Creates each declared table that `engine` lacks (the engine's defaults
// under the keys given) and brings each existing one to the keys given,
// one key at a time, logging each creation and change. A key the engine
// refuses (e.g. another period for a table holding data) stops there with
// InvalidArgument naming "tables.NAME.KEY", the file position of the table
// and the engine's reason; what was applied before stays applied.
Status ApplyTableDeclarations(Engine* engine, const std::vector<TableDeclaration>& tables, Logger* log);

// The config keys whose value differs between the running options and the
// reread ones ("http.listen", ...), every one of which needs a restart; the
// tables are not among them (ApplyTableDeclarations applies those live).
std::vector<std::string> KeysNeedingRestart(const DaemonOptions& running, const DaemonOptions& reread);

}  // namespace cairn::cairnd
