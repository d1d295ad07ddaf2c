// The data of `cairn-bench http`: line-protocol request bodies as a gateway's
// sensors deliver them, the same bytes for every store.
//
// Devices report temperature, humidity and pressure (one multi-field line)
// every 1, 5 or 10 seconds (device index mod 3), each at its own phase with
// ±20 ms of jitter; about 1 % of lines arrive 2-5 s late and about 0.1 %
// arrive twice. Timestamps are nanoseconds; every value is a short decimal.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cairn::bench {

struct HttpWorkloadOptions {
  uint32_t devices = 1000;
  uint64_t seconds = 5400;
  uint64_t seed = 1;
  int64_t start = 0;             // ns since the epoch of the first second
  size_t lines_per_request = 5000;
};

struct HttpWorkload {
  std::vector<std::string> bodies;  // one request each
  uint64_t lines = 0;               // lines sent, repeats included
  uint64_t records = 0;             // distinct (device, timestamp) lines
  uint64_t readings = 0;            // records x 3 fields
  // Devices that report every second: the range queries read them.
  std::vector<std::string> every_second_devices;
  std::vector<std::string> all_devices;
};

HttpWorkload BuildHttpWorkload(const HttpWorkloadOptions& options);

// Device id of index `index` ("sensor-000042").
std::string HttpDeviceId(uint32_t index);

}  // namespace cairn::bench
