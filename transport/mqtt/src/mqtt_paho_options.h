// What MqttLinkOptions become in Paho's terms. Private to cairn_mqtt;
// mqtt_link.cc is the only caller.
#pragma once

#include <mqtt/connect_options.h>

#include "cairn/mqtt/mqtt_link.h"

namespace cairn {

// Paho's connect options for `options` (already checked by CheckOptions):
// MQTT 3.1.1, Paho's own reconnect off (the link reconnects with jitter),
// credentials and TLS as given. Throws what Paho's builders throw for
// options Paho itself refuses; the caller turns that into a Status.
mqtt::connect_options PahoConnectOptions(const MqttLinkOptions& options);

}  // namespace cairn
