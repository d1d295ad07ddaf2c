#include "http_workload.h"

#include <cstdio>
#include <map>

#include "sensor_generator.h"

namespace cairn::bench {

namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;
constexpr int64_t kNanosPerMilli = 1'000'000;
constexpr uint64_t kPeriods[] = {1, 5, 10};

// A device's walk, as integer steps of each quantity's resolution.
struct Walk {
  int32_t centidegrees = 2150;
  int32_t humidity_permille = 450;
  int32_t pressure_decapascals = 10130;
};

void Step(DeterministicRandom* random, int32_t* value, int32_t low, int32_t high) {
  *value += static_cast<int32_t>(random->UniformBetween(-1, 1));
  if (*value < low) *value = low;
  if (*value > high) *value = high;
}

// "env,device=<id> temperature=21.53,humidity=45.2,pressure=1013.2 <ns>\n"
std::string Line(const std::string& device, const Walk& w, int64_t timestamp) {
  char text[160];
  const int n = std::snprintf(text, sizeof(text), "env,device=%s temperature=%d.%02d,humidity=%d.%d,pressure=%d.%d %lld\n",
                              device.c_str(), w.centidegrees / 100, w.centidegrees % 100, w.humidity_permille / 10,
                              w.humidity_permille % 10, w.pressure_decapascals / 10, w.pressure_decapascals % 10,
                              static_cast<long long>(timestamp));
  return std::string(text, static_cast<size_t>(n));
}

}  // namespace

std::string HttpDeviceId(uint32_t index) {
  char id[32];
  std::snprintf(id, sizeof(id), "sensor-%06u", index);
  return id;
}

HttpWorkload BuildHttpWorkload(const HttpWorkloadOptions& options) {
  HttpWorkload workload;
  DeterministicRandom random(options.seed);
  std::vector<Walk> walks(options.devices);
  std::vector<int64_t> phase_ms(options.devices);
  for (uint32_t d = 0; d < options.devices; ++d) {
    workload.all_devices.push_back(HttpDeviceId(d));
    phase_ms[d] = static_cast<int64_t>(random.Uniform(1000));
    if (kPeriods[d % 3] == 1) workload.every_second_devices.push_back(workload.all_devices.back());
  }
  // Lines held back (late or repeated), by the second they go out in.
  std::multimap<uint64_t, std::string> held;
  std::string body;
  size_t body_lines = 0;
  const auto send = [&](std::string line) {
    body += line;
    ++workload.lines;
    if (++body_lines == options.lines_per_request) {
      workload.bodies.push_back(std::move(body));
      body.clear();
      body_lines = 0;
    }
  };
  for (uint64_t s = 0; s < options.seconds; ++s) {
    for (uint32_t d = 0; d < options.devices; ++d) {
      const uint64_t period = kPeriods[d % 3];
      if ((s + d) % period != 0) continue;
      Walk& w = walks[d];
      Step(&random, &w.centidegrees, 0, 8500);  // non-negative: printed as units.hundredths
      Step(&random, &w.humidity_permille, 0, 1000);
      Step(&random, &w.pressure_decapascals, 8700, 10850);
      const int64_t jitter_ms = random.UniformBetween(-20, 20);
      const int64_t timestamp = options.start + static_cast<int64_t>(s) * kNanosPerSecond +
                                std::max<int64_t>(0, std::min<int64_t>(999, phase_ms[d] + jitter_ms)) * kNanosPerMilli;
      std::string line = Line(workload.all_devices[d], w, timestamp);
      ++workload.records;
      const uint64_t fate = random.Uniform(1000);
      if (fate < 10) {
        held.emplace(s + static_cast<uint64_t>(random.UniformBetween(2, 5)), std::move(line));
      } else {
        if (fate == 10) held.emplace(s + static_cast<uint64_t>(random.UniformBetween(1, 3)), line);
        send(std::move(line));
      }
    }
    for (auto due = held.begin(); due != held.end() && due->first <= s; due = held.erase(due)) send(due->second);
  }
  for (auto& [second, line] : held) send(line);
  if (!body.empty()) workload.bodies.push_back(std::move(body));
  workload.readings = workload.records * 3;
  return workload;
}

}  // namespace cairn::bench
