// Writes the seed corpus of the sync envelope fuzzer: valid envelopes in both
// encodings and receipts, all signed with kSyncFuzzKey, and one bare record
// block.
//
//   sync_envelope_seed_generator <corpus dir>   (writes <dir>/*)
//
// Deterministic: rerunning it rewrites identical files.
#include <cfloat>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "cairn/core/record_codec.h"
#include "cairn/sync/sync_envelope.h"

#include "record_rows.h"
#include "seed_files.h"
#include "sync_envelope_fuzz_support.h"

namespace cairn::fuzz {
namespace {

using test_rows::Row;

// `row` with these dimensions.
RecordRow Tagged(RecordRow row, TagMap dimensions) {
  row.dimensions = std::move(dimensions);
  return row;
}

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kMillisecond = 1'000'000;
constexpr int64_t kStart = 1'700'000'000 * kSecond;

struct Batch {
  std::string name;
  EnvelopeHeader header;
  std::vector<RecordRow> records;
};

std::vector<Batch> Batches() {
  std::vector<Batch> batches;
  batches.push_back({"single",
                     {"gw-1", "sensors", SyncLane::kLive, 1, 10, 10},
                     {Row("pump-1", "env", kStart, {{"temperature", 21.5}})}});

  Batch sensors{"sensors", {"gw-1", "sensors", SyncLane::kLive, 2, 100, 199}, {}};
  for (int i = 0; i < 30; ++i) {
    for (int d = 0; d < 3; ++d) {
      sensors.records.push_back(
          Row("sensor-" + std::to_string(d), "env#temperature",
              kStart + i * kSecond + (i * 7 + d) % 13 * kMillisecond,
              {{"celsius", 18.0 + d + (i % 7) * 0.01}, {"battery", int64_t{90 - i / 10}}}));
    }
  }
  // Two series of sensor-0 told apart by a dimension, with attributes.
  for (RecordRow& row : sensors.records) {
    if (row.device_id != "sensor-0") continue;
    row.dimensions = {{"site", "north"}, {"rack", (row.timestamp / kSecond) % 2 ? "2" : "3"}};
    row.attributes = {{"firmware", "1.4"}};
  }
  batches.push_back(std::move(sensors));

  batches.push_back(
      {"all_types",
       {"Gerät-ü", "plant_2", SyncLane::kAlarm, 3, 0, 7},
       {Row("valve-9", "state", kStart, {{"open", true}, {"mode", std::string("auto")}}, 1, 1'800'000'000),
        Row("valve-9", "state", kStart + 1, {{"open", false}, {"seen", Timestamp{kStart}}}),
        Row("edge", "limits", std::numeric_limits<int64_t>::min(),
            {{"i", std::numeric_limits<int64_t>::max()}, {"d", -DBL_MAX}, {"z", -0.0}},
            std::numeric_limits<uint64_t>::max(), std::numeric_limits<int64_t>::max()),
        Row("edge", "limits", std::numeric_limits<int64_t>::max(), {{"t", DBL_TRUE_MIN}}),
        Tagged(Row("温度", "室内#温度", kStart, {{"值", 1.0 / 3}}, 0, 0, 13), {{"ort", "Zürich"}})}});

  batches.push_back({"rewrites",
                     {"gw-2", "t", SyncLane::kBackfill, 4, 1, 1000},
                     {Row("d", "m", kStart, {{"v", 1.0}}, 1), Row("d", "m", kStart, {{"v", 2.0}}, 2),
                      Row("d", "m", kStart, {{"v", 2.0}}, 2), Row("d", "m", kStart - 1, {{"v", 0.5}})}});

  Batch archive{"archive", {"gw-3", "archive_me", SyncLane::kArchive, 5, 5000, 5100}, {}};
  for (int i = 0; i < 40; ++i) {
    archive.records.push_back(Row("logger", "events", kStart + i * 60 * kSecond,
                                  {{"code", int64_t{i % 4}}, {"text", std::string(i % 2 ? "ok" : "retry")}},
                                  0, 1'800'000'000 + i));
  }
  batches.push_back(std::move(archive));
  return batches;
}

int Run(const std::string& dir) {
  int failures = 0;
  auto write = [&](const std::string& name, const Result<std::string>& bytes) {
    if (!bytes.ok()) {
      std::fprintf(stderr, "%s: %s\n", name.c_str(), bytes.status().ToString().c_str());
      ++failures;
      return;
    }
    if (!WriteFile(dir + "/" + name, *bytes)) ++failures;
  };
  for (const Batch& batch : Batches()) {
    write(batch.name + ".bin",
          EncodeEnvelope(batch.header, batch.records, kSyncFuzzKey, EnvelopeEncoding::kBinary));
    write(batch.name + ".json",
          EncodeEnvelope(batch.header, batch.records, kSyncFuzzKey, EnvelopeEncoding::kJson));
  }
  const std::vector<Batch> batches = Batches();
  write("sensors.block", EncodeRecordBlock(batches[1].records));

  const SyncReceipt ok{batches[1].header, ReceiptStatus::kOk, ""};
  const SyncReceipt rejected{batches[2].header, ReceiptStatus::kRejected, "record 2: field 'v' changes type"};
  write("receipt_ok.bin", EncodeReceipt(ok, kSyncFuzzKey, EnvelopeEncoding::kBinary));
  write("receipt_ok.json", EncodeReceipt(ok, kSyncFuzzKey, EnvelopeEncoding::kJson));
  write("receipt_rejected.bin", EncodeReceipt(rejected, kSyncFuzzKey, EnvelopeEncoding::kBinary));
  write("receipt_rejected.json", EncodeReceipt(rejected, kSyncFuzzKey, EnvelopeEncoding::kJson));
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace cairn::fuzz

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  return cairn::fuzz::Run(argv[1]);
}
