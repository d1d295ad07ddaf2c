#include "fault_injection_env.h"

#include <algorithm>
#include <cassert>
#include <utility>

namespace cairn {
namespace {

// "a//b/./c/" -> "a/b/c"; "/" stays "/", "" and "./" become ".". ".." is
// kept as written: resolving it lexically is wrong across symbolic links.
std::string NormalisePath(std::string_view path) {
  const bool absolute = !path.empty() && path.front() == '/';
  std::string result = absolute ? "/" : "";
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(start, end - start);
    if (!part.empty() && part != ".") {
      if (!result.empty() && result.back() != '/') result += '/';
      result += part;
    }
    start = end + 1;
  }
  if (result.empty()) return ".";
  return result;
}

bool HasPrefixDirectory(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/';
}

}  // namespace

std::string_view FaultOpName(FaultOp op) {
  switch (op) {
    case FaultOp::kWrite:
      return "write";
    case FaultOp::kSync:
      return "sync";
    case FaultOp::kRename:
      return "rename";
  }
  return "unknown";
}

// Forwards to the underlying File, keeping FileData's undo log up to date and
// answering for injected faults and power cuts. Every call takes the env's
// mutex.
class FaultInjectionEnv::TrackedFile final : public File {
 public:
  TrackedFile(FaultInjectionEnv* env, std::unique_ptr<File> target, std::shared_ptr<FileData> data,
              uint64_t generation, uint64_t append_offset)
      : env_(env),
        target_(std::move(target)),
        data_(std::move(data)),
        generation_(generation),
        append_offset_(append_offset) {}

  Result<size_t> ReadAt(uint64_t offset, size_t n, char* dst) override {
    std::lock_guard<std::mutex> guard(env_->mutex_);
    CAIRN_RETURN_IF_ERROR(CheckAlive());
    return target_->ReadAt(offset, n, dst);
  }

  Status WriteAt(uint64_t offset, std::string_view data) override {
    std::lock_guard<std::mutex> guard(env_->mutex_);
    CAIRN_RETURN_IF_ERROR(CheckAlive());
    CAIRN_RETURN_IF_ERROR(env_->CountCall(FaultOp::kWrite));
    return WriteLocked(offset, data);
  }

  Status Append(std::string_view data) override {
    std::lock_guard<std::mutex> guard(env_->mutex_);
    CAIRN_RETURN_IF_ERROR(CheckAlive());
    CAIRN_RETURN_IF_ERROR(env_->CountCall(FaultOp::kWrite));
    // Appending is writing at an offset this wrapper tracks itself, so that
    // an append over bytes below the synced size (after a truncation by
    // another handle) gets its pre-image saved like any other overwrite.
    return WriteLocked(append_offset_, data);
  }

  Status Truncate(uint64_t size) override {
    std::lock_guard<std::mutex> guard(env_->mutex_);
    CAIRN_RETURN_IF_ERROR(CheckAlive());
    CAIRN_RETURN_IF_ERROR(env_->CountCall(FaultOp::kWrite));
    uint64_t current = 0;
    if (data_ != nullptr) {
      CAIRN_ASSIGN_OR_RETURN(current, target_->Size());
      if (size < data_->synced_size && size < current) {
        CAIRN_RETURN_IF_ERROR(SavePreImage(size, std::min(current, data_->synced_size) - size));
      }
    }
    CAIRN_RETURN_IF_ERROR(target_->Truncate(size));
    append_offset_ = size;
    if (data_ != nullptr) data_->unsynced_bytes += size > current ? size - current : current - size;
    return Status::Ok();
  }

  Status Sync() override {
    std::lock_guard<std::mutex> guard(env_->mutex_);
    CAIRN_RETURN_IF_ERROR(CheckAlive());
    CAIRN_RETURN_IF_ERROR(env_->CountCall(FaultOp::kSync));
    CAIRN_RETURN_IF_ERROR(target_->Sync());
    if (data_ != nullptr) {
      CAIRN_ASSIGN_OR_RETURN(uint64_t size, target_->Size());
      data_->synced_size = size;
      data_->undo.clear();
      data_->unsynced_bytes = 0;
    }
    return Status::Ok();
  }

  Result<uint64_t> Size() override {
    std::lock_guard<std::mutex> guard(env_->mutex_);
    CAIRN_RETURN_IF_ERROR(CheckAlive());
    return target_->Size();
  }

  const std::string& path() const override { return target_->path(); }

 private:
  // Requires env_->mutex_.
  Status CheckAlive() const {
    if (generation_ != env_->generation_) {
      return Status::IOError("power cut: " + target_->path() + " was opened before it");
    }
    return Status::Ok();
  }

  // Requires env_->mutex_.
  Status WriteLocked(uint64_t offset, std::string_view data) {
    if (data_ != nullptr && offset < data_->synced_size && !data.empty()) {
      CAIRN_RETURN_IF_ERROR(
          SavePreImage(offset, std::min<uint64_t>(offset + data.size(), data_->synced_size) - offset));
    }
    CAIRN_RETURN_IF_ERROR(target_->WriteAt(offset, data));
    append_offset_ = std::max<uint64_t>(append_offset_, offset + data.size());
    if (data_ != nullptr) data_->unsynced_bytes += data.size();
    return Status::Ok();
  }

  // Saves the bytes now at [offset, offset + length). Bytes missing because
  // the file is shorter were saved when it was truncated.
  Status SavePreImage(uint64_t offset, uint64_t length) {
    std::string bytes(static_cast<size_t>(length), '\0');
    CAIRN_ASSIGN_OR_RETURN(size_t read, target_->ReadAt(offset, bytes.size(), bytes.data()));
    bytes.resize(read);
    if (!bytes.empty()) data_->undo.emplace_back(offset, std::move(bytes));
    return Status::Ok();
  }

  FaultInjectionEnv* const env_;
  const std::unique_ptr<File> target_;
  // Null for files opened read-only: they cannot change what is durable.
  const std::shared_ptr<FileData> data_;
  const uint64_t generation_;
  uint64_t append_offset_;
};

FaultInjectionEnv::FaultInjectionEnv(Env* target) : EnvWrapper(target) {}

FaultInjectionEnv::~FaultInjectionEnv() = default;

void FaultInjectionEnv::FailNth(FaultOp op, int64_t n, Status error) {
  assert(n >= 1 && !error.ok());
  std::lock_guard<std::mutex> guard(mutex_);
  FaultPlan& plan = plans_[static_cast<int>(op)];
  plan.active = true;
  plan.persistent = false;
  plan.countdown = n;
  plan.error = std::move(error);
}

void FaultInjectionEnv::FailFromNth(FaultOp op, int64_t n, Status error) {
  assert(n >= 1 && !error.ok());
  std::lock_guard<std::mutex> guard(mutex_);
  FaultPlan& plan = plans_[static_cast<int>(op)];
  plan.active = true;
  plan.persistent = true;
  plan.countdown = n;
  plan.error = std::move(error);
}

void FaultInjectionEnv::ClearFaults() {
  std::lock_guard<std::mutex> guard(mutex_);
  for (FaultPlan& plan : plans_) {
    plan.active = false;
    plan.error = Status::Ok();
  }
}

int64_t FaultInjectionEnv::CallCount(FaultOp op) const {
  std::lock_guard<std::mutex> guard(mutex_);
  return plans_[static_cast<int>(op)].calls;
}

int64_t FaultInjectionEnv::InjectedCount(FaultOp op) const {
  std::lock_guard<std::mutex> guard(mutex_);
  return plans_[static_cast<int>(op)].injected;
}

void FaultInjectionEnv::ResetCounters() {
  std::lock_guard<std::mutex> guard(mutex_);
  for (FaultPlan& plan : plans_) {
    plan.calls = 0;
    plan.injected = 0;
  }
}

Status FaultInjectionEnv::ConsultFaultPlan(FaultOp op) {
  std::lock_guard<std::mutex> guard(mutex_);
  return CountCall(op);
}

Status FaultInjectionEnv::CountCall(FaultOp op) {
  FaultPlan& plan = plans_[static_cast<int>(op)];
  ++plan.calls;
  if (!plan.active) return Status::Ok();
  if (plan.countdown > 1) {
    --plan.countdown;
    return Status::Ok();
  }
  ++plan.injected;
  Status error = plan.error;
  if (!plan.persistent) {
    plan.active = false;
    plan.error = Status::Ok();
  }
  return error;
}

Result<std::shared_ptr<FaultInjectionEnv::FileData>> FaultInjectionEnv::DataForWriting(const std::string& key,
                                                                                       bool created) {
  auto it = files_.find(key);
  if (!created && it != files_.end()) return it->second;
  auto data = std::make_shared<FileData>();
  if (!created) {
    CAIRN_ASSIGN_OR_RETURN(data->synced_size, target()->FileSize(key));
  }
  files_[key] = data;
  return data;
}

Result<std::optional<std::string>> FaultInjectionEnv::DurableContents(const std::string& key) {
  Result<std::string> contents = target()->ReadFileToString(key);
  if (!contents.ok()) {
    if (contents.status().Is(StatusCode::kNotFound)) return std::optional<std::string>();
    return contents.status();
  }
  std::string bytes = std::move(contents).value();
  auto it = files_.find(key);
  if (it != files_.end()) {
    const FileData& data = *it->second;
    bytes.resize(static_cast<size_t>(data.synced_size), '\0');
    for (auto undo = data.undo.rbegin(); undo != data.undo.rend(); ++undo) {
      bytes.replace(static_cast<size_t>(undo->first), undo->second.size(), undo->second);
    }
  }
  return std::optional<std::string>(std::move(bytes));
}

Status FaultInjectionEnv::WriteWhole(const std::string& path, const std::string& contents) {
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<File> file, target()->OpenFile(path, OpenMode::kCreateTruncate));
  return file->WriteAt(0, contents);
}

Result<std::unique_ptr<File>> FaultInjectionEnv::OpenFile(const std::string& path, OpenMode mode) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (mode == OpenMode::kReadOnly) {
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<File> file, target()->OpenFile(path, mode));
    return std::unique_ptr<File>(
        std::make_unique<TrackedFile>(this, std::move(file), nullptr, generation_, 0));
  }
  const std::string key = NormalisePath(path);
  const bool existed = target()->FileExists(path);
  // An existing file is truncated here rather than by the open, so the bytes
  // it loses go to the undo log first.
  const bool truncate_existing = mode == OpenMode::kCreateTruncate && existed;
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<File> file,
                         target()->OpenFile(path, truncate_existing ? OpenMode::kReadWrite : mode));
  CAIRN_ASSIGN_OR_RETURN(std::shared_ptr<FileData> data, DataForWriting(key, !existed));
  if (!existed) {
    pending_changes_.push_back(
        EntryChange{EntryChange::Kind::kCreate, key, std::string(), std::nullopt, {DirName(key)}});
  }
  CAIRN_ASSIGN_OR_RETURN(uint64_t size, file->Size());
  if (truncate_existing && size > 0) {
    const uint64_t saved = std::min(size, data->synced_size);
    if (saved > 0) {
      std::string bytes(static_cast<size_t>(saved), '\0');
      CAIRN_ASSIGN_OR_RETURN(size_t read, file->ReadAt(0, bytes.size(), bytes.data()));
      bytes.resize(read);
      data->undo.emplace_back(0, std::move(bytes));
    }
    CAIRN_RETURN_IF_ERROR(file->Truncate(0));
    data->unsynced_bytes += size;
    size = 0;
  }
  return std::unique_ptr<File>(
      std::make_unique<TrackedFile>(this, std::move(file), std::move(data), generation_, size));
}

Status FaultInjectionEnv::RenameFile(const std::string& from, const std::string& to) {
  std::lock_guard<std::mutex> guard(mutex_);
  CAIRN_RETURN_IF_ERROR(CountCall(FaultOp::kRename));
  const std::string from_key = NormalisePath(from);
  const std::string to_key = NormalisePath(to);
  if (from_key == to_key) return target()->RenameFile(from, to);
  std::optional<std::string> replaced;
  if (target()->FileExists(to)) {
    Result<std::optional<std::string>> contents = DurableContents(to_key);
    if (contents.ok()) {
      replaced = std::move(contents).value();
    } else if (!target()->ListDir(to).ok()) {
      // Neither a readable file nor a directory (renaming a directory over an
      // empty one loses nothing worth restoring).
      return contents.status();
    }
  }
  CAIRN_RETURN_IF_ERROR(target()->RenameFile(from, to));
  // The data travels with the file, and with every file below a renamed
  // directory.
  std::vector<std::pair<std::string, std::shared_ptr<FileData>>> moved;
  for (auto it = files_.begin(); it != files_.end();) {
    if (it->first == to_key || HasPrefixDirectory(it->first, to_key)) {
      it = files_.erase(it);
    } else if (it->first == from_key || HasPrefixDirectory(it->first, from_key)) {
      moved.emplace_back(to_key + it->first.substr(from_key.size()), std::move(it->second));
      it = files_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& [key, data] : moved) files_[key] = std::move(data);
  pending_changes_.push_back(EntryChange{EntryChange::Kind::kRename,
                                         from_key,
                                         to_key,
                                         std::move(replaced),
                                         {DirName(from_key), DirName(to_key)}});
  return Status::Ok();
}

Status FaultInjectionEnv::RemoveFile(const std::string& path) {
  std::lock_guard<std::mutex> guard(mutex_);
  const std::string key = NormalisePath(path);
  Result<std::optional<std::string>> durable = DurableContents(key);
  CAIRN_RETURN_IF_ERROR(target()->RemoveFile(path));
  // The removal succeeded, so the path was a file and DurableContents only
  // fails for reasons a test should hear about.
  CAIRN_RETURN_IF_ERROR(durable.status());
  files_.erase(key);
  pending_changes_.push_back(EntryChange{
      EntryChange::Kind::kRemove, key, std::string(), std::move(durable).value(), {DirName(key)}});
  return Status::Ok();
}

Status FaultInjectionEnv::SyncDir(const std::string& path) {
  std::lock_guard<std::mutex> guard(mutex_);
  CAIRN_RETURN_IF_ERROR(CountCall(FaultOp::kSync));
  CAIRN_RETURN_IF_ERROR(target()->SyncDir(path));
  const std::string key = NormalisePath(path);
  for (EntryChange& change : pending_changes_) change.unsynced_dirs.erase(key);
  std::erase_if(pending_changes_, [](const EntryChange& change) { return change.unsynced_dirs.empty(); });
  return Status::Ok();
}

FaultInjectionEnv::Exposure FaultInjectionEnv::CurrentExposure() const {
  std::lock_guard<std::mutex> guard(mutex_);
  Exposure exposure;
  for (const auto& [key, data] : files_) exposure.unsynced_bytes += data->unsynced_bytes;
  exposure.unsynced_entry_changes = pending_changes_.size();
  return exposure;
}

Status FaultInjectionEnv::SimulatePowerCut() {
  std::lock_guard<std::mutex> guard(mutex_);
  Status first_error;
  auto note = [&first_error](const Status& status) {
    if (first_error.ok() && !status.ok()) first_error = status;
  };

  // Data first, at the files' current names: the entry changes undone next
  // move whole files and do not care what is in them.
  for (const auto& [key, data] : files_) {
    if (data->unsynced_bytes == 0 || !target()->FileExists(key)) continue;
    Result<std::unique_ptr<File>> file = target()->OpenFile(key, OpenMode::kReadWrite);
    if (!file.ok()) {
      note(file.status());
      continue;
    }
    note((*file)->Truncate(data->synced_size));
    for (auto undo = data->undo.rbegin(); undo != data->undo.rend(); ++undo) {
      note((*file)->WriteAt(undo->first, undo->second));
    }
  }

  // Newest first, so each change is undone on the state it produced. A
  // missing file means an approximation of the model (see the header) met
  // its limit; the rest is still undone.
  auto tolerate_missing = [](const Status& status) {
    return status.Is(StatusCode::kNotFound) ? Status::Ok() : status;
  };
  for (auto change = pending_changes_.rbegin(); change != pending_changes_.rend(); ++change) {
    switch (change->kind) {
      case EntryChange::Kind::kCreate:
        note(tolerate_missing(target()->RemoveFile(change->path)));
        break;
      case EntryChange::Kind::kRename:
        note(tolerate_missing(target()->RenameFile(change->to, change->path)));
        if (change->previous_contents) note(WriteWhole(change->to, *change->previous_contents));
        break;
      case EntryChange::Kind::kRemove:
        if (change->previous_contents) note(WriteWhole(change->path, *change->previous_contents));
        break;
    }
  }

  pending_changes_.clear();
  files_.clear();
  ++generation_;
  return first_error;
}

}  // namespace cairn
