#include "engine/health/quarantine.h"

namespace cairn {

namespace {

constexpr const char* kCompanions[] = {"", "-wal", "-journal"};

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// The first "<dir>/<stem><middle>[.<n>]<ext>" for which neither the file nor
// its companions exist.
std::string FreeName(Env* env, const std::string& dir, const std::string& name, std::string_view middle) {
  const size_t dot = name.rfind('.');
  const std::string stem = dot == std::string::npos ? name : name.substr(0, dot);
  const std::string ext = dot == std::string::npos ? "" : name.substr(dot);
  for (int n = 0;; ++n) {
    std::string candidate = JoinPath(dir, stem + std::string(middle) + (n == 0 ? "" : "." + std::to_string(n)) + ext);
    bool taken = false;
    for (const char* companion : kCompanions) taken = taken || env->FileExists(candidate + companion);
    if (!taken) return candidate;
  }
}

Status CopyFile(Env* env, const std::string& from, const std::string& to) {
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<File> source, env->OpenFile(from, OpenMode::kReadOnly));
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<File> target, env->OpenFile(to, OpenMode::kCreateExclusive));
  CAIRN_ASSIGN_OR_RETURN(uint64_t size, source->Size());
  std::string buffer(1 << 16, '\0');
  for (uint64_t offset = 0; offset < size;) {
    CAIRN_ASSIGN_OR_RETURN(size_t got, source->ReadAt(offset, buffer.size(), buffer.data()));
    if (got == 0) break;
    CAIRN_RETURN_IF_ERROR(target->Append(std::string_view(buffer.data(), got)));
    offset += got;
  }
  return target->Sync();
}

}  // namespace

std::string QuarantineDir(const std::string& data_dir, const std::string& table) {
  return JoinPath(JoinPath(data_dir, "quarantine"), table);
}

Result<std::string> MoveIntoQuarantine(Env* env, const std::string& path, const std::string& dir) {
  CAIRN_RETURN_IF_ERROR(env->CreateDirs(dir));
  const std::string target = FreeName(env, dir, BaseName(path), "");
  // The main file last: until it moves, the next start finds it where it was
  // and quarantines it again.
  for (const char* companion : {"-wal", "-journal", ""}) {
    if (!env->FileExists(path + companion)) continue;
    CAIRN_RETURN_IF_ERROR(env->RenameFile(path + companion, target + companion));
  }
  CAIRN_RETURN_IF_ERROR(env->SyncDir(dir));
  CAIRN_RETURN_IF_ERROR(env->SyncDir(DirName(path)));
  return target;
}

Result<std::string> CopyIntoQuarantine(Env* env, const std::string& path, const std::string& dir,
                                       std::string_view label) {
  CAIRN_RETURN_IF_ERROR(env->CreateDirs(dir));
  const std::string target = FreeName(env, dir, BaseName(path), "." + std::string(label));
  for (const char* companion : {"", "-wal"}) {
    if (!env->FileExists(path + companion)) continue;
    CAIRN_RETURN_IF_ERROR(CopyFile(env, path + companion, target + companion));
  }
  CAIRN_RETURN_IF_ERROR(env->SyncDir(dir));
  return target;
}

std::vector<std::string> QuarantinedPeriodFiles(Env* env, const std::string& dir) {
  std::vector<std::string> files;
  Result<std::vector<std::string>> names = env->ListDir(dir);
  if (!names.ok()) return files;
  for (const std::string& name : *names) {
    if (name.size() > 3 && name.compare(name.size() - 3, 3, ".db") == 0) files.push_back(JoinPath(dir, name));
  }
  return files;
}

}  // namespace cairn
