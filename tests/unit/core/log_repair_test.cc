// The operator's log repair on real files: damage is cut out while every
// intact record after it is kept, gaps are declared, sealed segments are
// trimmed, and the report names the LSNs lost.
#include "log/log_repair.h"

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "log/log_format.h"
#include "log/log_reader.h"
#include "log/log_writer.h"
#include "log_test_util.h"

namespace cairn {
namespace {

using log_format::kRecordHeaderSize;
using testing::ReplayedRecord;

class LogRepairTest : public testing::LogDirTest {
 protected:
  // Replays the whole log; fails the test on corruption.
  std::vector<ReplayedRecord> ReplayAll(LogReplayStats* stats = nullptr) {
    std::vector<ReplayedRecord> records;
    LogReplayStats local;
    Status status = Replay(0, &records, stats ? stats : &local);
    EXPECT_TRUE(status.ok()) << status.ToString();
    return records;
  }

  LogRepairOutcome Repair(uint64_t from_lsn = 0) {
    Result<LogRepairOutcome> outcome = RepairLog(env(), LogDir(), from_lsn);
    EXPECT_TRUE(outcome.ok()) << outcome.status().ToString();
    return outcome.ok() ? *outcome : LogRepairOutcome();
  }

  // Flips one payload byte of the `index`-th record of segment `name`.
  void DamageRecord(const std::string& name, size_t index) {
    const std::string path = JoinPath(LogDir(), name);
    std::string contents = ReadFile(path);
    const std::vector<uint64_t> offsets = RecordOffsets(contents);
    ASSERT_LT(index, offsets.size());
    contents[static_cast<size_t>(offsets[index] + kRecordHeaderSize + 1)] ^= 0x08;
    WriteFile(path, contents);
  }

  static std::vector<ReplayedRecord> Without(std::vector<ReplayedRecord> records, uint64_t lsn) {
    std::erase_if(records, [&](const ReplayedRecord& r) { return r.first_lsn == lsn; });
    return records;
  }
};

TEST_F(LogRepairTest, ADamagedRecordIsCutOutAndTheIntactOnesAfterItAreKept) {
  std::vector<ReplayedRecord> written = WriteLog(30, 300);
  const std::vector<std::string> names = Segments();
  ASSERT_GE(names.size(), 4u);
  DamageRecord(names[1], 1);
  const uint64_t damaged_lsn = *log_format::ParseSegmentFileName(names[1]) + 1;

  LogRepairOutcome outcome = Repair();
  ASSERT_EQ(outcome.lost.size(), 1u);
  EXPECT_EQ(outcome.lost[0].first_lsn, damaged_lsn);
  EXPECT_EQ(outcome.lost[0].end_lsn, damaged_lsn + 1);
  EXPECT_EQ(outcome.LostLsnCount(), 1u);
  EXPECT_EQ(outcome.lsns_kept_after_damage, 30 - damaged_lsn);
  ASSERT_EQ(outcome.actions.size(), 1u);
  EXPECT_NE(outcome.actions[0].find(names[1]), std::string::npos) << outcome.actions[0];

  LogReplayStats stats;
  EXPECT_EQ(ReplayAll(&stats), Without(written, damaged_lsn));
  EXPECT_EQ(stats.unused_lsns, 1u) << "the lost LSN is declared, not a gap";
  EXPECT_EQ(stats.next_lsn, 31u);

  // The log goes on from its end, and a second repair finds nothing to do.
  Result<std::unique_ptr<LogWriter>> writer = LogWriter::Open(env(), LogDir(), 31, LogWriterOptions());
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  ASSERT_TRUE((*writer)->Append(31, 1, "after repair").ok());
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_EQ(ReplayAll().back(), (ReplayedRecord{31, 1, "after repair"}));
  LogRepairOutcome again = Repair();
  EXPECT_TRUE(again.actions.empty());
  EXPECT_TRUE(again.lost.empty());
}

TEST_F(LogRepairTest, DamageAtTheEndOfASegmentIsDeclaredInTheNextOne) {
  std::vector<ReplayedRecord> written = WriteLog(12, 160);
  const std::vector<std::string> names = Segments();
  ASSERT_GE(names.size(), 3u);
  const std::string first = JoinPath(LogDir(), names[0]);
  std::string contents = ReadFile(first);
  const uint64_t last_lsn = RecordOffsets(contents).size();
  contents.back() ^= 0x01;
  WriteFile(first, contents);

  LogRepairOutcome outcome = Repair();
  EXPECT_EQ(outcome.LostLsnCount(), 1u);
  EXPECT_EQ(ReplayAll(), Without(written, last_lsn));
}

TEST_F(LogRepairTest, AMissingSegmentIsDeclaredAndWhatFollowsIsKept) {
  std::vector<ReplayedRecord> written = WriteLog(12, 160);
  const std::vector<std::string> names = Segments();
  ASSERT_GE(names.size(), 4u);
  ASSERT_TRUE(env()->RemoveFile(JoinPath(LogDir(), names[1])).ok());
  const uint64_t missing_first = *log_format::ParseSegmentFileName(names[1]);
  const uint64_t missing_end = *log_format::ParseSegmentFileName(names[2]);

  LogRepairOutcome outcome = Repair();
  ASSERT_EQ(outcome.lost.size(), 1u);
  EXPECT_EQ(outcome.lost[0].first_lsn, missing_first);
  EXPECT_EQ(outcome.lost[0].end_lsn, missing_end);
  std::vector<ReplayedRecord> expected;
  for (const ReplayedRecord& r : written) {
    if (r.first_lsn < missing_first || r.first_lsn >= missing_end) expected.push_back(r);
  }
  EXPECT_EQ(ReplayAll(), expected);
}

// The same for a log written before format version 2 (a refused write that
// consumed LSNs left such gaps).
TEST_F(LogRepairTest, AGapBetweenVersionOneSegmentsIsDeclared) {
  ASSERT_TRUE(env()->CreateDirs(LogDir()).ok());
  WriteFile(SegmentPath(1), testing::EncodeSegmentHeaderV1(1) + testing::FrameRecord(1, 1, 3, "a"));
  WriteFile(SegmentPath(9), testing::EncodeSegmentHeaderV1(9) + testing::FrameRecord(1, 9, 2, "b"));
  LogRepairOutcome outcome = Repair();
  ASSERT_EQ(outcome.lost.size(), 1u);
  EXPECT_EQ(outcome.lost[0].first_lsn, 4u);
  EXPECT_EQ(outcome.lost[0].end_lsn, 9u);
  EXPECT_EQ(ReplayAll(), (std::vector<ReplayedRecord>{{1, 3, "a"}, {9, 2, "b"}}));
}

TEST_F(LogRepairTest, ADamagedSegmentHeaderLosesNothingWhenItsRecordsAreIntact) {
  std::vector<ReplayedRecord> written = WriteLog(12, 160);
  const std::vector<std::string> names = Segments();
  ASSERT_GE(names.size(), 3u);
  const std::string second = JoinPath(LogDir(), names[1]);
  std::string contents = ReadFile(second);
  contents[2] ^= 0x20;
  WriteFile(second, contents);

  LogRepairOutcome outcome = Repair();
  EXPECT_TRUE(outcome.lost.empty());
  EXPECT_EQ(outcome.actions.size(), 1u);
  EXPECT_EQ(ReplayAll(), written);
  EXPECT_EQ(Segments(), names);
}

TEST_F(LogRepairTest, ARunOfZeroedRecordsIsCutOutAsOneLoss) {
  std::vector<ReplayedRecord> written = WriteLog(10);
  std::string contents = ReadFile(SegmentPath(1));
  const std::vector<uint64_t> offsets = RecordOffsets(contents);
  for (uint64_t i = offsets[4]; i < offsets[6]; ++i) contents[static_cast<size_t>(i)] = '\0';
  WriteFile(SegmentPath(1), contents);
  LogRepairOutcome outcome = Repair();
  ASSERT_EQ(outcome.lost.size(), 1u);
  EXPECT_EQ(outcome.lost[0].first_lsn, 5u);
  EXPECT_EQ(outcome.lost[0].end_lsn, 7u);
  EXPECT_EQ(outcome.lsns_kept_after_damage, 4u);
  EXPECT_EQ(ReplayAll(), Without(Without(written, 5), 6));
}

// Damage among records below from_lsn (already checkpointed) costs nothing:
// segments wholly below are trimmed, and damage in the segment that straddles
// from_lsn is left for replay to step over.
TEST_F(LogRepairTest, DamageBelowFromLsnLosesNothingAndSealedSegmentsAreTrimmed) {
  std::vector<ReplayedRecord> written = WriteLog(30, 300);
  const std::vector<std::string> names = Segments();
  ASSERT_GE(names.size(), 4u);
  DamageRecord(names[0], 0);
  DamageRecord(names[1], 0);
  const uint64_t from_lsn = *log_format::ParseSegmentFileName(names[1]) + 2;

  LogRepairOutcome outcome = Repair(from_lsn);
  EXPECT_TRUE(outcome.lost.empty());
  EXPECT_TRUE(outcome.actions.empty());
  EXPECT_EQ(outcome.segments_trimmed, 1u);
  EXPECT_EQ(Segments(), std::vector<std::string>(names.begin() + 1, names.end()));
  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  ASSERT_TRUE(Replay(from_lsn, &records, &stats).ok());
  EXPECT_EQ(records, std::vector<ReplayedRecord>(written.begin() + (from_lsn - 1), written.end()));
}

TEST_F(LogRepairTest, ATornTailIsReportedAndCut) {
  std::vector<ReplayedRecord> written = WriteLog(3);
  WriteFile(SegmentPath(1), ReadFile(SegmentPath(1)) + "torn");
  LogRepairOutcome outcome = Repair();
  EXPECT_EQ(outcome.torn_tail_bytes, 4u);
  EXPECT_TRUE(outcome.lost.empty());
  EXPECT_EQ(ReplayAll(), written);
}

// A repair interrupted after it wrote the segment holding the intact records
// but before it cut the damage leaves a log that replays: the new segment
// already declares where the log before it ends. A second repair finds
// nothing left to mend.
TEST_F(LogRepairTest, AnInterruptedRepairLeavesALogThatReplays) {
  std::vector<ReplayedRecord> written = WriteLog(10);
  DamageRecord(log_format::SegmentFileName(1), 4);
  const std::string damaged = ReadFile(SegmentPath(1));
  Repair();
  // Put the damaged bytes back as they were before the cut.
  WriteFile(SegmentPath(1), damaged);
  LogReplayStats stats;
  EXPECT_EQ(ReplayAll(&stats), Without(written, 5));
  EXPECT_GT(stats.abandoned_bytes, 0u);
  LogRepairOutcome again = Repair();
  EXPECT_TRUE(again.lost.empty());
  EXPECT_EQ(ReplayAll(), Without(written, 5));
}

}  // namespace
}  // namespace cairn
