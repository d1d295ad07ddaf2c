#include "log/log_segments.h"

#include <algorithm>

namespace cairn::log_internal {

namespace {

using log_format::kMaxPayloadBytes;
using log_format::kRecordHeaderSize;
using log_format::kSegmentHeaderSize;

// Enough to hold many small records per read call without pinning much memory.
constexpr size_t kReadWindowBytes = 256u << 10;

}  // namespace

Result<std::vector<SegmentFile>> ListSegments(Env* env, const std::string& dir) {
  std::vector<SegmentFile> segments;
  if (!env->FileExists(dir)) return segments;
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> names, env->ListDir(dir));
  for (const std::string& name : names) {
    std::optional<uint64_t> first_lsn = log_format::ParseSegmentFileName(name);
    if (first_lsn) segments.push_back({*first_lsn, JoinPath(dir, name), 0, {}});
  }
  std::sort(segments.begin(), segments.end(),
            [](const SegmentFile& a, const SegmentFile& b) { return a.first_lsn < b.first_lsn; });
  for (SegmentFile& segment : segments) {
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<File> file, env->OpenFile(segment.path, OpenMode::kReadOnly));
    CAIRN_ASSIGN_OR_RETURN(segment.size, file->Size());
    std::string header(static_cast<size_t>(std::min<uint64_t>(segment.size, kSegmentHeaderSize)), '\0');
    size_t filled = 0;
    while (filled < header.size()) {
      CAIRN_ASSIGN_OR_RETURN(size_t got,
                             file->ReadAt(filled, header.size() - filled, header.data() + filled));
      if (got == 0) break;
      filled += got;
    }
    header.resize(filled);
    segment.header = log_format::DecodeSegmentHeader(header);
    if (segment.header.state == log_format::SegmentHeader::State::kUnsupportedVersion) {
      return Status::FailedPrecondition(segment.path + ": log format version " +
                                        std::to_string(segment.header.version) +
                                        " is not supported (this build reads versions " +
                                        std::to_string(log_format::kOldestReadableVersion) + " to " +
                                        std::to_string(log_format::kFormatVersion) + ")");
    }
  }
  return segments;
}

std::optional<uint64_t> DeclaredEnd(const std::vector<SegmentFile>& segments, size_t index) {
  if (index + 1 >= segments.size()) return std::nullopt;
  const log_format::SegmentHeader& next = segments[index + 1].header;
  if (next.state != log_format::SegmentHeader::State::kValid) return std::nullopt;
  return next.previous_end_lsn;
}

Result<SegmentReader> SegmentReader::Open(Env* env, const SegmentFile& segment) {
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<File> file, env->OpenFile(segment.path, OpenMode::kReadOnly));
  CAIRN_ASSIGN_OR_RETURN(uint64_t size, file->Size());
  return SegmentReader(std::move(file), size);
}

Result<std::string_view> SegmentReader::Read(uint64_t offset, size_t n) {
  if (offset >= size_) return std::string_view();
  const uint64_t available = size_ - offset;
  if (n > available) n = static_cast<size_t>(available);
  if (offset >= window_start_ && offset - window_start_ + n <= window_.size()) {
    return std::string_view(window_.data() + (offset - window_start_), n);
  }
  size_t fill = std::max(n, kReadWindowBytes);
  if (fill > available) fill = static_cast<size_t>(available);
  if (window_.capacity() > 2 * kReadWindowBytes && fill <= kReadWindowBytes) {
    std::string().swap(window_);  // let go of the room a large record needed
  }
  window_.resize(fill);
  size_t filled = 0;
  while (filled < fill) {
    CAIRN_ASSIGN_OR_RETURN(size_t got,
                           file_->ReadAt(offset + filled, fill - filled, window_.data() + filled));
    if (got == 0) break;  // the file shrank under us: treat the rest as missing
    filled += got;
  }
  window_.resize(filled);
  window_start_ = offset;
  return std::string_view(window_.data(), std::min(n, filled));
}

Result<bool> ReadRecordAt(SegmentReader& reader, uint64_t offset, IntactRecord* record,
                          std::string* why_bad) {
  const uint64_t remaining = reader.size() - offset;
  if (remaining < kRecordHeaderSize) {
    *why_bad = "incomplete record header (" + std::to_string(remaining) + " bytes before end of file)";
    return false;
  }
  CAIRN_ASSIGN_OR_RETURN(std::string_view header_bytes, reader.Read(offset, kRecordHeaderSize));
  if (header_bytes.size() < kRecordHeaderSize) {
    *why_bad = "record header could not be read in full";
    return false;
  }
  record->header = log_format::DecodeRecordHeader(header_bytes);
  const uint32_t length = record->header.payload_length;
  if (length > kMaxPayloadBytes) {
    *why_bad = "payload length " + std::to_string(length) + " exceeds the limit of " +
               std::to_string(kMaxPayloadBytes);
    return false;
  }
  const uint64_t framed = kRecordHeaderSize + static_cast<uint64_t>(length);
  if (framed > remaining) {
    *why_bad = "record of " + std::to_string(framed) + " bytes extends past end of file (" +
               std::to_string(remaining) + " bytes left)";
    return false;
  }
  CAIRN_ASSIGN_OR_RETURN(std::string_view framed_bytes, reader.Read(offset, static_cast<size_t>(framed)));
  if (framed_bytes.size() < framed || !log_format::RecordChecksumMatches(framed_bytes)) {
    *why_bad = "record checksum mismatch";
    return false;
  }
  record->payload = framed_bytes.substr(kRecordHeaderSize);
  record->framed_bytes = framed;
  return true;
}

std::string WhyNotContinuing(const log_format::RecordHeader& header, uint64_t expected_lsn) {
  if (header.type != static_cast<uint8_t>(log_format::RecordType::kBatch)) {
    return "unknown record type " + std::to_string(header.type);
  }
  if (header.count == 0) return "record covers no LSN (count 0)";
  if (header.count > UINT64_MAX - header.first_lsn) return "record LSN range overflows";
  if (header.first_lsn != expected_lsn) {
    return std::string(header.first_lsn > expected_lsn ? "LSN gap" : "LSN overlap") +
           ": expected a record starting at LSN " + std::to_string(expected_lsn) + ", found " +
           std::to_string(header.first_lsn);
  }
  return std::string();
}

Result<std::optional<FoundRecord>> FindIntactRecordFrom(SegmentReader& reader, uint64_t start,
                                                        uint64_t min_lsn, std::optional<uint64_t> below_lsn) {
  const uint64_t size = reader.size();
  for (uint64_t offset = start; offset < size && size - offset >= kRecordHeaderSize; ++offset) {
    CAIRN_ASSIGN_OR_RETURN(std::string_view header_bytes, reader.Read(offset, kRecordHeaderSize));
    if (header_bytes.size() < kRecordHeaderSize) break;
    // Cheap tests first: in zero-filled or random bytes almost every offset
    // fails on the type byte or the length.
    if (static_cast<uint8_t>(header_bytes[8]) != static_cast<uint8_t>(log_format::RecordType::kBatch))
      continue;
    const log_format::RecordHeader header = log_format::DecodeRecordHeader(header_bytes);
    if (header.payload_length > kMaxPayloadBytes) continue;
    if (kRecordHeaderSize + static_cast<uint64_t>(header.payload_length) > size - offset) continue;
    if (header.count == 0 || header.first_lsn < min_lsn || header.count > UINT64_MAX - header.first_lsn)
      continue;
    if (below_lsn && header.first_lsn >= *below_lsn) continue;
    IntactRecord record;
    std::string why_bad;
    CAIRN_ASSIGN_OR_RETURN(bool intact, ReadRecordAt(reader, offset, &record, &why_bad));
    if (intact) return std::optional<FoundRecord>(FoundRecord{offset, header.first_lsn});
  }
  return std::optional<FoundRecord>();
}

Status CutFile(Env* env, const std::string& path, uint64_t size) {
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<File> file, env->OpenFile(path, OpenMode::kReadWrite));
  CAIRN_RETURN_IF_ERROR(file->Truncate(size).WithContext("log: truncating " + path));
  return file->Sync().WithContext("log: syncing truncated " + path);
}

}  // namespace cairn::log_internal
