// Where Linux keeps write counts: /proc/self/io for the process, and
// /sys/dev/block/<major>:<minor> for the block device under a path.
#include "posix_write_counters.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "posix_error.h"

namespace cairn::platform_internal {
namespace {

// Reads a small kernel text file whole. Files under /proc and /sys report
// size 0 (or a page), so this reads until end of file rather than trusting
// the size.
Result<std::string> ReadKernelText(const std::string& path) {
  int fd = -1;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return PosixError("open", path, errno);
  std::string text;
  char buffer[1024];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status error = PosixError("read", path, errno);
      ::close(fd);
      return error;
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    // Kernel counter files are a few hundred bytes; anything far larger is
    // not the file this code expects.
    if (text.size() > 64 * 1024) break;
  }
  ::close(fd);
  return text;
}

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// A size file of /sys/block (512-byte sectors) in bytes; 0 when unreadable.
uint64_t SysfsSizeBytes(const std::string& dir) {
  Result<std::string> text = ReadKernelText(dir + "/size");
  if (!text.ok()) return 0;
  const unsigned long long sectors = std::strtoull(text->c_str(), nullptr, 10);
  return sectors > UINT64_MAX / 512 ? 0 : static_cast<uint64_t>(sectors) * 512;
}

}  // namespace

Result<uint64_t> ReadProcessBytesWritten() {
  Result<std::string> text = ReadKernelText("/proc/self/io");
  if (!text.ok()) {
    return Status::Unavailable("the kernel keeps no per-process write count here (" +
                               text.status().message() + ")");
  }
  return ParseProcessIoBytesWritten(*text);
}

Result<uint64_t> ReadProcessResidentBytes() {
  Result<std::string> text = ReadKernelText("/proc/self/statm");
  if (!text.ok()) {
    return Status::Unavailable("the kernel does not say this process's memory (" + text.status().message() + ")");
  }
  // statm: total program size, then resident pages, in pages.
  unsigned long long total = 0, resident = 0;
  if (std::sscanf(text->c_str(), "%llu %llu", &total, &resident) != 2) {
    return Status::Corruption("/proc/self/statm: no resident page count in '" + *text + "'");
  }
  const long page = ::sysconf(_SC_PAGESIZE);
  return static_cast<uint64_t>(resident) * static_cast<uint64_t>(page > 0 ? page : 4096);
}

Result<BlockDeviceWrites> ReadBlockDeviceWrites(const std::string& path) {
  struct stat info = {};
  if (::stat(path.c_str(), &info) != 0) return PosixError("stat", path, errno);
  BlockDeviceWrites device;
  device.major = major(info.st_dev);
  device.minor = minor(info.st_dev);
  const std::string numbers = std::to_string(device.major) + ":" + std::to_string(device.minor);
  // Major 0 is the kernel's pool of anonymous devices: tmpfs, overlay,
  // proc, NFS and btrfs subvolumes get one. No stat file stands behind them.
  if (device.major == 0) {
    return Status::Unavailable(path + " is on a filesystem without a block device of its own (device " +
                               numbers + ": tmpfs, overlay or similar)");
  }
  // /sys/dev/block/M:m links to .../block/<disk> or .../block/<disk>/<partition>.
  const std::string link = "/sys/dev/block/" + numbers;
  char resolved[PATH_MAX];
  if (::realpath(link.c_str(), resolved) == nullptr) {
    return Status::Unavailable("no sysfs entry for the block device " + numbers + " holding " + path + " (" +
                               PosixError("realpath", link, errno).message() + ")");
  }
  const std::string dir = resolved;
  device.name = dir.substr(dir.rfind('/') + 1);
  Result<std::string> stat_text = ReadKernelText(dir + "/stat");
  if (!stat_text.ok()) {
    return Status::Unavailable("cannot read the write count of " + device.name + ": " +
                               stat_text.status().message());
  }
  Result<uint64_t> written = ParseBlockStatBytesWritten(*stat_text);
  if (!written.ok()) return written.status().WithContext(dir + "/stat");
  device.bytes_written_since_boot = *written;
  // A partition's directory sits inside its disk's and holds a "partition" file.
  const bool is_partition = ::access((dir + "/partition").c_str(), F_OK) == 0;
  device.disk_size_bytes = SysfsSizeBytes(is_partition ? dir.substr(0, dir.rfind('/')) : dir);
  if (Result<std::string> boot = ReadKernelText("/proc/sys/kernel/random/boot_id"); boot.ok()) {
    device.boot_id = Trimmed(std::move(*boot));
  }
  return device;
}

}  // namespace cairn::platform_internal
