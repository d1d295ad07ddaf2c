// MQTT topic matching (MQTT 3.1.1 §4.7), shared by the local MQTT input's
// routes and anything else that must decide which filter a topic falls under
// the way a broker does.
//
// Thread-safety: pure functions.
#pragma once

#include <string_view>

namespace cairn {

// True when `topic` (a topic name, no wildcards) matches `filter`: '+' is
// exactly one level, a trailing '#' any number of levels including none
// ("a/#" matches "a"), and a topic starting with '$' is not matched by a
// wildcard in the filter's first level. `filter` is assumed well formed
// (MqttLink refuses others before subscribing).
bool MqttTopicMatches(std::string_view filter, std::string_view topic);

}  // namespace cairn
