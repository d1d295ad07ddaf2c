// Writes the seed corpora of the chunk fuzzers: small valid chunks covering
// every column encoding, and statistics blobs for StatsFuzzSchema().
//
//   chunk_seed_generator <corpus dir>   (writes <dir>/chunk_decoder/*, <dir>/chunk_stats_decoder/*)
//
// Deterministic: rerunning it rewrites identical files. The corpus's
// chunk_stats_decoder/v1_* seeds are not written here: they are the same
// statistics as written before format version 2 (int64 sums as doubles),
// kept so that the fuzzer starts from both versions.
#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "chunk_fuzz_support.h"
#include "chunk_records.h"
#include "seed_files.h"

namespace cairn::fuzz {
namespace {

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kMillisecond = 1'000'000;
constexpr int64_t kStart = 1'700'000'000 * kSecond;

using test_chunks::MakeRecord;

struct Seed {
  std::string name;
  std::vector<ChunkField> schema;
  std::vector<ChunkRecord> records;
};

std::vector<Seed> ChunkSeeds() {
  std::mt19937_64 random(1);
  std::vector<Seed> seeds;

  seeds.push_back({"single_record_all_types",
                   StatsFuzzSchema(),
                   {MakeRecord(kStart, {21.5, int64_t{7}, true, std::string("ok"), Timestamp{kStart}}, 1,
                               1'800'000'000)}});

  Seed sensor{"sensor_jittered_decimals",
              {{"temperature", FieldType::kDouble},
               {"humidity", FieldType::kDouble},
               {"pressure", FieldType::kDouble}},
              {}};
  int64_t centi = 2150, deci_humidity = 450, deci_pressure = 10132;
  for (int i = 0; i < 150; ++i) {
    centi += static_cast<int64_t>(random() % 3) - 1;
    deci_humidity += static_cast<int64_t>(random() % 3) - 1;
    deci_pressure += static_cast<int64_t>(random() % 3) - 1;
    int64_t jitter = (static_cast<int64_t>(random() % 41) - 20) * kMillisecond;
    sensor.records.push_back(MakeRecord(kStart + i * kSecond + jitter,
                                        {centi / 100.0, deci_humidity / 10.0, deci_pressure / 10.0}, 1));
  }
  seeds.push_back(sensor);

  Seed counter{"regular_counter", {{"packets", FieldType::kInt64}}, {}};
  for (int i = 0; i < 200; ++i)
    counter.records.push_back(MakeRecord(kStart + i * kSecond, {int64_t{1000 + 17 * i}}));
  seeds.push_back(counter);

  Seed strings{"strings_dictionary", {{"state", FieldType::kString}}, {}};
  const std::string states[] = {"idle", "run", std::string("a\0b", 3), "", std::string(40, 'x')};
  for (int i = 0; i < 60; ++i)
    strings.records.push_back(MakeRecord(kStart + i * kSecond, {states[random() % 5]}));
  seeds.push_back(strings);

  Seed sparse{"sparse_and_alternating_presence",
              {{"escalated", FieldType::kString}, {"alarm", FieldType::kBool}, {"level", FieldType::kDouble}},
              {}};
  for (int i = 0; i < 120; ++i) {
    std::vector<Value> values(3);
    if (i % 41 == 3) values[0] = std::string("technician");
    if (i % 2 == 0) values[1] = i % 3 == 0;
    if (i < 100) values[2] = i * 0.5;
    sparse.records.push_back(MakeRecord(kStart + i * 10 * kSecond, std::move(values)));
  }
  seeds.push_back(sparse);

  Seed exceptions{
      "double_exceptions_and_xor", {{"mixed", FieldType::kDouble}, {"noise", FieldType::kDouble}}, {}};
  for (int i = 0; i < 80; ++i) {
    double mixed = 20.0 + (i % 13) * 0.1;
    if (i % 17 == 5) mixed = -0.0;
    if (i % 23 == 7) mixed = std::numeric_limits<double>::denorm_min();
    if (i == 40) mixed = std::numbers::pi;
    exceptions.records.push_back(MakeRecord(kStart + i * kSecond, {mixed, std::sin(i * 0.37) * 1e6}));
  }
  seeds.push_back(exceptions);

  const int64_t kMax = std::numeric_limits<int64_t>::max();
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  seeds.push_back(
      {"int64_and_timestamp_extremes",
       {{"n", FieldType::kInt64}, {"t", FieldType::kTimestamp}},
       {MakeRecord(kMin, {kMin, Timestamp{kMax}}), MakeRecord(-1, {kMax, Timestamp{kMin}}),
        MakeRecord(0, {int64_t{0}, Timestamp{0}}), MakeRecord(kMax - 1, {int64_t{-1}, Timestamp{-1}}),
        MakeRecord(kMax, {kMin, Timestamp{kMax}})}});

  Seed versions{"varying_versions_and_ttls", {{"v", FieldType::kInt64}}, {}};
  for (int i = 0; i < 50; ++i) {
    versions.records.push_back(MakeRecord(kStart + i * kMillisecond, {int64_t{i % 3}},
                                          i % 7 == 0 ? std::numeric_limits<uint64_t>::max() : uint64_t(i),
                                          i % 2 ? 0 : 1'800'000'000 + i));
  }
  seeds.push_back(versions);

  Seed no_fields{"no_fields", {}, {}};
  for (int i = 0; i < 30; ++i) no_fields.records.push_back(MakeRecord(-kSecond + i * 3 * kSecond, {}));
  seeds.push_back(no_fields);

  Seed drifting{
      "drifting_timestamps_bools", {{"door_open", FieldType::kBool}, {"seen", FieldType::kTimestamp}}, {}};
  int64_t timestamp = 12345;
  for (int i = 0; i < 100; ++i) {
    timestamp += 1000 + i * 3;
    drifting.records.push_back(
        MakeRecord(timestamp, {random() % 4 == 0, Timestamp{kStart + i * 60 * kSecond}}));
  }
  seeds.push_back(drifting);
  return seeds;
}

}  // namespace
}  // namespace cairn::fuzz

int main(int argc, char** argv) {
  using namespace cairn;
  using namespace cairn::fuzz;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  const std::string root = argv[1];
  int written = 0;
  for (const Seed& seed : ChunkSeeds()) {
    ChunkStats stats;
    Result<std::string> chunk = EncodeChunk(seed.schema, seed.records, &stats);
    if (!chunk.ok()) {
      std::fprintf(stderr, "seed %s: %s\n", seed.name.c_str(), chunk.status().ToString().c_str());
      return 1;
    }
    if (!WriteFile(root + "/chunk_decoder/" + seed.name, *chunk)) return 1;
    ++written;
    if (seed.schema == StatsFuzzSchema()) {
      if (!WriteFile(root + "/chunk_stats_decoder/" + seed.name, EncodeChunkStats(stats, seed.schema)))
        return 1;
      ++written;
    }
  }
  // Statistics of records that lack some fields and carry extreme values.
  const std::vector<ChunkField> schema = StatsFuzzSchema();
  std::vector<ChunkRecord> partial = {
      MakeRecord(1, {-0.0, Value(), false, std::string(""), Value()}, 0, 0),
      MakeRecord(2, {1e300, std::numeric_limits<int64_t>::min(), Value(), Value(), Timestamp{-5}}, 9, 77),
  };
  if (!WriteFile(root + "/chunk_stats_decoder/partial_fields",
                 EncodeChunkStats(ComputeChunkStats(schema, partial), schema)))
    return 1;
  ++written;
  std::mt19937_64 random(2);
  std::vector<ChunkRecord> mixed;
  for (int i = 0; i < 50; ++i) {
    // One statement per draw: argument evaluation order is unspecified.
    std::vector<Value> values(schema.size());
    if (random() % 5 != 0) values[0] = static_cast<double>(random() % 1000) / 10.0;
    values[1] = static_cast<int64_t>(random() % 100) - 50;
    values[2] = random() % 2 == 0;
    if (random() % 3 != 0) values[3] = "state-" + std::to_string(random() % 4);
    values[4] = Timestamp{static_cast<int64_t>(random())};
    uint64_t version = random() % 10;
    mixed.push_back(MakeRecord(i * kSecond, std::move(values), version, i % 4 ? 1'900'000'000 : 0));
  }
  if (!WriteFile(root + "/chunk_stats_decoder/mixed_fields",
                 EncodeChunkStats(ComputeChunkStats(schema, mixed), schema)))
    return 1;
  ++written;
  if (!WriteFile(root + "/chunk_stats_decoder/empty",
                 EncodeChunkStats(ComputeChunkStats(schema, {}), schema)))
    return 1;
  ++written;
  std::printf("wrote %d seed files under %s\n", written, root.c_str());
  return 0;
}
