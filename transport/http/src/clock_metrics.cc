#include "cairn/http/clock_metrics.h"

#include <string_view>

namespace cairn {

namespace {

void Metric(std::string* out, std::string_view name, std::string_view type, std::string_view help,
            uint64_t value) {
  *out += "# HELP " + std::string(name) + " " + std::string(help) + "\n";
  *out += "# TYPE " + std::string(name) + " " + std::string(type) + "\n";
  *out += std::string(name) + " " + std::to_string(value) + "\n";
}

}  // namespace

std::string RenderClockMetrics(const ClockStatus& clock) {
  std::string out;
  Metric(&out, "cairn_clock_trusted", "gauge",
         "1 when the engine trusts the wall clock and stamps readings with it.", clock.trusted ? 1 : 0);
  Metric(&out, "cairn_clock_kernel_synchronized", "gauge",
         "1 when the kernel reported the wall clock synchronised at the last look.",
         clock.kernel_synchronized ? 1 : 0);
  Metric(&out, "cairn_clock_deletions_allowed", "gauge",
         "1 when retention and ttl may delete by the clock; 0 while they wait for a trusted clock.",
         clock.deletions_allowed ? 1 : 0);
  Metric(&out, "cairn_clock_last_trusted_seconds", "gauge",
         "The latest wall time known to be right, in Unix seconds (0: never).",
         static_cast<uint64_t>(clock.last_trusted_unix_nanos > 0 ? clock.last_trusted_unix_nanos / 1'000'000'000
                                                                 : 0));
  Metric(&out, "cairn_clock_held_readings", "gauge",
         "Readings without a timestamp waiting for a trusted clock to be stamped.", clock.held_readings);
  out +=
      "# HELP cairn_clock_readings_total Readings without a timestamp that met an untrusted clock, by what "
      "happened to them.\n# TYPE cairn_clock_readings_total counter\n";
  out += "cairn_clock_readings_total{outcome=\"held\"} " + std::to_string(clock.readings_held) + "\n";
  out += "cairn_clock_readings_total{outcome=\"restamped\"} " + std::to_string(clock.readings_restamped) + "\n";
  out += "cairn_clock_readings_total{outcome=\"estimated\"} " + std::to_string(clock.readings_estimated) + "\n";
  out += "cairn_clock_readings_total{outcome=\"refused\"} " + std::to_string(clock.restamps_refused) + "\n";
  Metric(&out, "cairn_clock_timestamps_refused_total", "counter",
         "Client timestamps refused: too far ahead of the trusted clock, or before the horizon.",
         clock.timestamps_refused);
  return out;
}

}  // namespace cairn
