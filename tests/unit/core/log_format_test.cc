#include "log/log_format.h"

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "chunk/crc32c.h"

namespace cairn {
namespace {

using log_format::kRecordHeaderSize;
using log_format::kSegmentHeaderSize;

TEST(LogFormatTest, SegmentFileNameIsTwentyDigitsAndParsesBack) {
  EXPECT_EQ(log_format::SegmentFileName(1), "00000000000000000001.log");
  EXPECT_EQ(log_format::SegmentFileName(UINT64_MAX), "18446744073709551615.log");
  for (uint64_t lsn : {uint64_t{0}, uint64_t{1}, uint64_t{4097}, uint64_t{1} << 40, UINT64_MAX}) {
    std::optional<uint64_t> parsed = log_format::ParseSegmentFileName(log_format::SegmentFileName(lsn));
    ASSERT_TRUE(parsed.has_value()) << lsn;
    EXPECT_EQ(*parsed, lsn);
  }
}

TEST(LogFormatTest, ParseRejectsNamesThatAreNotSegments) {
  for (const char* name :
       {"", "1.log", "0000000000000000001.log", "000000000000000000001.log", "00000000000000000001.log.tmp",
        "00000000000000000001.LOG", "0000000000000000000a.log", "18446744073709551616.log",
        "99999999999999999999.log", "LOCK"}) {
    EXPECT_FALSE(log_format::ParseSegmentFileName(name).has_value()) << name;
  }
}

TEST(LogFormatTest, MaskChangesTheCrcAndIsNotIdentityOnZero) {
  EXPECT_NE(log_format::MaskCrc(0), 0u);
  const uint32_t crc = Crc32c("cairn");
  EXPECT_NE(log_format::MaskCrc(crc), crc);
  EXPECT_NE(log_format::MaskCrc(crc), log_format::MaskCrc(crc + 1));
}

TEST(LogFormatTest, SegmentHeaderRoundTripsAndDetectsDamage) {
  const std::string header = log_format::EncodeSegmentHeader(12345);
  ASSERT_EQ(header.size(), kSegmentHeaderSize);
  EXPECT_EQ(header.substr(0, 8), "CAIRNLOG");
  log_format::SegmentHeader decoded = log_format::DecodeSegmentHeader(header);
  EXPECT_EQ(decoded.state, log_format::SegmentHeader::State::kValid);
  EXPECT_EQ(decoded.first_lsn, 12345u);
  EXPECT_EQ(decoded.version, log_format::kFormatVersion);

  for (size_t i = 0; i < header.size(); ++i) {
    std::string damaged = header;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x01);
    EXPECT_EQ(log_format::DecodeSegmentHeader(damaged).state, log_format::SegmentHeader::State::kDamaged)
        << "byte " << i;
  }
  EXPECT_EQ(log_format::DecodeSegmentHeader(header.substr(0, kSegmentHeaderSize - 1)).state,
            log_format::SegmentHeader::State::kDamaged);
  EXPECT_EQ(log_format::DecodeSegmentHeader(std::string(kSegmentHeaderSize, '\0')).state,
            log_format::SegmentHeader::State::kDamaged);
}

TEST(LogFormatTest, VersionTwoHeaderCarriesThePreviousEnd) {
  const std::string header = log_format::EncodeSegmentHeader(500, 420);
  log_format::SegmentHeader decoded = log_format::DecodeSegmentHeader(header);
  ASSERT_EQ(decoded.state, log_format::SegmentHeader::State::kValid);
  EXPECT_EQ(decoded.version, 2u);
  EXPECT_EQ(decoded.first_lsn, 500u);
  ASSERT_TRUE(decoded.previous_end_lsn.has_value());
  EXPECT_EQ(*decoded.previous_end_lsn, 420u);
  EXPECT_EQ(decoded.size, kSegmentHeaderSize);
  // The one-argument form continues the log without a gap.
  EXPECT_EQ(log_format::DecodeSegmentHeader(log_format::EncodeSegmentHeader(7)).previous_end_lsn, 7u);
}

// Version 1 segments, as cairn wrote them before version 2: 24-byte header,
// no previous end.
TEST(LogFormatTest, VersionOneHeaderIsStillRead) {
  std::string header(log_format::kSegmentMagic);
  log_format::PutFixed32(&header, 1);
  log_format::PutFixed64(&header, 4097);
  log_format::PutFixed32(&header, log_format::MaskCrc(Crc32c(header)));
  ASSERT_EQ(header.size(), log_format::kSegmentHeaderSizeV1);
  // Followed by record bytes, as in a real segment.
  log_format::SegmentHeader decoded = log_format::DecodeSegmentHeader(header + "recordbytes");
  ASSERT_EQ(decoded.state, log_format::SegmentHeader::State::kValid);
  EXPECT_EQ(decoded.version, 1u);
  EXPECT_EQ(decoded.first_lsn, 4097u);
  EXPECT_FALSE(decoded.previous_end_lsn.has_value());
  EXPECT_EQ(decoded.size, log_format::kSegmentHeaderSizeV1);
  for (size_t i = 0; i < header.size(); ++i) {
    std::string damaged = header;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x04);
    EXPECT_EQ(log_format::DecodeSegmentHeader(damaged).state, log_format::SegmentHeader::State::kDamaged)
        << "byte " << i;
  }
}

TEST(LogFormatTest, HeaderOfANewerVersionIsReportedAsUnsupported) {
  for (size_t layout : {log_format::kSegmentHeaderSizeV1, kSegmentHeaderSize}) {
    std::string header(log_format::kSegmentMagic);
    log_format::PutFixed32(&header, log_format::kFormatVersion + 1);
    log_format::PutFixed64(&header, 7);
    if (layout == kSegmentHeaderSize) log_format::PutFixed64(&header, 7);
    log_format::PutFixed32(&header, log_format::MaskCrc(Crc32c(header)));
    log_format::SegmentHeader decoded = log_format::DecodeSegmentHeader(header);
    EXPECT_EQ(decoded.state, log_format::SegmentHeader::State::kUnsupportedVersion) << layout;
    EXPECT_EQ(decoded.version, log_format::kFormatVersion + 1);
  }
}

TEST(LogFormatTest, RecordLayoutMatchesTheDocument) {
  std::string framed;
  log_format::EncodeRecord(&framed, 0x0102030405060708ull, 3, "abc");
  ASSERT_EQ(framed.size(), kRecordHeaderSize + 3);
  EXPECT_EQ(log_format::DecodeFixed32(framed.data()), 3u);
  EXPECT_EQ(static_cast<uint8_t>(framed[8]), 1u);
  EXPECT_EQ(log_format::DecodeFixed64(framed.data() + 9), 0x0102030405060708ull);
  EXPECT_EQ(log_format::DecodeFixed32(framed.data() + 17), 3u);
  EXPECT_EQ(framed.substr(21), "abc");
  // The CRC covers type, LSN range and payload, masked.
  const uint32_t crc = Crc32c(framed.substr(8));
  EXPECT_EQ(log_format::DecodeFixed32(framed.data() + 4), log_format::MaskCrc(crc));

  log_format::RecordHeader header = log_format::DecodeRecordHeader(framed.substr(0, kRecordHeaderSize));
  EXPECT_EQ(header.payload_length, 3u);
  EXPECT_EQ(header.type, 1u);
  EXPECT_EQ(header.first_lsn, 0x0102030405060708ull);
  EXPECT_EQ(header.count, 3u);
}

TEST(LogFormatTest, ChecksumCatchesEveryFlippedByte) {
  std::string framed;
  log_format::EncodeRecord(&framed, 42, 7, "some payload bytes");
  ASSERT_TRUE(log_format::RecordChecksumMatches(framed));
  // The length field is not checksummed itself; a damaged length is caught by
  // the framing instead (the reader's job), so it is left out here.
  for (size_t i = 4; i < framed.size(); ++i) {
    std::string damaged = framed;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x40);
    EXPECT_FALSE(log_format::RecordChecksumMatches(damaged)) << "byte " << i;
  }
  EXPECT_FALSE(log_format::RecordChecksumMatches(framed.substr(0, kRecordHeaderSize - 1)));
}

TEST(LogFormatTest, EncodeAppendsAfterExistingBytes) {
  std::string buffer = "prefix";
  log_format::EncodeRecord(&buffer, 1, 1, "");
  ASSERT_EQ(buffer.size(), 6 + kRecordHeaderSize);
  EXPECT_TRUE(log_format::RecordChecksumMatches(std::string_view(buffer).substr(6)));
}

}  // namespace
}  // namespace cairn
