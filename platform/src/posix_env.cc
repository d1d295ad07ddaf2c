// The POSIX Env: the one place where cairn calls the operating system for
// clocks, files, ttys, randomness and threads. Serial ports are
// posix_serial.cc's, sockets posix_net.cc's.
#include <algorithm>
#include <cerrno>
#include <ctime>
#include <limits>
#include <map>
#include <utility>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/timex.h>
#include <sys/types.h>
#include <unistd.h>

#include "cairn/platform/env.h"
#include "cairn/platform/mutex.h"

#include "posix_descriptor.h"
#include "posix_error.h"
#include "posix_net.h"
#include "posix_serial.h"
#include "posix_write_counters.h"

namespace cairn {
namespace {

using platform_internal::ClockNanos;
using platform_internal::CloseDescriptor;
using platform_internal::ErrorSource;
using platform_internal::PosixError;

// Off_t must be 64 bits even on 32-bit ARM, or files past 2 GiB break
// silently; platform/CMakeLists.txt sets _FILE_OFFSET_BITS=64 for that.
static_assert(sizeof(off_t) == 8, "cairn needs a 64-bit off_t (_FILE_OFFSET_BITS=64)");

class PosixFile final : public File {
 public:
  PosixFile(int fd, std::string path, bool writable, uint64_t append_offset)
      : fd_(fd), path_(std::move(path)), writable_(writable), append_offset_(append_offset) {}
  ~PosixFile() override { CloseDescriptor(fd_); }

  PosixFile(const PosixFile&) = delete;
  PosixFile& operator=(const PosixFile&) = delete;

  Result<size_t> ReadAt(uint64_t offset, size_t n, char* dst) override {
    size_t done = 0;
    while (done < n) {
      ssize_t got = ::pread(fd_, dst + done, n - done, static_cast<off_t>(offset + done));
      if (got < 0) {
        if (errno == EINTR) continue;
        return PosixError("read", path_, errno);
      }
      if (got == 0) break;
      done += static_cast<size_t>(got);
    }
    return done;
  }

  Status WriteAt(uint64_t offset, std::string_view data) override {
    CAIRN_RETURN_IF_ERROR(CheckWritable());
    CAIRN_RETURN_IF_ERROR(WriteFully(offset, data));
    append_offset_ = std::max(append_offset_, offset + data.size());
    return Status::Ok();
  }

  Status Append(std::string_view data) override {
    CAIRN_RETURN_IF_ERROR(CheckWritable());
    CAIRN_RETURN_IF_ERROR(WriteFully(append_offset_, data));
    append_offset_ += data.size();
    return Status::Ok();
  }

  Status Truncate(uint64_t size) override {
    CAIRN_RETURN_IF_ERROR(CheckWritable());
    if (size > static_cast<uint64_t>(std::numeric_limits<off_t>::max())) {
      return Status::InvalidArgument("truncate " + path_ + ": size " + std::to_string(size) + " too large");
    }
    for (;;) {
      if (::ftruncate(fd_, static_cast<off_t>(size)) == 0) break;
      if (errno != EINTR) return PosixError("truncate", path_, errno);
    }
    append_offset_ = size;
    return Status::Ok();
  }

  Status Sync() override {
    for (;;) {
      if (::fdatasync(fd_) == 0) return Status::Ok();
      if (errno != EINTR) return PosixError("fdatasync", path_, errno);
    }
  }

  Result<uint64_t> Size() override {
    struct stat info = {};
    if (::fstat(fd_, &info) != 0) return PosixError("fstat", path_, errno);
    return static_cast<uint64_t>(info.st_size);
  }

  const std::string& path() const override { return path_; }

 private:
  Status CheckWritable() const {
    if (!writable_) return Status::FailedPrecondition("write " + path_ + ": file was opened read-only");
    return Status::Ok();
  }

  Status WriteFully(uint64_t offset, std::string_view data) {
    while (!data.empty()) {
      ssize_t written = ::pwrite(fd_, data.data(), data.size(), static_cast<off_t>(offset));
      if (written < 0) {
        if (errno == EINTR) continue;
        return PosixError("write", path_, errno);
      }
      offset += static_cast<uint64_t>(written);
      data.remove_prefix(static_cast<size_t>(written));
    }
    return Status::Ok();
  }

  const int fd_;
  const std::string path_;
  const bool writable_;
  // Append writes with pwrite at this offset instead of using O_APPEND, so the
  // same descriptor serves WriteAt too (O_APPEND would redirect every pwrite
  // to the end on Linux).
  uint64_t append_offset_;
};

// Locks held by this process, keyed by file identity (device, inode) so that
// two spellings of one path collide. The value is the pid of the process that
// took the lock: a child created by fork() inherits this table but not the
// locks (or, with open-file-description locks, shares them without owning
// them), so entries of another pid do not count as "held by this process".
struct FileIdentity {
  dev_t device;
  ino_t inode;
  bool operator<(const FileIdentity& other) const {
    return device != other.device ? device < other.device : inode < other.inode;
  }
};

// The files this process holds a FileLock on, and by which pid (a forked
// child inherits the table but not the locks).
struct LockTable {
  Mutex mutex;
  std::map<FileIdentity, pid_t> holders GUARDED_BY(mutex);
};
LockTable& Locks() {
  static LockTable* const table = new LockTable;
  return *table;
}

// Tries an exclusive lock on the whole of `fd`. Open-file-description locks
// are preferred: classic POSIX locks are dropped when the process closes *any*
// descriptor of the file, which other code (SQLite, a backup tool) may do.
// Where the kernel or an emulator lacks them (EINVAL), classic locks serve.
int SetLock(int fd, short type, bool* used_ofd) {
  struct flock request = {};
  request.l_type = type;
  request.l_whence = SEEK_SET;
  request.l_start = 0;
  request.l_len = 0;
#ifdef F_OFD_SETLK
  if (*used_ofd) {
    request.l_pid = 0;
    if (::fcntl(fd, F_OFD_SETLK, &request) == 0) return 0;
    if (errno != EINVAL) return -1;
    *used_ofd = false;
  }
#else
  *used_ofd = false;
#endif
  return ::fcntl(fd, F_SETLK, &request);
}

class PosixFileLock final : public FileLock {
 public:
  PosixFileLock(int fd, std::string path, FileIdentity identity, bool used_ofd)
      : fd_(fd), path_(std::move(path)), identity_(identity), owner_(::getpid()), used_ofd_(used_ofd) {}

  ~PosixFileLock() override {
    if (::getpid() == owner_) {
      // Only the owner unlocks: a forked child sharing an open file
      // description would otherwise release the parent's lock.
      bool used_ofd = used_ofd_;
      SetLock(fd_, F_UNLCK, &used_ofd);
      LockTable& table = Locks();
      MutexLock guard(&table.mutex);
      auto it = table.holders.find(identity_);
      if (it != table.holders.end() && it->second == owner_) table.holders.erase(it);
    }
    CloseDescriptor(fd_);
  }

  PosixFileLock(const PosixFileLock&) = delete;
  PosixFileLock& operator=(const PosixFileLock&) = delete;

  const std::string& path() const override { return path_; }

 private:
  const int fd_;
  const std::string path_;
  const FileIdentity identity_;
  const pid_t owner_;
  const bool used_ofd_;
};

class PosixEnv final : public Env {
 public:
  int64_t NowUnixNanos() override { return ClockNanos(CLOCK_REALTIME); }
  int64_t MonotonicNanos() override { return ClockNanos(CLOCK_MONOTONIC); }

  bool WallClockSynchronized() override {
    // modes 0 only reads the kernel's clock discipline state. The return
    // value is the clock state: TIME_ERROR when unsynchronised; STA_UNSYNC
    // is the flag NTP clients clear once they have set the clock.
    struct timex state = {};
    const int clock_state = ::adjtimex(&state);
    if (clock_state < 0 || clock_state == TIME_ERROR) return false;
    return (state.status & STA_UNSYNC) == 0;
  }

  std::string BootId() override {
    // The kernel makes a random UUID at each boot; reading it needs no
    // privilege. A missing file (another kernel, a container without /proc)
    // leaves the boot unknown.
    auto id = ReadFileToString("/proc/sys/kernel/random/boot_id");
    if (!id.ok()) return "";
    std::string out = std::move(id).value();
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
  }

  void SleepForMicros(int64_t micros) override {
    if (micros <= 0) return;
    struct timespec remaining = {};
    remaining.tv_sec = static_cast<time_t>(micros / 1000000);
    remaining.tv_nsec = static_cast<long>((micros % 1000000) * 1000);
    while (::nanosleep(&remaining, &remaining) != 0 && errno == EINTR) {
    }
  }

  Result<std::unique_ptr<File>> OpenFile(const std::string& path, OpenMode mode) override {
    int flags = O_CLOEXEC;
    switch (mode) {
      case OpenMode::kReadOnly:
        flags |= O_RDONLY;
        break;
      case OpenMode::kReadWrite:
        flags |= O_RDWR | O_CREAT;
        break;
      case OpenMode::kCreateTruncate:
        flags |= O_RDWR | O_CREAT | O_TRUNC;
        break;
      case OpenMode::kCreateExclusive:
        flags |= O_RDWR | O_CREAT | O_EXCL;
        break;
    }
    int fd = OpenRetrying(path.c_str(), flags, 0644);
    if (fd < 0) return PosixError("open", path, errno);
    struct stat info = {};
    if (::fstat(fd, &info) != 0) {
      Status error = PosixError("fstat", path, errno);
      CloseDescriptor(fd);
      return error;
    }
    if (S_ISDIR(info.st_mode)) {
      CloseDescriptor(fd);
      return PosixError("open", path, EISDIR);
    }
    return std::unique_ptr<File>(std::make_unique<PosixFile>(fd, path, mode != OpenMode::kReadOnly,
                                                             static_cast<uint64_t>(info.st_size)));
  }

  bool FileExists(const std::string& path) override {
    struct stat info = {};
    return ::stat(path.c_str(), &info) == 0;
  }

  Result<uint64_t> FileSize(const std::string& path) override {
    struct stat info = {};
    if (::stat(path.c_str(), &info) != 0) return PosixError("stat", path, errno);
    return static_cast<uint64_t>(info.st_size);
  }

  Result<uint32_t> FileMode(const std::string& path) override {
    struct stat info = {};
    if (::stat(path.c_str(), &info) != 0) return PosixError("stat", path, errno);
    return static_cast<uint32_t>(info.st_mode & 07777);
  }

  Status SetFileMode(const std::string& path, uint32_t mode) override {
    if (::chmod(path.c_str(), static_cast<mode_t>(mode & 07777)) != 0)
      return PosixError("chmod", path, errno);
    return Status::Ok();
  }

  Status RenameFile(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return PosixError("rename", from + " to " + to, errno);
    return Status::Ok();
  }

  Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return PosixError("unlink", path, errno);
    return Status::Ok();
  }

  Status CreateDirs(const std::string& path) override {
    if (path.empty()) return Status::InvalidArgument("mkdir: empty path");
    // Creates each prefix in turn; EEXIST is fine as long as it is a
    // directory (another thread or process may be creating the same tree).
    size_t position = 0;
    while (position != std::string::npos) {
      position = path.find('/', position + 1);
      std::string prefix = path.substr(0, position);
      if (prefix.empty() || prefix.back() == '/') continue;
      if (::mkdir(prefix.c_str(), 0755) == 0) continue;
      int error_number = errno;
      if (error_number != EEXIST) return PosixError("mkdir", prefix, error_number);
      struct stat info = {};
      if (::stat(prefix.c_str(), &info) != 0) return PosixError("stat", prefix, errno);
      if (!S_ISDIR(info.st_mode)) return PosixError("mkdir", prefix, ENOTDIR);
    }
    return Status::Ok();
  }

  Status RemoveDir(const std::string& path) override {
    if (::rmdir(path.c_str()) != 0) return PosixError("rmdir", path, errno);
    return Status::Ok();
  }

  Status SyncDir(const std::string& path) override {
    int fd = OpenRetrying(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (fd < 0) return PosixError("open directory", path, errno);
    Status status;
    for (;;) {
      if (::fsync(fd) == 0) break;
      if (errno != EINTR) {
        status = PosixError("fsync directory", path, errno);
        break;
      }
    }
    CloseDescriptor(fd);
    return status;
  }

  Result<std::vector<std::string>> ListDir(const std::string& dir) override {
    int fd = OpenRetrying(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (fd < 0) return PosixError("open directory", dir, errno);
    DIR* stream = ::fdopendir(fd);
    if (stream == nullptr) {
      Status error = PosixError("fdopendir", dir, errno);
      CloseDescriptor(fd);
      return error;
    }
    std::vector<std::string> names;
    for (;;) {
      errno = 0;
      struct dirent* entry = ::readdir(stream);
      if (entry == nullptr) {
        if (errno != 0) {
          Status error = PosixError("readdir", dir, errno);
          ::closedir(stream);
          return error;
        }
        break;
      }
      std::string_view name(entry->d_name);
      if (name == "." || name == "..") continue;
      names.emplace_back(name);
    }
    ::closedir(stream);
    std::sort(names.begin(), names.end());
    return names;
  }

  Result<uint64_t> FreeSpace(const std::string& path) override {
    struct statvfs info = {};
    if (::statvfs(path.c_str(), &info) != 0) return PosixError("statvfs", path, errno);
    return static_cast<uint64_t>(info.f_bavail) * static_cast<uint64_t>(info.f_frsize);
  }

  Result<uint64_t> ProcessBytesWritten() override { return platform_internal::ReadProcessBytesWritten(); }
  Result<uint64_t> ProcessResidentBytes() override { return platform_internal::ReadProcessResidentBytes(); }
  Result<BlockDeviceWrites> BlockDeviceWritesOf(const std::string& path) override {
    return platform_internal::ReadBlockDeviceWrites(path);
  }

  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) override {
    int fd = OpenRetrying(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return PosixError("open", path, errno);
    struct stat info = {};
    if (::fstat(fd, &info) != 0) {
      Status error = PosixError("fstat", path, errno);
      CloseDescriptor(fd);
      return error;
    }
    const FileIdentity identity{info.st_dev, info.st_ino};
    const pid_t self = ::getpid();
    LockTable& table = Locks();
    MutexLock guard(&table.mutex);
    auto held = table.holders.find(identity);
    if (held != table.holders.end() && held->second == self) {
      CloseDescriptor(fd);
      // Checked before the kernel: classic POSIX locks never conflict within
      // one process, so the kernel alone would grant this second lock.
      return Status::Busy(path + " is locked by this process (another FileLock holds it)");
    }
    bool used_ofd = true;
    if (SetLock(fd, F_WRLCK, &used_ofd) != 0) {
      int error_number = errno;
      CloseDescriptor(fd);
      if (error_number == EAGAIN || error_number == EACCES) {
        return Status::Busy(path + " is locked by another process");
      }
      return PosixError("lock", path, error_number);
    }
    table.holders[identity] = self;
    return std::unique_ptr<FileLock>(std::make_unique<PosixFileLock>(fd, path, identity, used_ofd));
  }

  Result<std::unique_ptr<SerialPort>> OpenSerialPort(const std::string& path, int baud) override {
    return platform_internal::PosixOpenSerialPort(path, baud);
  }

  Result<std::unique_ptr<TcpListener>> ListenTcp(const std::string& address, uint16_t port) override {
    return platform_internal::PosixListenTcp(address, port);
  }

  Result<std::unique_ptr<TcpConnection>> ConnectTcp(const std::string& address, uint16_t port,
                                                    int timeout_ms) override {
    return platform_internal::PosixConnectTcp(address, port, timeout_ms);
  }

  Status RandomBytes(std::span<uint8_t> out) override {
    size_t done = 0;
    while (done < out.size()) {
      ssize_t got = ::getrandom(out.data() + done, out.size() - done, 0);
      if (got < 0) {
        if (errno == EINTR) continue;
        return PosixError("getrandom", "(kernel random source)", errno);
      }
      done += static_cast<size_t>(got);
    }
    return Status::Ok();
  }

  std::thread StartThread(std::function<void()> fn) override { return std::thread(std::move(fn)); }

 private:
  static int OpenRetrying(const char* path, int flags, mode_t mode) {
    for (;;) {
      int fd = ::open(path, flags, mode);
      if (fd >= 0 || errno != EINTR) return fd;
    }
  }
};

}  // namespace

Env* Env::Default() {
  static PosixEnv* const env = new PosixEnv();
  return env;
}

}  // namespace cairn
