// Sealer alone, over real period files, catalog and log in a temp dir: head
// copies go into the period file of their timestamps, the Checkpointer hears
// of each file, and periods past retention are not written.
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine_component_fixture.h"
#include "engine/sealing/chunk_rows.h"
#include "engine/sealing/sealer.h"

namespace cairn {
namespace {

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kDay = 86'400 * kSecond;
const int64_t kOldDay = PeriodStart(Period::kDay, int64_t{1'700'000'000} * kSecond);

class SealerTest : public EngineComponentTest {
 protected:
  SealerTest() : EngineComponentTest("sealer", With::kLogAndCheckpointer) {}

  // A job of series `id` with one reading per timestamp, LSNs from `lsn`.
  static SealJob Job(int64_t id, const std::vector<int64_t>& timestamps, uint64_t lsn) {
    SealJob job;
    job.table = "t";
    job.period = Period::kDay;
    job.retention_seconds = 7 * 86'400;
    job.table_options = "{}";
    job.meta = PeriodSeries{id, "dev" + std::to_string(id), "env", 0, {{"v", FieldType::kInt64}}, {}};
    for (int64_t ts : timestamps) {
      ChunkRecord record;
      record.timestamp = ts;
      record.values = {Value{int64_t{ts / kSecond}}};
      job.head.Upsert(record, lsn++, job.meta.fields);
    }
    return job;
  }

  // The readings of series `id` in the day file at `start`.
  std::vector<int64_t> StoredTimestamps(int64_t start, int64_t id) {
    auto handle = files_->Get("t", Period::kDay, start, PeriodAccess::kRead);
    EXPECT_TRUE(handle.ok()) << handle.status().ToString();
    if (!handle.ok()) return {};
    MutexLock lock(&(*handle)->mutex);
    auto chunks = (*handle)->file->ReadChunks(id, INT64_MIN, INT64_MAX, /*with_data=*/true);
    EXPECT_TRUE(chunks.ok()) << chunks.status().ToString();
    std::vector<ChunkField> schema;
    NewestRecords merged;
    for (const ChunkRow& chunk : *chunks) EXPECT_TRUE(MergeChunkRecords(chunk, &schema, &merged).ok());
    std::vector<int64_t> out;
    for (const auto& [ts, record] : merged) out.push_back(ts);
    return out;
  }
};

TEST_F(SealerTest, RecordsGoToTheFileOfTheirPeriod) {
  Sealer sealer(files_.get(), checkpointer_.get(), /*max_chunk_records=*/2);
  const int64_t a = kOldDay + 10 * kSecond, b = kOldDay + 20 * kSecond, c = kOldDay + 30 * kSecond;
  const int64_t next = kOldDay + kDay + 5 * kSecond;
  std::vector<SealJob> jobs{Job(1, {a, b, c, next}, 1), Job(2, {b}, 10)};
  auto outcome = sealer.Seal(jobs, std::nullopt);
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  ASSERT_TRUE(outcome->status.ok()) << outcome->status.ToString();
  // Series 1's first day in two chunks of at most 2, its next day in one,
  // series 2 in one.
  EXPECT_EQ(outcome->chunks_written, 4u);
  EXPECT_EQ(outcome->written_periods.size(), 2u);
  size_t sealed_entries = 0;
  for (const SealOutcome::Range& range : outcome->sealed) sealed_entries += range.end - range.begin;
  EXPECT_EQ(sealed_entries, 5u);

  EXPECT_EQ(StoredTimestamps(kOldDay, 1), (std::vector<int64_t>{a, b, c}));
  EXPECT_EQ(StoredTimestamps(kOldDay + kDay, 1), (std::vector<int64_t>{next}));
  EXPECT_EQ(StoredTimestamps(kOldDay, 2), (std::vector<int64_t>{b}));
  // Both files were checkpointed; their marks wait for the next Advance.
  EXPECT_EQ(checkpointer_->WalPendingCount(), 0u);
  EXPECT_EQ(checkpointer_->MarksPendingCount(), 2u);
}

TEST_F(SealerTest, PeriodsPastRetentionAreDroppedNotWritten) {
  Sealer sealer(files_.get(), checkpointer_.get(), 1024);
  std::vector<SealJob> jobs{Job(1, {kOldDay + kSecond}, 1)};
  jobs[0].retention_seconds = 86'400;
  // Two days later, a day's retention has passed for the whole period.
  auto outcome = sealer.Seal(jobs, kOldDay + 2 * kDay);
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_TRUE(outcome->status.ok());
  EXPECT_EQ(outcome->chunks_written, 0u);
  EXPECT_TRUE(outcome->written_periods.empty());
  ASSERT_EQ(outcome->sealed.size(), 1u);
  EXPECT_EQ(outcome->sealed[0].end - outcome->sealed[0].begin, 1u);
  EXPECT_FALSE(Env::Default()->FileExists(files_->PeriodPath("t", Period::kDay, kOldDay)));

  // Without a deletion clock nothing counts as past retention.
  outcome = sealer.Seal(jobs, std::nullopt);
  ASSERT_TRUE(outcome.ok());
  EXPECT_EQ(outcome->chunks_written, 1u);
  EXPECT_TRUE(Env::Default()->FileExists(files_->PeriodPath("t", Period::kDay, kOldDay)));
}

TEST_F(SealerTest, AFileThatCannotBeWrittenIsReportedAndNotSealed) {
  Sealer sealer(files_.get(), checkpointer_.get(), 1024);
  const std::string path = files_->PeriodPath("t", Period::kDay, kOldDay);
  ASSERT_TRUE(Env::Default()->WriteFileAtomically(path, std::string(4096, 'x')).ok());
  std::vector<SealJob> jobs{Job(1, {kOldDay + kSecond}, 1), Job(2, {kOldDay + kDay + kSecond}, 2)};
  auto outcome = sealer.Seal(jobs, std::nullopt);
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_FALSE(outcome->status.ok());
  // Only the other day's file took its records.
  ASSERT_EQ(outcome->sealed.size(), 1u);
  EXPECT_EQ(outcome->sealed[0].job, 1u);
  EXPECT_EQ(outcome->chunks_written, 1u);
}

}  // namespace
}  // namespace cairn
