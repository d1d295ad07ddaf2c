// PeriodFiles: the open period files of one data directory, kept in a small
// LRU cache of handles (<data_dir>/<table>/<period stem>.db).
//
// A period file has exactly one SQLite connection at a time: a handle opened
// read-only is reopened writable in place (the same PeriodHandle object) the
// first time a late seal, the compaction or the quota needs to write, so a
// caller that holds the handle keeps using it.
//
// Thread-safety: every method may be called from any thread. A handle's file
// is used only under the handle's mutex. Lock order: the cache's mutex, then
// a handle's mutex (never the reverse).
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <string>

#include "cairn/platform/env.h"
#include "cairn/platform/mutex.h"
#include "storage/period_file.h"

namespace cairn {

// One open period file; its mutex serialises use of the single connection.
struct PeriodHandle {
  Mutex mutex;
  std::unique_ptr<PeriodFile> file PT_GUARDED_BY(mutex);
  // The table options this handle last stored in the file's meta.
  std::string table_options_stored GUARDED_BY(mutex);
};

// What a caller of PeriodFiles::Get will do with the file.
enum class PeriodAccess : uint8_t {
  kRead,    // must exist; old periods open read-only with the small cache
  kWrite,   // must exist; opened (or reopened) writable
  kCreate,  // created if missing; writable
};

class PeriodFiles {
 public:
  struct Options {
    // SQLite page cache of the current and the next period (the writer's).
    int writer_cache_kib = 8 * 1024;
    // SQLite page cache of older, read-mostly periods.
    int reader_cache_kib = 512;
    // Handles beyond this many are closed, least recently used first, when
    // nobody holds them.
    size_t max_open = 8;
  };

  // `env` and `vfs_name` (an SQLite VFS over `env`, registered before the
  // first Get) must outlive this object. Which periods are current (and get
  // the writer's cache) is judged by env->NowUnixNanos().
  PeriodFiles(Env* env, std::string data_dir, std::string vfs_name, const Options& options);
  ~PeriodFiles();
  PeriodFiles(const PeriodFiles&) = delete;
  PeriodFiles& operator=(const PeriodFiles&) = delete;

  // <data_dir>/<table>
  std::string TableDir(const std::string& table) const;
  // <data_dir>/<table>/<stem of period, start>.db
  std::string PeriodPath(const std::string& table, Period period, int64_t start) const;

  // The handle of one period file, opened (or reopened writable) as `access`
  // needs. NotFound naming the path when the file is missing and `access`
  // is not kCreate. A file kCreate creates but cannot finish is removed
  // again; a new file's directory entry is synced before this returns.
  Result<std::shared_ptr<PeriodHandle>> Get(const std::string& table, Period period, int64_t start,
                                            PeriodAccess access) EXCLUDES(cache_mutex_);

  // Closes and forgets the cached handles of `table`'s period starting at
  // `start_or_all`, or of all its periods for INT64_MIN. A caller still
  // holding one keeps a closed handle: forget only files no one else uses
  // (a dropped period or table).
  void Forget(const std::string& table, int64_t start_or_all) EXCLUDES(cache_mutex_);

  // Closes every cached handle; the first error, the rest are still closed.
  Status CloseAll() EXCLUDES(cache_mutex_);

  // How many handles are cached now (open files).
  size_t OpenCount() const EXCLUDES(cache_mutex_);

  // How many times a file was opened since construction: Get calls that
  // missed the cache (or reopened a read-only handle writable).
  uint64_t OpensSinceStart() const { return opens_.load(std::memory_order_relaxed); }

 private:
  struct Entry {
    std::string path;
    std::string table;
    int64_t start;
    std::shared_ptr<PeriodHandle> handle;
  };
  // Opens the file of a handle not in the cache.
  Result<std::shared_ptr<PeriodHandle>> OpenNew(const std::string& path, const std::string& table, Period period,
                                                int64_t start, bool writable, bool exists, int cache_kib);
  // Closes the least recently used handles nobody holds, down to max_open.
  void EvictLocked() REQUIRES(cache_mutex_);

  Env* const env_;
  const std::string data_dir_;
  const std::string vfs_name_;
  const Options options_;

  // Taken before any PeriodHandle::mutex.
  mutable Mutex cache_mutex_;
  // Most recently used first.
  std::list<Entry> cache_ GUARDED_BY(cache_mutex_);
  std::atomic<uint64_t> opens_{0};
};

}  // namespace cairn
