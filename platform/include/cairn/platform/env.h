// Env: the only door from cairn to the operating system.
//
// Everything that reads a clock, touches a file, opens a tty or a TCP
// socket, draws random bytes or starts a thread goes through an Env. The engine and the daemon take
// an Env* at construction, so tests can substitute a manual clock or a
// filesystem that fails on purpose or forgets unsynced bytes (tests/support).
//
// Paths are plain strings, absolute or relative to the process's working
// directory; Env does no path rewriting.
//
// Thread-safety: every Env method may be called from any thread concurrently.
// File, FileLock, SerialPort, TcpConnection and TcpListener objects are not
// thread-safe: one owner at a time, except where a method says otherwise.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "cairn/platform/status.h"
#include "cairn/platform/write_counters.h"

namespace cairn {

// An open file. Writes reach the OS page cache when the call returns; they are
// durable only after Sync() returns OK (a power cut may drop anything written
// since the last Sync). Closing does not sync. Errors name the path and the
// OS's reason; a handle opened kReadOnly answers every write, append and
// truncate with FailedPrecondition.
class File {
 public:
  virtual ~File() = default;

  // Reads up to `n` bytes at `offset` into `dst`. Returns the number read,
  // which is short only at end of file (0 at or past the end).
  virtual Result<size_t> ReadAt(uint64_t offset, size_t n, char* dst) = 0;

  // Writes all of `data` at `offset`, extending the file if needed.
  virtual Status WriteAt(uint64_t offset, std::string_view data) = 0;

  // Writes all of `data` at the end of the file as this handle knows it: the
  // size at open, moved by this handle's own writes and truncations. (Not
  // O_APPEND: another handle appending to the same file concurrently would
  // be overwritten.)
  virtual Status Append(std::string_view data) = 0;

  // Sets the file's size, dropping or zero-extending the tail.
  virtual Status Truncate(uint64_t size) = 0;

  // Makes the file's data durable (fdatasync). Does not sync the directory
  // entry of a newly created file: use Env::SyncDir for that.
  virtual Status Sync() = 0;

  // Current size in bytes, including unsynced writes.
  virtual Result<uint64_t> Size() = 0;

  // The path the file was opened with.
  virtual const std::string& path() const = 0;
};

// How Env::OpenFile treats an existing or missing file. Every mode but
// kReadOnly opens the file for reading and writing.
enum class OpenMode : uint8_t {
  kReadOnly,         // must exist; writes fail
  kReadWrite,        // opened read-write; created (empty) if missing
  kCreateTruncate,   // created if missing, truncated to 0 if present
  kCreateExclusive,  // must not exist; AlreadyExists otherwise
};

// An advisory lock on a file, held until this object is destroyed. Used for
// <data_dir>/LOCK so two processes never open one data directory.
class FileLock {
 public:
  virtual ~FileLock() = default;
  virtual const std::string& path() const = 0;
};

// A serial line (or a pseudo-terminal's slave side) in raw mode: no echo, no
// line editing, no signals, 8 data bits, no parity, one stop bit.
class SerialPort {
 public:
  virtual ~SerialPort() = default;

  // Waits up to `timeout_ms` (0: do not wait) for input, then reads what is
  // available, at most `n` bytes. Returns 0 when the timeout passed with
  // nothing to read (or n is 0); Unavailable when the other side hung up
  // (USB adapter unplugged, pseudo-terminal master closed).
  virtual Result<size_t> Read(char* dst, size_t n, int timeout_ms) = 0;

  // Writes all of `data`, blocking while the line drains. TimedOut when
  // the port took no byte for `stall_timeout_ms` (< 0: wait as long as it
  // takes): a terminal that stopped reading, a cable pulled with hardware
  // flow control on. Output still queued in the driver is then discarded,
  // and the rest of `data` is not written; the port stays usable.
  virtual Status Write(std::string_view data, int stall_timeout_ms) = 0;

  virtual const std::string& path() const = 0;
};

// The names a verified client certificate carries (mutual TLS), for
// mapping it to an identity. Values are as in the certificate, unchecked
// beyond the certificate's own verification.
struct PeerCertificate {
  // The subject's commonName; empty when the subject has none.
  std::string common_name;
  // The subjectAltName entries of type dNSName, rfc822Name and
  // uniformResourceIdentifier, in certificate order, as their plain text.
  std::vector<std::string> alternative_names;
};

// A connected TCP stream (accepted by a TcpListener or opened by
// Env::ConnectTcp). Closing it closes the socket; SIGPIPE is never raised.
class TcpConnection {
 public:
  virtual ~TcpConnection() = default;

  // Reads up to `n` bytes, waiting at most `timeout_ms` (< 0: no limit) for
  // the first to arrive. Returns the number read, 0 when the peer closed its
  // side in order. TimedOut when nothing arrived in time; Unavailable when the
  // connection was reset or Shutdown() was called.
  virtual Result<size_t> Read(char* dst, size_t n, int timeout_ms) = 0;

  // Sends all of `data`, waiting at most `timeout_ms` in total (< 0: no
  // limit) for the peer to make room. TimedOut or Unavailable (peer gone,
  // Shutdown() called); then an unknown prefix of `data` was sent.
  virtual Status Write(std::string_view data, int timeout_ms) = 0;

  // Ends the connection in both directions and wakes a Read or Write blocked
  // in another thread. The one method that may be called concurrently with
  // the others. Idempotent.
  virtual void Shutdown() = 0;

  // The peer's numeric address without the port: "127.0.0.1", "::1".
  virtual const std::string& peer_address() const = 0;

  // The client certificate the peer presented and that verified, on the
  // server side of a mutual-TLS connection; nullptr everywhere else.
  virtual const PeerCertificate* peer_certificate() const { return nullptr; }
};

// A listening TCP socket.
class TcpListener {
 public:
  virtual ~TcpListener() = default;

  // Waits at most `timeout_ms` (< 0: no limit) for a connection. Returns it,
  // or null when none came in time. Connections that failed before they
  // were accepted are skipped silently.
  virtual Result<std::unique_ptr<TcpConnection>> Accept(int timeout_ms) = 0;

  // The bound port: the one the kernel chose when 0 was asked for.
  virtual uint16_t port() const = 0;
};

class Env {
 public:
  virtual ~Env() = default;

  // The process-wide POSIX Env. Never null, never destroyed.
  static Env* Default();

  // ---- clocks --------------------------------------------------------------

  // Wall-clock time in nanoseconds since the Unix epoch (UTC). Can jump
  // (NTP, no RTC at boot); never use it to measure intervals.
  virtual int64_t NowUnixNanos() = 0;

  // Monotonic time in nanoseconds from an arbitrary origin; never goes back.
  virtual int64_t MonotonicNanos() = 0;

  // Blocks the calling thread for at least `micros` microseconds.
  virtual void SleepForMicros(int64_t micros) = 0;

  // Whether the kernel holds the wall clock synchronised to a time source
  // (Linux: adjtimex answers neither TIME_ERROR nor STA_UNSYNC, which is
  // what NTP daemons and systemd-timesyncd set once they have disciplined
  // the clock). False when the kernel cannot tell, and on a gateway without
  // RTC or network that booted at 1970 or at a saved time. Cheap (one
  // system call); the answer can change at any moment.
  virtual bool WallClockSynchronized() = 0;

  // An identifier of the running boot of the machine, the same for every
  // process until the next boot (Linux: /proc/sys/kernel/random/boot_id).
  // MonotonicNanos values compare only within one boot id. Empty when the
  // system does not say.
  virtual std::string BootId() = 0;

  // ---- files ---------------------------------------------------------------

  // Opens a regular file (see OpenMode). NotFound when the file (kReadOnly)
  // or its directory is missing; AlreadyExists for kCreateExclusive on an
  // existing file; IOError for a directory. New files get mode 0644 minus
  // the umask. The descriptor is not inherited by exec'd programs.
  virtual Result<std::unique_ptr<File>> OpenFile(const std::string& path, OpenMode mode) = 0;

  virtual bool FileExists(const std::string& path) = 0;
  virtual Result<uint64_t> FileSize(const std::string& path) = 0;

  // The permission bits of a file (e.g. 0644), and changing them: files
  // that hold credentials are kept to their owner (0600).
  virtual Result<uint32_t> FileMode(const std::string& path) = 0;
  virtual Status SetFileMode(const std::string& path, uint32_t mode) = 0;

  // Atomically replaces `to` with `from` (POSIX rename). Durable only after
  // SyncDir of the directory holding them.
  virtual Status RenameFile(const std::string& from, const std::string& to) = 0;
  virtual Status RemoveFile(const std::string& path) = 0;

  // Creates `path` and missing parents; OK if it exists already.
  virtual Status CreateDirs(const std::string& path) = 0;
  // Removes an empty directory.
  virtual Status RemoveDir(const std::string& path) = 0;

  // Makes the directory's entries (created, renamed, removed files) durable.
  virtual Status SyncDir(const std::string& path) = 0;

  // Names (not paths) of the entries in `dir`, without "." and "..", sorted.
  virtual Result<std::vector<std::string>> ListDir(const std::string& dir) = 0;

  // Bytes available to an unprivileged writer on the filesystem of `path`.
  virtual Result<uint64_t> FreeSpace(const std::string& path) = 0;

  // Takes an exclusive advisory lock on `path` (created if missing). Busy if
  // another process holds it (message "<path> is locked by another
  // process") or another FileLock in this process does (two spellings of one
  // file are the same lock). A process created by fork() does not own its
  // parent's locks.
  virtual Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) = 0;

  // ---- write counters (write_counters.h) -----------------------------------

  // Bytes this process (all its threads) has caused to be written to
  // storage since it started. Writes to a filesystem without a backing
  // device (tmpfs) are not counted by the kernel. Unavailable, saying why,
  // when the kernel keeps no such count.
  virtual Result<uint64_t> ProcessBytesWritten() = 0;

  // Bytes of RAM this process holds now (its resident set: Linux
  // /proc/self/statm's resident pages x the page size). Unavailable, saying
  // why, when the kernel does not say.
  virtual Result<uint64_t> ProcessResidentBytes() = 0;

  // The block device holding `path` and the bytes written to it since boot.
  // Unavailable, saying why, when the path's filesystem has no block device
  // of its own (tmpfs, overlay, a network filesystem, btrfs's anonymous
  // devices): the count is then unknown, not 0. NotFound for a missing path.
  virtual Result<BlockDeviceWrites> BlockDeviceWritesOf(const std::string& path) = 0;

  // ---- serial --------------------------------------------------------------

  // Opens a tty at `baud` (one of the standard rates 1200..4000000) in raw
  // mode, without making it the process's controlling terminal and without
  // waiting for carrier detect. Input that arrived before the call is
  // discarded. InvalidArgument for an unsupported rate (checked before the
  // device is touched); NotFound for a missing device; IOError for a file
  // that is not a terminal.
  virtual Result<std::unique_ptr<SerialPort>> OpenSerialPort(const std::string& path, int baud) = 0;

  // ---- network ---------------------------------------------------------------

  // Listens on `address` (numeric IPv4 or IPv6: "0.0.0.0", "127.0.0.1",
  // "::", "::1"; "::" also accepts IPv4 where the system allows) and `port`
  // (0: any free port, see TcpListener::port). The socket may reuse a port
  // left in TIME_WAIT. InvalidArgument for an address that is not numeric;
  // AlreadyExists when the port is taken; PermissionDenied below 1024
  // without the privilege.
  virtual Result<std::unique_ptr<TcpListener>> ListenTcp(const std::string& address, uint16_t port) = 0;

  // Connects to `address` (numeric, as above) and `port`, waiting at most
  // `timeout_ms`. Unavailable when refused or unreachable; TimedOut.
  virtual Result<std::unique_ptr<TcpConnection>> ConnectTcp(const std::string& address, uint16_t port,
                                                            int timeout_ms) = 0;

  // ---- randomness and threads ----------------------------------------------

  // Fills `out` with cryptographically strong random bytes.
  virtual Status RandomBytes(std::span<uint8_t> out) = 0;

  // Starts `fn` on a new thread. The caller joins the returned thread.
  virtual std::thread StartThread(std::function<void()> fn) = 0;

  // ---- helpers built on the virtual calls above -----------------------------

  // Reads a whole file (NotFound if it does not exist).
  Result<std::string> ReadFileToString(const std::string& path);

  // Replaces `path` with `contents` atomically and durably: writes
  // `path.tmp` (given permission bits `mode` before any byte is written,
  // when set), syncs it, renames it over `path`, syncs the directory. After
  // a crash at any point `path` holds either the old or the new contents.
  // When writing, syncing or renaming fails, `path.tmp` is removed and `path`
  // is unchanged; when only the final directory sync fails, `path` already
  // shows the new contents but may revert after a power cut.
  Status WriteFileAtomically(const std::string& path, std::string_view contents,
                             std::optional<uint32_t> mode = std::nullopt);
};

// Forwards every call to another Env; tests derive from it and override the
// one call they want to change (leveldb's EnvWrapper).
class EnvWrapper : public Env {
 public:
  explicit EnvWrapper(Env* target) : target_(target) {}
  Env* target() const { return target_; }

  int64_t NowUnixNanos() override { return target_->NowUnixNanos(); }
  int64_t MonotonicNanos() override { return target_->MonotonicNanos(); }
  void SleepForMicros(int64_t micros) override { target_->SleepForMicros(micros); }
  bool WallClockSynchronized() override { return target_->WallClockSynchronized(); }
  std::string BootId() override { return target_->BootId(); }
  Result<std::unique_ptr<File>> OpenFile(const std::string& path, OpenMode mode) override {
    return target_->OpenFile(path, mode);
  }
  bool FileExists(const std::string& path) override { return target_->FileExists(path); }
  Result<uint64_t> FileSize(const std::string& path) override { return target_->FileSize(path); }
  Result<uint32_t> FileMode(const std::string& path) override { return target_->FileMode(path); }
  Status SetFileMode(const std::string& path, uint32_t mode) override {
    return target_->SetFileMode(path, mode);
  }
  Status RenameFile(const std::string& from, const std::string& to) override {
    return target_->RenameFile(from, to);
  }
  Status RemoveFile(const std::string& path) override { return target_->RemoveFile(path); }
  Status CreateDirs(const std::string& path) override { return target_->CreateDirs(path); }
  Status RemoveDir(const std::string& path) override { return target_->RemoveDir(path); }
  Status SyncDir(const std::string& path) override { return target_->SyncDir(path); }
  Result<std::vector<std::string>> ListDir(const std::string& dir) override { return target_->ListDir(dir); }
  Result<uint64_t> FreeSpace(const std::string& path) override { return target_->FreeSpace(path); }
  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) override {
    return target_->LockFile(path);
  }
  Result<uint64_t> ProcessBytesWritten() override { return target_->ProcessBytesWritten(); }
  Result<uint64_t> ProcessResidentBytes() override { return target_->ProcessResidentBytes(); }
  Result<BlockDeviceWrites> BlockDeviceWritesOf(const std::string& path) override {
    return target_->BlockDeviceWritesOf(path);
  }
  Result<std::unique_ptr<SerialPort>> OpenSerialPort(const std::string& path, int baud) override {
    return target_->OpenSerialPort(path, baud);
  }
  Result<std::unique_ptr<TcpListener>> ListenTcp(const std::string& address, uint16_t port) override {
    return target_->ListenTcp(address, port);
  }
  Result<std::unique_ptr<TcpConnection>> ConnectTcp(const std::string& address, uint16_t port,
                                                    int timeout_ms) override {
    return target_->ConnectTcp(address, port, timeout_ms);
  }
  Status RandomBytes(std::span<uint8_t> out) override { return target_->RandomBytes(out); }
  std::thread StartThread(std::function<void()> fn) override { return target_->StartThread(std::move(fn)); }

 private:
  Env* target_;
};

// Joins directory and name with one '/'.
std::string JoinPath(std::string_view dir, std::string_view name);

// The directory part of `path` ("." when it has none).
std::string DirName(std::string_view path);

}  // namespace cairn
