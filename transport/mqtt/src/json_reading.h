// A JSON reading of MQTT input payloads (mqtt_input_format.md, "JSON") to a
// cairn record.
//
// Thread-safety: a pure function.
#pragma once

#include "cairn/core/record.h"
#include "cairn/platform/status.h"
#include "cairn/text/json_value.h"
#include "cairn/text/line_protocol.h"

namespace cairn {
namespace mqtt_internal {

// One reading object to a record: `options` gives the precision of "time"
// and of {"timestamp": N} values, and the arrival time for a reading
// without "time". InvalidArgument naming the member for a bad reading.
Result<Record> JsonReadingToRecord(const JsonValue& reading, const LineProtocolOptions& options);

}  // namespace mqtt_internal
}  // namespace cairn
