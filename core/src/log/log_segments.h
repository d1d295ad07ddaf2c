// Reading segment files, shared by replay (log_reader.cc) and repair
// (log_repair.cc): listing the segments of a log directory with their
// headers, a windowed reader, checking one record, and scanning for the next
// intact record after damage. Format: log_format.md.
//
// Thread-safety: plain functions; a SegmentReader has one owner.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/platform/env.h"
#include "cairn/platform/status.h"

#include "log/log_format.h"
#include "log/log_reader.h"

namespace cairn::log_internal {

// One segment file as found in the directory, with its decoded header.
struct SegmentFile {
  uint64_t first_lsn = 0;  // from the file name
  std::string path;
  uint64_t size = 0;
  log_format::SegmentHeader header;
};

// The segments of `dir` in LSN order, headers decoded. A missing `dir` is an
// empty list. FailedPrecondition for a segment written by a newer format
// version (nothing may touch it).
Result<std::vector<SegmentFile>> ListSegments(Env* env, const std::string& dir);

// Where the records of segments[index] must end, as its successor's version
// 2 header declares it; nullopt when there is no successor or it makes no
// claim (version 1, damaged header).
std::optional<uint64_t> DeclaredEnd(const std::vector<SegmentFile>& segments, size_t index);

// Reads a file through a window of recent bytes, so that walking many small
// records, or every byte offset when looking for a record after damage, costs
// one ReadAt per window instead of one per record.
class SegmentReader {
 public:
  SegmentReader(std::unique_ptr<File> file, uint64_t size) : file_(std::move(file)), size_(size) {}

  static Result<SegmentReader> Open(Env* env, const SegmentFile& segment);

  uint64_t size() const { return size_; }

  // Bytes [offset, offset + n), cut short at the end of the file. The view is
  // valid until the next call.
  Result<std::string_view> Read(uint64_t offset, size_t n);

 private:
  std::unique_ptr<File> file_;
  uint64_t size_;
  uint64_t window_start_ = 0;
  std::string window_;
};

// A record whose framing and checksum verified.
struct IntactRecord {
  log_format::RecordHeader header;
  std::string_view payload;  // valid until the reader's next call
  uint64_t framed_bytes = 0;
  uint64_t end_lsn() const { return header.first_lsn + header.count; }
};

// Reads the record at `offset`. Returns false, with the reason in `why_bad`,
// when it is short, oversized, or fails its checksum.
Result<bool> ReadRecordAt(SegmentReader& reader, uint64_t offset, IntactRecord* record, std::string* why_bad);

// Why an intact record cannot be the one the log continues with at
// `expected_lsn`: unknown type, no LSN, an overflowing range, a gap or an
// overlap. Empty when it can.
std::string WhyNotContinuing(const log_format::RecordHeader& header, uint64_t expected_lsn);

// An intact record found by a scan.
struct FoundRecord {
  uint64_t offset = 0;
  uint64_t first_lsn = 0;
};

// The first intact record at or after `start` that could continue the log
// (type known, count >= 1, first LSN >= min_lsn and, when `below_lsn` is
// set, below it), if any. A torn append leaves nothing intact behind it, so
// this tells damage in the middle from a torn tail, and where the log picks
// up again after damage.
Result<std::optional<FoundRecord>> FindIntactRecordFrom(SegmentReader& reader, uint64_t start,
                                                        uint64_t min_lsn,
                                                        std::optional<uint64_t> below_lsn = std::nullopt);

// Truncates the file at `path` to `size` and syncs it.
Status CutFile(Env* env, const std::string& path, uint64_t size);

// Damage found by a replay, with what repair needs to mend it.
struct Damage {
  enum class Kind : uint8_t {
    kRecord,      // a bad record, or an intact one that does not continue the log, at `offset`
    kHeader,      // the segment's header is damaged or names another LSN than its file
    kSequence,    // the segment does not continue its predecessor (gap or overlap)
    kEndsShort,   // the segment's records end before the end its successor declares
    kCrossesEnd,  // the record at `offset` runs past the end its successor declares
  };
  Kind kind = Kind::kRecord;
  size_t index = 0;  // of the damaged segment in ListSegments' order
  std::string segment;
  uint64_t offset = 0;
  std::string reason;
  // The LSN the log should continue with at the damage: the end of the last
  // intact record before it, or the segment's first LSN.
  uint64_t expected_lsn = 0;
};

// The replay behind ReplayLog (see log_reader.h), reporting damage in the
// form repair needs. `stats` must not be null.
Status ReplaySegments(Env* env, const std::string& dir, uint64_t from_lsn,
                      const std::function<Status(uint64_t, uint32_t, std::string_view)>& fn,
                      LogReplayStats* stats, Damage* damage);

}  // namespace cairn::log_internal
