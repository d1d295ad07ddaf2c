#include "log/log_reader.h"

#include <algorithm>
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
Status CheckSegmentHeader(const SegmentFile& segment, std::optional<uint64_t> expected, LogReplayStats* stats,
                          const std::function<Status(Damage::Kind, std::string)>& corrupt) {
  const SegmentHeader& header = segment.header;
  if (header.first_lsn != segment.first_lsn) {
    return corrupt(Damage::Kind::kHeader, "segment header says first LSN " +
                                              std::to_string(header.first_lsn) + " but the file name says " +
                                              std::to_string(segment.first_lsn));
  }
  if (header.previous_end_lsn && *header.previous_end_lsn > header.first_lsn) {
    return corrupt(Damage::Kind::kHeader, "segment header says the log before it ends at LSN " +
                                              std::to_string(*header.previous_end_lsn) +
                                              ", after its own first LSN " +
                                              std::to_string(header.first_lsn));
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

namespace {

// One replay: the segments in order, the LSN the log must continue with,
// and what was found. Each Read* method handles one segment, or one damaged
// place, and says whether replay goes on.
class Replayer {
 public:
  Replayer(Env* env, const std::string& dir, uint64_t from_lsn,
           const std::function<Status(uint64_t, uint32_t, std::string_view)>& fn, LogReplayStats* stats,
           Damage* damage)
      : env_(env), dir_(dir), from_lsn_(from_lsn), fn_(fn), stats_(stats), damage_(damage) {}

  Status Run() {
    *stats_ = LogReplayStats();
    CAIRN_ASSIGN_OR_RETURN(segments_, ListSegments(env_, dir_));
    if (segments_.empty()) return Status::Ok();
    const SegmentHeader& first = segments_.front().header;
    stats_->start_lsn = first.state == SegmentHeader::State::kValid && first.previous_end_lsn
                            ? *first.previous_end_lsn
                            : segments_.front().first_lsn;
    // A segment whose successor starts at or below from_lsn holds nothing
    // replay delivers: it is not even read (a checkpoint left it behind).
    size_t begin = 0;
    while (begin + 1 < segments_.size() && segments_[begin + 1].first_lsn <= from_lsn_) ++begin;
    for (index_ = begin; index_ < segments_.size(); ++index_) {
      CAIRN_ASSIGN_OR_RETURN(bool go_on, ReadSegment());
      if (!go_on) break;
    }
    stats_->next_lsn = expected_.value_or(1);
    return Status::Ok();
  }

 private:
  const SegmentFile& segment() const { return segments_[index_]; }
  bool is_last() const { return index_ + 1 == segments_.size(); }

  Status Corrupt(Damage::Kind kind, uint64_t offset, const std::string& reason) {
    *damage_ = Damage{kind, index_, segment().path, offset, reason, expected_.value_or(segment().first_lsn)};
    return Status::Corruption(segment().path + " offset " + std::to_string(offset) + ": " + reason);
  }

  // Reads the current segment; false when replay stops after it (a torn
  // last segment was removed).
  Result<bool> ReadSegment() {
    CAIRN_ASSIGN_OR_RETURN(SegmentReader reader, SegmentReader::Open(env_, segment()));
    if (segment().header.state != SegmentHeader::State::kValid) {
      CAIRN_RETURN_IF_ERROR(RemoveTornSegment(reader));
      return false;
    }
    CAIRN_RETURN_IF_ERROR(
        CheckSegmentHeader(segment(), expected_, stats_,
                           [&](Damage::Kind kind, std::string reason) { return Corrupt(kind, 0, reason); }));
    stats_->segments.push_back(segment().path);
    expected_ = segment().first_lsn;
    const std::optional<uint64_t> declared_end = DeclaredEnd(segments_, index_);
    const uint64_t size = reader.size();
    for (uint64_t offset = segment().header.size; offset < size;) {
      if (declared_end && *expected_ == *declared_end) {
        stats_->abandoned_bytes += size - offset;  // the successor declares the log went on without these
        break;
      }
      IntactRecord record;
      std::string why_bad;
      CAIRN_ASSIGN_OR_RETURN(bool intact, ReadRecordAt(reader, offset, &record, &why_bad));
      if (intact) why_bad = WhyNotContinuing(record.header, *expected_);
      if (why_bad.empty()) {
        CAIRN_RETURN_IF_ERROR(Deliver(record, offset, declared_end));
        offset += record.framed_bytes;
        continue;
      }
      CAIRN_ASSIGN_OR_RETURN(offset, PassDamage(reader, offset, intact, why_bad, declared_end));
    }
    if (declared_end && *expected_ != *declared_end) {
      if (*declared_end > from_lsn_) {
        return Corrupt(Damage::Kind::kEndsShort, size,
                       "LSN gap between segments: the records end at LSN " + std::to_string(*expected_) +
                           ", but the next segment says the log before it ends at " +
                           std::to_string(*declared_end) +
                           " (a segment is missing, or this one lost records)");
      }
      expected_ = *declared_end;  // what is missing was checkpointed
    }
    return true;
  }

  // A segment whose header is not valid: the torn creation of the last
  // segment (no intact record in it) is removed; anything else is damage.
  Status RemoveTornSegment(SegmentReader& reader) {
    const uint64_t size = reader.size();
    const std::string reason = size < log_format::kSegmentHeaderSizeV1
                                   ? "incomplete segment header (" + std::to_string(size) + " bytes)"
                                   : "damaged segment header";
    if (!is_last()) return Corrupt(Damage::Kind::kHeader, 0, reason);
    CAIRN_ASSIGN_OR_RETURN(std::optional<FoundRecord> intact,
                           FindIntactRecordFrom(reader, 1, expected_.value_or(segment().first_lsn)));
    if (intact) {
      return Corrupt(Damage::Kind::kHeader, 0,
                     reason + "; an intact record follows at offset " + std::to_string(intact->offset));
    }
    // It never held a record. This is checked before the sequence, because
    // a writer whose new segment failed half-way may have gone on appending
    // to its predecessor.
    reader = SegmentReader(nullptr, 0);
    CAIRN_RETURN_IF_ERROR(env_->RemoveFile(segment().path).WithContext("log: removing torn segment"));
    CAIRN_RETURN_IF_ERROR(env_->SyncDir(dir_).WithContext("log: syncing directory " + dir_));
    stats_->torn_tail_bytes += size;
    if (!expected_) expected_ = segment().first_lsn;
    return Status::Ok();
  }

  Status Deliver(const IntactRecord& record, uint64_t offset, std::optional<uint64_t> declared_end) {
    if (declared_end && record.end_lsn() > *declared_end) {
      return Corrupt(Damage::Kind::kCrossesEnd, offset,
                     "record of LSNs " + std::to_string(record.header.first_lsn) + " to " +
                         std::to_string(record.end_lsn() - 1) + " runs past LSN " +
                         std::to_string(*declared_end) + ", where the next segment says this one ends");
    }
    stats_->records += 1;
    stats_->payload_bytes += record.payload.size();
    if (record.end_lsn() > from_lsn_) {
      CAIRN_RETURN_IF_ERROR(fn_(record.header.first_lsn, record.header.count, record.payload));
    }
    expected_ = record.end_lsn();
    return Status::Ok();
  }

  // The record at `offset` is bad, or intact but not continuing the log.
  // Returns where reading goes on: after checkpointed damage stepped over,
  // or at the end after a torn tail was cut. Anything else is corruption.
  Result<uint64_t> PassDamage(SegmentReader& reader, uint64_t offset, bool intact, const std::string& why_bad,
                              std::optional<uint64_t> declared_end) {
    const uint64_t size = reader.size();
    CAIRN_ASSIGN_OR_RETURN(std::optional<FoundRecord> found,
                           FindIntactRecordFrom(reader, offset, *expected_, declared_end));
    if (*expected_ < from_lsn_) {
      // Damage among checkpointed records: step over it when every LSN it
      // can hide lies below from_lsn.
      if (found && found->first_lsn <= from_lsn_) {
        stats_->damaged_bytes_skipped += found->offset - offset;
        expected_ = found->first_lsn;
        return found->offset;
      }
      // Where the log resumes after this segment: the end its successor
      // declares, or the successor's first LSN (the last segment: nowhere).
      const uint64_t resumes_at =
          declared_end.value_or(is_last() ? UINT64_MAX : segments_[index_ + 1].first_lsn);
      if (!found && (declared_end || !is_last()) && resumes_at <= from_lsn_) {
        stats_->damaged_bytes_skipped += size - offset;
        expected_ = resumes_at;
        return size;
      }
    }
    if (found) {
      return Corrupt(Damage::Kind::kRecord, offset,
                     why_bad + "; an intact record follows at offset " + std::to_string(found->offset));
    }
    // Only a bad record at the very end is what a torn append leaves; an
    // intact record that does not fit the log was written that way.
    if (!is_last() || intact) return Corrupt(Damage::Kind::kRecord, offset, why_bad);
    reader = SegmentReader(nullptr, 0);
    CAIRN_RETURN_IF_ERROR(CutFile(env_, segment().path, offset));
    stats_->torn_tail_bytes += size - offset;
    return size;
  }

  Env* const env_;
  const std::string& dir_;
  const uint64_t from_lsn_;
  const std::function<Status(uint64_t, uint32_t, std::string_view)>& fn_;
  LogReplayStats* const stats_;
  Damage* const damage_;
  std::vector<SegmentFile> segments_;
  size_t index_ = 0;
  // The LSN the next record must start at; unset before the first segment.
  std::optional<uint64_t> expected_;
};

}  // namespace

Status ReplaySegments(Env* env, const std::string& dir, uint64_t from_lsn,
                      const std::function<Status(uint64_t, uint32_t, std::string_view)>& fn,
                      LogReplayStats* stats, Damage* damage) {
  return Replayer(env, dir, from_lsn, fn, stats, damage).Run();
}

}  // namespace log_internal

Result<std::optional<uint64_t>> LogFirstSegmentLsn(Env* env, const std::string& dir) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<log_internal::SegmentFile> segments, log_internal::ListSegments(env, dir));
  if (segments.empty()) return std::optional<uint64_t>();
  return std::optional<uint64_t>(segments.front().first_lsn);
}

Status RewriteLogTail(Env* env, const std::string& dir) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<log_internal::SegmentFile> segments, log_internal::ListSegments(env, dir));
  size_t from = segments.size();
  while (from > 0 && segments[from - 1].header.state != log_format::SegmentHeader::State::kValid) --from;
  if (from > 0) --from;
  constexpr size_t kChunkBytes = 1u << 20;
  std::string chunk;
  for (size_t i = from; i < segments.size(); ++i) {
    const log_internal::SegmentFile& segment = segments[i];
    if (segment.size <= log_format::kSegmentHeaderSize) continue;  // the header was synced when created
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<File> file, env->OpenFile(segment.path, OpenMode::kReadWrite));
    for (uint64_t offset = 0; offset < segment.size;) {
      chunk.resize(static_cast<size_t>(std::min<uint64_t>(kChunkBytes, segment.size - offset)));
      CAIRN_ASSIGN_OR_RETURN(size_t got, file->ReadAt(offset, chunk.size(), chunk.data()));
      if (got == 0) break;
      CAIRN_RETURN_IF_ERROR(file->WriteAt(offset, std::string_view(chunk.data(), got))
                                .WithContext("log: writing the tail of " + segment.path + " again"));
      offset += got;
    }
    CAIRN_RETURN_IF_ERROR(file->Sync().WithContext("log: syncing the tail of " + segment.path));
  }
  return Status::Ok();
}

Status ReplayLog(
    Env* env, const std::string& dir, uint64_t from_lsn,
    const std::function<Status(uint64_t first_lsn, uint32_t count, std::string_view payload)>& fn,
    LogReplayStats* stats, LogCorruption* corruption) {
  LogReplayStats local_stats;
  log_internal::Damage damage;
  Status status = log_internal::ReplaySegments(env, dir, from_lsn, fn, stats ? stats : &local_stats, &damage);
  if (status.Is(StatusCode::kCorruption) && corruption != nullptr && !damage.segment.empty()) {
    *corruption = LogCorruption{damage.segment, damage.offset, damage.reason};
  }
  return status;
}

}  // namespace cairn
