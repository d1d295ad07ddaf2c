// The checks MqttLink makes before it talks to a broker. Private to
// cairn_mqtt; mqtt_link.cc is their only caller.
#pragma once

#include <string>

#include "cairn/mqtt/mqtt_link.h"
#include "cairn/platform/env.h"
#include "cairn/platform/status.h"

namespace cairn {

// Checks every option (server URI, TLS files readable through `env`,
// lengths, ranges, subscription filters) and sets `*paho_uri` to the URI
// Paho understands. InvalidArgument or the file's error naming the option.
Status CheckOptions(Env* env, const MqttLinkOptions& options, std::string* paho_uri);

// Why a connect failed, from Paho's return code: the broker's CONNACK
// refusals (1..5) in words, or the library's error text with its code.
std::string ConnectFailureReason(int return_code);

}  // namespace cairn
