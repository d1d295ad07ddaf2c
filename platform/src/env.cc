#include "cairn/platform/env.h"

#include <utility>

namespace cairn {

Result<std::string> Env::ReadFileToString(const std::string& path) {
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<File> file, OpenFile(path, OpenMode::kReadOnly));
  CAIRN_ASSIGN_OR_RETURN(uint64_t expected_size, file->Size());
  std::string contents;
  // The size is a hint only: the file may grow or shrink while it is read, so
  // reading stops at the first empty read rather than at the size.
  size_t chunk = expected_size > 0 && expected_size < (uint64_t{1} << 26) ? static_cast<size_t>(expected_size)
                                                                          : size_t{1} << 16;
  for (;;) {
    size_t used = contents.size();
    contents.resize(used + chunk);
    CAIRN_ASSIGN_OR_RETURN(size_t read, file->ReadAt(used, chunk, contents.data() + used));
    contents.resize(used + read);
    if (read == 0) break;
    chunk = size_t{1} << 16;
  }
  return contents;
}

Status Env::WriteFileAtomically(const std::string& path, std::string_view contents,
                                std::optional<uint32_t> mode) {
  const std::string temporary = path + ".tmp";
  Status status = [&]() -> Status {
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<File> file, OpenFile(temporary, OpenMode::kCreateTruncate));
    if (mode) CAIRN_RETURN_IF_ERROR(SetFileMode(temporary, *mode));
    CAIRN_RETURN_IF_ERROR(file->WriteAt(0, contents));
    CAIRN_RETURN_IF_ERROR(file->Sync());
    file.reset();
    return RenameFile(temporary, path);
  }();
  if (!status.ok()) {
    // Leaves no half-written temporary behind; the target is untouched. A
    // failure to remove it is not worth masking the original error.
    if (FileExists(temporary)) (void)RemoveFile(temporary);
    return status;
  }
  return SyncDir(DirName(path));
}

std::string JoinPath(std::string_view dir, std::string_view name) {
  if (dir.empty()) return std::string(name);
  while (dir.size() > 1 && dir.back() == '/') dir.remove_suffix(1);
  while (!name.empty() && name.front() == '/') name.remove_prefix(1);
  std::string result(dir);
  if (result.back() != '/') result += '/';
  result += name;
  return result;
}

std::string DirName(std::string_view path) {
  // POSIX dirname(3) semantics, without modifying the argument.
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  path = path.substr(0, slash);
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  if (path.empty()) return "/";
  return std::string(path);
}

}  // namespace cairn
