#include "log/log_verify.h"

#include <optional>

#include "log/log_segments.h"

namespace cairn {

namespace {

using log_format::SegmentHeader;
using log_internal::SegmentFile;
using log_internal::SegmentReader;

// Where segments[index]'s records must end: its successor's declared end,
// else its first LSN; nullopt for the last segment.
std::optional<uint64_t> EndOf(const std::vector<SegmentFile>& segments, size_t index) {
  if (index + 1 >= segments.size()) return std::nullopt;
  if (std::optional<uint64_t> declared = log_internal::DeclaredEnd(segments, index)) return declared;
  return segments[index + 1].first_lsn;
}

// Counts LSNs [first, end) at or above from_lsn into `check`, or notes them as
// sealed; `what` describes the damaged stretch.
void Account(SegmentCheck* check, const std::string& what, uint64_t first, uint64_t end, uint64_t from_lsn) {
  const uint64_t unsealed_from = std::max(first, from_lsn);
  const uint64_t unsealed = end > unsealed_from ? end - unsealed_from : 0;
  if (unsealed == 0) {
    check->notes.push_back(what + " (LSNs " + std::to_string(first) + "-" + std::to_string(end - 1) +
                           " are sealed into period files: nothing lost, replay steps over them)");
    return;
  }
  check->problems.push_back(what + ": " + std::to_string(unsealed) + " reading(s) not sealed yet (LSNs " +
                            std::to_string(unsealed_from) + "-" + std::to_string(end - 1) + ")");
  check->readings_affected += unsealed;
}

Status CheckSegment(Env* env, const std::vector<SegmentFile>& segments, size_t index, uint64_t from_lsn,
                    SegmentCheck* check) {
  const SegmentFile& segment = segments[index];
  if (segment.header.state == SegmentHeader::State::kUnsupportedVersion) {
    check->notes.push_back("written by a newer cairn (segment format version " +
                           std::to_string(segment.header.version) + "); not checked");
    return Status::Ok();
  }
  const std::optional<uint64_t> end = EndOf(segments, index);
  if (segment.header.state == SegmentHeader::State::kDamaged) {
    if (end && *end <= from_lsn) {
      check->notes.push_back("damaged segment header; every reading it can hold is sealed (nothing lost)");
    } else {
      check->problems.push_back("damaged segment header");
      check->readings_unknown = true;
    }
    return Status::Ok();
  }
  CAIRN_ASSIGN_OR_RETURN(SegmentReader reader, SegmentReader::Open(env, segment));
  uint64_t offset = segment.header.size;
  uint64_t expected = segment.first_lsn;
  while (offset < reader.size()) {
    log_internal::IntactRecord record;
    std::string why;
    CAIRN_ASSIGN_OR_RETURN(bool intact, log_internal::ReadRecordAt(reader, offset, &record, &why));
    if (intact && log_internal::WhyNotContinuing(record.header, expected).empty()) {
      ++check->records;
      check->readings += record.header.count;
      expected = record.end_lsn();
      offset += record.framed_bytes;
      continue;
    }
    if (intact) why = log_internal::WhyNotContinuing(record.header, expected);
    CAIRN_ASSIGN_OR_RETURN(std::optional<log_internal::FoundRecord> next,
                           log_internal::FindIntactRecordFrom(reader, offset + 1, expected));
    const std::string what = "damaged record at offset " + std::to_string(offset) + " (" + why + ")";
    if (next) {
      Account(check, what, expected, next->first_lsn, from_lsn);
      offset = next->offset;
      expected = next->first_lsn;
      continue;
    }
    if (!end) {
      // Nothing intact after it in the last segment: a write a crash cut
      // short, never acknowledged under full durability.
      check->notes.push_back("torn tail of " + std::to_string(reader.size() - offset) + " bytes at offset " +
                             std::to_string(offset) + " (a write cut short; start-up drops it)");
    } else if (*end > expected) {
      Account(check, what + " through the end of the segment", expected, *end, from_lsn);
    }
    return Status::Ok();
  }
  if (end && *end > expected) {
    Account(check, "the segment ends at LSN " + std::to_string(expected) + " before the " +
                       std::to_string(*end) + " its successor declares",
            expected, *end, from_lsn);
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<SegmentCheck>> CheckLogSegments(Env* env, const std::string& dir, uint64_t from_lsn) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<SegmentFile> segments, log_internal::ListSegments(env, dir));
  std::vector<SegmentCheck> checks;
  for (size_t i = 0; i < segments.size(); ++i) {
    SegmentCheck check;
    check.path = segments[i].path;
    CAIRN_RETURN_IF_ERROR(CheckSegment(env, segments, i, from_lsn, &check));
    checks.push_back(std::move(check));
  }
  return checks;
}

}  // namespace cairn
