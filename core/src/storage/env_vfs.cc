#include "storage/env_vfs.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <span>

#include <sqlite3.h>

#include "cairn/platform/mutex.h"

namespace cairn {
namespace {

// ---- last error ------------------------------------------------------------

thread_local Status t_last_error;

// Remembers `status` for EnvVfsLastError() and returns the SQLite code for it:
// a full disk is SQLITE_FULL whatever the operation, anything else is the
// operation's own I/O error code.
int RecordError(const Status& status, int io_code) {
  t_last_error = status;
  if (status.Is(StatusCode::kResourceExhausted)) return SQLITE_FULL;
  return io_code;
}

// ---- process-wide lock table -----------------------------------------------

// SQLite's lock levels held on one database path by the connections of this
// process. Mirrors the unix VFS's in-process bookkeeping, without OS locks:
// any number of SHARED holders, at most one of them at RESERVED or above.
struct PathLock {
  int shared_holders = 0;
  int level = SQLITE_LOCK_NONE;
};

struct LockTable {
  Mutex mutex;
  std::map<std::string, PathLock> locks GUARDED_BY(mutex);
};

LockTable& Locks() {
  // Never destroyed: connections may close during static destruction.
  static LockTable* table = new LockTable;
  return *table;
}

// ---- registry --------------------------------------------------------------

struct EnvVfs {
  sqlite3_vfs vfs = {};
  Env* env = nullptr;
  std::string name;
};

struct Registry {
  Mutex mutex;
  std::map<std::string, std::unique_ptr<EnvVfs>> vfses GUARDED_BY(mutex);
};

Registry& Vfses() {
  static Registry* registry = new Registry;
  return *registry;
}

Env* EnvOf(sqlite3_vfs* vfs) { return static_cast<EnvVfs*>(vfs->pAppData)->env; }

// ---- files -----------------------------------------------------------------

// One file opened by SQLite: either an Env file or, for nameless temporary
// files and absent read-only WALs, a byte buffer.
struct VfsFile {
  Env* env = nullptr;
  std::string path;  // empty for nameless temporary files
  std::unique_ptr<File> file;
  std::string memory;  // contents when `file` is null
  bool read_only = false;
  bool delete_on_close = false;
  // A newly created file's directory entry is durable only once the
  // directory is synced; done at the file's first sync, as the unix VFS does.
  bool sync_directory_pending = false;
  int lock_level = SQLITE_LOCK_NONE;
};

// What SQLite allocates (szOsFile bytes, zeroed) for each open file. Kept
// standard-layout so that the sqlite3_file* SQLite hands back converts to it.
struct FileHandle {
  sqlite3_file base;
  VfsFile* state;
};

VfsFile* StateOf(sqlite3_file* file) { return reinterpret_cast<FileHandle*>(file)->state; }

int FileLock(sqlite3_file* handle, int level) {
  VfsFile* f = StateOf(handle);
  if (f->lock_level >= level) return SQLITE_OK;
  if (f->path.empty()) {
    f->lock_level = level;
    return SQLITE_OK;
  }
  LockTable& table = Locks();
  MutexLock guard(&table.mutex);
  PathLock& lock = table.locks[f->path];
  // Someone else holds RESERVED or more and we want more than SHARED, or a
  // writer is waiting (PENDING) and we are a new reader.
  if (lock.level != f->lock_level && (lock.level >= SQLITE_LOCK_PENDING || level > SQLITE_LOCK_SHARED)) {
    if (lock.shared_holders == 0) table.locks.erase(f->path);
    return SQLITE_BUSY;
  }
  if (level == SQLITE_LOCK_SHARED) {
    if (lock.level == SQLITE_LOCK_NONE) lock.level = SQLITE_LOCK_SHARED;
    ++lock.shared_holders;
    f->lock_level = SQLITE_LOCK_SHARED;
    return SQLITE_OK;
  }
  if (level == SQLITE_LOCK_EXCLUSIVE && lock.shared_holders > 1) {
    // Other readers remain: keep PENDING so no new reader starts.
    lock.level = SQLITE_LOCK_PENDING;
    f->lock_level = SQLITE_LOCK_PENDING;
    return SQLITE_BUSY;
  }
  lock.level = level;
  f->lock_level = level;
  return SQLITE_OK;
}

int FileUnlock(sqlite3_file* handle, int level) {
  VfsFile* f = StateOf(handle);
  if (f->lock_level <= level) return SQLITE_OK;
  if (f->path.empty()) {
    f->lock_level = level;
    return SQLITE_OK;
  }
  LockTable& table = Locks();
  MutexLock guard(&table.mutex);
  auto it = table.locks.find(f->path);
  if (it != table.locks.end()) {
    PathLock& lock = it->second;
    if (f->lock_level > SQLITE_LOCK_SHARED) lock.level = SQLITE_LOCK_SHARED;
    if (level == SQLITE_LOCK_NONE && --lock.shared_holders <= 0) table.locks.erase(it);
  }
  f->lock_level = level;
  return SQLITE_OK;
}

int FileCheckReservedLock(sqlite3_file* handle, int* reserved) {
  VfsFile* f = StateOf(handle);
  *reserved = 0;
  if (f->path.empty()) {
    *reserved = f->lock_level > SQLITE_LOCK_SHARED;
    return SQLITE_OK;
  }
  LockTable& table = Locks();
  MutexLock guard(&table.mutex);
  auto it = table.locks.find(f->path);
  if (it != table.locks.end()) *reserved = it->second.level > SQLITE_LOCK_SHARED;
  return SQLITE_OK;
}

int FileClose(sqlite3_file* handle) {
  VfsFile* f = StateOf(handle);
  if (f == nullptr) return SQLITE_OK;
  FileUnlock(handle, SQLITE_LOCK_NONE);
  int rc = SQLITE_OK;
  f->file.reset();
  if (f->delete_on_close && !f->path.empty()) {
    Status removed = f->env->RemoveFile(f->path);
    if (!removed.ok() && !removed.Is(StatusCode::kNotFound)) rc = RecordError(removed, SQLITE_IOERR_DELETE);
  }
  delete f;
  reinterpret_cast<FileHandle*>(handle)->state = nullptr;
  return rc;
}

int FileRead(sqlite3_file* handle, void* buffer, int amount, sqlite3_int64 offset) {
  VfsFile* f = StateOf(handle);
  char* out = static_cast<char*>(buffer);
  size_t wanted = static_cast<size_t>(amount);
  size_t got = 0;
  if (f->file == nullptr) {
    uint64_t size = f->memory.size();
    uint64_t start = static_cast<uint64_t>(offset);
    if (start < size) {
      got = static_cast<size_t>(std::min<uint64_t>(wanted, size - start));
      std::memcpy(out, f->memory.data() + start, got);
    }
  } else {
    Result<size_t> read = f->file->ReadAt(static_cast<uint64_t>(offset), wanted, out);
    if (!read.ok()) return RecordError(read.status(), SQLITE_IOERR_READ);
    got = *read;
  }
  if (got < wanted) {
    // SQLite relies on the unread tail being zeroed (a short read past the
    // end of a WAL or journal is how it finds their end).
    std::memset(out + got, 0, wanted - got);
    return SQLITE_IOERR_SHORT_READ;
  }
  return SQLITE_OK;
}

int FileWrite(sqlite3_file* handle, const void* buffer, int amount, sqlite3_int64 offset) {
  VfsFile* f = StateOf(handle);
  if (f->read_only) return SQLITE_READONLY;
  std::string_view data(static_cast<const char*>(buffer), static_cast<size_t>(amount));
  if (f->file == nullptr) {
    uint64_t end = static_cast<uint64_t>(offset) + data.size();
    if (end > f->memory.max_size()) return SQLITE_FULL;
    if (end > f->memory.size()) f->memory.resize(static_cast<size_t>(end));
    std::memcpy(f->memory.data() + offset, data.data(), data.size());
    return SQLITE_OK;
  }
  Status written = f->file->WriteAt(static_cast<uint64_t>(offset), data);
  if (!written.ok()) return RecordError(written, SQLITE_IOERR_WRITE);
  return SQLITE_OK;
}

int FileTruncate(sqlite3_file* handle, sqlite3_int64 size) {
  VfsFile* f = StateOf(handle);
  if (f->read_only) return SQLITE_READONLY;
  if (f->file == nullptr) {
    if (static_cast<uint64_t>(size) > f->memory.max_size()) return SQLITE_FULL;
    f->memory.resize(static_cast<size_t>(size));
    return SQLITE_OK;
  }
  Status truncated = f->file->Truncate(static_cast<uint64_t>(size));
  if (!truncated.ok()) return RecordError(truncated, SQLITE_IOERR_TRUNCATE);
  return SQLITE_OK;
}

int FileSync(sqlite3_file* handle, int /*flags*/) {
  VfsFile* f = StateOf(handle);
  if (f->file == nullptr || f->read_only) return SQLITE_OK;
  // NORMAL, FULL and DATAONLY all become one fdatasync: File::Sync is the
  // strongest the Env offers, and file sizes are covered by fdatasync.
  Status synced = f->file->Sync();
  if (!synced.ok()) return RecordError(synced, SQLITE_IOERR_FSYNC);
  if (f->sync_directory_pending) {
    Status directory = f->env->SyncDir(DirName(f->path));
    if (!directory.ok()) return RecordError(directory, SQLITE_IOERR_DIR_FSYNC);
    f->sync_directory_pending = false;
  }
  return SQLITE_OK;
}

int FileSize(sqlite3_file* handle, sqlite3_int64* size) {
  VfsFile* f = StateOf(handle);
  if (f->file == nullptr) {
    *size = static_cast<sqlite3_int64>(f->memory.size());
    return SQLITE_OK;
  }
  Result<uint64_t> bytes = f->file->Size();
  if (!bytes.ok()) return RecordError(bytes.status(), SQLITE_IOERR_FSTAT);
  *size = static_cast<sqlite3_int64>(*bytes);
  return SQLITE_OK;
}

int FileControl(sqlite3_file*, int, void*) { return SQLITE_NOTFOUND; }

int FileSectorSize(sqlite3_file*) { return 4096; }

// Writing a range never damages bytes outside it on a power cut (the same
// default as the unix VFS); this spares the WAL from padding every commit to
// a sector boundary.
int FileDeviceCharacteristics(sqlite3_file*) { return SQLITE_IOCAP_POWERSAFE_OVERWRITE; }

const sqlite3_io_methods kIoMethods = {
    1,  // iVersion: no shared memory, no memory mapping
    FileClose,
    FileRead,
    FileWrite,
    FileTruncate,
    FileSync,
    FileSize,
    FileLock,
    FileUnlock,
    FileCheckReservedLock,
    FileControl,
    FileSectorSize,
    FileDeviceCharacteristics,
    nullptr,  // xShmMap
    nullptr,  // xShmLock
    nullptr,  // xShmBarrier
    nullptr,  // xShmUnmap
    nullptr,  // xFetch
    nullptr,  // xUnfetch
};

// ---- VFS methods -----------------------------------------------------------

// True if `name` is the journal or WAL of a main database this VFS opened
// read-only.
bool BelongsToReadOnlyDatabase(const char* name, int type) {
  if (type != SQLITE_OPEN_WAL && type != SQLITE_OPEN_MAIN_JOURNAL) return false;
  sqlite3_file* main = sqlite3_database_file_object(name);
  if (main == nullptr || main->pMethods != &kIoMethods) return false;
  VfsFile* state = StateOf(main);
  return state != nullptr && state->read_only;
}

int VfsOpen(sqlite3_vfs* vfs, const char* name, sqlite3_file* handle, int flags, int* out_flags) {
  auto* file_handle = reinterpret_cast<FileHandle*>(handle);
  file_handle->base.pMethods = nullptr;
  file_handle->state = nullptr;
  Env* env = EnvOf(vfs);
  auto f = std::make_unique<VfsFile>();
  f->env = env;
  f->read_only = (flags & SQLITE_OPEN_READONLY) != 0;
  int type = flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_TEMP_DB | SQLITE_OPEN_TRANSIENT_DB |
                      SQLITE_OPEN_MAIN_JOURNAL | SQLITE_OPEN_TEMP_JOURNAL | SQLITE_OPEN_SUBJOURNAL |
                      SQLITE_OPEN_SUPER_JOURNAL | SQLITE_OPEN_WAL);
  if (name != nullptr) {
    f->path = name;
    f->delete_on_close = (flags & SQLITE_OPEN_DELETEONCLOSE) != 0;
    Result<std::unique_ptr<File>> opened = Status::Internal("open " + f->path + ": no open mode chosen");
    if (BelongsToReadOnlyDatabase(name, type)) {
      // A reader must neither create nor change the WAL; an absent one reads
      // as an empty in-memory file.
      f->read_only = true;
      opened = env->FileExists(f->path) ? env->OpenFile(f->path, OpenMode::kReadOnly)
                                        : Result<std::unique_ptr<File>>(std::unique_ptr<File>());
    } else if (f->read_only) {
      opened = env->OpenFile(f->path, OpenMode::kReadOnly);
    } else if ((flags & SQLITE_OPEN_CREATE) != 0) {
      bool existed = env->FileExists(f->path);
      bool exclusive = (flags & SQLITE_OPEN_EXCLUSIVE) != 0;
      opened = env->OpenFile(f->path, exclusive ? OpenMode::kCreateExclusive : OpenMode::kReadWrite);
      f->sync_directory_pending = !existed;
    } else if (env->FileExists(f->path)) {
      opened = env->OpenFile(f->path, OpenMode::kReadWrite);
    } else {
      opened = Status::NotFound("open " + f->path + ": no such file");
    }
    if (!opened.ok()) {
      RecordError(opened.status(), SQLITE_CANTOPEN);
      return SQLITE_CANTOPEN;
    }
    f->file = std::move(opened).value();
  }
  if (out_flags != nullptr) {
    *out_flags =
        f->read_only ? (flags & ~(SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) | SQLITE_OPEN_READONLY : flags;
  }
  file_handle->state = f.release();
  file_handle->base.pMethods = &kIoMethods;
  return SQLITE_OK;
}

int VfsDelete(sqlite3_vfs* vfs, const char* name, int sync_directory) {
  Env* env = EnvOf(vfs);
  std::string path(name);
  Status removed = env->RemoveFile(path);
  if (removed.Is(StatusCode::kNotFound)) return SQLITE_IOERR_DELETE_NOENT;
  if (!removed.ok()) return RecordError(removed, SQLITE_IOERR_DELETE);
  if (sync_directory) {
    Status synced = env->SyncDir(DirName(path));
    if (!synced.ok()) return RecordError(synced, SQLITE_IOERR_DIR_FSYNC);
  }
  return SQLITE_OK;
}

int VfsAccess(sqlite3_vfs* vfs, const char* name, int flags, int* result) {
  *result = 0;
  Result<uint64_t> size = EnvOf(vfs)->FileSize(name);
  if (!size.ok()) {
    if (size.status().Is(StatusCode::kNotFound)) return SQLITE_OK;
    return RecordError(size.status(), SQLITE_IOERR_ACCESS);
  }
  // As in the unix VFS, an empty file does not "exist": SQLite asks this to
  // find hot journals and WALs, and an empty one holds nothing to recover.
  *result = flags == SQLITE_ACCESS_EXISTS ? *size > 0 : 1;
  return SQLITE_OK;
}

int VfsFullPathname(sqlite3_vfs*, const char* name, int out_size, char* out) {
  // Env does no path rewriting; SQLite derives "-wal" and "-journal" names by
  // appending to whatever this returns, which is all it needs.
  size_t length = std::strlen(name);
  if (out_size <= 0 || length + 1 > static_cast<size_t>(out_size)) return SQLITE_CANTOPEN;
  std::memcpy(out, name, length + 1);
  return SQLITE_OK;
}

void* VfsDlOpen(sqlite3_vfs*, const char*) { return nullptr; }

void VfsDlError(sqlite3_vfs*, int size, char* message) {
  if (size <= 0) return;
  std::snprintf(message, static_cast<size_t>(size), "%s", "loadable extensions are not supported");
}

void (*VfsDlSym(sqlite3_vfs*, void*, const char*))(void) { return nullptr; }

void VfsDlClose(sqlite3_vfs*, void*) {}

int VfsRandomness(sqlite3_vfs* vfs, int size, char* out) {
  if (size <= 0) return 0;
  std::memset(out, 0, static_cast<size_t>(size));
  Status drawn = EnvOf(vfs)->RandomBytes(std::span<uint8_t>(reinterpret_cast<uint8_t*>(out), size));
  return drawn.ok() ? size : 0;
}

int VfsSleep(sqlite3_vfs* vfs, int micros) {
  EnvOf(vfs)->SleepForMicros(micros);
  return micros;
}

// Julian day number of the Unix epoch, in days and in milliseconds.
constexpr double kUnixEpochJulianDays = 2440587.5;
constexpr sqlite3_int64 kUnixEpochJulianMillis = 210866760000000;

int VfsCurrentTime(sqlite3_vfs* vfs, double* julian_days) {
  *julian_days = kUnixEpochJulianDays + static_cast<double>(EnvOf(vfs)->NowUnixNanos()) / 86400e9;
  return SQLITE_OK;
}

int VfsCurrentTimeInt64(sqlite3_vfs* vfs, sqlite3_int64* julian_millis) {
  *julian_millis = kUnixEpochJulianMillis + EnvOf(vfs)->NowUnixNanos() / 1000000;
  return SQLITE_OK;
}

int VfsGetLastError(sqlite3_vfs*, int size, char* message) {
  if (size > 0 && message != nullptr) {
    std::snprintf(message, static_cast<size_t>(size), "%s", t_last_error.message().c_str());
  }
  return 0;  // no errno: the Env already folded it into the message
}

}  // namespace

Status RegisterEnvVfs(Env* env, const std::string& vfs_name) {
  if (env == nullptr) return Status::InvalidArgument("RegisterEnvVfs: null Env");
  if (vfs_name.empty()) return Status::InvalidArgument("RegisterEnvVfs: empty VFS name");
  Registry& registry = Vfses();
  MutexLock guard(&registry.mutex);
  auto it = registry.vfses.find(vfs_name);
  if (it != registry.vfses.end()) {
    if (it->second->env == env) return Status::Ok();
    return Status::InvalidArgument("SQLite VFS '" + vfs_name + "' is already registered over another Env");
  }
  int rc = sqlite3_initialize();
  if (rc != SQLITE_OK) return Status::Internal(std::string("sqlite3_initialize: ") + sqlite3_errstr(rc));
  if (sqlite3_vfs_find(vfs_name.c_str()) != nullptr) {
    return Status::InvalidArgument("SQLite VFS name '" + vfs_name +
                                   "' is taken by a VFS that is not cairn's");
  }
  auto entry = std::make_unique<EnvVfs>();
  entry->env = env;
  entry->name = vfs_name;
  sqlite3_vfs& vfs = entry->vfs;
  vfs.iVersion = 2;
  vfs.szOsFile = sizeof(FileHandle);
  vfs.mxPathname = 1024;
  vfs.zName = entry->name.c_str();
  vfs.pAppData = entry.get();
  vfs.xOpen = VfsOpen;
  vfs.xDelete = VfsDelete;
  vfs.xAccess = VfsAccess;
  vfs.xFullPathname = VfsFullPathname;
  vfs.xDlOpen = VfsDlOpen;
  vfs.xDlError = VfsDlError;
  vfs.xDlSym = VfsDlSym;
  vfs.xDlClose = VfsDlClose;
  vfs.xRandomness = VfsRandomness;
  vfs.xSleep = VfsSleep;
  vfs.xCurrentTime = VfsCurrentTime;
  vfs.xGetLastError = VfsGetLastError;
  vfs.xCurrentTimeInt64 = VfsCurrentTimeInt64;
  rc = sqlite3_vfs_register(&vfs, /*makeDflt=*/0);
  if (rc != SQLITE_OK) {
    return Status::Internal("sqlite3_vfs_register '" + vfs_name + "': " + sqlite3_errstr(rc));
  }
  registry.vfses.emplace(vfs_name, std::move(entry));
  return Status::Ok();
}

Status UnregisterEnvVfs(const std::string& vfs_name) {
  Registry& registry = Vfses();
  MutexLock guard(&registry.mutex);
  auto it = registry.vfses.find(vfs_name);
  if (it == registry.vfses.end()) return Status::NotFound("no Env VFS named '" + vfs_name + "'");
  int rc = sqlite3_vfs_unregister(&it->second->vfs);
  if (rc != SQLITE_OK) {
    return Status::Internal("sqlite3_vfs_unregister '" + vfs_name + "': " + sqlite3_errstr(rc));
  }
  registry.vfses.erase(it);
  return Status::Ok();
}

Status EnvVfsLastError() { return t_last_error; }

void ClearEnvVfsLastError() { t_last_error = Status(); }

std::string VfsNameFor(Env* env) {
  char name[48];
  std::snprintf(name, sizeof name, "cairn-env-%p", static_cast<void*>(env));
  return name;
}

}  // namespace cairn
