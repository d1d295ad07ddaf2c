// Shared helpers of the period file tests: series and chunks of one day
// with recognisable bytes, and the fixture that opens a period file in a
// fresh directory through the Env's SQLite VFS.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/core/table.h"
#include "cairn/platform/env.h"

#include "storage/env_vfs.h"
#include "storage/period_file.h"
#include "test_dirs.h"

namespace cairn::period_file_testing {

inline constexpr int kCacheKib = 256;
// 2023-11-14, a day period start.
inline const int64_t kDayStart = PeriodStart(Period::kDay, int64_t{1'700'000'000} * 1'000'000'000);
inline constexpr int64_t kSecond = 1'000'000'000;

inline const std::vector<ChunkField> kFields = {{"temperature", FieldType::kDouble}, {"count", FieldType::kInt64}};

inline PeriodSeries MakeSeries(int64_t id, std::string device, std::string measure) {
  PeriodSeries series;
  series.series_id = id;
  series.device_id = std::move(device);
  series.measure_name = std::move(measure);
  series.fields = kFields;
  series.dimensions = {{"site", "berlin"}, {"rack", "7"}};
  return series;
}

// A chunk over [start, end] seconds into the day, with recognisable bytes.
inline ChunkRow MakeChunk(int64_t series_id, int64_t start_second, int64_t end_second, std::string data) {
  ChunkRow chunk;
  chunk.series_id = series_id;
  chunk.start_ns = kDayStart + start_second * kSecond;
  chunk.end_ns = kDayStart + end_second * kSecond;
  chunk.count = static_cast<uint32_t>(end_second - start_second + 1);
  chunk.min_lsn = static_cast<uint64_t>(start_second) + 1;
  chunk.max_lsn = static_cast<uint64_t>(end_second) + 1;
  for (uint64_t lsn = chunk.min_lsn; lsn <= chunk.max_lsn; ++lsn) chunk.lsns.push_back(lsn);
  chunk.max_version = 3;
  chunk.min_ttl = 0;
  chunk.stats = "stats:" + data;
  chunk.data = std::move(data);
  return chunk;
}

// What ReadChunks returns for a chunk written without explicit fields.
inline ChunkRow AsRead(ChunkRow chunk, int64_t seq, bool with_data = true) {
  chunk.seq = seq;
  if (chunk.fields.empty()) chunk.fields = kFields;
  if (!with_data) chunk.data.clear();
  return chunk;
}

class PeriodFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status registered = RegisterEnvVfs(Env::Default(), vfs_);
    ASSERT_TRUE(registered.ok()) << registered.ToString();
    path_ = dir_.PathOf(PeriodFileStem(Period::kDay, kDayStart) + ".db");
  }

  std::unique_ptr<PeriodFile> OpenWritable(const std::string& table = "weather") {
    Result<std::unique_ptr<PeriodFile>> file =
        PeriodFile::OpenWritable(Env::Default(), vfs_, path_, table, Period::kDay, kDayStart, kCacheKib);
    EXPECT_TRUE(file.ok()) << file.status().ToString();
    return file.ok() ? std::move(file).value() : nullptr;
  }

  std::unique_ptr<PeriodFile> OpenReadOnly() {
    Result<std::unique_ptr<PeriodFile>> file =
        PeriodFile::OpenReadOnly(Env::Default(), vfs_, path_, kCacheKib);
    EXPECT_TRUE(file.ok()) << file.status().ToString();
    return file.ok() ? std::move(file).value() : nullptr;
  }

  // Start offsets (in seconds) of the chunks ReadChunks returns.
  std::vector<int64_t> OverlappingStarts(PeriodFile& file, int64_t series_id, int64_t from_second,
                                         int64_t to_second) {
    Result<std::vector<ChunkRow>> rows =
        file.ReadChunks(series_id, kDayStart + from_second * kSecond, kDayStart + to_second * kSecond, false);
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    std::vector<int64_t> starts;
    if (rows.ok()) {
      for (const ChunkRow& row : *rows) starts.push_back((row.start_ns - kDayStart) / kSecond);
    }
    return starts;
  }

  ScopedTempDir dir_{"storage-period"};
  std::string vfs_ = "cairn-test-period";
  std::string path_;
};

}  // namespace cairn::period_file_testing
