#include "log/log_repair.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "log/log_format.h"
#include "log/log_segments.h"

namespace cairn {

namespace {

using log_internal::Damage;
using log_internal::FindIntactRecordFrom;
using log_internal::FoundRecord;
using log_internal::SegmentFile;
using log_internal::SegmentReader;

// Each pass mends one damaged place; a log with more damaged places than
// this is beyond what an automatic repair should decide.
constexpr int kMaxPasses = 256;
constexpr size_t kCopyChunkBytes = 1u << 20;
constexpr std::string_view kTempSuffix = ".tmp";

std::string NameOf(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// Writes the segment named after `first_lsn` as a version 2 header (declaring
// that the log before it ends at `previous_end_lsn`) followed by bytes
// [from, to) of `source`: to a temporary file, synced, renamed into place,
// directory synced. `source` may be the segment being replaced.
Status WriteSegmentCopy(Env* env, const std::string& dir, const std::string& source, uint64_t from,
                        uint64_t to, uint64_t first_lsn, uint64_t previous_end_lsn) {
  const std::string path = JoinPath(dir, log_format::SegmentFileName(first_lsn));
  const std::string temp = path + std::string(kTempSuffix);
  {
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<File> in, env->OpenFile(source, OpenMode::kReadOnly));
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<File> out, env->OpenFile(temp, OpenMode::kCreateTruncate));
    CAIRN_RETURN_IF_ERROR(out->Append(log_format::EncodeSegmentHeader(first_lsn, previous_end_lsn)));
    std::string chunk;
    for (uint64_t offset = from; offset < to;) {
      chunk.resize(static_cast<size_t>(std::min<uint64_t>(kCopyChunkBytes, to - offset)));
      CAIRN_ASSIGN_OR_RETURN(size_t got, in->ReadAt(offset, chunk.size(), chunk.data()));
      if (got == 0) return Status::IOError("log repair: " + source + " ended while copying it");
      CAIRN_RETURN_IF_ERROR(out->Append(std::string_view(chunk.data(), got)));
      offset += got;
    }
    CAIRN_RETURN_IF_ERROR(out->Sync().WithContext("log repair: syncing " + temp));
  }
  CAIRN_RETURN_IF_ERROR(env->RenameFile(temp, path).WithContext("log repair"));
  return env->SyncDir(dir).WithContext("log repair: syncing directory " + dir);
}

Status RemoveSegment(Env* env, const std::string& dir, const std::string& path) {
  CAIRN_RETURN_IF_ERROR(env->RemoveFile(path).WithContext("log repair: removing"));
  return env->SyncDir(dir).WithContext("log repair: syncing directory " + dir);
}

class Mender {
 public:
  Mender(Env* env, const std::string& dir, uint64_t from_lsn, LogRepairOutcome* report)
      : env_(env), dir_(dir), from_lsn_(from_lsn), report_(report) {}

  // Mends the one damaged place `damage` describes.
  Status Mend(const Damage& damage) {
    CAIRN_ASSIGN_OR_RETURN(segments_, log_internal::ListSegments(env_, dir_));
    auto it = std::find_if(segments_.begin(), segments_.end(),
                           [&](const SegmentFile& s) { return s.path == damage.segment; });
    if (it == segments_.end())
      return Status::Internal("log repair: damaged segment " + damage.segment + " vanished");
    index_ = static_cast<size_t>(it - segments_.begin());
    damage_ = &damage;
    const SegmentFile& segment = *it;
    const uint64_t expected = damage.expected_lsn;
    switch (damage.kind) {
      case Damage::Kind::kRecord: {
        std::optional<FoundRecord> found;
        {
          CAIRN_ASSIGN_OR_RETURN(SegmentReader reader, SegmentReader::Open(env_, segment));
          CAIRN_ASSIGN_OR_RETURN(found,
                                 FindIntactRecordFrom(reader, damage.offset, expected, ContinuesBelow()));
        }
        if (found) return KeepFrom(*found, damage.offset);
        return CutAndDeclare(damage.offset);
      }
      case Damage::Kind::kCrossesEnd:
        return CutAndDeclare(damage.offset);
      case Damage::Kind::kEndsShort:
        return CutAndDeclare(segment.size);
      case Damage::Kind::kHeader:
        return Rebase();
      case Damage::Kind::kSequence: {
        const uint64_t continues_from = segment.header.previous_end_lsn.value_or(segment.first_lsn);
        // The segment claims the log before it goes further than it does:
        // declare where it really ends.
        if (continues_from > expected) return Declare(index_, expected, "the LSNs before it are missing");
        return Rebase();  // it overlaps its predecessor
      }
    }
    return Status::Internal("log repair: unknown kind of damage");
  }

 private:
  const SegmentFile& segment() const { return segments_[index_]; }
  const SegmentFile* successor() const {
    return index_ + 1 < segments_.size() ? &segments_[index_ + 1] : nullptr;
  }

  // Records at or beyond this LSN cannot continue the damaged segment: its
  // successor holds them, or declares them abandoned.
  std::optional<uint64_t> ContinuesBelow() const {
    if (std::optional<uint64_t> end = log_internal::DeclaredEnd(segments_, index_)) return end;
    if (const SegmentFile* next = successor()) return next->first_lsn;
    return std::nullopt;
  }

  void Lost(uint64_t first_lsn, uint64_t end_lsn) {
    first_lsn = std::max(first_lsn, from_lsn_);
    if (first_lsn < end_lsn) report_->lost.push_back({first_lsn, end_lsn});
  }

  std::string Where() const {
    return NameOf(damage_->segment) + " offset " + std::to_string(damage_->offset) + " (" + damage_->reason +
           ")";
  }

  std::string LostText(uint64_t first_lsn, uint64_t end_lsn) const {
    first_lsn = std::max(first_lsn, from_lsn_);
    if (first_lsn >= end_lsn) return "no unsealed LSN lost";
    return "LSNs " + std::to_string(first_lsn) + " to " + std::to_string(end_lsn - 1) + " lost";
  }

  // The damaged stretch of this segment ends at `found`, an intact record
  // that continues the log: it and what follows move to a segment of their
  // own declaring where the log before them ends; then the damage is cut.
  Status KeepFrom(const FoundRecord& found, uint64_t cut_at) {
    const SegmentFile& damaged = segment();
    const uint64_t expected = damage_->expected_lsn;
    if (found.first_lsn == damaged.first_lsn) {
      // The damage sits before the segment's first record: rewrite the
      // segment itself without it.
      const uint64_t previous_end = damaged.header.previous_end_lsn.value_or(damaged.first_lsn);
      CAIRN_RETURN_IF_ERROR(WriteSegmentCopy(env_, dir_, damaged.path, found.offset, damaged.size,
                                             damaged.first_lsn, std::min(previous_end, expected)));
    } else {
      CAIRN_RETURN_IF_ERROR(
          WriteSegmentCopy(env_, dir_, damaged.path, found.offset, damaged.size, found.first_lsn, expected));
      // The new segment already declares the end: the cut only frees space.
      CAIRN_RETURN_IF_ERROR(log_internal::CutFile(env_, damaged.path, cut_at));
    }
    Lost(expected, found.first_lsn);
    report_->actions.push_back(
        Where() + ": kept the intact records from offset " + std::to_string(found.offset) + " on in " +
        log_format::SegmentFileName(found.first_lsn) + "; " + LostText(expected, found.first_lsn));
    return Status::Ok();
  }

  // Nothing after the damage in this segment continues the log: the
  // successor declares that the log before it ends at the damage, then the
  // segment is cut there.
  Status CutAndDeclare(uint64_t cut_at) {
    const SegmentFile* next = successor();
    if (next == nullptr) {
      return Status::Internal("log repair: damage in the last segment " + segment().path +
                              " with nothing intact after it should have been cut as a torn tail");
    }
    const uint64_t expected = damage_->expected_lsn;
    if (next->header.state == log_format::SegmentHeader::State::kValid) {
      CAIRN_RETURN_IF_ERROR(Declare(index_ + 1, expected,
                                    "the records of " + NameOf(segment().path) + " after offset " +
                                        std::to_string(cut_at) + " were cut"));
    }
    // (A successor with a damaged header is rebased on the next pass, from
    // where this segment now ends.)
    if (cut_at < segment().size) {
      CAIRN_RETURN_IF_ERROR(log_internal::CutFile(env_, segment().path, cut_at));
      report_->actions.push_back(Where() + ": cut the segment there");
    }
    return Status::Ok();
  }

  // Rewrites segments_[index]'s header to say that the log before it ends
  // at `previous_end_lsn`.
  Status Declare(size_t index, uint64_t previous_end_lsn, const std::string& why) {
    const SegmentFile& target = segments_[index];
    // What the log held before `target` by its own account until now.
    const uint64_t claimed = target.header.previous_end_lsn.value_or(target.first_lsn);
    CAIRN_RETURN_IF_ERROR(WriteSegmentCopy(env_, dir_, target.path, target.header.size, target.size,
                                           target.first_lsn, previous_end_lsn));
    Lost(previous_end_lsn, claimed);
    report_->actions.push_back(
        Where() + ": " + NameOf(target.path) + " now declares that the log before it ends at LSN " +
        std::to_string(previous_end_lsn) + " (" + why + "); " + LostText(previous_end_lsn, claimed));
    return Status::Ok();
  }

  // The segment's header is damaged or does not fit its predecessor:
  // rewrite it from its first intact record that continues the log, or
  // remove it when it holds none.
  Status Rebase() {
    const SegmentFile& damaged = segment();
    const uint64_t expected = damage_->expected_lsn;
    CAIRN_ASSIGN_OR_RETURN(SegmentReader reader, SegmentReader::Open(env_, damaged));
    CAIRN_ASSIGN_OR_RETURN(std::optional<FoundRecord> found,
                           FindIntactRecordFrom(reader, 1, expected, ContinuesBelow()));
    reader = SegmentReader(nullptr, 0);
    if (found) {
      CAIRN_RETURN_IF_ERROR(WriteSegmentCopy(env_, dir_, damaged.path, found->offset, damaged.size,
                                             found->first_lsn, expected));
      if (found->first_lsn != damaged.first_lsn)
        CAIRN_RETURN_IF_ERROR(RemoveSegment(env_, dir_, damaged.path));
      Lost(expected, found->first_lsn);
      report_->actions.push_back(Where() + ": rewrote the segment from its intact record at offset " +
                                 std::to_string(found->offset) + " as " +
                                 log_format::SegmentFileName(found->first_lsn) + "; " +
                                 LostText(expected, found->first_lsn));
      return Status::Ok();
    }
    const SegmentFile* next = successor();
    if (next != nullptr && next->header.state == log_format::SegmentHeader::State::kValid) {
      CAIRN_RETURN_IF_ERROR(Declare(index_ + 1, expected, NameOf(damaged.path) + " held no intact record"));
    }
    CAIRN_RETURN_IF_ERROR(RemoveSegment(env_, dir_, damaged.path));
    report_->actions.push_back(Where() + ": removed the segment, which held no intact record");
    return Status::Ok();
  }

  Env* const env_;
  const std::string& dir_;
  const uint64_t from_lsn_;
  LogRepairOutcome* const report_;
  std::vector<SegmentFile> segments_;
  size_t index_ = 0;
  const Damage* damage_ = nullptr;
};

// Removes the segments whose LSNs are all below `from_lsn`, oldest first, and
// temporary files an interrupted repair or writer left.
Status TrimBelow(Env* env, const std::string& dir, uint64_t from_lsn, LogRepairOutcome* report) {
  if (!env->FileExists(dir)) return Status::Ok();
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> names, env->ListDir(dir));
  for (const std::string& name : names) {
    if (name.size() > kTempSuffix.size() && name.ends_with(kTempSuffix) &&
        log_format::ParseSegmentFileName(name.substr(0, name.size() - kTempSuffix.size()))) {
      CAIRN_RETURN_IF_ERROR(RemoveSegment(env, dir, JoinPath(dir, name)));
    }
  }
  CAIRN_ASSIGN_OR_RETURN(std::vector<SegmentFile> segments, log_internal::ListSegments(env, dir));
  for (size_t i = 0; i + 1 < segments.size() && segments[i + 1].first_lsn <= from_lsn; ++i) {
    CAIRN_RETURN_IF_ERROR(RemoveSegment(env, dir, segments[i].path));
    ++report->segments_trimmed;
  }
  return Status::Ok();
}

}  // namespace

uint64_t LogRepairOutcome::LostLsnCount() const {
  uint64_t count = 0;
  for (const LostLsns& range : lost) count += range.end_lsn - range.first_lsn;
  return count;
}

Result<LogRepairOutcome> RepairLog(Env* env, const std::string& dir, uint64_t from_lsn) {
  LogRepairOutcome report;
  CAIRN_RETURN_IF_ERROR(TrimBelow(env, dir, from_lsn, &report));
  Mender mender(env, dir, from_lsn, &report);
  std::optional<uint64_t> first_damage_lsn;
  for (int pass = 0; pass < kMaxPasses; ++pass) {
    uint64_t kept = 0;
    auto count_kept = [&](uint64_t first_lsn, uint32_t count, std::string_view) {
      if (first_damage_lsn && first_lsn >= *first_damage_lsn) kept += count;
      return Status::Ok();
    };
    LogReplayStats stats;
    Damage damage;
    Status status = log_internal::ReplaySegments(env, dir, from_lsn, count_kept, &stats, &damage);
    report.torn_tail_bytes += stats.torn_tail_bytes;
    if (status.ok()) {
      report.lsns_kept_after_damage = kept;
      return report;
    }
    if (!status.Is(StatusCode::kCorruption) || damage.segment.empty()) return status;
    if (!first_damage_lsn) first_damage_lsn = damage.expected_lsn;
    CAIRN_RETURN_IF_ERROR(mender.Mend(damage));
  }
  return Status::Internal("log repair: damage in " + dir + " remains after " + std::to_string(kMaxPasses) +
                          " mends; run the repair again");
}

}  // namespace cairn
