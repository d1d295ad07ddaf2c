#include "log/log_format.h"

#include <cstring>

#include "chunk/crc32c.h"

namespace cairn::log_format {

namespace {

constexpr uint32_t kCrcMaskDelta = 0xa282ead8u;

uint32_t RecordCrc(std::string_view record) {
  std::string_view checksummed_header =
      record.substr(kRecordChecksummedOffset, kRecordHeaderSize - kRecordChecksummedOffset);
  uint32_t crc = Crc32c(checksummed_header);
  return Crc32cExtend(crc, record.substr(kRecordHeaderSize));
}

}  // namespace

std::string SegmentFileName(uint64_t first_lsn) {
  std::string digits = std::to_string(first_lsn);
  std::string name(kSegmentNameDigits - digits.size(), '0');
  name += digits;
  name += kSegmentSuffix;
  return name;
}

std::optional<uint64_t> ParseSegmentFileName(std::string_view name) {
  if (name.size() != kSegmentNameDigits + kSegmentSuffix.size()) return std::nullopt;
  if (name.substr(kSegmentNameDigits) != kSegmentSuffix) return std::nullopt;
  uint64_t value = 0;
  for (size_t i = 0; i < kSegmentNameDigits; ++i) {
    char c = name[i];
    if (c < '0' || c > '9') return std::nullopt;
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

uint32_t MaskCrc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kCrcMaskDelta; }

std::string EncodeSegmentHeader(uint64_t first_lsn, uint64_t previous_end_lsn) {
  std::string header;
  header.reserve(kSegmentHeaderSize);
  header.append(kSegmentMagic);
  PutFixed32(&header, kFormatVersion);
  PutFixed64(&header, first_lsn);
  PutFixed64(&header, previous_end_lsn);
  PutFixed32(&header, MaskCrc(Crc32c(header)));
  return header;
}

std::string EncodeSegmentHeader(uint64_t first_lsn) { return EncodeSegmentHeader(first_lsn, first_lsn); }

namespace {

// Whether the `size`-byte header layout at the start of `bytes` carries a
// valid CRC in its last four bytes.
bool HeaderCrcMatches(std::string_view bytes, size_t size) {
  if (bytes.size() < size) return false;
  const size_t crc_offset = size - 4;
  return DecodeFixed32(bytes.data() + crc_offset) == MaskCrc(Crc32c(bytes.substr(0, crc_offset)));
}

}  // namespace

SegmentHeader DecodeSegmentHeader(std::string_view bytes) {
  SegmentHeader decoded;
  constexpr size_t kVersionEnd = 12;
  if (bytes.size() < kVersionEnd || bytes.substr(0, kSegmentMagic.size()) != kSegmentMagic) return decoded;
  const uint32_t version = DecodeFixed32(bytes.data() + 8);
  // The version picks the layout; a version this build does not know is
  // recognised by either layout's checksum (log_format.md).
  if (version == 1) {
    if (!HeaderCrcMatches(bytes, kSegmentHeaderSizeV1)) return decoded;
    decoded.size = kSegmentHeaderSizeV1;
  } else if (version == 2) {
    if (!HeaderCrcMatches(bytes, kSegmentHeaderSize)) return decoded;
    decoded.size = kSegmentHeaderSize;
    decoded.previous_end_lsn = DecodeFixed64(bytes.data() + 20);
  } else {
    if (version > kFormatVersion &&
        (HeaderCrcMatches(bytes, kSegmentHeaderSizeV1) || HeaderCrcMatches(bytes, kSegmentHeaderSize))) {
      decoded.state = SegmentHeader::State::kUnsupportedVersion;
      decoded.version = version;
    }
    return decoded;
  }
  decoded.version = version;
  decoded.first_lsn = DecodeFixed64(bytes.data() + 12);
  decoded.state = SegmentHeader::State::kValid;
  return decoded;
}

void EncodeRecord(std::string* dst, uint64_t first_lsn, uint32_t count, std::string_view payload) {
  const size_t start = dst->size();
  PutFixed32(dst, static_cast<uint32_t>(payload.size()));
  PutFixed32(dst, 0);  // the CRC, filled in once the checksummed bytes are in place
  dst->push_back(static_cast<char>(RecordType::kBatch));
  PutFixed64(dst, first_lsn);
  PutFixed32(dst, count);
  dst->append(payload);
  std::string_view record(dst->data() + start, dst->size() - start);
  const uint32_t masked = MaskCrc(RecordCrc(record));
  std::string crc_bytes;
  PutFixed32(&crc_bytes, masked);
  dst->replace(start + 4, 4, crc_bytes);
}

RecordHeader DecodeRecordHeader(std::string_view header) {
  RecordHeader decoded;
  decoded.payload_length = DecodeFixed32(header.data());
  decoded.stored_crc = DecodeFixed32(header.data() + 4);
  decoded.type = static_cast<uint8_t>(header[8]);
  decoded.first_lsn = DecodeFixed64(header.data() + 9);
  decoded.count = DecodeFixed32(header.data() + 17);
  return decoded;
}

bool RecordChecksumMatches(std::string_view record) {
  if (record.size() < kRecordHeaderSize) return false;
  return DecodeFixed32(record.data() + 4) == MaskCrc(RecordCrc(record));
}

}  // namespace cairn::log_format
