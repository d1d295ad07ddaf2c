// The list arguments of the shell's `agg` command.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cairn/core/engine.h"
#include "cairn/platform/status.h"

namespace cairn {

// --group-by: comma-separated tag names into `names`, each a valid
// identifier and given once. InvalidArgument naming the word at fault.
Status ParseGroupBy(std::string_view group_by, std::vector<std::string>* names);

// --fn: comma-separated aggregate functions ("count,min,max,avg") appended
// to query->functions, and their names as given to `names` (the result's
// column titles). InvalidArgument for an unknown function.
Status ParseAggregateFunctions(std::string_view functions, AggregateQuery* query, std::vector<std::string>* names);

}  // namespace cairn
