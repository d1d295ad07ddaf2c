#include "sensor_generator.h"

#include <algorithm>
#include <cassert>
#include <cstdio>

namespace cairn::bench {

namespace {

constexpr int64_t kNanosPerMilli = 1'000'000;
constexpr int64_t kNanosPerSecond = 1'000'000'000;
constexpr int64_t kJitterMillis = 20;
// Phases stay clear of the second's edges so that jitter never moves a
// record into a neighbouring second (a day of data stays inside its day).
constexpr int64_t kPhaseLowMillis = 100;
constexpr int64_t kPhaseHighMillis = 899;
constexpr int64_t kDelayLowSeconds = 2;
constexpr int64_t kDelayHighSeconds = 5;
constexpr int64_t kRetransmitLowSeconds = 1;
constexpr int64_t kRetransmitHighSeconds = 3;

uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t RotateLeft(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// One step of a bounded random walk over integer steps: moves by -1 or +1
// with `move_per_thousand`/1000 probability each, and turns back towards
// `base` instead of leaving [base - spread, base + spread].
int32_t WalkStep(DeterministicRandom* random, int32_t value, int32_t base, int32_t spread,
                 uint64_t move_per_thousand) {
  const uint64_t draw = random->Uniform(1000);
  int32_t delta = 0;
  if (draw < move_per_thousand) {
    delta = -1;
  } else if (draw < 2 * move_per_thousand) {
    delta = 1;
  }
  if ((delta > 0 && value >= base + spread) || (delta < 0 && value <= base - spread)) delta = -delta;
  return value + delta;
}

}  // namespace

DeterministicRandom::DeterministicRandom(uint64_t seed) {
  uint64_t mix = seed;
  for (uint64_t& word : state_) word = SplitMix64(&mix);
}

uint64_t DeterministicRandom::Next() {
  const uint64_t result = RotateLeft(state_[1] * 5, 7) * 9;
  const uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = RotateLeft(state_[3], 45);
  return result;
}

uint64_t DeterministicRandom::Uniform(uint64_t bound) {
  assert(bound > 0);
  return Next() % bound;
}

int64_t DeterministicRandom::UniformBetween(int64_t low, int64_t high) {
  assert(low <= high);
  return low + static_cast<int64_t>(Uniform(static_cast<uint64_t>(high - low) + 1));
}

SensorGenerator::SensorGenerator(const SensorGeneratorOptions& options)
    : options_(options), random_(options.seed) {
  device_ids_.reserve(options_.devices);
  devices_.reserve(options_.devices);
  char digits[16];
  for (uint32_t i = 0; i < options_.devices; ++i) {
    std::snprintf(digits, sizeof(digits), "%06u", static_cast<unsigned>(i));
    device_ids_.push_back(options_.device_id_prefix + digits);
    DeviceState device;
    device.temperature_base = static_cast<int32_t>(random_.UniformBetween(1500, 3000));
    device.temperature = device.temperature_base + static_cast<int32_t>(random_.UniformBetween(-200, 200));
    device.humidity_base = static_cast<int32_t>(random_.UniformBetween(300, 700));
    device.humidity = device.humidity_base + static_cast<int32_t>(random_.UniformBetween(-50, 50));
    device.pressure_base = static_cast<int32_t>(random_.UniformBetween(9950, 10250));
    device.pressure = device.pressure_base + static_cast<int32_t>(random_.UniformBetween(-20, 20));
    device.phase_nanos = random_.UniformBetween(kPhaseLowMillis, kPhaseHighMillis) * kNanosPerMilli;
    devices_.push_back(device);
  }
}

uint64_t SensorGenerator::unique_records() const {
  return static_cast<uint64_t>(options_.devices) * options_.seconds;
}

SensorRecord SensorGenerator::Sample(uint32_t index, uint64_t second) {
  DeviceState& device = devices_[index];
  device.temperature = WalkStep(&random_, device.temperature, device.temperature_base, 400, 150);
  device.humidity = WalkStep(&random_, device.humidity, device.humidity_base, 100, 50);
  device.pressure = WalkStep(&random_, device.pressure, device.pressure_base, 50, 10);
  const int64_t jitter = random_.UniformBetween(-kJitterMillis, kJitterMillis) * kNanosPerMilli;

  SensorRecord record;
  record.device_id = device_ids_[index];
  record.device_index = index;
  record.timestamp = options_.start_unix_nanos + static_cast<int64_t>(second) * kNanosPerSecond +
                     device.phase_nanos + jitter;
  record.temperature_centidegrees = device.temperature;
  record.humidity_permille = device.humidity;
  record.pressure_decapascals = device.pressure;
  return record;
}

void SensorGenerator::ReleasePending(uint64_t second) {
  // stable_partition keeps arrival order among records due the same second;
  // the final flush sorts by due second so that records still leave in the
  // order a gateway would have received them.
  auto due_end = std::stable_partition(pending_.begin(), pending_.end(),
                                       [second](const Pending& p) { return p.due_second <= second; });
  std::stable_sort(pending_.begin(), due_end,
                   [](const Pending& a, const Pending& b) { return a.due_second < b.due_second; });
  for (auto it = pending_.begin(); it != due_end; ++it) ready_.push_back(it->record);
  pending_.erase(pending_.begin(), due_end);
}

void SensorGenerator::GenerateSecond(uint64_t second) {
  ReleasePending(second);
  for (uint32_t index = 0; index < options_.devices; ++index) {
    const SensorRecord record = Sample(index, second);
    if (random_.Uniform(1'000'000) < options_.out_of_order_per_million) {
      const auto delay = static_cast<uint64_t>(random_.UniformBetween(kDelayLowSeconds, kDelayHighSeconds));
      pending_.push_back(Pending{second + delay, record});
      ++out_of_order_;
    } else {
      ready_.push_back(record);
    }
    if (random_.Uniform(1'000'000) < options_.duplicate_per_million) {
      const auto delay =
          static_cast<uint64_t>(random_.UniformBetween(kRetransmitLowSeconds, kRetransmitHighSeconds));
      pending_.push_back(Pending{second + delay, record});
      ++duplicates_;
    }
  }
}

bool SensorGenerator::NextBatch(size_t max_records, std::vector<SensorRecord>* out) {
  assert(max_records > 0);
  out->clear();
  while (out->size() < max_records) {
    if (ready_position_ == ready_.size()) {
      ready_.clear();
      ready_position_ = 0;
      if (next_second_ < options_.seconds) {
        GenerateSecond(next_second_++);
      } else if (!flushed_) {
        ReleasePending(UINT64_MAX);
        flushed_ = true;
      } else {
        break;
      }
      continue;
    }
    const size_t take = std::min(max_records - out->size(), ready_.size() - ready_position_);
    out->insert(out->end(), ready_.begin() + static_cast<std::ptrdiff_t>(ready_position_),
                ready_.begin() + static_cast<std::ptrdiff_t>(ready_position_ + take));
    ready_position_ += take;
  }
  delivered_ += out->size();
  return !out->empty();
}

}  // namespace cairn::bench
