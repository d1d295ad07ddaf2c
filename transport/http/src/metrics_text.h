// Pieces of the Prometheus text exposition format shared by the /metrics
// writers (api_metrics.cc, flash_wear_metrics.cc).
#pragma once

#include <string>
#include <string_view>

namespace cairn {

// `text` escaped as a label value must be: backslash, double quote and
// newline escaped, every other byte as is.
std::string PrometheusLabelValue(std::string_view text);

}  // namespace cairn
