// cairnd's flash-wear flags (FlashWearOptions, cairn/core/flash_wear.h):
//
//   --card-endurance-tbw TB        the card's rated endurance in terabytes written
//   --card-pe-cycles N             or its rated program/erase cycles ...
//   --card-size SIZE               ... times this size (default: the disk's size)
//   --wear-warn-days N             health warns below N days of projected life
//   --wear-warn-amplification X    health warns above X bytes written per reading byte
//   --wear-sample-interval-ms MS   how often the write counters are read
//
// Kept apart from options.cc so that the flags, their checks and their help
// text read as one piece; their rows (names, config keys) are in
// flag_table.cc. Thread-safety: pure functions.
#pragma once

#include <set>
#include <string>
#include <string_view>

#include "cairn/core/flash_wear.h"
#include "cairn/platform/status.h"

namespace cairn::cairnd {

// Applies one flash-wear flag. InvalidArgument naming the flag for a value
// that is not a number of the right kind.
Status ApplyFlashWearFlag(std::string_view name, std::string_view value, FlashWearOptions* options);

// Checks the flags seen together: one way of giving the endurance, and
// --card-size only with --card-pe-cycles.
Status CheckFlashWearFlags(const std::set<std::string_view>& seen);

// The flags' part of `cairnd --help`.
std::string_view FlashWearUsage();

}  // namespace cairn::cairnd
