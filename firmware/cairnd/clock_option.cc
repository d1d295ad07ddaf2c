#include "cairnd/clock_option.h"

#include <charconv>
#include <string>

namespace cairn {

namespace {

Result<int64_t> NonNegative(std::string_view key, std::string_view text) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) {
    return Status::InvalidArgument("flag --clock: " + std::string(key) + "=" + std::string(text) +
                                   " is not a non-negative integer");
  }
  return value;
}

}  // namespace

Status ParseClockOption(std::string_view spec, ClockOptions* options) {
  ClockOptions parsed = *options;
  while (!spec.empty()) {
    const size_t comma = spec.find(',');
    const std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    const size_t equals = item.find('=');
    if (equals == std::string_view::npos) {
      return Status::InvalidArgument("flag --clock: '" + std::string(item) +
                                     "' is not KEY=VALUE (trust, future_tolerance, horizon, max_held)");
    }
    const std::string_view key = item.substr(0, equals);
    const std::string_view value = item.substr(equals + 1);
    if (key == "trust") {
      Result<ClockTrustPolicy> policy = ParseClockTrustPolicy(value);
      if (!policy.ok()) return policy.status().WithContext("flag --clock");
      parsed.policy = *policy;
    } else if (key == "future_tolerance") {
      CAIRN_ASSIGN_OR_RETURN(parsed.future_tolerance_seconds, NonNegative(key, value));
    } else if (key == "horizon") {
      CAIRN_ASSIGN_OR_RETURN(parsed.horizon_unix_seconds, NonNegative(key, value));
    } else if (key == "max_held") {
      CAIRN_ASSIGN_OR_RETURN(const int64_t n, NonNegative(key, value));
      parsed.max_held_readings = static_cast<uint64_t>(n);
    } else {
      return Status::InvalidArgument("flag --clock: unknown key '" + std::string(key) +
                                     "' (trust, future_tolerance, horizon, max_held)");
    }
  }
  CAIRN_RETURN_IF_ERROR(ValidateClockOptions(parsed).WithContext("flag --clock"));
  *options = parsed;
  return Status::Ok();
}

}  // namespace cairn
