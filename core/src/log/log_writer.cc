#include "log/log_writer.h"

#include <iterator>
#include <optional>
#include <utility>
#include <vector>

#include "log/log_format.h"

namespace cairn {

namespace {

// A record buffer that grew for a large payload is released afterwards, so one
// large group commit does not pin its size in memory for the writer's life.
constexpr size_t kRetainedRecordBufferBytes = 1u << 20;

// Creates the segment starting at `first_lsn`, writes its header and makes the
// file and its directory entry durable before any record goes in.
Result<std::unique_ptr<File>> CreateSegmentFile(Env* env, const std::string& dir, uint64_t first_lsn) {
  const std::string path = JoinPath(dir, log_format::SegmentFileName(first_lsn));
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<File> file, env->OpenFile(path, OpenMode::kCreateTruncate));
  CAIRN_RETURN_IF_ERROR(
      file->Append(log_format::EncodeSegmentHeader(first_lsn)).WithContext("log: writing header of " + path));
  CAIRN_RETURN_IF_ERROR(file->Sync().WithContext("log: syncing new segment " + path));
  CAIRN_RETURN_IF_ERROR(env->SyncDir(dir).WithContext("log: syncing directory " + dir));
  return file;
}

}  // namespace

LogWriter::LogWriter(Env* env, std::string dir, const LogWriterOptions& options, uint64_t next_lsn)
    : env_(env),
      dir_(std::move(dir)),
      options_(options),
      next_lsn_(next_lsn),
      synced_through_lsn_(next_lsn) {}

LogWriter::~LogWriter() = default;

Result<std::unique_ptr<LogWriter>> LogWriter::Open(Env* env, const std::string& dir, uint64_t next_lsn,
                                                   const LogWriterOptions& options) {
  if (next_lsn == 0) {
    return Status::InvalidArgument("log: next_lsn must be >= 1 (LSN 0 is never used)");
  }
  if (options.segment_bytes == 0) {
    return Status::InvalidArgument("log: segment_bytes must be > 0");
  }
  const bool dir_existed = env->FileExists(dir);
  CAIRN_RETURN_IF_ERROR(env->CreateDirs(dir).WithContext("log: creating " + dir));
  if (!dir_existed) {
    // The new directory's own entry must survive a power cut too.
    CAIRN_RETURN_IF_ERROR(env->SyncDir(DirName(dir)).WithContext("log: syncing parent of " + dir));
  }

  std::unique_ptr<LogWriter> writer(new LogWriter(env, dir, options, next_lsn));
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> names, env->ListDir(dir));
  for (const std::string& name : names) {
    std::optional<uint64_t> first_lsn = log_format::ParseSegmentFileName(name);
    if (!first_lsn) continue;
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
    writer->older_segment_bytes_[*first_lsn] = size;
  }

  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<File> file, CreateSegmentFile(env, dir, next_lsn));
  std::lock_guard<std::mutex> lock(writer->mutex_);
  writer->active_file_ = std::move(file);
  writer->active_first_lsn_ = next_lsn;
  writer->active_bytes_ = log_format::kSegmentHeaderSize;
  return writer;
}

Status LogWriter::Append(uint64_t first_lsn, uint32_t count, std::string_view payload) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!poison_.ok()) return poison_;
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

  const uint64_t record_bytes = log_format::kRecordHeaderSize + static_cast<uint64_t>(payload.size());
  if (active_has_records_ && active_bytes_ + record_bytes > options_.segment_bytes) {
    CAIRN_RETURN_IF_ERROR(RollLocked());
  }

  record_buffer_.clear();
  log_format::EncodeRecord(&record_buffer_, first_lsn, count, payload);
  Status written = active_file_->Append(record_buffer_);
  if (record_buffer_.capacity() > kRetainedRecordBufferBytes) std::string().swap(record_buffer_);
  if (!written.ok()) {
    return PoisonLocked(written.WithContext("log: appending to " + active_file_->path()));
  }
  active_bytes_ += record_bytes;
  active_has_records_ = true;
  next_lsn_ = first_lsn + count;
  return Status::Ok();
}

Status LogWriter::RollLocked() {
  Status synced = active_file_->Sync();
  if (!synced.ok())
    return PoisonLocked(synced.WithContext("log: syncing full segment " + active_file_->path()));
  synced_through_lsn_ = next_lsn_;

  // The full segment stays the active one until its successor exists, so a
  // failure here leaves a consistent (poisoned) writer behind.
  Result<std::unique_ptr<File>> next = CreateSegmentFile(env_, dir_, next_lsn_);
  if (!next.ok()) return PoisonLocked(next.status());
  older_segment_bytes_[active_first_lsn_] = active_bytes_;
  active_file_ = std::move(next).value();
  active_first_lsn_ = next_lsn_;
  active_bytes_ = log_format::kSegmentHeaderSize;
  active_has_records_ = false;
  return Status::Ok();
}

Status LogWriter::PoisonLocked(const Status& status) {
  if (poison_.ok()) poison_ = status;
  return poison_;
}

Status LogWriter::StartNewSegment() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!poison_.ok()) return poison_;
  if (closed_) return Status::FailedPrecondition("log: new segment after Close");
  if (!active_has_records_) return Status::Ok();
  return RollLocked();
}

Status LogWriter::Sync() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!poison_.ok()) return poison_;
  if (closed_ || synced_through_lsn_ == next_lsn_) return Status::Ok();
  Status synced = active_file_->Sync();
  if (!synced.ok()) return PoisonLocked(synced.WithContext("log: syncing " + active_file_->path()));
  synced_through_lsn_ = next_lsn_;
  return Status::Ok();
}

uint64_t LogWriter::SyncedThroughLsn() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return synced_through_lsn_;
}

uint64_t LogWriter::NextLsn() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return next_lsn_;
}

uint64_t LogWriter::BytesOnDisk() const {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t total = active_bytes_;
  for (const auto& [first_lsn, bytes] : older_segment_bytes_) total += bytes;
  return total;
}

Status LogWriter::RemoveSegmentsBelow(uint64_t lsn) {
  // Appends are serialised with this call by the caller, so the set of older
  // segments cannot change underneath; the mutex only guards the bookkeeping
  // that BytesOnDisk reads from other threads.
  std::vector<uint64_t> removable;
  {
    std::lock_guard<std::mutex> lock(mutex_);
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
    std::lock_guard<std::mutex> lock(mutex_);
    older_segment_bytes_.erase(first_lsn);
  }
  return Status::Ok();
}

Status LogWriter::Close() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!poison_.ok()) {
    closed_ = true;
    active_file_.reset();
    return poison_;
  }
  if (closed_) return Status::Ok();
  Status synced = active_file_->Sync().WithContext("log: syncing " + active_file_->path() + " on close");
  closed_ = true;
  if (!synced.ok()) {
    active_file_.reset();
    return PoisonLocked(synced);
  }
  active_file_.reset();
  synced_through_lsn_ = next_lsn_;
  return Status::Ok();
}

}  // namespace cairn
