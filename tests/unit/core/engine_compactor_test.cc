// Compactor alone, on a real period file and catalog in a temp dir: chunks
// of a series merge into one, the highest version of a timestamp wins,
// expired readings go, the seal mark is forgotten, and a second run does
// nothing.
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine_component_fixture.h"
#include "engine/sealing/chunk_rows.h"
#include "engine/sealing/compactor.h"

namespace cairn {
namespace {

constexpr int64_t kSecond = 1'000'000'000;
const int64_t kOldDay = PeriodStart(Period::kDay, int64_t{1'700'000'000} * kSecond);
const std::vector<ChunkField> kSchema = {{"v", FieldType::kInt64}};

ChunkRecord Reading(int64_t second, int64_t value, uint64_t version = 0, int64_t ttl = 0) {
  ChunkRecord r;
  r.timestamp = kOldDay + second * kSecond;
  r.version = version;
  r.ttl = ttl;
  r.values = {Value{value}};
  return r;
}

class CompactorTest : public EngineComponentTest {
 protected:
  CompactorTest() : EngineComponentTest("compactor", With::kFilesAndCatalog) {}

  // Writes `records` (ascending) of series 1 as one chunk, LSNs from `lsn`.
  void WriteChunk(std::vector<ChunkRecord> records, uint64_t lsn) {
    std::vector<uint64_t> lsns;
    for (size_t i = 0; i < records.size(); ++i) lsns.push_back(lsn + i);
    std::vector<ChunkRow> chunks;
    ASSERT_TRUE(EncodeSeriesChunks(1, kSchema, records, lsns, 1024, &chunks).ok());
    auto handle = files_->Get("t", Period::kDay, kOldDay, PeriodAccess::kCreate);
    ASSERT_TRUE(handle.ok()) << handle.status().ToString();
    MutexLock lock(&(*handle)->mutex);
    ASSERT_TRUE((*handle)->file->WriteChunks({PeriodSeries{1, "dev", "env", 0, kSchema, {}}}, chunks).ok());
  }

  std::vector<ChunkRow> Chunks() {
    auto handle = files_->Get("t", Period::kDay, kOldDay, PeriodAccess::kRead);
    EXPECT_TRUE(handle.ok()) << handle.status().ToString();
    if (!handle.ok()) return {};
    MutexLock lock(&(*handle)->mutex);
    auto chunks = (*handle)->file->ReadChunks(1, INT64_MIN, INT64_MAX, /*with_data=*/true);
    EXPECT_TRUE(chunks.ok()) << chunks.status().ToString();
    return chunks.ok() ? *chunks : std::vector<ChunkRow>{};
  }
};

TEST_F(CompactorTest, MergesChunksKeepsNewestVersionsAndDropsExpired) {
  const int64_t expiry_now = kOldDay + 1000 * kSecond;
  const int64_t expired_ttl = expiry_now / kSecond - 1;
  WriteChunk({Reading(1, 10), Reading(2, 20, /*version=*/1), Reading(3, 30, 0, expired_ttl)}, 1);
  WriteChunk({Reading(2, 21, /*version=*/2), Reading(4, 40, 1), Reading(5, 50, 0, expiry_now / kSecond + 60)}, 4);
  ASSERT_TRUE(catalog_->SetCheckpoint(7, {PeriodSealMark{"t", kOldDay, 6}}).ok());
  ASSERT_EQ(Chunks().size(), 2u);

  Compactor compactor(files_.get(), catalog_.get());
  Status compacted = compactor.CompactPeriod("t", Period::kDay, kOldDay, expiry_now);
  ASSERT_TRUE(compacted.ok()) << compacted.ToString();

  std::vector<ChunkRow> chunks = Chunks();
  ASSERT_EQ(chunks.size(), 1u);
  std::vector<ChunkField> schema;
  NewestRecords merged;
  ASSERT_TRUE(MergeChunkRecords(chunks[0], &schema, &merged).ok());
  std::vector<std::pair<int64_t, int64_t>> seconds_and_values;
  for (const auto& [ts, entry] : merged)
    seconds_and_values.push_back({(ts - kOldDay) / kSecond, std::get<int64_t>(entry.first.values[0])});
  EXPECT_EQ(seconds_and_values, (std::vector<std::pair<int64_t, int64_t>>{{1, 10}, {2, 21}, {4, 40}, {5, 50}}));
  EXPECT_EQ(merged.at(kOldDay + 2 * kSecond).second, 4u);  // the winner keeps its LSN
  auto marks = catalog_->LoadSealMarks();
  ASSERT_TRUE(marks.ok());
  EXPECT_TRUE(marks->empty());

  // Compacted once: a second run leaves the file as it is.
  const int64_t later = expiry_now + 100'000 * kSecond;
  ASSERT_TRUE(compactor.CompactPeriod("t", Period::kDay, kOldDay, later).ok());
  ASSERT_EQ(Chunks().size(), 1u);
  EXPECT_EQ(Chunks()[0].count, 4u);
}

TEST_F(CompactorTest, MissingFileIsNotFound) {
  Compactor compactor(files_.get(), catalog_.get());
  Status compacted = compactor.CompactPeriod("t", Period::kDay, kOldDay, 0);
  EXPECT_TRUE(compacted.Is(StatusCode::kNotFound)) << compacted.ToString();
}

}  // namespace
}  // namespace cairn
