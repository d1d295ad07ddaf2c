#include "log/log_reader.h"

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/platform/env.h"

#include "chunk/crc32c.h"
#include "log/log_format.h"
#include "log/log_repair.h"
#include "log/log_writer.h"
#include "log_test_util.h"
#include "test_dirs.h"

namespace cairn {
namespace {

using log_format::kRecordHeaderSize;
using log_format::kSegmentHeaderSize;
class LogReaderTest : public testing::LogDirTest {};

using testing::FrameRecord;
using testing::ReplayedRecord;

TEST_F(LogReaderTest, MissingDirectoryIsAnEmptyLog) {
  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  stats.records = 99;
  ASSERT_TRUE(Replay(0, &records, &stats).ok());
  EXPECT_TRUE(records.empty());
  EXPECT_EQ(stats.records, 0u);
  EXPECT_EQ(stats.next_lsn, 1u);
  EXPECT_TRUE(stats.segments.empty());
}

TEST_F(LogReaderTest, FilesThatAreNotSegmentsAreIgnored) {
  std::vector<ReplayedRecord> written = WriteLog(3);
  WriteFile(JoinPath(LogDir(), "LOCK"), "garbage");
  WriteFile(JoinPath(LogDir(), "00000000000000000009.log.tmp"), "garbage");
  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  ASSERT_TRUE(Replay(0, &records, &stats).ok());
  EXPECT_EQ(records, written);
  EXPECT_EQ(stats.segments, std::vector<std::string>{SegmentPath(1)});
}

TEST_F(LogReaderTest, NullStatsIsAllowed) {
  WriteLog(2);
  int calls = 0;
  Status status = ReplayLog(
      env(), LogDir(), 0,
      [&](uint64_t, uint32_t, std::string_view) {
        ++calls;
        return Status::Ok();
      },
      nullptr);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(calls, 2);
}

TEST_F(LogReaderTest, CallbackErrorStopsTheReplay) {
  WriteLog(5);
  int calls = 0;
  LogReplayStats stats;
  Status status = ReplayLog(
      env(), LogDir(), 0,
      [&](uint64_t first_lsn, uint32_t, std::string_view) {
        ++calls;
        return first_lsn == 3 ? Status::Internal("head refused") : Status::Ok();
      },
      &stats);
  EXPECT_TRUE(status.Is(StatusCode::kInternal));
  EXPECT_EQ(status.message(), "head refused");
  EXPECT_EQ(calls, 3);
}

// A crash in the middle of appending the last record can leave any prefix of
// it, or its full length with some bytes never written (zeros) or stale.
TEST_F(LogReaderTest, TornLastRecordIsCutAtEveryByteOffset) {
  std::vector<ReplayedRecord> written = WriteLog(12, 160);
  const std::vector<std::string> names = Segments();
  ASSERT_GE(names.size(), 3u);
  const std::string last_path = JoinPath(LogDir(), names.back());
  const std::string intact = ReadFile(last_path);
  const std::vector<uint64_t> offsets = RecordOffsets(intact);
  ASSERT_GE(offsets.size(), 1u);
  const uint64_t last_record = offsets.back();
  const std::vector<ReplayedRecord> survivors(written.begin(), written.end() - 1);

  enum class Tail { kCut, kZeroed, kStale };
  for (Tail tail : {Tail::kCut, Tail::kZeroed, Tail::kStale}) {
    for (uint64_t torn_at = last_record + 1; torn_at < intact.size(); ++torn_at) {
      SCOPED_TRACE("tail kind " + std::to_string(static_cast<int>(tail)) + ", torn at " +
                   std::to_string(torn_at));
      std::string damaged = intact.substr(0, static_cast<size_t>(torn_at));
      if (tail == Tail::kZeroed) damaged.append(intact.size() - damaged.size(), '\0');
      if (tail == Tail::kStale) damaged.append(intact.size() - damaged.size(), '\xa5');
      WriteFile(last_path, damaged);

      std::vector<ReplayedRecord> records;
      LogReplayStats stats;
      Status status = Replay(0, &records, &stats);
      ASSERT_TRUE(status.ok()) << status.ToString();
      EXPECT_EQ(records, survivors);
      EXPECT_EQ(stats.torn_tail_bytes, damaged.size() - last_record);
      EXPECT_EQ(stats.next_lsn, written.back().first_lsn);
      EXPECT_EQ(FileSize(last_path), last_record);

      // The cut is final: a second replay finds nothing to cut.
      ASSERT_TRUE(Replay(0, &records, &stats).ok());
      EXPECT_EQ(stats.torn_tail_bytes, 0u);
      EXPECT_EQ(records, survivors);
    }
  }
}

TEST_F(LogReaderTest, ZeroExtendedTailIsCut) {
  std::vector<ReplayedRecord> written = WriteLog(4);
  const std::string path = SegmentPath(1);
  const uint64_t size = FileSize(path);
  std::string contents = ReadFile(path);
  contents.append(8192, '\0');
  WriteFile(path, contents);

  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  ASSERT_TRUE(Replay(0, &records, &stats).ok());
  EXPECT_EQ(records, written);
  EXPECT_EQ(stats.torn_tail_bytes, 8192u);
  EXPECT_EQ(FileSize(path), size);
  EXPECT_EQ(stats.next_lsn, 5u);
}

TEST_F(LogReaderTest, OversizedLengthAtTheEndIsATornTail) {
  std::vector<ReplayedRecord> written = WriteLog(4);
  const std::string path = SegmentPath(1);
  std::string contents = ReadFile(path);
  const uint64_t last = RecordOffsets(contents).back();
  contents[static_cast<size_t>(last) + 3] = '\x7f';  // length becomes ~2 GiB
  WriteFile(path, contents);

  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  ASSERT_TRUE(Replay(0, &records, &stats).ok());
  EXPECT_EQ(records, std::vector<ReplayedRecord>(written.begin(), written.end() - 1));
  EXPECT_EQ(FileSize(path), last);
}

TEST_F(LogReaderTest, FlippedByteFollowedByIntactRecordsIsCorruptionNamingSegmentAndOffset) {
  std::vector<ReplayedRecord> written = WriteLog(10);
  const std::string path = SegmentPath(1);
  const std::string intact = ReadFile(path);
  const std::vector<uint64_t> offsets = RecordOffsets(intact);
  ASSERT_EQ(offsets.size(), 10u);

  // Damage in the payload, the checksum, the LSN and the length field.
  for (uint64_t within :
       {uint64_t{kRecordHeaderSize + 2}, uint64_t{5}, uint64_t{10}, uint64_t{0}, uint64_t{2}}) {
    SCOPED_TRACE("byte " + std::to_string(within) + " of record 3");
    std::string damaged = intact;
    damaged[static_cast<size_t>(offsets[3] + within)] ^= 0x10;
    WriteFile(path, damaged);

    std::vector<ReplayedRecord> records;
    LogReplayStats stats;
    LogCorruption corruption;
    Status status = Replay(0, &records, &stats, &corruption);
    ASSERT_TRUE(status.Is(StatusCode::kCorruption)) << status.ToString();
    EXPECT_NE(status.message().find(path), std::string::npos) << status.message();
    EXPECT_NE(status.message().find("offset " + std::to_string(offsets[3])), std::string::npos)
        << status.message();
    EXPECT_EQ(corruption.segment, path);
    EXPECT_EQ(corruption.offset, offsets[3]);
    EXPECT_FALSE(corruption.reason.empty());
    EXPECT_EQ(records, std::vector<ReplayedRecord>(written.begin(), written.begin() + 3));
    EXPECT_EQ(stats.records, 3u);
    // Replay modifies nothing when it reports corruption.
    EXPECT_EQ(ReadFile(path), damaged);
  }
}

TEST_F(LogReaderTest, ZeroedHoleFollowedByIntactRecordsIsCorruption) {
  WriteLog(10);
  const std::string path = SegmentPath(1);
  std::string contents = ReadFile(path);
  const std::vector<uint64_t> offsets = RecordOffsets(contents);
  for (uint64_t i = offsets[4]; i < offsets[6]; ++i) contents[static_cast<size_t>(i)] = '\0';
  WriteFile(path, contents);

  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  LogCorruption corruption;
  Status status = Replay(0, &records, &stats, &corruption);
  ASSERT_TRUE(status.Is(StatusCode::kCorruption)) << status.ToString();
  EXPECT_EQ(corruption.offset, offsets[4]);
  EXPECT_EQ(records.size(), 4u);
}

TEST_F(LogReaderTest, DamageAtTheEndOfAnEarlierSegmentIsCorruption) {
  std::vector<ReplayedRecord> written = WriteLog(12, 160);
  const std::vector<std::string> names = Segments();
  ASSERT_GE(names.size(), 3u);
  const std::string first_path = JoinPath(LogDir(), names[0]);
  std::string contents = ReadFile(first_path);
  const uint64_t last = RecordOffsets(contents).back();
  contents.back() ^= 0x01;
  WriteFile(first_path, contents);

  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  LogCorruption corruption;
  Status status = Replay(0, &records, &stats, &corruption);
  ASSERT_TRUE(status.Is(StatusCode::kCorruption)) << status.ToString();
  EXPECT_EQ(corruption.segment, first_path);
  EXPECT_EQ(corruption.offset, last);

  // A torn-looking tail in an earlier segment is corruption too.
  WriteFile(first_path, contents.substr(0, static_cast<size_t>(last) + 5));
  status = Replay(0, &records, &stats, &corruption);
  ASSERT_TRUE(status.Is(StatusCode::kCorruption)) << status.ToString();
  EXPECT_EQ(corruption.offset, last);
}

TEST_F(LogReaderTest, MissingMiddleSegmentIsAnLsnGap) {
  WriteLog(12, 160);
  const std::vector<std::string> names = Segments();
  ASSERT_GE(names.size(), 4u);
  ASSERT_TRUE(env()->RemoveFile(JoinPath(LogDir(), names[1])).ok());

  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  LogCorruption corruption;
  Status status = Replay(0, &records, &stats, &corruption);
  ASSERT_TRUE(status.Is(StatusCode::kCorruption)) << status.ToString();
  // The segment after the hole declares where the log before it ends: the
  // one before the hole falls short of that.
  EXPECT_EQ(corruption.segment, JoinPath(LogDir(), names[0]));
  EXPECT_EQ(corruption.offset, FileSize(JoinPath(LogDir(), names[0])));
  EXPECT_NE(corruption.reason.find("LSN gap"), std::string::npos) << corruption.reason;

  // Version 1 segments say nothing about their predecessor: the later one is
  // out of sequence.
  for (size_t i = 0; i < names.size(); ++i) {
    if (i == 1) continue;
    const std::string path = JoinPath(LogDir(), names[i]);
    WriteFile(path, testing::AsVersionOne(ReadFile(path)));
  }
  status = Replay(0, &records, &stats, &corruption);
  ASSERT_TRUE(status.Is(StatusCode::kCorruption)) << status.ToString();
  EXPECT_EQ(corruption.segment, JoinPath(LogDir(), names[2]));
  EXPECT_EQ(corruption.offset, 0u);
  EXPECT_NE(corruption.reason.find("LSN gap"), std::string::npos) << corruption.reason;
}

TEST_F(LogReaderTest, LsnGapAndOverlapBetweenRecordsAreCorruption) {
  struct Case {
    const char* name;
    std::string second_record;
    const char* reason;
  };
  const std::vector<Case> cases = {
      {"gap", FrameRecord(1, 5, 1, "b"), "LSN gap"},
      {"overlap", FrameRecord(1, 3, 1, "b"), "LSN overlap"},
      {"unknown type", FrameRecord(2, 4, 1, "b"), "unknown record type 2"},
      {"count zero", FrameRecord(1, 4, 0, "b"), "count 0"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_TRUE(env()->CreateDirs(LogDir()).ok());
    const std::string first_record = FrameRecord(1, 1, 3, "a");
    // The damaged record is the last one: intact but wrong, it is never taken
    // for a torn tail.
    WriteFile(SegmentPath(1), log_format::EncodeSegmentHeader(1) + first_record + c.second_record);
    std::vector<ReplayedRecord> records;
    LogReplayStats stats;
    LogCorruption corruption;
    Status status = Replay(0, &records, &stats, &corruption);
    ASSERT_TRUE(status.Is(StatusCode::kCorruption)) << status.ToString();
    EXPECT_EQ(corruption.offset, kSegmentHeaderSize + first_record.size());
    EXPECT_NE(corruption.reason.find(c.reason), std::string::npos) << corruption.reason;
    EXPECT_EQ(records, (std::vector<ReplayedRecord>{{1, 3, "a"}}));
  }
}

TEST_F(LogReaderTest, OverlappingSegmentsAreCorruption) {
  ASSERT_TRUE(env()->CreateDirs(LogDir()).ok());
  // Version 1: the later segment starts inside the earlier one's records.
  WriteFile(SegmentPath(1), testing::EncodeSegmentHeaderV1(1) + FrameRecord(1, 1, 5, "a"));
  WriteFile(SegmentPath(4), testing::EncodeSegmentHeaderV1(4) + FrameRecord(1, 4, 1, "b"));
  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  LogCorruption corruption;
  Status status = Replay(0, &records, &stats, &corruption);
  ASSERT_TRUE(status.Is(StatusCode::kCorruption)) << status.ToString();
  EXPECT_EQ(corruption.segment, SegmentPath(4));
  EXPECT_NE(corruption.reason.find("LSN overlap"), std::string::npos) << corruption.reason;

  // Version 2: the later segment declares that the log before it ends at 4,
  // but the earlier one's record runs to 5.
  WriteFile(SegmentPath(1), log_format::EncodeSegmentHeader(1) + FrameRecord(1, 1, 5, "a"));
  WriteFile(SegmentPath(4), log_format::EncodeSegmentHeader(4) + FrameRecord(1, 4, 1, "b"));
  status = Replay(0, &records, &stats, &corruption);
  ASSERT_TRUE(status.Is(StatusCode::kCorruption)) << status.ToString();
  EXPECT_EQ(corruption.segment, SegmentPath(1));
  EXPECT_NE(corruption.reason.find("runs past LSN 4"), std::string::npos) << corruption.reason;
}

TEST_F(LogReaderTest, TornCreationOfTheLastSegmentIsRemoved) {
  for (const std::string& leftover :
       {std::string(), std::string(10, '\0'), log_format::EncodeSegmentHeader(4).substr(0, 13),
        std::string(200, '\0')}) {
    SCOPED_TRACE("leftover of " + std::to_string(leftover.size()) + " bytes");
    std::vector<ReplayedRecord> written = WriteLog(3);
    WriteFile(SegmentPath(4), leftover);
    std::vector<ReplayedRecord> records;
    LogReplayStats stats;
    Status status = Replay(0, &records, &stats);
    ASSERT_TRUE(status.ok()) << status.ToString();
    EXPECT_EQ(records, written);
    EXPECT_EQ(stats.torn_tail_bytes, leftover.size());
    EXPECT_EQ(stats.next_lsn, 4u);
    EXPECT_FALSE(env()->FileExists(SegmentPath(4)));
    ASSERT_TRUE(env()->RemoveFile(SegmentPath(1)).ok());
  }
}

TEST_F(LogReaderTest, TornCreationOfTheOnlySegmentKeepsItsLsn) {
  ASSERT_TRUE(env()->CreateDirs(LogDir()).ok());
  WriteFile(SegmentPath(500), std::string(7, '\0'));
  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  ASSERT_TRUE(Replay(0, &records, &stats).ok());
  EXPECT_EQ(stats.next_lsn, 500u);
  EXPECT_TRUE(stats.segments.empty());
}

TEST_F(LogReaderTest, DamagedHeaderOfAnEarlierSegmentIsCorruption) {
  std::vector<ReplayedRecord> written = WriteLog(12, 160);
  const std::vector<std::string> names = Segments();
  ASSERT_GE(names.size(), 3u);
  const std::string second = JoinPath(LogDir(), names[1]);
  std::string contents = ReadFile(second);
  contents[2] ^= 0x20;
  WriteFile(second, contents);

  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  LogCorruption corruption;
  ASSERT_TRUE(Replay(0, &records, &stats, &corruption).Is(StatusCode::kCorruption));
  EXPECT_EQ(corruption.segment, second);
  EXPECT_EQ(corruption.offset, 0u);
  const uint64_t second_first_lsn = *log_format::ParseSegmentFileName(names[1]);
  EXPECT_EQ(records, std::vector<ReplayedRecord>(written.begin(), written.begin() + (second_first_lsn - 1)));
}

TEST_F(LogReaderTest, DamagedHeaderOfTheLastSegmentWithRecordsIsCorruption) {
  WriteLog(3);
  const std::string path = SegmentPath(1);
  std::string contents = ReadFile(path);
  contents[0] = 'X';
  WriteFile(path, contents);
  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  LogCorruption corruption;
  Status status = Replay(0, &records, &stats, &corruption);
  ASSERT_TRUE(status.Is(StatusCode::kCorruption)) << status.ToString();
  EXPECT_EQ(corruption.offset, 0u);
  EXPECT_TRUE(env()->FileExists(path));
}

TEST_F(LogReaderTest, HeaderLsnMustMatchTheFileName) {
  WriteLog(3);
  ASSERT_TRUE(env()->RenameFile(SegmentPath(1), SegmentPath(5)).ok());
  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  LogCorruption corruption;
  Status status = Replay(0, &records, &stats, &corruption);
  ASSERT_TRUE(status.Is(StatusCode::kCorruption)) << status.ToString();
  EXPECT_EQ(corruption.segment, SegmentPath(5));
  EXPECT_EQ(corruption.offset, 0u);
}

// Records below from_lsn are checkpointed elsewhere: damage that can only
// hide such records is stepped over, and counted.
TEST_F(LogReaderTest, DamageBelowFromLsnIsSteppedOver) {
  std::vector<ReplayedRecord> written = WriteLog(10);
  const std::string path = SegmentPath(1);
  std::string contents = ReadFile(path);
  const std::vector<uint64_t> offsets = RecordOffsets(contents);
  contents[static_cast<size_t>(offsets[2] + kRecordHeaderSize + 1)] ^= 0x40;  // record of LSN 3
  WriteFile(path, contents);

  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  for (uint64_t from_lsn : {uint64_t{4}, uint64_t{6}}) {
    SCOPED_TRACE("from " + std::to_string(from_lsn));
    ASSERT_TRUE(Replay(from_lsn, &records, &stats).ok());
    EXPECT_EQ(records, std::vector<ReplayedRecord>(written.begin() + (from_lsn - 1), written.end()));
    EXPECT_EQ(stats.damaged_bytes_skipped, offsets[3] - offsets[2]);
    EXPECT_EQ(stats.next_lsn, 11u);
  }
  // From LSN 3 on, the damaged record is one replay must deliver.
  LogCorruption corruption;
  ASSERT_TRUE(Replay(3, &records, &stats, &corruption).Is(StatusCode::kCorruption));
  EXPECT_EQ(corruption.offset, offsets[2]);
  EXPECT_EQ(ReadFile(path), contents) << "replay modifies nothing";
}

TEST_F(LogReaderTest, DamageAtTheEndOfASegmentBelowFromLsnIsSteppedOver) {
  WriteLog(12, 160);
  const std::vector<std::string> names = Segments();
  ASSERT_GE(names.size(), 3u);
  const std::string first = JoinPath(LogDir(), names[0]);
  std::string contents = ReadFile(first);
  contents.back() ^= 0x01;
  WriteFile(first, contents);
  const uint64_t second_first_lsn = *log_format::ParseSegmentFileName(names[1]);

  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  // From the second segment's first LSN, the first segment is not even read.
  ASSERT_TRUE(Replay(second_first_lsn, &records, &stats).ok());
  EXPECT_EQ(stats.damaged_bytes_skipped, 0u);
  EXPECT_EQ(stats.segments.size(), names.size() - 1);
  // From one LSN earlier it is read, and its damaged last record holds that
  // LSN: replay cannot step over it.
  ASSERT_TRUE(Replay(second_first_lsn - 1, &records, &stats).Is(StatusCode::kCorruption));

  // Where the next segment declares an earlier end (LSNs 5 to 7 unused),
  // damage at the end of a segment can lie wholly below from_lsn while the
  // next segment starts above it.
  ASSERT_TRUE(env()->RemoveFile(first).ok());
  for (size_t i = 1; i < names.size(); ++i) ASSERT_TRUE(env()->RemoveFile(JoinPath(LogDir(), names[i])).ok());
  std::string damaged_last = FrameRecord(1, 3, 2, "damaged");
  damaged_last.back() ^= 0x01;
  WriteFile(SegmentPath(1), log_format::EncodeSegmentHeader(1) + FrameRecord(1, 1, 2, "a") + damaged_last);
  WriteFile(SegmentPath(8), log_format::EncodeSegmentHeader(8, 5) + FrameRecord(1, 8, 1, "b"));
  ASSERT_TRUE(Replay(6, &records, &stats).ok());
  EXPECT_EQ(records, (std::vector<ReplayedRecord>{{8, 1, "b"}}));
  EXPECT_EQ(stats.damaged_bytes_skipped, damaged_last.size());
  ASSERT_TRUE(Replay(4, &records, &stats).Is(StatusCode::kCorruption));
}

// A segment whose version 2 header says the log before it ends earlier than
// its predecessor's bytes go: what lies beyond was abandoned by a writer
// that recovered from a failed write. It is never replayed.
TEST_F(LogReaderTest, RecordsBeyondTheDeclaredEndAreNeverReplayed) {
  ASSERT_TRUE(env()->CreateDirs(LogDir()).ok());
  const std::string abandoned = FrameRecord(1, 3, 2, "failed group") + std::string(9, '\xee');
  WriteFile(SegmentPath(1), log_format::EncodeSegmentHeader(1) + FrameRecord(1, 1, 2, "a") + abandoned);
  // LSNs 3 and 4 were never acknowledged; the writer went on at 3, and then
  // once more at 6 after a restart that found LSN 5 taken elsewhere.
  WriteFile(SegmentPath(3), log_format::EncodeSegmentHeader(3, 3) + FrameRecord(1, 3, 1, "b"));
  WriteFile(SegmentPath(6), log_format::EncodeSegmentHeader(6, 4) + FrameRecord(1, 6, 1, "c"));
  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  Status status = Replay(0, &records, &stats);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(records, (std::vector<ReplayedRecord>{{1, 2, "a"}, {3, 1, "b"}, {6, 1, "c"}}));
  EXPECT_EQ(stats.abandoned_bytes, abandoned.size());
  EXPECT_EQ(stats.unused_lsns, 2u);
  EXPECT_EQ(stats.next_lsn, 7u);
  EXPECT_EQ(stats.start_lsn, 1u);
}

TEST_F(LogReaderTest, NewerFormatVersionIsNeitherReplayedNorRepaired) {
  ASSERT_TRUE(env()->CreateDirs(LogDir()).ok());
  std::string header(log_format::kSegmentMagic);
  log_format::PutFixed32(&header, log_format::kFormatVersion + 1);
  log_format::PutFixed64(&header, 1);
  log_format::PutFixed64(&header, 1);
  log_format::PutFixed32(&header, log_format::MaskCrc(Crc32c(header)));
  const std::string contents = header + "records of a format this build cannot read";
  WriteFile(SegmentPath(1), contents);

  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  Status status = Replay(0, &records, &stats);
  EXPECT_TRUE(status.Is(StatusCode::kFailedPrecondition)) << status.ToString();
  Result<LogRepairOutcome> repaired = RepairLog(env(), LogDir());
  EXPECT_TRUE(repaired.status().Is(StatusCode::kFailedPrecondition)) << repaired.status().ToString();
  EXPECT_EQ(ReadFile(SegmentPath(1)), contents);
}

}  // namespace
}  // namespace cairn
