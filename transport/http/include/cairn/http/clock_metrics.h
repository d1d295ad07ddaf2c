// The engine's clock trust (cairn/core/clock.h) as Prometheus text, appended
// to /metrics.
//
// Thread-safety: a pure function.
#pragma once

#include <string>

#include "cairn/core/clock.h"

namespace cairn {

// cairn_clock_trusted, cairn_clock_kernel_synchronized,
// cairn_clock_deletions_allowed, cairn_clock_last_trusted_seconds,
// cairn_clock_held_readings (gauges) and cairn_clock_readings_total{outcome=
// held|restamped|estimated|refused}, cairn_clock_timestamps_refused_total
// (counters since the engine opened).
std::string RenderClockMetrics(const ClockStatus& clock);

}  // namespace cairn
