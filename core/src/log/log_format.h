// Constants and codecs of the write-ahead log's on-disk format, shared by the
// writer and the reader. The format itself is specified in log_format.md.
//
// Thread-safety: everything here is a pure function or a constant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cairn/util/endian.h"

namespace cairn::log_format {

inline constexpr std::string_view kSegmentMagic = "CAIRNLOG";
// The version every new segment is written in; version 1 segments are read.
inline constexpr uint32_t kFormatVersion = 2;
inline constexpr uint32_t kOldestReadableVersion = 1;
inline constexpr std::string_view kSegmentSuffix = ".log";
// Digits of the first LSN in a segment's file name: enough for any uint64.
inline constexpr size_t kSegmentNameDigits = 20;

// Version 2: magic (8) + version (4) + first LSN (8) + previous end LSN (8)
// + header CRC (4).
inline constexpr size_t kSegmentHeaderSize = 32;
// Version 1: magic (8) + version (4) + first LSN (8) + header CRC (4).
inline constexpr size_t kSegmentHeaderSizeV1 = 24;
// length (4) + CRC (4) + type (1) + first LSN (8) + count (4).
inline constexpr size_t kRecordHeaderSize = 21;
// Where the checksummed part of a record header starts (the type byte).
inline constexpr size_t kRecordChecksummedOffset = 8;

// The largest payload one record may carry; bounds the memory a reader needs.
inline constexpr uint32_t kMaxPayloadBytes = 64u << 20;

// Type 0 is reserved so that zero-filled bytes never parse as a record.
enum class RecordType : uint8_t {
  kBatch = 1,  // one group commit
};

// "<first_lsn as 20 digits>.log".
std::string SegmentFileName(uint64_t first_lsn);

// The first LSN named by a segment file name, or nullopt when `name` is not a
// segment's name (exactly 20 digits then ".log").
std::optional<uint64_t> ParseSegmentFileName(std::string_view name);

// CRC-32C as stored on disk (see log_format.md for why it is masked).
uint32_t MaskCrc(uint32_t crc);

// The log's integers are little-endian (cairn/util/endian.h).
using util::DecodeFixed32;
using util::DecodeFixed64;
using util::PutFixed32;
using util::PutFixed64;

// The version 2 header of a segment whose first LSN is `first_lsn`, saying
// that the records of the segments before it end at `previous_end_lsn`
// (<= first_lsn; the LSNs in between are not used). See log_format.md.
std::string EncodeSegmentHeader(uint64_t first_lsn, uint64_t previous_end_lsn);

// The same header as EncodeSegmentHeader(first_lsn, first_lsn): a segment
// that continues the log without a gap.
std::string EncodeSegmentHeader(uint64_t first_lsn);

// What a segment header says, or why it cannot be used.
struct SegmentHeader {
  enum class State : uint8_t {
    kValid,               // magic, CRC and a readable version check out
    kDamaged,             // too short, wrong magic or CRC
    kUnsupportedVersion,  // valid CRC, a version newer than kFormatVersion
  };
  State state = State::kDamaged;
  uint32_t version = 0;
  uint64_t first_lsn = 0;
  // Version 2: where the records of the previous segments end. Unset for
  // version 1, whose segments always continue their predecessor exactly.
  std::optional<uint64_t> previous_end_lsn;
  // Where the first record starts (the header's length).
  size_t size = 0;
};

// Decodes the header at the start of `bytes` (the first kSegmentHeaderSize
// bytes of a segment, or all of it when it is shorter).
SegmentHeader DecodeSegmentHeader(std::string_view bytes);

// Appends the framed record (header and payload) to `dst`. The caller has
// checked payload.size() <= kMaxPayloadBytes.
void EncodeRecord(std::string* dst, uint64_t first_lsn, uint32_t count, std::string_view payload);

// The fields of a record header; the CRC is checked by RecordChecksumMatches.
struct RecordHeader {
  uint32_t payload_length = 0;
  uint32_t stored_crc = 0;
  uint8_t type = 0;
  uint64_t first_lsn = 0;
  uint32_t count = 0;
};

// Decodes exactly kRecordHeaderSize bytes.
RecordHeader DecodeRecordHeader(std::string_view header);

// Whether the stored CRC of a whole record (`record` = header and payload, as
// framed) matches its contents.
bool RecordChecksumMatches(std::string_view record);

}  // namespace cairn::log_format
