#include "cairn/platform/write_counters.h"

#include <charconv>
#include <optional>

#include "cairn/platform/text_lines.h"

namespace cairn {
namespace {

// The kernel's unit for sector counts in block stat files, whatever the
// device's logical sector size (Documentation/block/stat.rst).
constexpr uint64_t kStatSectorBytes = 512;

std::optional<uint64_t> ParseUnsigned(std::string_view text) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The value of the "<key>: <number>" line of /proc/<pid>/io.
std::optional<uint64_t> ProcIoValue(std::string_view text, std::string_view key) {
  TextLines lines(text);
  std::string_view line;
  while (lines.Next(&line)) {
    if (!line.starts_with(key) || line.size() <= key.size() || line[key.size()] != ':') continue;
    line.remove_prefix(key.size() + 1);
    while (!line.empty() && IsSpace(line.front())) line.remove_prefix(1);
    while (!line.empty() && IsSpace(line.back())) line.remove_suffix(1);
    return ParseUnsigned(line);
  }
  return std::nullopt;
}

}  // namespace

Result<uint64_t> ParseProcessIoBytesWritten(std::string_view proc_io_text) {
  const std::optional<uint64_t> written = ProcIoValue(proc_io_text, "write_bytes");
  const std::optional<uint64_t> cancelled = ProcIoValue(proc_io_text, "cancelled_write_bytes");
  if (!written || !cancelled) {
    return Status::Corruption(
        "process I/O counters: no readable write_bytes and cancelled_write_bytes lines");
  }
  // Cancelled bytes can exceed written ones for a moment: a truncate that
  // drops pages another process dirtied is charged to the truncating one.
  return *written > *cancelled ? *written - *cancelled : 0;
}

Result<uint64_t> ParseBlockStatBytesWritten(std::string_view stat_text) {
  size_t pos = 0;
  for (int field = 1;; ++field) {
    while (pos < stat_text.size() && IsSpace(stat_text[pos])) ++pos;
    const size_t start = pos;
    while (pos < stat_text.size() && !IsSpace(stat_text[pos])) ++pos;
    if (start == pos) break;
    if (field < 7) continue;
    const std::optional<uint64_t> sectors = ParseUnsigned(stat_text.substr(start, pos - start));
    if (!sectors) break;
    if (*sectors > UINT64_MAX / kStatSectorBytes) {
      return Status::Corruption("block device stat: sectors written out of range");
    }
    return *sectors * kStatSectorBytes;
  }
  return Status::Corruption("block device stat: no sectors-written field (the 7th)");
}

}  // namespace cairn
