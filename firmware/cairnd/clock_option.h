// The --clock flag: clock trust and the bounds on client timestamps
// (cairn/core/clock.h), as comma-separated KEY=VALUE:
//
//   trust=auto|ntp|always   when the wall clock is trusted (default auto)
//   future_tolerance=S      client timestamps more than S seconds ahead of
//                           the trusted clock are refused (default 86400)
//   horizon=UNIX_SECONDS    client timestamps before it are refused (default
//                           none)
//   max_held=N              readings without a timestamp that may wait for a
//                           trusted clock (default 100000)
//
// e.g. --clock trust=ntp,future_tolerance=600
//
// Thread-safety: a pure function.
#pragma once

#include <string_view>

#include "cairn/core/clock.h"
#include "cairn/platform/status.h"

namespace cairn {

// Applies `spec` over `options` (keys not named keep their value).
// InvalidArgument naming the bad key or value.
Status ParseClockOption(std::string_view spec, ClockOptions* options);

}  // namespace cairn
