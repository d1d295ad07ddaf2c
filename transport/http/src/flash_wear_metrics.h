// The flash-wear figures (cairn/core/flash_wear.h) in the Prometheus text
// format, appended to /metrics.
#pragma once

#include <string>

#include "cairn/core/flash_wear.h"

namespace cairn {

// Metric families (a figure that is unknown has no sample: Prometheus reads
// absence as "no data", where a 0 would read as "no wear"):
//   cairn_flash_bytes_written_total{source="process"|"device"}   counter, since install
//   cairn_flash_reading_bytes_total                                counter, since install
//   cairn_flash_observed_seconds_total                             counter
//   cairn_flash_bytes_written_per_day{source,over="window"|"install"}  gauge
//   cairn_flash_write_amplification_ratio{over="window"|"install"}    gauge
//   cairn_flash_endurance_bytes, cairn_flash_endurance_used_ratio       gauges
//   cairn_flash_projected_remaining_seconds                             gauge
// The totals are summed across restarts and reboots, so they never reset
// and rate() over them is the bytes per second actually written.
std::string RenderFlashWearMetrics(const FlashWearStatus& wear);

}  // namespace cairn
