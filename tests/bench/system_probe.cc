#include "system_probe.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <sched.h>
#include <stdlib.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>

namespace cairn::bench {

namespace {

std::string Trim(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  const size_t end = text.find_last_not_of(" \t\r\n");
  return text.substr(begin, end - begin + 1);
}

// Reads "Key: value" lines of a /proc file into the value of `key`.
Result<std::string> ReadProcField(const char* path, std::string_view key) {
  std::ifstream in(path);
  if (!in) return Status::Unavailable(std::string("cannot read ") + path);
  std::string line;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    if (Trim(line.substr(0, colon)) == key) return Trim(line.substr(colon + 1));
  }
  return Status::NotFound(std::string(path) + " has no " + std::string(key));
}

Result<double> ReadStatusKibAsMebibytes(std::string_view key) {
  CAIRN_ASSIGN_OR_RETURN(std::string value, ReadProcField("/proc/self/status", key));
  // "12345 kB"
  return std::strtod(value.c_str(), nullptr) / 1024.0;
}

}  // namespace

Result<IoCounters> ReadIoCounters() {
  std::ifstream in("/proc/self/io");
  if (!in) return Status::Unavailable("cannot read /proc/self/io");
  IoCounters counters;
  bool any = false;
  std::string key;
  uint64_t value = 0;
  while (in >> key >> value) {
    any = true;
    if (key == "rchar:") counters.read_chars = value;
    if (key == "wchar:") counters.write_chars = value;
    if (key == "read_bytes:") counters.read_bytes = value;
    if (key == "write_bytes:") counters.write_bytes = value;
    if (key == "cancelled_write_bytes:") counters.cancelled_write_bytes = value;
  }
  if (!any) return Status::Unavailable("/proc/self/io is empty");
  return counters;
}

Result<double> ReadResidentMebibytes() { return ReadStatusKibAsMebibytes("VmRSS"); }

Result<double> ReadPeakResidentMebibytes() { return ReadStatusKibAsMebibytes("VmHWM"); }

MachineDescription DescribeMachine() {
  MachineDescription machine;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    machine.cpus = CPU_COUNT(&set);
  } else {
    machine.cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  }
  // x86 names the CPU; ARM boards name the board ("Raspberry Pi 4 Model B")
  // or only the SoC family.
  for (const char* key : {"model name", "Model", "Hardware", "CPU part"}) {
    auto value = ReadProcField("/proc/cpuinfo", key);
    if (value.ok() && !value->empty()) {
      machine.cpu_model = *value;
      break;
    }
  }
  if (machine.cpu_model.empty()) machine.cpu_model = "unknown";
  struct utsname names;
  if (uname(&names) == 0) {
    machine.architecture = names.machine;
    machine.kernel = names.release;
  }
  return machine;
}

Result<uint64_t> DirectoryBytes(const std::string& directory) {
  std::error_code error;
  uint64_t total = 0;
  std::filesystem::recursive_directory_iterator it(directory, error);
  if (error) return Status::IOError("cannot list " + directory + ": " + error.message());
  for (const auto end = std::filesystem::recursive_directory_iterator(); it != end; it.increment(error)) {
    if (error) return Status::IOError("cannot list " + directory + ": " + error.message());
    if (!it->is_regular_file(error)) continue;
    const uint64_t size = it->file_size(error);
    if (error) return Status::IOError("cannot stat " + it->path().string() + ": " + error.message());
    total += size;
  }
  if (error) return Status::IOError("cannot list " + directory + ": " + error.message());
  return total;
}

std::string FilesystemName(const std::string& path) {
  struct statfs info;
  if (statfs(path.c_str(), &info) != 0) return "unknown";
  // f_type's width differs between 32- and 64-bit ABIs.
  const auto magic = static_cast<uint64_t>(static_cast<uint32_t>(info.f_type));
  switch (magic) {
    case 0xef53:
      return "ext4";
    case 0x01021994:
      return "tmpfs";
    case 0x794c7630:
      return "overlay";
    case 0x9123683e:
      return "btrfs";
    case 0x58465342:
      return "xfs";
    case 0xf2f52010:
      return "f2fs";
    case 0x2fc12fc1:
      return "zfs";
    case 0x6969:
      return "nfs";
    case 0x4d44:
      return "vfat";
    case 0x65735546:
      return "fuse";
    default: {
      std::ostringstream hex;
      hex << "0x" << std::hex << magic;
      return hex.str();
    }
  }
}

Result<ScratchDirectory> ScratchDirectory::Create(const std::string& parent, const std::string& prefix) {
  std::string pattern = parent + "/" + prefix + "XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    return Status::IOError("cannot create a directory in " + parent + ": " + std::strerror(errno));
  }
  return ScratchDirectory(std::move(pattern));
}

ScratchDirectory::ScratchDirectory(ScratchDirectory&& other) noexcept
    : path_(std::move(other.path_)), keep_(other.keep_) {
  other.path_.clear();
}

ScratchDirectory::~ScratchDirectory() {
  if (path_.empty() || keep_) return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace cairn::bench
