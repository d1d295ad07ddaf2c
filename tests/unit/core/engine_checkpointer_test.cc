// Checkpointer alone, over a real catalog, log and period files in a temp
// dir: a seal's mark reaches the catalog only after its file's WAL was
// checkpointed, and the checkpoint never passes a seal still only in a WAL.
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine_component_fixture.h"

namespace cairn {
namespace {

const int64_t kOldDay = PeriodStart(Period::kDay, int64_t{1'700'000'000} * 1'000'000'000);

class CheckpointerTest : public EngineComponentTest {
 protected:
  CheckpointerTest() : EngineComponentTest("checkpointer", With::kLogAndCheckpointer) {}

  // Writes one chunk holding LSNs [first, last] to the day's file (its WAL).
  void WriteSealed(int64_t start, uint64_t first, uint64_t last) {
    auto handle = files_->Get("t", Period::kDay, start, PeriodAccess::kCreate);
    ASSERT_TRUE(handle.ok()) << handle.status().ToString();
    PeriodSeries series{1, "dev", "env", 0, {{"v", FieldType::kInt64}}, {}};
    ChunkRow chunk;
    chunk.series_id = 1;
    chunk.start_ns = start;
    chunk.end_ns = start + static_cast<int64_t>(last - first);
    chunk.count = static_cast<uint32_t>(last - first + 1);
    chunk.min_lsn = first;
    chunk.max_lsn = last;
    for (uint64_t lsn = first; lsn <= last; ++lsn) chunk.lsns.push_back(lsn);
    chunk.data = "opaque";
    std::vector<ChunkRow> chunks{chunk};
    MutexLock lock(&(*handle)->mutex);
    Status written = (*handle)->file->WriteChunks({series}, chunks);
    ASSERT_TRUE(written.ok()) << written.ToString();
  }

  std::vector<PeriodSealMark> Marks() {
    auto marks = catalog_->LoadSealMarks();
    EXPECT_TRUE(marks.ok()) << marks.status().ToString();
    return marks.ok() ? *marks : std::vector<PeriodSealMark>{};
  }

  uint64_t StoredCheckpoint() {
    auto lsn = catalog_->CheckpointLsn();
    EXPECT_TRUE(lsn.ok()) << lsn.status().ToString();
    return lsn.ok() ? *lsn : 0;
  }
};

TEST_F(CheckpointerTest, SealMarkIsRecordedOnlyAfterTheWalCheckpoint) {
  WriteSealed(kOldDay, 5, 9);
  checkpointer_->RecordSeal("t", Period::kDay, kOldDay, 5, 9);
  // Still only in the WAL: the checkpoint stops below the seal, no mark.
  ASSERT_TRUE(checkpointer_->Advance(100).ok());
  EXPECT_EQ(checkpointer_->checkpoint_lsn(), 5u);
  EXPECT_EQ(StoredCheckpoint(), 5u);
  EXPECT_TRUE(Marks().empty());
  EXPECT_EQ(checkpointer_->WalPendingCount(), 1u);

  ASSERT_TRUE(checkpointer_->CheckpointWals().ok());
  EXPECT_EQ(checkpointer_->WalPendingCount(), 0u);
  EXPECT_EQ(checkpointer_->MarksPendingCount(), 1u);
  EXPECT_TRUE(Marks().empty());  // not before the next Advance

  ASSERT_TRUE(checkpointer_->Advance(100).ok());
  EXPECT_EQ(checkpointer_->checkpoint_lsn(), 100u);
  EXPECT_EQ(StoredCheckpoint(), 100u);
  std::vector<PeriodSealMark> marks = Marks();
  ASSERT_EQ(marks.size(), 1u);
  EXPECT_EQ(marks[0].table, "t");
  EXPECT_EQ(marks[0].period_start, kOldDay);
  EXPECT_EQ(marks[0].max_lsn, 9u);
  EXPECT_EQ(checkpointer_->MarksPendingCount(), 0u);
}

TEST_F(CheckpointerTest, FailedWalCheckpointKeepsTheSealAndItsLogRecords) {
  // A file that is not a database cannot be opened to checkpoint.
  const std::string path = files_->PeriodPath("t", Period::kDay, kOldDay);
  ASSERT_TRUE(Env::Default()->WriteFileAtomically(path, std::string(4096, 'x')).ok());
  checkpointer_->RecordSeal("t", Period::kDay, kOldDay, 7, 8);
  Status checkpointed = checkpointer_->CheckpointWals();
  EXPECT_FALSE(checkpointed.ok());
  EXPECT_NE(checkpointed.message().find(path), std::string::npos) << checkpointed.ToString();
  EXPECT_EQ(checkpointer_->WalPendingCount(), 1u);
  ASSERT_TRUE(checkpointer_->Advance(50).ok());
  EXPECT_EQ(checkpointer_->checkpoint_lsn(), 7u);
  EXPECT_TRUE(Marks().empty());
}

TEST_F(CheckpointerTest, SealOfAFileThatIsGoneIsForgotten) {
  checkpointer_->RecordSeal("t", Period::kDay, kOldDay, 3, 4);
  ASSERT_TRUE(checkpointer_->CheckpointWals().ok());
  EXPECT_EQ(checkpointer_->WalPendingCount(), 0u);
  EXPECT_EQ(checkpointer_->MarksPendingCount(), 0u);
  ASSERT_TRUE(checkpointer_->Advance(20).ok());
  EXPECT_EQ(checkpointer_->checkpoint_lsn(), 20u);
}

TEST_F(CheckpointerTest, CheckpointNeverMovesBackwards) {
  ASSERT_TRUE(checkpointer_->Advance(40).ok());
  EXPECT_EQ(checkpointer_->checkpoint_lsn(), 40u);
  ASSERT_TRUE(checkpointer_->Advance(10).ok());
  EXPECT_EQ(checkpointer_->checkpoint_lsn(), 40u);
  EXPECT_EQ(StoredCheckpoint(), 40u);
}

}  // namespace
}  // namespace cairn
