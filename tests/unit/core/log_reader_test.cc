#include "log/log_reader.h"

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/platform/env.h"

#include "chunk/crc32c.h"
#include "log/log_format.h"
#include "log/log_writer.h"
#include "test_dirs.h"

namespace cairn {
namespace {

using log_format::kRecordHeaderSize;
using log_format::kSegmentHeaderSize;

struct ReplayedRecord {
  uint64_t first_lsn;
  uint32_t count;
  std::string payload;
  bool operator==(const ReplayedRecord&) const = default;
};

std::string PayloadFor(uint64_t lsn) {
  return "payload-" + std::to_string(lsn) + std::string(static_cast<size_t>(10 + lsn % 23), 'p');
}

// A record framed with any type and count, with a valid checksum: what a
// future or buggy writer could leave.
std::string FrameRecord(uint8_t type, uint64_t first_lsn, uint32_t count, std::string_view payload) {
  std::string framed;
  log_format::EncodeRecord(&framed, first_lsn, count, payload);
  framed[8] = static_cast<char>(type);
  std::string crc;
  log_format::PutFixed32(&crc, log_format::MaskCrc(Crc32c(std::string_view(framed).substr(8))));
  framed.replace(4, 4, crc);
  return framed;
}

class LogReaderTest : public ::testing::Test {
 protected:
  Env* env() { return Env::Default(); }
  std::string LogDir() const { return temp_.PathOf("log"); }
  std::string SegmentPath(uint64_t first_lsn) const {
    return JoinPath(LogDir(), log_format::SegmentFileName(first_lsn));
  }

  // Writes `records` records of one LSN each starting at LSN 1, and returns
  // them. Records are 21 + 19..41 bytes; `segment_bytes` decides how many
  // share a segment.
  std::vector<ReplayedRecord> WriteLog(int records, uint64_t segment_bytes = 64ull << 20) {
    LogWriterOptions options;
    options.segment_bytes = segment_bytes;
    Result<std::unique_ptr<LogWriter>> writer = LogWriter::Open(env(), LogDir(), 1, options);
    EXPECT_TRUE(writer.ok()) << writer.status().ToString();
    std::vector<ReplayedRecord> written;
    if (!writer.ok()) return written;
    for (uint64_t lsn = 1; lsn <= static_cast<uint64_t>(records); ++lsn) {
      std::string payload = PayloadFor(lsn);
      EXPECT_TRUE((*writer)->Append(lsn, 1, payload).ok());
      written.push_back({lsn, 1, payload});
    }
    EXPECT_TRUE((*writer)->Close().ok());
    return written;
  }

  Status Replay(uint64_t from_lsn, std::vector<ReplayedRecord>* records, LogReplayStats* stats,
                LogCorruption* corruption = nullptr) {
    records->clear();
    return ReplayLog(
        env(), LogDir(), from_lsn,
        [&](uint64_t first_lsn, uint32_t count, std::string_view payload) {
          records->push_back({first_lsn, count, std::string(payload)});
          return Status::Ok();
        },
        stats, corruption);
  }

  std::string ReadFile(const std::string& path) {
    Result<std::string> contents = env()->ReadFileToString(path);
    EXPECT_TRUE(contents.ok()) << contents.status().ToString();
    return contents.ok() ? *contents : std::string();
  }

  void WriteFile(const std::string& path, std::string_view contents) {
    Result<std::unique_ptr<File>> file = env()->OpenFile(path, OpenMode::kCreateTruncate);
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    ASSERT_TRUE((*file)->Append(contents).ok());
  }

  uint64_t FileSize(const std::string& path) {
    Result<uint64_t> size = env()->FileSize(path);
    EXPECT_TRUE(size.ok()) << size.status().ToString();
    return size.ok() ? *size : 0;
  }

  // Offsets of the records of a segment written by WriteLog, walked by their
  // length fields.
  std::vector<uint64_t> RecordOffsets(const std::string& contents) {
    std::vector<uint64_t> offsets;
    uint64_t offset = kSegmentHeaderSize;
    while (offset + kRecordHeaderSize <= contents.size()) {
      offsets.push_back(offset);
      offset += kRecordHeaderSize + log_format::DecodeFixed32(contents.data() + offset);
    }
    return offsets;
  }

  std::vector<std::string> Segments() {
    Result<std::vector<std::string>> names = env()->ListDir(LogDir());
    EXPECT_TRUE(names.ok());
    std::vector<std::string> segments;
    for (const std::string& name : *names) {
      if (log_format::ParseSegmentFileName(name)) segments.push_back(name);
    }
    return segments;
  }

  ScopedTempDir temp_{"cairn-log-reader"};
};

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

TEST_F(LogReaderTest, RepairCutsAtTheDamageAndReplayThenSucceeds) {
  std::vector<ReplayedRecord> written = WriteLog(30, 300);
  const std::vector<std::string> names = Segments();
  ASSERT_GE(names.size(), 4u);
  // Damage the second record of the second segment.
  const std::string damaged_path = JoinPath(LogDir(), names[1]);
  std::string contents = ReadFile(damaged_path);
  const std::vector<uint64_t> offsets = RecordOffsets(contents);
  ASSERT_GE(offsets.size(), 3u);
  contents[static_cast<size_t>(offsets[1] + kRecordHeaderSize)] ^= 0x01;
  WriteFile(damaged_path, contents);

  uint64_t expected_cut = contents.size() - offsets[1];
  for (size_t i = 2; i < names.size(); ++i) expected_cut += FileSize(JoinPath(LogDir(), names[i]));

  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  LogCorruption corruption;
  ASSERT_TRUE(Replay(0, &records, &stats, &corruption).Is(StatusCode::kCorruption));
  const size_t survivors = records.size();
  ASSERT_GT(survivors, 1u);

  Result<uint64_t> cut = RepairLog(env(), LogDir());
  ASSERT_TRUE(cut.ok()) << cut.status().ToString();
  EXPECT_EQ(*cut, expected_cut);
  EXPECT_EQ(Segments(), (std::vector<std::string>{names[0], names[1]}));

  Status status = Replay(0, &records, &stats);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(records, std::vector<ReplayedRecord>(written.begin(), written.begin() + survivors));
  EXPECT_EQ(stats.next_lsn, survivors + 1);

  // The log continues from the repaired end.
  Result<std::unique_ptr<LogWriter>> writer =
      LogWriter::Open(env(), LogDir(), stats.next_lsn, LogWriterOptions());
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  ASSERT_TRUE((*writer)->Append(stats.next_lsn, 1, "after repair").ok());
  ASSERT_TRUE((*writer)->Close().ok());
  ASSERT_TRUE(Replay(0, &records, &stats).ok());
  EXPECT_EQ(records.size(), survivors + 1);
  EXPECT_EQ(records.back().payload, "after repair");

  // Repairing an intact log cuts nothing.
  Result<uint64_t> again = RepairLog(env(), LogDir());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 0u);
}

TEST_F(LogReaderTest, RepairReportsATornTailAsCut) {
  WriteLog(3);
  const std::string path = SegmentPath(1);
  std::string contents = ReadFile(path);
  contents += "torn";
  WriteFile(path, contents);
  Result<uint64_t> cut = RepairLog(env(), LogDir());
  ASSERT_TRUE(cut.ok()) << cut.status().ToString();
  EXPECT_EQ(*cut, 4u);
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
  EXPECT_EQ(corruption.segment, JoinPath(LogDir(), names[2]));
  EXPECT_EQ(corruption.offset, 0u);
  EXPECT_NE(corruption.reason.find("LSN gap"), std::string::npos) << corruption.reason;

  ASSERT_TRUE(RepairLog(env(), LogDir()).ok());
  EXPECT_EQ(Segments(), std::vector<std::string>{names[0]});
  ASSERT_TRUE(Replay(0, &records, &stats).ok());
  EXPECT_EQ(stats.next_lsn, *log_format::ParseSegmentFileName(names[1]));
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
  WriteFile(SegmentPath(1), log_format::EncodeSegmentHeader(1) + FrameRecord(1, 1, 5, "a"));
  WriteFile(SegmentPath(4), log_format::EncodeSegmentHeader(4) + FrameRecord(1, 4, 1, "b"));
  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  LogCorruption corruption;
  Status status = Replay(0, &records, &stats, &corruption);
  ASSERT_TRUE(status.Is(StatusCode::kCorruption)) << status.ToString();
  EXPECT_EQ(corruption.segment, SegmentPath(4));
  EXPECT_NE(corruption.reason.find("LSN overlap"), std::string::npos) << corruption.reason;
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

TEST_F(LogReaderTest, DamagedHeaderOfAnEarlierSegmentIsCorruptionAndRepairKeepsTheLsn) {
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

  ASSERT_TRUE(RepairLog(env(), LogDir()).ok());
  Status status = Replay(0, &records, &stats);
  ASSERT_TRUE(status.ok()) << status.ToString();
  const uint64_t second_first_lsn = *log_format::ParseSegmentFileName(names[1]);
  EXPECT_EQ(stats.next_lsn, second_first_lsn);
  EXPECT_EQ(records, std::vector<ReplayedRecord>(written.begin(), written.begin() + (second_first_lsn - 1)));
  EXPECT_EQ(Segments(), (std::vector<std::string>{names[0], names[1]}));
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

TEST_F(LogReaderTest, NewerFormatVersionIsNeitherReplayedNorRepaired) {
  ASSERT_TRUE(env()->CreateDirs(LogDir()).ok());
  std::string header(log_format::kSegmentMagic);
  log_format::PutFixed32(&header, 2);
  log_format::PutFixed64(&header, 1);
  log_format::PutFixed32(&header, log_format::MaskCrc(Crc32c(header)));
  const std::string contents = header + "records of a format this build cannot read";
  WriteFile(SegmentPath(1), contents);

  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  Status status = Replay(0, &records, &stats);
  EXPECT_TRUE(status.Is(StatusCode::kFailedPrecondition)) << status.ToString();
  Result<uint64_t> repaired = RepairLog(env(), LogDir());
  EXPECT_TRUE(repaired.status().Is(StatusCode::kFailedPrecondition)) << repaired.status().ToString();
  EXPECT_EQ(ReadFile(SegmentPath(1)), contents);
}

}  // namespace
}  // namespace cairn
