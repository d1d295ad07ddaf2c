// What the benchmarks read from the machine and the process: I/O counters and
// resident memory from /proc, a description of the machine, bytes on disk
// under a directory, and a scratch directory that removes itself.
//
// Linux only (the benchmarks run on the gateway's OS). Thread-safety: the
// functions are safe to call from any thread; ScratchDirectory is one owner.
#pragma once

#include <cstdint>
#include <string>

#include "cairn/platform/status.h"

namespace cairn::bench {

// /proc/self/io of the whole process (every thread). `write_bytes` counts
// bytes the process sent towards the block layer (page-cache pages it
// dirtied); `wchar` counts bytes passed to write-like system calls. Some
// container filesystems (tmpfs, some overlays) leave write_bytes at 0.
struct IoCounters {
  uint64_t read_chars = 0;   // rchar
  uint64_t write_chars = 0;  // wchar
  uint64_t read_bytes = 0;
  uint64_t write_bytes = 0;
  uint64_t cancelled_write_bytes = 0;
};

// Unavailable when /proc/self/io cannot be read (kernels without task I/O
// accounting, restricted /proc).
Result<IoCounters> ReadIoCounters();

// VmRSS and VmHWM (peak) of this process in MiB, from /proc/self/status.
Result<double> ReadResidentMebibytes();
Result<double> ReadPeakResidentMebibytes();

struct MachineDescription {
  int cpus = 0;              // CPUs this process may run on (what `nproc` prints)
  std::string cpu_model;     // /proc/cpuinfo "model name", or the board "Model" on ARM
  std::string architecture;  // uname machine, e.g. "x86_64", "aarch64", "armv7l"
  std::string kernel;        // uname release
};

MachineDescription DescribeMachine();

// Sum of the sizes of the regular files under `directory`, recursively.
Result<uint64_t> DirectoryBytes(const std::string& directory);

// Name of the filesystem holding `path` ("ext4", "tmpfs", "overlay", ...), or
// its magic number in hex when unknown.
std::string FilesystemName(const std::string& path);

// A fresh, empty directory "<parent>/<prefix>XXXXXX" that is removed with
// everything in it when the object is destroyed, unless Keep() was called.
class ScratchDirectory {
 public:
  static Result<ScratchDirectory> Create(const std::string& parent, const std::string& prefix);

  ScratchDirectory(ScratchDirectory&& other) noexcept;
  ScratchDirectory& operator=(ScratchDirectory&&) = delete;
  ScratchDirectory(const ScratchDirectory&) = delete;
  ~ScratchDirectory();

  const std::string& path() const { return path_; }
  void Keep() { keep_ = true; }

 private:
  explicit ScratchDirectory(std::string path) : path_(std::move(path)) {}

  std::string path_;
  bool keep_ = false;
};

}  // namespace cairn::bench
