#include "log/log_writer.h"

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/platform/env.h"

#include "log/log_format.h"
#include "log/log_reader.h"
#include "test_dirs.h"

namespace cairn {
namespace {

struct ReplayedRecord {
  uint64_t first_lsn;
  uint32_t count;
  std::string payload;
  bool operator==(const ReplayedRecord&) const = default;
};

// Deterministic payloads of varied sizes, some empty.
std::string PayloadFor(uint64_t lsn) {
  std::string payload = "batch@" + std::to_string(lsn) + ":";
  payload.append(static_cast<size_t>((lsn * 37) % 90), static_cast<char>('a' + lsn % 26));
  if (lsn % 11 == 0) payload.clear();
  return payload;
}

Status ReplayAll(Env* env, const std::string& dir, uint64_t from_lsn, std::vector<ReplayedRecord>* records,
                 LogReplayStats* stats) {
  return ReplayLog(
      env, dir, from_lsn,
      [&](uint64_t first_lsn, uint32_t count, std::string_view payload) {
        records->push_back({first_lsn, count, std::string(payload)});
        return Status::Ok();
      },
      stats);
}

std::vector<std::string> SegmentNames(Env* env, const std::string& dir) {
  Result<std::vector<std::string>> names = env->ListDir(dir);
  EXPECT_TRUE(names.ok()) << names.status().ToString();
  std::vector<std::string> segments;
  if (!names.ok()) return segments;
  for (const std::string& name : *names) {
    if (log_format::ParseSegmentFileName(name)) segments.push_back(name);
  }
  return segments;
}

class LogWriterTest : public ::testing::Test {
 protected:
  Env* env() { return Env::Default(); }
  std::string LogDir() const { return temp_.PathOf("log"); }

  std::unique_ptr<LogWriter> OpenWriter(uint64_t next_lsn, uint64_t segment_bytes = 64ull << 20) {
    LogWriterOptions options;
    options.segment_bytes = segment_bytes;
    Result<std::unique_ptr<LogWriter>> writer = LogWriter::Open(env(), LogDir(), next_lsn, options);
    EXPECT_TRUE(writer.ok()) << writer.status().ToString();
    return writer.ok() ? std::move(writer).value() : nullptr;
  }

  // Appends records covering [first, first + count_per_record * records),
  // each with PayloadFor(its first LSN); returns what was appended.
  std::vector<ReplayedRecord> AppendRecords(LogWriter* writer, uint64_t first, int records,
                                            uint32_t count_per_record = 1) {
    std::vector<ReplayedRecord> appended;
    uint64_t lsn = first;
    for (int i = 0; i < records; ++i) {
      std::string payload = PayloadFor(lsn);
      Status status = writer->Append(lsn, count_per_record, payload);
      EXPECT_TRUE(status.ok()) << status.ToString();
      appended.push_back({lsn, count_per_record, payload});
      lsn += count_per_record;
    }
    return appended;
  }

  ScopedTempDir temp_{"cairn-log-writer"};
};

TEST_F(LogWriterTest, OpenCreatesTheDirectoryAndAHeaderOnlySegment) {
  ASSERT_FALSE(env()->FileExists(LogDir()));
  std::unique_ptr<LogWriter> writer = OpenWriter(7);
  ASSERT_NE(writer, nullptr);
  EXPECT_EQ(SegmentNames(env(), LogDir()), std::vector<std::string>{"00000000000000000007.log"});
  Result<uint64_t> size = env()->FileSize(JoinPath(LogDir(), "00000000000000000007.log"));
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(*size, log_format::kSegmentHeaderSize);
  EXPECT_EQ(writer->NextLsn(), 7u);
  EXPECT_EQ(writer->SyncedThroughLsn(), 7u);
  EXPECT_EQ(writer->BytesOnDisk(), log_format::kSegmentHeaderSize);
  ASSERT_TRUE(writer->Close().ok());
}

TEST_F(LogWriterTest, OpenRejectsLsnZeroAndEmptySegments) {
  Result<std::unique_ptr<LogWriter>> zero_lsn = LogWriter::Open(env(), LogDir(), 0, LogWriterOptions());
  EXPECT_TRUE(zero_lsn.status().Is(StatusCode::kInvalidArgument)) << zero_lsn.status().ToString();
  LogWriterOptions options;
  options.segment_bytes = 0;
  Result<std::unique_ptr<LogWriter>> zero_size = LogWriter::Open(env(), LogDir(), 1, options);
  EXPECT_TRUE(zero_size.status().Is(StatusCode::kInvalidArgument)) << zero_size.status().ToString();
}

TEST_F(LogWriterTest, AppendEnforcesLsnContinuityAndKeepsTheWriterUsable) {
  std::unique_ptr<LogWriter> writer = OpenWriter(1);
  ASSERT_NE(writer, nullptr);
  EXPECT_TRUE(writer->Append(2, 1, "skips one").Is(StatusCode::kInvalidArgument));
  EXPECT_TRUE(writer->Append(0, 1, "goes back").Is(StatusCode::kInvalidArgument));
  EXPECT_TRUE(writer->Append(1, 0, "covers nothing").Is(StatusCode::kInvalidArgument));
  ASSERT_TRUE(writer->Append(1, 3, "first").ok());
  EXPECT_EQ(writer->NextLsn(), 4u);
  EXPECT_TRUE(writer->Append(3, 1, "overlaps").Is(StatusCode::kInvalidArgument));
  EXPECT_TRUE(writer->Append(5, 1, "leaves a gap").Is(StatusCode::kInvalidArgument));
  ASSERT_TRUE(writer->Append(4, 2, "second").ok());
  EXPECT_EQ(writer->NextLsn(), 6u);
  ASSERT_TRUE(writer->Close().ok());

  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  ASSERT_TRUE(ReplayAll(env(), LogDir(), 0, &records, &stats).ok());
  EXPECT_EQ(records, (std::vector<ReplayedRecord>{{1, 3, "first"}, {4, 2, "second"}}));
  EXPECT_EQ(stats.next_lsn, 6u);
}

TEST_F(LogWriterTest, AppendRejectsAnLsnRangeThatOverflows) {
  std::unique_ptr<LogWriter> writer = OpenWriter(UINT64_MAX - 1);
  ASSERT_NE(writer, nullptr);
  EXPECT_TRUE(writer->Append(UINT64_MAX - 1, 2, "x").Is(StatusCode::kInvalidArgument));
  ASSERT_TRUE(writer->Append(UINT64_MAX - 1, 1, "last").ok());
  EXPECT_EQ(writer->NextLsn(), UINT64_MAX);
  EXPECT_TRUE(writer->Append(UINT64_MAX, 1, "x").Is(StatusCode::kInvalidArgument));
  ASSERT_TRUE(writer->Close().ok());
}

TEST_F(LogWriterTest, AppendRejectsAPayloadOverTheLimit) {
  std::unique_ptr<LogWriter> writer = OpenWriter(1);
  ASSERT_NE(writer, nullptr);
  const std::string too_large(static_cast<size_t>(log_format::kMaxPayloadBytes) + 1, 'x');
  Status status = writer->Append(1, 1, too_large);
  EXPECT_TRUE(status.Is(StatusCode::kInvalidArgument)) << status.ToString();
  EXPECT_EQ(writer->NextLsn(), 1u);
  EXPECT_TRUE(writer->Append(1, 1, "fits").ok());
  ASSERT_TRUE(writer->Close().ok());
}

TEST_F(LogWriterTest, RoundTripAcrossManySmallSegments) {
  constexpr uint64_t kSegmentBytes = 256;
  std::unique_ptr<LogWriter> writer = OpenWriter(1, kSegmentBytes);
  ASSERT_NE(writer, nullptr);
  std::vector<ReplayedRecord> appended = AppendRecords(writer.get(), 1, 60, 2);
  // A record larger than a segment goes alone into a fresh one.
  const std::string large(600, 'L');
  ASSERT_TRUE(writer->Append(121, 5, large).ok());
  appended.push_back({121, 5, large});
  std::vector<ReplayedRecord> tail = AppendRecords(writer.get(), 126, 5);
  appended.insert(appended.end(), tail.begin(), tail.end());
  const uint64_t bytes_on_disk = writer->BytesOnDisk();
  ASSERT_TRUE(writer->Close().ok());

  std::vector<std::string> names = SegmentNames(env(), LogDir());
  ASSERT_GT(names.size(), 10u);
  uint64_t total = 0;
  for (const std::string& name : names) {
    Result<uint64_t> size = env()->FileSize(JoinPath(LogDir(), name));
    ASSERT_TRUE(size.ok());
    total += *size;
    if (*size > kSegmentBytes) {
      EXPECT_EQ(*size, log_format::kSegmentHeaderSize + log_format::kRecordHeaderSize + large.size()) << name;
    }
  }
  EXPECT_EQ(total, bytes_on_disk);

  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  Status status = ReplayAll(env(), LogDir(), 0, &records, &stats);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(records, appended);
  EXPECT_EQ(stats.records, appended.size());
  EXPECT_EQ(stats.next_lsn, 131u);
  EXPECT_EQ(stats.torn_tail_bytes, 0u);
  EXPECT_EQ(stats.segments.size(), names.size());
  uint64_t payload_bytes = 0;
  for (const ReplayedRecord& record : appended) payload_bytes += record.payload.size();
  EXPECT_EQ(stats.payload_bytes, payload_bytes);
}

TEST_F(LogWriterTest, ReplayFromLsnSkipsRecordsEntirelyBelowIt) {
  std::unique_ptr<LogWriter> writer = OpenWriter(1, 200);
  ASSERT_NE(writer, nullptr);
  // Records cover [1,4) [4,7) [7,10) ... [28,31).
  std::vector<ReplayedRecord> appended = AppendRecords(writer.get(), 1, 10, 3);
  ASSERT_TRUE(writer->Close().ok());

  for (uint64_t from_lsn : {uint64_t{0}, uint64_t{1}, uint64_t{4}, uint64_t{5}, uint64_t{6}, uint64_t{7},
                            uint64_t{30}, uint64_t{31}, uint64_t{1000}}) {
    std::vector<ReplayedRecord> expected;
    for (const ReplayedRecord& record : appended) {
      if (record.first_lsn + record.count > from_lsn) expected.push_back(record);
    }
    std::vector<ReplayedRecord> records;
    LogReplayStats stats;
    ASSERT_TRUE(ReplayAll(env(), LogDir(), from_lsn, &records, &stats).ok());
    EXPECT_EQ(records, expected) << "from_lsn " << from_lsn;
    // Records below from_lsn in a segment that also holds later ones are
    // read (and checked); whole segments below it are not.
    EXPECT_GE(stats.records, expected.size());
    if (from_lsn <= 1) {
      EXPECT_EQ(stats.records, appended.size());
    }
    EXPECT_EQ(stats.next_lsn, 31u);
  }
}

TEST_F(LogWriterTest, SyncedThroughLsnFollowsSyncsAndRollovers) {
  std::unique_ptr<LogWriter> writer = OpenWriter(10, 140);
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer->Append(10, 5, std::string(30, 'a')).ok());
  EXPECT_EQ(writer->SyncedThroughLsn(), 10u);
  ASSERT_TRUE(writer->Sync().ok());
  EXPECT_EQ(writer->SyncedThroughLsn(), 15u);
  ASSERT_TRUE(writer->Append(15, 1, std::string(30, 'b')).ok());
  EXPECT_EQ(writer->SyncedThroughLsn(), 15u);
  // This one does not fit: the full segment is synced before the roll.
  ASSERT_TRUE(writer->Append(16, 1, std::string(30, 'c')).ok());
  EXPECT_EQ(writer->SyncedThroughLsn(), 16u);
  EXPECT_EQ(SegmentNames(env(), LogDir()),
            (std::vector<std::string>{"00000000000000000010.log", "00000000000000000016.log"}));
  ASSERT_TRUE(writer->Close().ok());
  EXPECT_EQ(writer->SyncedThroughLsn(), 17u);
  EXPECT_TRUE(writer->Append(17, 1, "after close").Is(StatusCode::kFailedPrecondition));
  EXPECT_TRUE(writer->Close().ok());
}

TEST_F(LogWriterTest, RemoveSegmentsBelowKeepsTheActiveSegmentAndEverythingAtOrAboveTheBound) {
  std::unique_ptr<LogWriter> writer = OpenWriter(1, 120);
  ASSERT_NE(writer, nullptr);
  // Each 40-byte payload makes a 61-byte record: one record per segment.
  for (uint64_t lsn = 1; lsn <= 9; lsn += 2) {
    ASSERT_TRUE(writer->Append(lsn, 2, std::string(40, static_cast<char>('a' + lsn))).ok());
  }
  ASSERT_EQ(SegmentNames(env(), LogDir()),
            (std::vector<std::string>{"00000000000000000001.log", "00000000000000000003.log",
                                      "00000000000000000005.log", "00000000000000000007.log",
                                      "00000000000000000009.log"}));
  // Segment 3 holds LSNs 3 and 4: not every one is below 4.
  ASSERT_TRUE(writer->RemoveSegmentsBelow(4).ok());
  EXPECT_EQ(SegmentNames(env(), LogDir()),
            (std::vector<std::string>{"00000000000000000003.log", "00000000000000000005.log",
                                      "00000000000000000007.log", "00000000000000000009.log"}));
  ASSERT_TRUE(writer->RemoveSegmentsBelow(5).ok());
  EXPECT_EQ(SegmentNames(env(), LogDir()),
            (std::vector<std::string>{"00000000000000000005.log", "00000000000000000007.log",
                                      "00000000000000000009.log"}));
  // Everything is below the bound, but the active segment stays.
  ASSERT_TRUE(writer->RemoveSegmentsBelow(UINT64_MAX).ok());
  EXPECT_EQ(SegmentNames(env(), LogDir()), std::vector<std::string>{"00000000000000000009.log"});
  EXPECT_EQ(writer->BytesOnDisk(), log_format::kSegmentHeaderSize + log_format::kRecordHeaderSize + 40);

  ASSERT_TRUE(writer->Append(11, 1, "still appending").ok());
  ASSERT_TRUE(writer->Close().ok());
  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  ASSERT_TRUE(ReplayAll(env(), LogDir(), 9, &records, &stats).ok());
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].first_lsn, 9u);
  EXPECT_EQ(records[1], (ReplayedRecord{11, 1, "still appending"}));
  EXPECT_EQ(stats.next_lsn, 12u);
}

TEST_F(LogWriterTest, RemoveSegmentsBelowAlsoRemovesSegmentsOfAnEarlierWriter) {
  std::unique_ptr<LogWriter> first = OpenWriter(1, 64);
  ASSERT_NE(first, nullptr);
  AppendRecords(first.get(), 1, 4);
  ASSERT_TRUE(first->Close().ok());
  const size_t earlier_segments = SegmentNames(env(), LogDir()).size();
  ASSERT_GE(earlier_segments, 2u);

  std::unique_ptr<LogWriter> second = OpenWriter(5, 64);
  ASSERT_NE(second, nullptr);
  uint64_t files_bytes = 0;
  for (const std::string& name : SegmentNames(env(), LogDir())) {
    files_bytes += *env()->FileSize(JoinPath(LogDir(), name));
  }
  EXPECT_EQ(second->BytesOnDisk(), files_bytes);
  ASSERT_TRUE(second->RemoveSegmentsBelow(5).ok());
  EXPECT_EQ(SegmentNames(env(), LogDir()), std::vector<std::string>{"00000000000000000005.log"});
  EXPECT_EQ(second->BytesOnDisk(), log_format::kSegmentHeaderSize);
  ASSERT_TRUE(second->Close().ok());
}

TEST_F(LogWriterTest, ReopenStartsANewSegmentAndReplaySeesBoth) {
  std::unique_ptr<LogWriter> writer = OpenWriter(1);
  ASSERT_NE(writer, nullptr);
  std::vector<ReplayedRecord> appended = AppendRecords(writer.get(), 1, 5);
  // Dropped without Close, as by a crash of the process: the bytes are in the
  // OS and survive.
  writer.reset();

  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  ASSERT_TRUE(ReplayAll(env(), LogDir(), 0, &records, &stats).ok());
  ASSERT_EQ(records, appended);
  ASSERT_EQ(stats.next_lsn, 6u);

  writer = OpenWriter(stats.next_lsn);
  ASSERT_NE(writer, nullptr);
  std::vector<ReplayedRecord> more = AppendRecords(writer.get(), 6, 3);
  appended.insert(appended.end(), more.begin(), more.end());
  ASSERT_TRUE(writer->Close().ok());
  EXPECT_EQ(SegmentNames(env(), LogDir()),
            (std::vector<std::string>{"00000000000000000001.log", "00000000000000000006.log"}));

  records.clear();
  ASSERT_TRUE(ReplayAll(env(), LogDir(), 0, &records, &stats).ok());
  EXPECT_EQ(records, appended);
  EXPECT_EQ(stats.next_lsn, 9u);
}

TEST_F(LogWriterTest, OpenRefusesToStartBehindExistingRecords) {
  std::unique_ptr<LogWriter> writer = OpenWriter(1);
  ASSERT_NE(writer, nullptr);
  AppendRecords(writer.get(), 1, 3);
  ASSERT_TRUE(writer->Close().ok());
  Result<std::unique_ptr<LogWriter>> again = LogWriter::Open(env(), LogDir(), 1, LogWriterOptions());
  EXPECT_TRUE(again.status().Is(StatusCode::kFailedPrecondition)) << again.status().ToString();
  // The existing records are untouched.
  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  ASSERT_TRUE(ReplayAll(env(), LogDir(), 0, &records, &stats).ok());
  EXPECT_EQ(records.size(), 3u);
}

TEST_F(LogWriterTest, OpenReplacesAnEmptySegmentLeftAtTheSameLsn) {
  std::unique_ptr<LogWriter> writer = OpenWriter(4);
  ASSERT_NE(writer, nullptr);
  writer.reset();  // crashed before its first append
  writer = OpenWriter(4);
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer->Append(4, 1, "x").ok());
  ASSERT_TRUE(writer->Close().ok());
  EXPECT_EQ(SegmentNames(env(), LogDir()), std::vector<std::string>{"00000000000000000004.log"});
}

TEST_F(LogWriterTest, SyncFromAnotherThreadWhileAppending) {
  std::unique_ptr<LogWriter> writer = OpenWriter(1, 4096);
  ASSERT_NE(writer, nullptr);
  std::atomic<bool> done{false};
  std::atomic<int> sync_failures{0};
  std::atomic<uint64_t> last_seen{0};
  std::atomic<bool> went_backwards{false};
  std::thread syncer([&] {
    while (!done.load()) {
      if (!writer->Sync().ok()) sync_failures.fetch_add(1);
      const uint64_t synced = writer->SyncedThroughLsn();
      if (synced < last_seen.load()) went_backwards.store(true);
      last_seen.store(synced);
      (void)writer->BytesOnDisk();
    }
  });
  std::vector<ReplayedRecord> appended = AppendRecords(writer.get(), 1, 300);
  done.store(true);
  syncer.join();
  EXPECT_EQ(sync_failures.load(), 0);
  EXPECT_FALSE(went_backwards.load());
  ASSERT_TRUE(writer->Sync().ok());
  EXPECT_EQ(writer->SyncedThroughLsn(), 301u);
  ASSERT_TRUE(writer->Close().ok());

  std::vector<ReplayedRecord> records;
  LogReplayStats stats;
  ASSERT_TRUE(ReplayAll(env(), LogDir(), 0, &records, &stats).ok());
  EXPECT_EQ(records, appended);
}

}  // namespace
}  // namespace cairn

namespace cairn {
namespace {

TEST(LogWriterStartNewSegmentTest, LetsTheOldSegmentGoOnceCheckpointed) {
  ScopedTempDir dir;
  const std::string log_dir = dir.PathOf("log");
  auto writer = LogWriter::Open(Env::Default(), log_dir, 1, LogWriterOptions{});
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->StartNewSegment().ok());  // empty: nothing to do
  ASSERT_EQ(Env::Default()->ListDir(log_dir)->size(), 1u);
  ASSERT_TRUE((*writer)->Append(1, 3, "abc").ok());
  ASSERT_TRUE((*writer)->StartNewSegment().ok());
  EXPECT_EQ((*writer)->SyncedThroughLsn(), 4u);
  ASSERT_EQ(Env::Default()->ListDir(log_dir)->size(), 2u);
  ASSERT_TRUE((*writer)->RemoveSegmentsBelow(4).ok());
  auto left = Env::Default()->ListDir(log_dir);
  ASSERT_EQ(left->size(), 1u);
  EXPECT_EQ((*left)[0], "00000000000000000004.log");
  ASSERT_TRUE((*writer)->Append(4, 1, "d").ok());
  ASSERT_TRUE((*writer)->Close().ok());
  LogReplayStats stats;
  std::vector<uint64_t> seen;
  ASSERT_TRUE(ReplayLog(
                  Env::Default(), log_dir, 1,
                  [&](uint64_t lsn, uint32_t, std::string_view) {
                    seen.push_back(lsn);
                    return Status::Ok();
                  },
                  &stats)
                  .ok());
  EXPECT_EQ(seen, std::vector<uint64_t>{4});
  EXPECT_EQ(stats.next_lsn, 5u);
}

}  // namespace
}  // namespace cairn
