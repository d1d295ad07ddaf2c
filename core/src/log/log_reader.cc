#include "log/log_reader.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>

#include "log/log_format.h"

namespace cairn {

namespace {

using log_format::kMaxPayloadBytes;
using log_format::kRecordHeaderSize;
using log_format::kSegmentHeaderSize;

// Enough to hold many small records per read call without pinning much memory.
constexpr size_t kReadWindowBytes = 256u << 10;

struct SegmentFile {
  uint64_t first_lsn = 0;
  std::string path;
};

Result<std::vector<SegmentFile>> ListSegments(Env* env, const std::string& dir) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> names, env->ListDir(dir));
  std::vector<SegmentFile> segments;
  for (const std::string& name : names) {
    std::optional<uint64_t> first_lsn = log_format::ParseSegmentFileName(name);
    if (first_lsn) segments.push_back({*first_lsn, JoinPath(dir, name)});
  }
  std::sort(segments.begin(), segments.end(),
            [](const SegmentFile& a, const SegmentFile& b) { return a.first_lsn < b.first_lsn; });
  return segments;
}

// Reads a file through a window of recent bytes, so that walking many small
// records, or every byte offset when looking for a record after damage, costs
// one ReadAt per window instead of one per record.
class WindowedReader {
 public:
  WindowedReader(File* file, uint64_t size) : file_(file), size_(size) {}

  uint64_t size() const { return size_; }

  // Bytes [offset, offset + n), cut short at the end of the file. The view is
  // valid until the next call.
  Result<std::string_view> Read(uint64_t offset, size_t n) {
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

 private:
  File* file_;
  uint64_t size_;
  uint64_t window_start_ = 0;
  std::string window_;
};

// A record whose framing and checksum verified.
struct IntactRecord {
  log_format::RecordHeader header;
  std::string_view payload;  // valid until the reader's next call
  uint64_t framed_bytes = 0;
};

// Reads the record at `offset`. Returns false, with the reason in `why_bad`,
// when it is short, oversized, or fails its checksum.
Result<bool> ReadRecordAt(WindowedReader& reader, uint64_t offset, IntactRecord* record,
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

// The offset of the first intact record at or after `start` that could
// continue the log (type known, count >= 1, first LSN >= min_lsn), if any.
// This is what tells damage in the middle of the last segment from a torn
// tail: a torn append leaves nothing intact behind it.
Result<std::optional<uint64_t>> FindIntactRecordFrom(WindowedReader& reader, uint64_t start,
                                                     uint64_t min_lsn) {
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
    IntactRecord record;
    std::string why_bad;
    CAIRN_ASSIGN_OR_RETURN(bool intact, ReadRecordAt(reader, offset, &record, &why_bad));
    if (intact) return std::optional<uint64_t>(offset);
  }
  return std::optional<uint64_t>();
}

// Damage found by a replay, with what repair needs to cut it.
struct Damage {
  std::string segment;
  uint64_t offset = 0;
  std::string reason;
  // The segment's first LSN does not continue the previous segment: the whole
  // segment is out of sequence (as opposed to a damaged header).
  bool segment_out_of_sequence = false;
  uint64_t segment_first_lsn = 0;
};

Status CutTornTail(Env* env, const std::string& path, uint64_t offset) {
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<File> file, env->OpenFile(path, OpenMode::kReadWrite));
  CAIRN_RETURN_IF_ERROR(file->Truncate(offset).WithContext("log: truncating torn tail of " + path));
  return file->Sync().WithContext("log: syncing truncated " + path);
}

Status ReplaySegments(Env* env, const std::string& dir, uint64_t from_lsn,
                      const std::function<Status(uint64_t, uint32_t, std::string_view)>& fn,
                      LogReplayStats* stats, Damage* damage) {
  *stats = LogReplayStats();
  if (!env->FileExists(dir)) return Status::Ok();
  CAIRN_ASSIGN_OR_RETURN(std::vector<SegmentFile> segments, ListSegments(env, dir));

  // The LSN the next record must start at; unset before the first segment.
  std::optional<uint64_t> expected_lsn;
  for (size_t index = 0; index < segments.size(); ++index) {
    const SegmentFile& segment = segments[index];
    const bool is_last = index + 1 == segments.size();
    auto corrupt = [&](uint64_t offset, std::string reason, bool out_of_sequence = false) {
      damage->segment = segment.path;
      damage->offset = offset;
      damage->reason = reason;
      damage->segment_out_of_sequence = out_of_sequence;
      damage->segment_first_lsn = segment.first_lsn;
      return Status::Corruption(segment.path + " offset " + std::to_string(offset) + ": " + reason);
    };

    if (expected_lsn && segment.first_lsn != *expected_lsn) {
      return corrupt(0,
                     std::string(segment.first_lsn > *expected_lsn ? "LSN gap" : "LSN overlap") +
                         " between segments: the previous segment ends at LSN " +
                         std::to_string(*expected_lsn) + ", this one starts at " +
                         std::to_string(segment.first_lsn),
                     /*out_of_sequence=*/true);
    }

    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<File> file, env->OpenFile(segment.path, OpenMode::kReadOnly));
    CAIRN_ASSIGN_OR_RETURN(uint64_t size, file->Size());
    WindowedReader reader(file.get(), size);

    log_format::SegmentHeader header;
    if (size >= kSegmentHeaderSize) {
      CAIRN_ASSIGN_OR_RETURN(std::string_view header_bytes, reader.Read(0, kSegmentHeaderSize));
      header = log_format::DecodeSegmentHeader(header_bytes);
    }
    if (header.state == log_format::SegmentHeader::State::kUnsupportedVersion) {
      return Status::FailedPrecondition(
          segment.path + ": log format version " + std::to_string(header.version) +
          " is not supported (this build reads version " + std::to_string(log_format::kFormatVersion) + ")");
    }
    if (header.state == log_format::SegmentHeader::State::kDamaged) {
      const std::string reason = size < kSegmentHeaderSize
                                     ? "incomplete segment header (" + std::to_string(size) + " bytes)"
                                     : "damaged segment header";
      if (!is_last) return corrupt(0, reason);
      CAIRN_ASSIGN_OR_RETURN(std::optional<uint64_t> intact,
                             FindIntactRecordFrom(reader, 1, segment.first_lsn));
      if (intact)
        return corrupt(0, reason + "; an intact record follows at offset " + std::to_string(*intact));
      // The segment's creation was torn: it never held a record.
      file.reset();
      CAIRN_RETURN_IF_ERROR(env->RemoveFile(segment.path).WithContext("log: removing torn segment"));
      CAIRN_RETURN_IF_ERROR(env->SyncDir(dir).WithContext("log: syncing directory " + dir));
      stats->torn_tail_bytes += size;
      expected_lsn = segment.first_lsn;
      break;
    }
    if (header.first_lsn != segment.first_lsn) {
      return corrupt(0, "segment header says first LSN " + std::to_string(header.first_lsn) +
                            " but the file name says " + std::to_string(segment.first_lsn));
    }
    stats->segments.push_back(segment.path);
    if (!expected_lsn) expected_lsn = segment.first_lsn;

    uint64_t offset = kSegmentHeaderSize;
    while (offset < size) {
      IntactRecord record;
      std::string why_bad;
      CAIRN_ASSIGN_OR_RETURN(bool intact, ReadRecordAt(reader, offset, &record, &why_bad));
      if (!intact) {
        if (!is_last) return corrupt(offset, why_bad);
        CAIRN_ASSIGN_OR_RETURN(std::optional<uint64_t> next_intact,
                               FindIntactRecordFrom(reader, offset + 1, *expected_lsn));
        if (next_intact) {
          return corrupt(offset,
                         why_bad + "; an intact record follows at offset " + std::to_string(*next_intact));
        }
        file.reset();
        CAIRN_RETURN_IF_ERROR(CutTornTail(env, segment.path, offset));
        stats->torn_tail_bytes += size - offset;
        break;
      }
      const log_format::RecordHeader& header_fields = record.header;
      if (header_fields.type != static_cast<uint8_t>(log_format::RecordType::kBatch)) {
        return corrupt(offset, "unknown record type " + std::to_string(header_fields.type));
      }
      if (header_fields.count == 0) return corrupt(offset, "record covers no LSN (count 0)");
      if (header_fields.count > UINT64_MAX - header_fields.first_lsn) {
        return corrupt(offset, "record LSN range overflows");
      }
      if (header_fields.first_lsn != *expected_lsn) {
        return corrupt(
            offset, std::string(header_fields.first_lsn > *expected_lsn ? "LSN gap" : "LSN overlap") +
                        ": expected a record starting at LSN " + std::to_string(*expected_lsn) + ", found " +
                        std::to_string(header_fields.first_lsn));
      }
      const uint64_t end_lsn = header_fields.first_lsn + header_fields.count;
      stats->records += 1;
      stats->payload_bytes += record.payload.size();
      if (end_lsn > from_lsn) {
        CAIRN_RETURN_IF_ERROR(fn(header_fields.first_lsn, header_fields.count, record.payload));
      }
      expected_lsn = end_lsn;
      offset += record.framed_bytes;
    }
  }
  stats->next_lsn = expected_lsn.value_or(1);
  return Status::Ok();
}

// Cuts the log at `damage`: later segments go (newest first, so a crash in
// the middle leaves the damage in place for the next repair), then the
// damaged segment is shortened to the damage.
Result<uint64_t> CutAtDamage(Env* env, const std::string& dir, const Damage& damage) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<SegmentFile> segments, ListSegments(env, dir));
  auto damaged = std::find_if(segments.begin(), segments.end(),
                              [&](const SegmentFile& segment) { return segment.path == damage.segment; });
  if (damaged == segments.end()) {
    return Status::Internal("log repair: damaged segment " + damage.segment + " vanished");
  }
  uint64_t cut = 0;
  for (auto later = segments.end(); later != damaged + 1;) {
    --later;
    CAIRN_ASSIGN_OR_RETURN(uint64_t size, env->FileSize(later->path));
    CAIRN_RETURN_IF_ERROR(env->RemoveFile(later->path).WithContext("log repair: removing"));
    cut += size;
  }
  CAIRN_ASSIGN_OR_RETURN(uint64_t size, env->FileSize(damage.segment));
  if (damage.segment_out_of_sequence) {
    CAIRN_RETURN_IF_ERROR(env->RemoveFile(damage.segment).WithContext("log repair: removing"));
    cut += size;
  } else if (damage.offset < kSegmentHeaderSize) {
    // Keep the segment, empty, so the log still says where it continues.
    CAIRN_RETURN_IF_ERROR(
        env->WriteFileAtomically(damage.segment, log_format::EncodeSegmentHeader(damage.segment_first_lsn))
            .WithContext("log repair: rewriting header"));
    cut += size > kSegmentHeaderSize ? size - kSegmentHeaderSize : 0;
  } else {
    CAIRN_RETURN_IF_ERROR(CutTornTail(env, damage.segment, damage.offset));
    cut += size - damage.offset;
  }
  CAIRN_RETURN_IF_ERROR(env->SyncDir(dir).WithContext("log repair: syncing directory " + dir));
  return cut;
}

}  // namespace

Status ReplayLog(
    Env* env, const std::string& dir, uint64_t from_lsn,
    const std::function<Status(uint64_t first_lsn, uint32_t count, std::string_view payload)>& fn,
    LogReplayStats* stats, LogCorruption* corruption) {
  LogReplayStats local_stats;
  Damage damage;
  Status status = ReplaySegments(env, dir, from_lsn, fn, stats ? stats : &local_stats, &damage);
  if (status.Is(StatusCode::kCorruption) && corruption != nullptr && !damage.segment.empty()) {
    *corruption = LogCorruption{damage.segment, damage.offset, damage.reason};
  }
  return status;
}

Result<uint64_t> RepairLog(Env* env, const std::string& dir) {
  auto ignore = [](uint64_t, uint32_t, std::string_view) { return Status::Ok(); };
  uint64_t cut = 0;
  // A cut removes everything from the first damage on, so the pass after it
  // finds an intact log; the bound only guards against a cut that did not
  // take (the Env reported success but the damage is still there).
  constexpr int kMaxPasses = 3;
  for (int pass = 0; pass < kMaxPasses; ++pass) {
    LogReplayStats stats;
    Damage damage;
    Status status = ReplaySegments(env, dir, UINT64_MAX, ignore, &stats, &damage);
    cut += stats.torn_tail_bytes;
    if (status.ok()) return cut;
    if (!status.Is(StatusCode::kCorruption) || damage.segment.empty()) return status;
    CAIRN_ASSIGN_OR_RETURN(uint64_t cut_here, CutAtDamage(env, dir, damage));
    cut += cut_here;
  }
  return Status::Internal("log repair: damage in " + dir + " remains after cutting it");
}

}  // namespace cairn
