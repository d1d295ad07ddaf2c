// The flash-wear figures (cairn/core/flash_wear.h) as entries of the `stats`
// and `health` answers, shared by the serial shell, /v1/stats, /v1/health and
// the web page, which reads them from /v1/health.
#pragma once

#include <vector>

#include "cairn/core/flash_wear.h"
#include "cairn/shell/command_result.h"

namespace cairn {

// Appends entries named "flash_*". Unknown figures are null (JSON) / "-"
// (text), never 0. `full` (stats) gives every figure; otherwise (health) the
// few an operator checks: device, bytes per day, amplification, endurance
// used and projected days. Rates are bytes per day over the rolling window,
// amplifications are plain ratios, fractions are percentages, all rounded
// to two decimals.
void AppendFlashWearEntries(const FlashWearStatus& wear, bool full,
                            std::vector<CommandResult::Entry>* entries);

}  // namespace cairn
