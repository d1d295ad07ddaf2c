// The period file cache (period_files.h).
#include "engine/sealing/period_files.h"

#include <utility>

namespace cairn {

namespace {

// Closes a handle's file under its mutex. The lock must end before the
// handle leaves the cache: that may destroy the mutex.
Status CloseHandle(PeriodHandle& handle) {
  MutexLock file_lock(&handle.mutex);
  return handle.file ? handle.file->Close() : Status::Ok();
}

}  // namespace

PeriodFiles::PeriodFiles(Env* env, std::string data_dir, std::string vfs_name, const Options& options)
    : env_(env), data_dir_(std::move(data_dir)), vfs_name_(std::move(vfs_name)), options_(options) {}

PeriodFiles::~PeriodFiles() { (void)CloseAll(); }

std::string PeriodFiles::TableDir(const std::string& table) const { return JoinPath(data_dir_, table); }

std::string PeriodFiles::PeriodPath(const std::string& table, Period period, int64_t start) const {
  return JoinPath(TableDir(table), PeriodFileStem(period, start) + ".db");
}

Result<std::shared_ptr<PeriodHandle>> PeriodFiles::Get(const std::string& table, Period period, int64_t start,
                                                       PeriodAccess access) {
  const std::string path = PeriodPath(table, period, start);
  // The current and the next period take the writes and get the writer's
  // large cache; older ones are read-mostly and get the small one.
  const int64_t current = PeriodStart(period, env_->NowUnixNanos());
  const bool hot = start == current || start == NextPeriodStart(period, current);
  const bool writable = access != PeriodAccess::kRead || hot;
  const int cache_kib = hot ? options_.writer_cache_kib : options_.reader_cache_kib;
  std::shared_ptr<PeriodHandle> handle;
  {
    MutexLock lock(&cache_mutex_);
    for (auto it = cache_.begin(); it != cache_.end(); ++it) {
      if (it->path == path) {
        cache_.splice(cache_.begin(), cache_, it);
        handle = cache_.front().handle;
        break;
      }
    }
    if (!handle) {
      const bool exists = env_->FileExists(path);
      if (!exists && access != PeriodAccess::kCreate) return Status::NotFound(path + " does not exist");
      CAIRN_ASSIGN_OR_RETURN(handle, OpenNew(path, table, period, start, writable, exists, cache_kib));
      cache_.push_front(Entry{path, table, start, handle});
      EvictLocked();
      return handle;
    }
  }
  if (writable) {
    // Exactly one connection per file: the read-only one closes before the
    // writer opens.
    MutexLock file_lock(&handle->mutex);
    if (handle->file->read_only()) {
      opens_.fetch_add(1, std::memory_order_relaxed);
      CAIRN_RETURN_IF_ERROR(handle->file->Close());
      CAIRN_ASSIGN_OR_RETURN(handle->file,
                             PeriodFile::OpenWritable(env_, vfs_name_, path, table, period, start, cache_kib));
    }
  }
  return handle;
}

Result<std::shared_ptr<PeriodHandle>> PeriodFiles::OpenNew(const std::string& path, const std::string& table,
                                                           Period period, int64_t start, bool writable, bool exists,
                                                           int cache_kib) {
  opens_.fetch_add(1, std::memory_order_relaxed);
  auto handle = std::make_shared<PeriodHandle>();
  // Nobody else can see the handle yet; the lock keeps the analysis simple.
  MutexLock file_lock(&handle->mutex);
  if (writable) {
    auto opened = PeriodFile::OpenWritable(env_, vfs_name_, path, table, period, start, cache_kib);
    if (!opened.ok() && !exists) {
      // A file this call created but could not finish (a full disk) holds
      // nothing, and would stop the next start that cannot finish it either.
      for (const std::string& file : {path, path + "-wal", path + "-journal"}) {
        if (env_->FileExists(file)) (void)env_->RemoveFile(file);
      }
    }
    CAIRN_ASSIGN_OR_RETURN(handle->file, std::move(opened));
    if (!exists) CAIRN_RETURN_IF_ERROR(env_->SyncDir(TableDir(table)));
    return handle;
  }
  auto read_only = PeriodFile::OpenReadOnly(env_, vfs_name_, path, cache_kib);
  if (read_only.ok()) {
    handle->file = std::move(read_only).value();
  } else {
    // A crash between creating a period file and committing its schema
    // leaves a file only the writer knows how to finish.
    CAIRN_ASSIGN_OR_RETURN(handle->file,
                           PeriodFile::OpenWritable(env_, vfs_name_, path, table, period, start, cache_kib));
  }
  return handle;
}

void PeriodFiles::EvictLocked() {
  for (auto it = cache_.end(); cache_.size() > options_.max_open && it != cache_.begin();) {
    --it;
    if (it->handle.use_count() == 1) {
      (void)CloseHandle(*it->handle);
      it = cache_.erase(it);
    }
  }
}

void PeriodFiles::Forget(const std::string& table, int64_t start_or_all) {
  MutexLock lock(&cache_mutex_);
  for (auto it = cache_.begin(); it != cache_.end();) {
    if (it->table == table && (start_or_all == INT64_MIN || it->start == start_or_all)) {
      (void)CloseHandle(*it->handle);
      it = cache_.erase(it);
    } else {
      ++it;
    }
  }
}

Status PeriodFiles::CloseAll() {
  MutexLock lock(&cache_mutex_);
  Status status;
  for (Entry& entry : cache_) {
    Status closed = CloseHandle(*entry.handle);
    if (status.ok()) status = closed;
  }
  cache_.clear();
  return status;
}

size_t PeriodFiles::OpenCount() const {
  MutexLock lock(&cache_mutex_);
  return cache_.size();
}

}  // namespace cairn
