#include "flash_wear_metrics.h"

#include <cmath>
#include <cstdio>
#include <optional>
#include <string_view>

#include "metrics_text.h"

namespace cairn {
namespace {

void Header(std::string* out, std::string_view name, std::string_view type, std::string_view help) {
  *out += "# HELP ";
  *out += name;
  *out += ' ';
  *out += help;
  *out += "\n# TYPE ";
  *out += name;
  *out += ' ';
  *out += type;
  *out += '\n';
}

void Sample(std::string* out, std::string_view name, std::string_view labels, std::optional<double> value) {
  if (!value || !std::isfinite(*value)) return;
  char number[40];
  std::snprintf(number, sizeof(number), "%.17g", *value);
  *out += name;
  if (!labels.empty()) {
    *out += '{';
    *out += labels;
    *out += '}';
  }
  *out += ' ';
  *out += number;
  *out += '\n';
}

std::optional<double> AsDouble(std::optional<uint64_t> value) {
  if (!value) return std::nullopt;
  return static_cast<double>(*value);
}

}  // namespace

std::string RenderFlashWearMetrics(const FlashWearStatus& wear) {
  std::string out;
  const std::string device = wear.device.empty()
                                 ? "source=\"device\""
                                 : "source=\"device\",device=\"" + PrometheusLabelValue(wear.device) + "\"";
  Header(
      &out, "cairn_flash_bytes_written_total", "counter",
      "Bytes written since install: by cairnd (process) and to the data directory's block device (device).");
  Sample(&out, "cairn_flash_bytes_written_total", "source=\"process\"", AsDouble(wear.process_bytes_written));
  Sample(&out, "cairn_flash_bytes_written_total", device, AsDouble(wear.device_bytes_written));
  Header(&out, "cairn_flash_reading_bytes_total", "counter",
         "Bytes of readings stored since install (8 per timestamp and number, 1 per bool, string lengths).");
  Sample(&out, "cairn_flash_reading_bytes_total", "", static_cast<double>(wear.reading_bytes));
  Header(&out, "cairn_flash_observed_seconds_total", "counter",
         "Time cairnd has watched the write counters since install.");
  Sample(&out, "cairn_flash_observed_seconds_total", "", static_cast<double>(wear.observed_seconds));
  Header(&out, "cairn_flash_bytes_written_per_day", "gauge",
         "Bytes written per day, over the rolling window and since install.");
  Sample(&out, "cairn_flash_bytes_written_per_day", "source=\"process\",over=\"window\"",
         wear.process_bytes_per_day_window);
  Sample(&out, "cairn_flash_bytes_written_per_day", "source=\"process\",over=\"install\"",
         wear.process_bytes_per_day_since_install);
  Sample(&out, "cairn_flash_bytes_written_per_day", device + ",over=\"window\"",
         wear.device_bytes_per_day_window);
  Sample(&out, "cairn_flash_bytes_written_per_day", device + ",over=\"install\"",
         wear.device_bytes_per_day_since_install);
  Header(&out, "cairn_flash_write_amplification_ratio", "gauge",
         "Bytes written by cairnd per byte of readings stored.");
  Sample(&out, "cairn_flash_write_amplification_ratio", "over=\"window\"", wear.amplification_window);
  Sample(&out, "cairn_flash_write_amplification_ratio", "over=\"install\"", wear.amplification_since_install);
  if (wear.endurance_bytes > 0) {
    Header(&out, "cairn_flash_endurance_bytes", "gauge", "The card's rated write endurance as configured.");
    Sample(&out, "cairn_flash_endurance_bytes", "", static_cast<double>(wear.endurance_bytes));
    Header(&out, "cairn_flash_endurance_used_ratio", "gauge", "Fraction of the rated endurance written.");
    Sample(&out, "cairn_flash_endurance_used_ratio", "", wear.endurance_used_fraction);
    Header(&out, "cairn_flash_projected_remaining_seconds", "gauge",
           "The card's projected remaining life at the current write rate.");
    std::optional<double> seconds;
    if (wear.projected_remaining_days) seconds = *wear.projected_remaining_days * 86'400;
    Sample(&out, "cairn_flash_projected_remaining_seconds", "", seconds);
  }
  return out;
}

}  // namespace cairn
