// Shared helpers of the log unit tests: a log directory in a temp dir,
// writing a log of small records, replaying it, and reading and writing
// segment files directly to damage them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/platform/env.h"

#include "chunk/crc32c.h"
#include "log/log_format.h"
#include "log/log_reader.h"
#include "log/log_writer.h"
#include "test_dirs.h"

namespace cairn::testing {

using log_format::kRecordHeaderSize;
using log_format::kSegmentHeaderSize;

struct ReplayedRecord {
  uint64_t first_lsn;
  uint32_t count;
  std::string payload;
  bool operator==(const ReplayedRecord&) const = default;
};

inline std::string PayloadFor(uint64_t lsn) {
  return "payload-" + std::to_string(lsn) + std::string(static_cast<size_t>(10 + lsn % 23), 'p');
}

// A record framed with any type and count, with a valid checksum: what a
// future or buggy writer could leave.
inline std::string FrameRecord(uint8_t type, uint64_t first_lsn, uint32_t count, std::string_view payload) {
  std::string framed;
  log_format::EncodeRecord(&framed, first_lsn, count, payload);
  framed[8] = static_cast<char>(type);
  std::string crc;
  log_format::PutFixed32(&crc, log_format::MaskCrc(Crc32c(std::string_view(framed).substr(8))));
  framed.replace(4, 4, crc);
  return framed;
}

// The version 1 header (24 bytes, no previous end) of a segment starting at
// `first_lsn`, as cairn wrote segments before format version 2.
inline std::string EncodeSegmentHeaderV1(uint64_t first_lsn) {
  std::string header(log_format::kSegmentMagic);
  log_format::PutFixed32(&header, 1);
  log_format::PutFixed64(&header, first_lsn);
  log_format::PutFixed32(&header, log_format::MaskCrc(Crc32c(header)));
  return header;
}

// A version 2 segment's contents with its header replaced by the version 1
// header of the same first LSN.
inline std::string AsVersionOne(const std::string& segment) {
  const log_format::SegmentHeader header = log_format::DecodeSegmentHeader(segment);
  EXPECT_EQ(header.state, log_format::SegmentHeader::State::kValid);
  return EncodeSegmentHeaderV1(header.first_lsn) + segment.substr(header.size);
}

class LogDirTest : public ::testing::Test {
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

}  // namespace cairn::testing
