// MQTT topic names and filters (MQTT 3.1.1 §4.7): which ones a broker
// accepts, and which filter a topic falls under the way a broker decides it.
// MqttLink::Create's link, the local MQTT input's routes and the tests'
// in-memory broker all decide with these, so none of them can drift from
// the others.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string_view>

#include "cairn/platform/status.h"

namespace cairn {

// MQTT strings (topics, client ids, user names) carry a 16-bit length.
inline constexpr size_t kMaxMqttStringBytes = 65535;

// True when `text` is an MQTT string's content: UTF-8 without U+0000
// (MQTT 3.1.1 §1.5.3). The length is the caller's check.
bool IsMqttUtf8(std::string_view text);

// OK when `topic` is a topic name MQTT 3.1.1 accepts for a PUBLISH:
// non-empty, at most 65535 bytes of UTF-8 without NUL, no '#' or '+'.
// Otherwise InvalidArgument naming the rule it breaks (and the topic).
Status CheckMqttTopicName(std::string_view topic);

// OK when `filter` is a topic filter MQTT 3.1.1 accepts for a SUBSCRIBE:
// non-empty, at most 65535 bytes of UTF-8 without NUL, every '+' or '#'
// filling a whole level and '#' only as the last level. Otherwise
// InvalidArgument naming the rule it breaks (and the filter).
Status CheckMqttTopicFilter(std::string_view filter);

// True when `topic` (a topic name, no wildcards) matches `filter`: '+' is
// exactly one level, a trailing '#' any number of levels including none
// ("a/#" matches "a"), and a topic starting with '$' is not matched by a
// wildcard in the filter's first level. `filter` is assumed well formed
// (MqttLink refuses others before subscribing).
bool MqttTopicMatches(std::string_view filter, std::string_view topic);

}  // namespace cairn
