#include "log/log_reader.h"

#include <memory>
#include <optional>
#include <utility>

#include "log/log_format.h"
#include "log/log_segments.h"

namespace cairn {

namespace log_internal {

namespace {

using log_format::SegmentHeader;

// Checks a segment's header against its name and its predecessor, and says
// where its records continue the log. Fills `damage` and returns Corruption
// when they do not fit.
Status CheckSegmentHeader(const SegmentFile& segment, std::optional<uint64_t> expected,
                          LogReplayStats* stats, const std::function<Status(Damage::Kind, std::string)>& corrupt) {
  const SegmentHeader& header = segment.header;
  if (header.first_lsn != segment.first_lsn) {
    return corrupt(Damage::Kind::kHeader, "segment header says first LSN " + std::to_string(header.first_lsn) +
                                              " but the file name says " + std::to_string(segment.first_lsn));
  }
  if (header.previous_end_lsn && *header.previous_end_lsn > header.first_lsn) {
    return corrupt(Damage::Kind::kHeader, "segment header says the log before it ends at LSN " +
                                              std::to_string(*header.previous_end_lsn) +
                                              ", after its own first LSN " + std::to_string(header.first_lsn));
  }
  if (!expected) return Status::Ok();
  // A version 2 header says where its predecessor ends (the predecessor was
  // read up to there); the LSNs between that end and its own first LSN are
  // declared unused. A version 1 segment continues its predecessor exactly.
  const uint64_t continues_from = header.previous_end_lsn.value_or(segment.first_lsn);
  if (continues_from != *expected) {
    return corrupt(Damage::Kind::kSequence,
                   std::string(continues_from > *expected ? "LSN gap" : "LSN overlap") +
                       " between segments: the previous segment ends at LSN " + std::to_string(*expected) +
                       ", this one " +
                       (header.previous_end_lsn ? "says it ends at " + std::to_string(continues_from)
                                                : "starts at " + std::to_string(segment.first_lsn)));
  }
  stats->unused_lsns += segment.first_lsn - continues_from;
  return Status::Ok();
}

}  // namespace

Status ReplaySegments(Env* env, const std::string& dir, uint64_t from_lsn,
                      const std::function<Status(uint64_t, uint32_t, std::string_view)>& fn,
                      LogReplayStats* stats, Damage* damage) {
  *stats = LogReplayStats();
  CAIRN_ASSIGN_OR_RETURN(std::vector<SegmentFile> segments, ListSegments(env, dir));
  if (segments.empty()) return Status::Ok();
  {
    const SegmentHeader& first = segments.front().header;
    stats->start_lsn = first.state == SegmentHeader::State::kValid && first.previous_end_lsn
                           ? *first.previous_end_lsn
                           : segments.front().first_lsn;
  }
  // A segment whose successor starts at or below from_lsn holds nothing
  // replay delivers: it is not even read (a checkpoint left it behind).
  size_t begin = 0;
  while (begin + 1 < segments.size() && segments[begin + 1].first_lsn <= from_lsn) ++begin;

  // The LSN the next record must start at; unset before the first segment.
  std::optional<uint64_t> expected;
  for (size_t index = begin; index < segments.size(); ++index) {
    const SegmentFile& segment = segments[index];
    const bool is_last = index + 1 == segments.size();
    const std::optional<uint64_t> declared_end = DeclaredEnd(segments, index);
    uint64_t at_offset = 0;
    auto corrupt = [&](Damage::Kind kind, std::string reason) {
      *damage = Damage{kind, index, segment.path, at_offset, reason, expected.value_or(segment.first_lsn)};
      return Status::Corruption(segment.path + " offset " + std::to_string(at_offset) + ": " + reason);
    };
    CAIRN_ASSIGN_OR_RETURN(SegmentReader reader, SegmentReader::Open(env, segment));
    const uint64_t size = reader.size();

    if (segment.header.state != SegmentHeader::State::kValid) {
      const std::string reason = size < log_format::kSegmentHeaderSizeV1
                                     ? "incomplete segment header (" + std::to_string(size) + " bytes)"
                                     : "damaged segment header";
      if (!is_last) return corrupt(Damage::Kind::kHeader, reason);
      CAIRN_ASSIGN_OR_RETURN(std::optional<FoundRecord> intact,
                             FindIntactRecordFrom(reader, 1, expected.value_or(segment.first_lsn)));
      if (intact) {
        return corrupt(Damage::Kind::kHeader,
                       reason + "; an intact record follows at offset " + std::to_string(intact->offset));
      }
      // The segment's creation was torn: it never held a record. This is
      // checked before the sequence, because a writer whose new segment
      // failed half-way may have gone on appending to its predecessor.
      reader = SegmentReader(nullptr, 0);
      CAIRN_RETURN_IF_ERROR(env->RemoveFile(segment.path).WithContext("log: removing torn segment"));
      CAIRN_RETURN_IF_ERROR(env->SyncDir(dir).WithContext("log: syncing directory " + dir));
      stats->torn_tail_bytes += size;
      if (!expected) expected = segment.first_lsn;
      break;
    }
    CAIRN_RETURN_IF_ERROR(CheckSegmentHeader(segment, expected, stats, [&](Damage::Kind kind, std::string reason) {
      return corrupt(kind, std::move(reason));
    }));
    stats->segments.push_back(segment.path);
    expected = segment.first_lsn;

    uint64_t offset = segment.header.size;
    while (offset < size) {
      at_offset = offset;
      if (declared_end && *expected == *declared_end) {
        stats->abandoned_bytes += size - offset;  // the successor declares the log went on without these
        break;
      }
      IntactRecord record;
      std::string why_bad;
      CAIRN_ASSIGN_OR_RETURN(bool intact, ReadRecordAt(reader, offset, &record, &why_bad));
      if (intact) why_bad = WhyNotContinuing(record.header, *expected);
      if (why_bad.empty()) {
        if (declared_end && record.end_lsn() > *declared_end) {
          return corrupt(Damage::Kind::kCrossesEnd,
                         "record of LSNs " + std::to_string(record.header.first_lsn) + " to " +
                             std::to_string(record.end_lsn() - 1) + " runs past LSN " +
                             std::to_string(*declared_end) + ", where the next segment says this one ends");
        }
        stats->records += 1;
        stats->payload_bytes += record.payload.size();
        if (record.end_lsn() > from_lsn) {
          CAIRN_RETURN_IF_ERROR(fn(record.header.first_lsn, record.header.count, record.payload));
        }
        expected = record.end_lsn();
        offset += record.framed_bytes;
        continue;
      }
      CAIRN_ASSIGN_OR_RETURN(std::optional<FoundRecord> found,
                             FindIntactRecordFrom(reader, offset, *expected, declared_end));
      if (*expected < from_lsn) {
        // Damage among checkpointed records: step over it when every LSN it
        // can hide lies below from_lsn.
        if (found && found->first_lsn <= from_lsn) {
          stats->damaged_bytes_skipped += found->offset - offset;
          expected = found->first_lsn;
          offset = found->offset;
          continue;
        }
        const std::optional<uint64_t> resumes_at =
            declared_end ? declared_end : is_last ? std::nullopt : std::optional(segments[index + 1].first_lsn);
        if (!found && resumes_at && *resumes_at <= from_lsn) {
          stats->damaged_bytes_skipped += size - offset;
          expected = *resumes_at;
          offset = size;
          break;
        }
      }
      if (found) {
        return corrupt(Damage::Kind::kRecord,
                       why_bad + "; an intact record follows at offset " + std::to_string(found->offset));
      }
      // Only a bad record at the very end is what a torn append leaves; an
      // intact record that does not fit the log was written that way.
      if (!is_last || intact) return corrupt(Damage::Kind::kRecord, why_bad);
      reader = SegmentReader(nullptr, 0);
      CAIRN_RETURN_IF_ERROR(CutFile(env, segment.path, offset));
      stats->torn_tail_bytes += size - offset;
      offset = size;
      break;
    }
    at_offset = size;
    if (declared_end && *expected != *declared_end) {
      if (*declared_end > from_lsn) {
        return corrupt(Damage::Kind::kEndsShort,
                       "LSN gap between segments: the records end at LSN " + std::to_string(*expected) +
                           ", but the next segment says the log before it ends at " +
                           std::to_string(*declared_end) + " (a segment is missing, or this one lost records)");
      }
      expected = *declared_end;  // what is missing was checkpointed
    }
  }
  stats->next_lsn = expected.value_or(1);
  return Status::Ok();
}

}  // namespace log_internal

Status ReplayLog(
    Env* env, const std::string& dir, uint64_t from_lsn,
    const std::function<Status(uint64_t first_lsn, uint32_t count, std::string_view payload)>& fn,
    LogReplayStats* stats, LogCorruption* corruption) {
  LogReplayStats local_stats;
  log_internal::Damage damage;
  Status status =
      log_internal::ReplaySegments(env, dir, from_lsn, fn, stats ? stats : &local_stats, &damage);
  if (status.Is(StatusCode::kCorruption) && corruption != nullptr && !damage.segment.empty()) {
    *corruption = LogCorruption{damage.segment, damage.offset, damage.reason};
  }
  return status;
}

}  // namespace cairn
