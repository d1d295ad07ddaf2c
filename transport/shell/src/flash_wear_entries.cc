#include "flash_wear_entries.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace cairn {
namespace {

Value Known(const std::optional<uint64_t>& value) {
  if (!value) return std::monostate();
  return static_cast<int64_t>(std::min<uint64_t>(*value, std::numeric_limits<int64_t>::max()));
}

// Two decimals are all a person reads of a rate or a ratio; the exact
// counters are there for whoever needs more.
Value Rounded(const std::optional<double>& value, double scale = 1) {
  if (!value || !std::isfinite(*value)) return std::monostate();
  return std::round(*value * scale * 100) / 100;
}

}  // namespace

void AppendFlashWearEntries(const FlashWearStatus& wear, bool full,
                            std::vector<CommandResult::Entry>* entries) {
  const auto add = [&](const char* key, Value value) { entries->emplace_back(key, std::move(value)); };
  add("flash_device",
      wear.device.empty() ? Value(std::string("unknown: ") + wear.device_note) : Value(wear.device));
  // The card's own count when there is one, else cairn's.
  const bool device = wear.device_bytes_per_day_window.has_value();
  if (!full) {
    add("flash_bytes_per_day",
        Rounded(device ? wear.device_bytes_per_day_window : wear.process_bytes_per_day_window));
    add("flash_write_amplification", Rounded(wear.amplification_window));
    add("flash_endurance_used_percent", Rounded(wear.endurance_used_fraction, 100));
    add("flash_projected_days", Rounded(wear.projected_remaining_days));
    return;
  }
  add("flash_process_bytes_written", Known(wear.process_bytes_written));
  add("flash_device_bytes_written", Known(wear.device_bytes_written));
  add("flash_reading_bytes", Known(wear.reading_bytes));
  add("flash_window_seconds", Known(static_cast<uint64_t>(std::max<int64_t>(0, wear.window_seconds))));
  add("flash_observed_seconds", Known(static_cast<uint64_t>(std::max<int64_t>(0, wear.observed_seconds))));
  add("flash_process_bytes_per_day", Rounded(wear.process_bytes_per_day_window));
  add("flash_device_bytes_per_day", Rounded(wear.device_bytes_per_day_window));
  add("flash_process_bytes_per_day_since_install", Rounded(wear.process_bytes_per_day_since_install));
  add("flash_device_bytes_per_day_since_install", Rounded(wear.device_bytes_per_day_since_install));
  add("flash_write_amplification", Rounded(wear.amplification_window));
  add("flash_write_amplification_since_install", Rounded(wear.amplification_since_install));
  add("flash_endurance_bytes",
      wear.endurance_bytes > 0 ? Known(wear.endurance_bytes) : Value(std::monostate()));
  add("flash_endurance_used_percent", Rounded(wear.endurance_used_fraction, 100));
  add("flash_projected_days", Rounded(wear.projected_remaining_days));
  add("flash_projection_basis",
      wear.projection_basis.empty() ? Value(std::monostate()) : Value(wear.projection_basis));
}

}  // namespace cairn
