#include "log/log_writer.h"

#include <iterator>
#include <optional>
#include <utility>
#include <vector>

#include "log/log_format.h"

namespace cairn {

namespace {

// The in-memory copy of unsynced records that grew for a large payload is
// released afterwards, so one large group commit does not pin its size in
// memory for the writer's life.
constexpr size_t kRetainedBufferBytes = 1u << 20;

// Creates the segment starting at `first_lsn`, writes its header and makes the
// file and its directory entry durable before any record goes in. When that
// fails half-way, the partial file is removed; if even that fails, its path
// is left in `stray` for the caller to remove later (a partial segment
// behind the active one would read as damage).
Result<std::unique_ptr<File>> CreateSegmentFile(Env* env, const std::string& dir, uint64_t first_lsn,
                                                uint64_t previous_end_lsn, std::string* stray) {
  const std::string path = JoinPath(dir, log_format::SegmentFileName(first_lsn));
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<File> file, env->OpenFile(path, OpenMode::kCreateTruncate));
  Status status = file->Append(log_format::EncodeSegmentHeader(first_lsn, previous_end_lsn))
                      .WithContext("log: writing header of " + path);
  if (status.ok()) status = file->Sync().WithContext("log: syncing new segment " + path);
  if (status.ok()) status = env->SyncDir(dir).WithContext("log: syncing directory " + dir);
  if (status.ok()) return file;
  file.reset();
  if (!env->RemoveFile(path).ok() || !env->SyncDir(dir).ok()) *stray = path;
  return status;
}

}  // namespace

LogWriter::LogWriter(Env* env, std::string dir, const LogWriterOptions& options, uint64_t next_lsn)
    : env_(env),
      dir_(std::move(dir)),
      options_(options),
      active_first_lsn_(next_lsn),
      next_lsn_(next_lsn),
      synced_through_lsn_(next_lsn) {}

LogWriter::~LogWriter() = default;

Result<std::unique_ptr<LogWriter>> LogWriter::Open(Env* env, const std::string& dir, uint64_t next_lsn,
                                                   const LogWriterOptions& options) {
  return Open(env, dir, next_lsn, next_lsn, options);
}

Result<std::unique_ptr<LogWriter>> LogWriter::Open(Env* env, const std::string& dir, uint64_t next_lsn,
                                                   uint64_t previous_end_lsn,
                                                   const LogWriterOptions& options) {
  if (next_lsn == 0) {
    return Status::InvalidArgument("log: next_lsn must be >= 1 (LSN 0 is never used)");
  }
  if (previous_end_lsn > next_lsn) {
    return Status::InvalidArgument("log: the previous end " + std::to_string(previous_end_lsn) +
                                   " lies beyond next_lsn " + std::to_string(next_lsn));
  }
  if (options.segment_bytes == 0 || options.release_roll_bytes == 0 || options.max_unsynced_bytes == 0) {
    return Status::InvalidArgument(
        "log: segment_bytes, release_roll_bytes and max_unsynced_bytes must be > 0");
  }
  const bool dir_existed = env->FileExists(dir);
  CAIRN_RETURN_IF_ERROR(env->CreateDirs(dir).WithContext("log: creating " + dir));
  if (!dir_existed) {
    // The new directory's own entry must survive a power cut too.
    CAIRN_RETURN_IF_ERROR(env->SyncDir(DirName(dir)).WithContext("log: syncing parent of " + dir));
  }

  std::unique_ptr<LogWriter> writer(new LogWriter(env, dir, options, next_lsn));
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> names, env->ListDir(dir));
  std::map<uint64_t, uint64_t> older_segment_bytes;
  for (const std::string& name : names) {
    std::optional<uint64_t> first_lsn = log_format::ParseSegmentFileName(name);
    if (!first_lsn) {
      // What a replacement of a segment interrupted by a crash leaves.
      constexpr std::string_view kTemp = ".log.tmp";
      if (name.ends_with(kTemp) && log_format::ParseSegmentFileName(name.substr(0, name.size() - 4))) {
        CAIRN_RETURN_IF_ERROR(env->RemoveFile(JoinPath(dir, name)).WithContext("log: removing leftover"));
      }
      continue;
    }
    const std::string path = JoinPath(dir, name);
    CAIRN_ASSIGN_OR_RETURN(uint64_t size, env->FileSize(path));
    if (*first_lsn >= next_lsn) {
      // A segment named after next_lsn without records is what a writer that
      // crashed before its first append leaves: it is replaced below.
      if (*first_lsn == next_lsn && size <= log_format::kSegmentHeaderSize) continue;
      return Status::FailedPrecondition("log: segment " + path + " starts at LSN " +
                                        std::to_string(*first_lsn) + ", not below next_lsn " +
                                        std::to_string(next_lsn) + "; replay the log to find the next LSN");
    }
    older_segment_bytes[*first_lsn] = size;
  }

  MutexLock lock(&writer->mutex_);
  writer->older_segment_bytes_ = std::move(older_segment_bytes);
  writer->active_previous_end_lsn_ = previous_end_lsn;
  Status started = writer->StartSegmentLocked(previous_end_lsn);
  if (!started.ok()) {
    // A full disk is a condition that passes: the writer opens unsettled and
    // creates its segment once there is room. Anything else is for the
    // operator to see now.
    if (!started.Is(StatusCode::kResourceExhausted)) return started;
    writer->failure_ = started;
  }
  return writer;
}

Status LogWriter::StartSegmentLocked(uint64_t previous_end_lsn) {
  std::string stray;
  Result<std::unique_ptr<File>> created = CreateSegmentFile(env_, dir_, next_lsn_, previous_end_lsn, &stray);
  if (!created.ok()) {
    if (!stray.empty()) stray_segment_ = stray;
    return created.status();
  }
  if (active_file_) older_segment_bytes_[active_first_lsn_] = ActiveBytesLocked();
  active_file_ = std::move(created).value();
  active_first_lsn_ = next_lsn_;
  active_previous_end_lsn_ = previous_end_lsn;
  active_durable_bytes_ = log_format::kSegmentHeaderSize;
  ClearUnsyncedLocked();
  return Status::Ok();
}

Status LogWriter::Append(uint64_t first_lsn, uint32_t count, std::string_view payload, bool sync) {
  MutexLock lock(&mutex_);
  if (closed_) return Status::FailedPrecondition("log: append after Close");
  if (count == 0) return Status::InvalidArgument("log: a record must cover at least one LSN");
  if (first_lsn != next_lsn_) {
    return Status::InvalidArgument("log: record starts at LSN " + std::to_string(first_lsn) +
                                   " but the log continues at " + std::to_string(next_lsn_));
  }
  if (count > UINT64_MAX - first_lsn) {
    return Status::InvalidArgument("log: LSN range starting at " + std::to_string(first_lsn) +
                                   " with count " + std::to_string(count) + " overflows");
  }
  if (payload.size() > log_format::kMaxPayloadBytes) {
    return Status::InvalidArgument("log: payload of " + std::to_string(payload.size()) +
                                   " bytes exceeds the limit of " +
                                   std::to_string(log_format::kMaxPayloadBytes));
  }
  CAIRN_RETURN_IF_ERROR(SettleLocked());

  const uint64_t record_bytes = log_format::kRecordHeaderSize + static_cast<uint64_t>(payload.size());
  const bool has_records = ActiveBytesLocked() > log_format::kSegmentHeaderSize;
  if (has_records && ActiveBytesLocked() + record_bytes > options_.segment_bytes) {
    CAIRN_RETURN_IF_ERROR(RollLocked());
  }
  if (!unsynced_.empty() && unsynced_.size() + record_bytes > options_.max_unsynced_bytes) {
    CAIRN_RETURN_IF_ERROR(SyncActiveLocked());
  }

  const size_t mark = unsynced_.size();
  log_format::EncodeRecord(&unsynced_, first_lsn, count, payload);
  Status written = active_file_->Append(std::string_view(unsynced_).substr(mark));
  if (!written.ok()) {
    unsynced_.resize(mark);
    const Status failure = written.WithContext("log: appending to " + active_file_->path());
    failure_ = failure;
    (void)SettleLocked();  // cut what the failed write left behind, if it can
    return failure;
  }
  next_lsn_ = first_lsn + count;
  if (!sync) return Status::Ok();
  Status synced = SyncActiveLocked();
  if (synced.ok()) return Status::Ok();
  // Not even written again: the record stays out of the log, and the next
  // settle writes only what came before it.
  unsynced_.resize(mark);
  next_lsn_ = first_lsn;
  return synced;
}

Status LogWriter::SyncActiveLocked() {
  if (unsynced_.empty()) return Status::Ok();
  Status synced = active_file_->Sync();
  if (synced.ok()) {
    active_durable_bytes_ += unsynced_.size();
    ClearUnsyncedLocked();
    synced_through_lsn_ = next_lsn_;
    return Status::Ok();
  }
  // Never sync again what a failed sync may have dropped: settle, which
  // writes the records again from memory.
  failure_ = synced.WithContext("log: syncing " + active_file_->path());
  return SettleLocked();
}

Status LogWriter::RollLocked() {
  // The full segment is durable before its successor exists, so after a
  // power cut only the last segment can have lost bytes.
  CAIRN_RETURN_IF_ERROR(SyncActiveLocked());
  Status started = StartSegmentLocked(next_lsn_);
  // The full segment stays the active one; the next call settles (removing a
  // partial successor) and rolls again.
  if (!started.ok()) failure_ = started;
  return started;
}

void LogWriter::ClearUnsyncedLocked() {
  unsynced_.clear();
  if (unsynced_.capacity() > kRetainedBufferBytes) std::string().swap(unsynced_);
}

Status LogWriter::SettleLocked() {
  if (failure_.ok()) return Status::Ok();
  if (closed_) return failure_;
  if (Status removed = RemoveStrayLocked(); !removed.ok()) {
    return Status(removed.code(),
                  failure_.message() + "; the log is not back in a known state yet: " + removed.message());
  }
  Status rewritten = RewriteActiveLocked();
  if (rewritten.ok()) {
    failure_ = Status::Ok();
    return Status::Ok();
  }
  Status abandoned = AbandonActiveLocked();
  if (abandoned.ok()) {
    failure_ = Status::Ok();
    return Status::Ok();
  }
  // The error that stands in the way now decides the code (a full disk, a
  // read-only filesystem ...), not the one that started it.
  const Status& in_the_way = rewritten.Is(StatusCode::kFailedPrecondition) ? abandoned : rewritten;
  return Status(in_the_way.code(), failure_.message() + "; the log is not back in a known state yet: " +
                                       rewritten.message() + "; " + abandoned.message());
}

Status LogWriter::RemoveStrayLocked() {
  if (stray_segment_.empty()) return Status::Ok();
  if (env_->FileExists(stray_segment_)) {
    CAIRN_RETURN_IF_ERROR(env_->RemoveFile(stray_segment_).WithContext("log: removing partial segment"));
  }
  CAIRN_RETURN_IF_ERROR(env_->SyncDir(dir_).WithContext("log: syncing directory " + dir_));
  stray_segment_.clear();
  return Status::Ok();
}

Status LogWriter::RewriteActiveLocked() {
  if (!active_file_) return Status::FailedPrecondition("log: no active segment");
  const std::string& path = active_file_->path();
  const uint64_t expected_size = ActiveBytesLocked();
  // Cutting back what is already the right length would change nothing; a
  // segment just created by AbandonActiveLocked is.
  Result<uint64_t> current_size = active_file_->Size();
  if (!current_size.ok() || *current_size != active_durable_bytes_) {
    CAIRN_RETURN_IF_ERROR(active_file_->Truncate(active_durable_bytes_)
                              .WithContext("log: cutting " + path + " back to its last synced length"));
  }
  if (!unsynced_.empty()) {
    CAIRN_RETURN_IF_ERROR(
        active_file_->Append(unsynced_).WithContext("log: writing unsynced records again to " + path));
  }
  CAIRN_RETURN_IF_ERROR(active_file_->Sync().WithContext("log: syncing " + path + " after cutting it back"));
  CAIRN_ASSIGN_OR_RETURN(uint64_t size, active_file_->Size());
  if (size != expected_size) {
    return Status::IOError("log: " + path + " holds " + std::to_string(size) +
                           " bytes after it was cut back and written again, not " +
                           std::to_string(expected_size));
  }
  active_durable_bytes_ = expected_size;
  ClearUnsyncedLocked();
  synced_through_lsn_ = next_lsn_;
  return Status::Ok();
}

Status LogWriter::AbandonActiveLocked() {
  // The new segment starts where the durable records end. When that is the
  // active segment's own start (it holds nothing durable), it replaces the
  // active segment under the same name and the same declaration.
  const uint64_t first_lsn = synced_through_lsn_;
  const bool replace = !active_file_ || first_lsn == active_first_lsn_;
  const uint64_t previous_end = replace ? active_previous_end_lsn_ : first_lsn;
  const std::string path = JoinPath(dir_, log_format::SegmentFileName(first_lsn));
  std::unique_ptr<File> file;
  if (replace) {
    active_file_.reset();
    CAIRN_RETURN_IF_ERROR(
        env_->WriteFileAtomically(path, log_format::EncodeSegmentHeader(first_lsn, previous_end))
            .WithContext("log: replacing " + path));
    CAIRN_ASSIGN_OR_RETURN(file, env_->OpenFile(path, OpenMode::kReadWrite));
  } else {
    std::string stray;
    Result<std::unique_ptr<File>> created = CreateSegmentFile(env_, dir_, first_lsn, previous_end, &stray);
    if (!created.ok()) {
      if (!stray.empty()) stray_segment_ = stray;
      return created.status();
    }
    file = std::move(created).value();
    // What the old segment holds past the new one's declared start is never
    // replayed; its size on disk is what it takes until it is removed.
    Result<uint64_t> old_size = active_file_->Size();
    older_segment_bytes_[active_first_lsn_] = old_size.ok() ? *old_size : active_durable_bytes_;
  }
  // From here the new segment is the active one, settled or not.
  active_file_ = std::move(file);
  active_first_lsn_ = first_lsn;
  active_previous_end_lsn_ = previous_end;
  active_durable_bytes_ = log_format::kSegmentHeaderSize;
  return RewriteActiveLocked();
}

Status LogWriter::Settle() {
  MutexLock lock(&mutex_);
  return SettleLocked();
}

Status LogWriter::Failure() const {
  MutexLock lock(&mutex_);
  return failure_;
}

Status LogWriter::StartNewSegment() {
  MutexLock lock(&mutex_);
  if (closed_) return Status::FailedPrecondition("log: new segment after Close");
  CAIRN_RETURN_IF_ERROR(SettleLocked());
  if (ActiveBytesLocked() <= log_format::kSegmentHeaderSize) return Status::Ok();
  return RollLocked();
}

Status LogWriter::Sync() {
  MutexLock lock(&mutex_);
  if (closed_) return Status::Ok();
  if (!failure_.ok()) return SettleLocked();
  return SyncActiveLocked();
}

uint64_t LogWriter::SyncedThroughLsn() const {
  MutexLock lock(&mutex_);
  return synced_through_lsn_;
}

uint64_t LogWriter::NextLsn() const {
  MutexLock lock(&mutex_);
  return next_lsn_;
}

uint64_t LogWriter::BytesOnDisk() const {
  MutexLock lock(&mutex_);
  uint64_t total = active_file_ ? ActiveBytesLocked() : 0;
  for (const auto& [first_lsn, bytes] : older_segment_bytes_) total += bytes;
  return total;
}

Status LogWriter::ReleaseBelow(uint64_t lsn) {
  {
    MutexLock lock(&mutex_);
    const uint64_t active_bytes = ActiveBytesLocked();
    const bool releases_active = failure_.ok() && !closed_ && active_file_ &&
                                 active_bytes > log_format::kSegmentHeaderSize && active_first_lsn_ < lsn;
    if (releases_active && (lsn >= next_lsn_ || active_bytes >= options_.release_roll_bytes)) {
      CAIRN_RETURN_IF_ERROR(RollLocked());
    }
  }
  return RemoveSegmentsBelow(lsn);
}

Status LogWriter::RemoveSegmentsBelow(uint64_t lsn) {
  // The removals run without the mutex: only segments before the active one
  // go, and a concurrent roll only adds a newer one. The mutex guards the
  // bookkeeping that BytesOnDisk reads from other threads.
  std::vector<uint64_t> removable;
  {
    MutexLock lock(&mutex_);
    for (auto it = older_segment_bytes_.begin(); it != older_segment_bytes_.end(); ++it) {
      auto successor = std::next(it);
      const uint64_t end_lsn = successor == older_segment_bytes_.end() ? active_first_lsn_ : successor->first;
      if (end_lsn > lsn) break;
      removable.push_back(it->first);
    }
  }
  for (uint64_t first_lsn : removable) {
    const std::string path = JoinPath(dir_, log_format::SegmentFileName(first_lsn));
    CAIRN_RETURN_IF_ERROR(env_->RemoveFile(path).WithContext("log: removing " + path));
    // One directory sync per removal keeps the removals in order on disk: a
    // power cut can leave old segments behind, never a hole between segments.
    CAIRN_RETURN_IF_ERROR(env_->SyncDir(dir_).WithContext("log: syncing directory " + dir_));
    MutexLock lock(&mutex_);
    older_segment_bytes_.erase(first_lsn);
  }
  return Status::Ok();
}

Status LogWriter::Close() {
  MutexLock lock(&mutex_);
  if (closed_) return Status::Ok();
  Status status = SettleLocked();
  if (status.ok() && !unsynced_.empty()) {
    const std::string path = active_file_->path();
    status = SyncActiveLocked().WithContext("log: closing " + path);
  }
  closed_ = true;
  active_file_.reset();
  return status;
}

}  // namespace cairn
