// SensorGenerator: a deterministic stream of environmental sensor readings as
// a gateway receives them, for benchmarks (storage now, sync later).
//
// Each device reports temperature (0.01 °C steps), relative humidity (0.1 %RH
// steps) and pressure (0.1 hPa steps) once per second. Each value is a random
// walk kept as an integer count of steps, so every reading is the double
// nearest to its decimal value (2153 steps of 0.01 -> 2153 / 100.0), exactly
// as a sensor driver that divides a raw integer would produce it.
//
// Delivery follows a real gateway rather than a clean grid:
//   - each device samples at its own phase within the second, with ±20 ms of
//     jitter around its 1 s grid (timestamps have millisecond precision);
//   - about 1 % of records are delayed and delivered 2-5 s later, after newer
//     records of the same device (out of order);
//   - about 0.1 % of records are delivered a second time 1-3 s later (a
//     retransmission after a lost acknowledgement): same timestamp, same values.
//
// The whole stream depends only on the options (seed included): two
// generators built with equal options produce identical records on every
// platform (the random source is a fixed integer algorithm, no std::
// distributions, no floating point in the walks).
//
// Thread-safety: a generator is not thread-safe; use one per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cairn::bench {

// xoshiro256** seeded through splitmix64: small, fast and identical on every
// platform, which std::uniform_int_distribution is not.
class DeterministicRandom {
 public:
  explicit DeterministicRandom(uint64_t seed);

  uint64_t Next();
  // Uniform in [0, bound). Precondition: bound > 0. The modulo bias is below
  // 2^-40 for the small bounds the benchmarks use.
  uint64_t Uniform(uint64_t bound);
  // Uniform in [low, high]. Precondition: low <= high.
  int64_t UniformBetween(int64_t low, int64_t high);

 private:
  uint64_t state_[4];
};

struct SensorGeneratorOptions {
  uint32_t devices = 1000;
  // Device ids are this prefix followed by the device index, zero-padded to
  // six digits ("sensor-000042").
  std::string device_id_prefix = "sensor-";
  // Start of the first second of the stream, ns since the Unix epoch. Every
  // record of second s has a timestamp in [start + s, start + s + 1 s).
  int64_t start_unix_nanos = 0;
  // Readings per device (one per second).
  uint64_t seconds = 3600;
  uint64_t seed = 1;
  // Per-million rates of the delivery faults described above.
  uint32_t out_of_order_per_million = 10000;
  uint32_t duplicate_per_million = 1000;
};

// One multi-measure record: the three readings of one device at one instant.
struct SensorRecord {
  // Points into the generator's table of ids: valid while the generator lives.
  std::string_view device_id;
  uint32_t device_index = 0;
  int64_t timestamp = 0;  // ns since the Unix epoch, whole milliseconds
  int32_t temperature_centidegrees = 0;
  int32_t humidity_permille = 0;     // tenths of a percent of relative humidity
  int32_t pressure_decapascals = 0;  // tenths of a hectopascal (1 daPa = 0.1 hPa)

  double temperature_celsius() const { return temperature_centidegrees / 100.0; }
  double humidity_percent() const { return humidity_permille / 10.0; }
  double pressure_hectopascals() const { return pressure_decapascals / 10.0; }
};

class SensorGenerator {
 public:
  explicit SensorGenerator(const SensorGeneratorOptions& options);

  SensorGenerator(const SensorGenerator&) = delete;
  SensorGenerator& operator=(const SensorGenerator&) = delete;

  // Replaces the contents of `out` with the next at most `max_records`
  // records in delivery order. Returns false (and leaves `out` empty) once
  // the stream is exhausted. Precondition: max_records > 0.
  bool NextBatch(size_t max_records, std::vector<SensorRecord>* out);

  const SensorGeneratorOptions& options() const { return options_; }
  const std::string& device_id(uint32_t index) const { return device_ids_[index]; }

  // Distinct records in the whole stream: devices × seconds.
  uint64_t unique_records() const;
  // Records handed out by NextBatch so far, retransmissions included.
  uint64_t delivered_records() const { return delivered_; }
  // Records generated so far that were retransmitted / delayed; once the
  // stream is exhausted, how many duplicates and late records it delivered.
  uint64_t duplicates() const { return duplicates_; }
  uint64_t out_of_order() const { return out_of_order_; }

 private:
  struct DeviceState {
    int32_t temperature_base;
    int32_t temperature;
    int32_t humidity_base;
    int32_t humidity;
    int32_t pressure_base;
    int32_t pressure;
    int64_t phase_nanos;  // where in each second this device samples
  };
  struct Pending {
    uint64_t due_second;  // delivered at the start of this second
    SensorRecord record;
  };

  // Appends the records delivered during `second` to ready_.
  void GenerateSecond(uint64_t second);
  SensorRecord Sample(uint32_t device, uint64_t second);
  // Moves the pending records due at or before `second` to ready_, oldest due first.
  void ReleasePending(uint64_t second);

  const SensorGeneratorOptions options_;
  DeterministicRandom random_;
  std::vector<std::string> device_ids_;
  std::vector<DeviceState> devices_;
  std::vector<Pending> pending_;  // delayed records and retransmissions
  std::vector<SensorRecord> ready_;
  size_t ready_position_ = 0;
  uint64_t next_second_ = 0;
  bool flushed_ = false;
  uint64_t delivered_ = 0;
  uint64_t duplicates_ = 0;
  uint64_t out_of_order_ = 0;
};

}  // namespace cairn::bench
