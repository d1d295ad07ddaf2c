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

bool SamePathOrBelow(const std::string& a, const std::string& b) {
  return a == b || HasPrefixDirectory(a, b) || HasPrefixDirectory(b, a);
}

std::string Plural(uint64_t count, std::string_view noun) {
  return std::to_string(count) + " " + std::string(noun) + (count == 1 ? "" : "s");
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
    case FaultOp::kOpen:
      return "open";
    case FaultOp::kTruncate:
      return "truncate";
    case FaultOp::kRemove:
      return "remove";
  }
  return "unknown";
}

std::string_view PowerCutDataName(PowerCutOptions::Data data) {
  switch (data) {
    case PowerCutOptions::Data::kDropUnsynced:
      return "drop";
    case PowerCutOptions::Data::kTornWrite:
      return "torn";
    case PowerCutOptions::Data::kReorderedWrites:
      return "reordered";
  }
  return "unknown";
}

std::string PowerCutReport::Summary() const {
  std::string text = Plural(files_cut, "file") + " cut, " + Plural(torn_writes, "torn write");
  if (sectors_kept + sectors_lost > 0) {
    text += ", " + std::to_string(sectors_kept) + " of " + Plural(sectors_kept + sectors_lost, "sector") +
            " kept";
  }
  text += ", " + Plural(entry_changes_kept, "entry change") + " kept, " + std::to_string(entry_changes_undone) +
          " undone";
  return text;
}

// Forwards to the underlying File, recording every change in the file's
// FileData and answering for injected faults and power cuts. Every call
// takes the env's mutex.
class FaultInjectionEnv::TrackedFile final : public File {
 public:
  TrackedFile(FaultInjectionEnv* env, std::unique_ptr<File> target, std::shared_ptr<FileData> data,
              uint64_t generation, uint64_t append_offset)
      : env_(env),
        target_(std::move(target)),
        data_(std::move(data)),
        generation_(generation),
        append_offset_(append_offset) {}

  // Reads the whole file as durable, unless loaded already. Requires the
  // env's mutex; `data` may be null (a read-only handle).
  static Status Load(File* file, FileData* data) {
    if (data == nullptr || data->loaded) return Status::Ok();
    CAIRN_ASSIGN_OR_RETURN(uint64_t size, file->Size());
    std::string bytes(static_cast<size_t>(size), '\0');
    CAIRN_ASSIGN_OR_RETURN(size_t read, file->ReadAt(0, bytes.size(), bytes.data()));
    bytes.resize(read);
    data->durable = std::move(bytes);
    data->loaded = true;
    return Status::Ok();
  }

  // Truncates `file` to `size` and records it. Requires the env's mutex.
  static Status TruncateAndRecord(File* file, FileData* data, uint64_t size) {
    CAIRN_RETURN_IF_ERROR(Load(file, data));
    CAIRN_ASSIGN_OR_RETURN(uint64_t before, file->Size());
    CAIRN_RETURN_IF_ERROR(file->Truncate(size));
    if (data != nullptr) {
      crash::UnsyncedWrite change{true, size, std::string()};
      data->unsynced_bytes += crash::UnsyncedBytes(change, before);
      data->unsynced.push_back(std::move(change));
    }
    return Status::Ok();
  }

  Result<size_t> ReadAt(uint64_t offset, size_t n, char* dst) override {
    std::lock_guard<std::mutex> guard(env_->mutex_);
    CAIRN_RETURN_IF_ERROR(CheckAlive());
    CAIRN_RETURN_IF_ERROR(env_->CheckPowered());
    return target_->ReadAt(offset, n, dst);
  }

  Status WriteAt(uint64_t offset, std::string_view data) override {
    std::lock_guard<std::mutex> guard(env_->mutex_);
    CAIRN_RETURN_IF_ERROR(CheckAlive());
    CAIRN_RETURN_IF_ERROR(env_->CheckPower(FaultOp::kWrite));
    CAIRN_RETURN_IF_ERROR(CheckInjected(offset, data));
    return WriteLocked(offset, data);
  }

  Status Append(std::string_view data) override {
    std::lock_guard<std::mutex> guard(env_->mutex_);
    CAIRN_RETURN_IF_ERROR(CheckAlive());
    // Appending is writing at an offset this wrapper tracks itself, as the
    // POSIX Env does (a failed append does not move it).
    CAIRN_RETURN_IF_ERROR(env_->CheckPower(FaultOp::kWrite));
    CAIRN_RETURN_IF_ERROR(CheckInjected(append_offset_, data));
    return WriteLocked(append_offset_, data);
  }

  Status Truncate(uint64_t size) override {
    std::lock_guard<std::mutex> guard(env_->mutex_);
    CAIRN_RETURN_IF_ERROR(CheckAlive());
    CAIRN_RETURN_IF_ERROR(env_->CheckPower(FaultOp::kWrite));
    CAIRN_RETURN_IF_ERROR(env_->CheckPower(FaultOp::kTruncate));
    // One call of both kinds: both are counted whichever fails.
    const Status as_write = env_->CountCall(FaultOp::kWrite);
    const Status as_truncate = env_->CountCall(FaultOp::kTruncate);
    CAIRN_RETURN_IF_ERROR(as_write);
    CAIRN_RETURN_IF_ERROR(as_truncate);
    CAIRN_RETURN_IF_ERROR(TruncateAndRecord(target_.get(), data_.get(), size));
    append_offset_ = size;
    return Status::Ok();
  }

  Status Sync() override {
    std::lock_guard<std::mutex> guard(env_->mutex_);
    CAIRN_RETURN_IF_ERROR(CheckAlive());
    CAIRN_RETURN_IF_ERROR(env_->CheckPower(FaultOp::kSync));
    Status injected = env_->CountCall(FaultOp::kSync);
    if (!injected.ok()) {
      // The writeback failed: what was unsynced is gone for good, although
      // the page cache still shows it.
      if (data_ != nullptr) {
        data_->lost_bytes += data_->unsynced_bytes;
        data_->unsynced_bytes = 0;
        data_->unsynced.clear();
      }
      return injected;
    }
    CAIRN_RETURN_IF_ERROR(target_->Sync());
    if (data_ != nullptr) {
      for (const crash::UnsyncedWrite& change : data_->unsynced) crash::ApplyUnsyncedWrite(change, &data_->durable);
      data_->unsynced.clear();
      data_->unsynced_bytes = 0;
    }
    return Status::Ok();
  }

  Result<uint64_t> Size() override {
    std::lock_guard<std::mutex> guard(env_->mutex_);
    CAIRN_RETURN_IF_ERROR(CheckAlive());
    CAIRN_RETURN_IF_ERROR(env_->CheckPowered());
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

  // Counts a write at `offset` and, when one is due, returns the injected
  // error after doing what the plan says a failed write leaves. Requires
  // env_->mutex_.
  Status CheckInjected(uint64_t offset, std::string_view data) {
    FailedWriteEffect effect = FailedWriteEffect::kNothing;
    Status injected = env_->CountCall(FaultOp::kWrite, &effect);
    if (injected.ok() || effect != FailedWriteEffect::kHalfWritten) return injected;
    const uint64_t append_offset = append_offset_;
    CAIRN_RETURN_IF_ERROR(WriteLocked(offset, data.substr(0, data.size() / 2)));
    append_offset_ = append_offset;
    return injected;
  }

  // Requires env_->mutex_.
  Status WriteLocked(uint64_t offset, std::string_view data) {
    if (data.empty()) return target_->WriteAt(offset, data);
    CAIRN_RETURN_IF_ERROR(Load(target_.get(), data_.get()));
    CAIRN_RETURN_IF_ERROR(target_->WriteAt(offset, data));
    append_offset_ = std::max<uint64_t>(append_offset_, offset + data.size());
    if (data_ != nullptr) {
      data_->unsynced.push_back(crash::UnsyncedWrite{false, offset, std::string(data)});
      data_->unsynced_bytes += data.size();
    }
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

void FaultInjectionEnv::Arm(FaultOp op, int64_t n, Status error, FailedWriteEffect effect, bool persistent) {
  assert(n >= 1 && !error.ok());
  std::lock_guard<std::mutex> guard(mutex_);
  FaultPlan& plan = plans_[static_cast<int>(op)];
  plan.active = true;
  plan.persistent = persistent;
  plan.effect = effect;
  plan.countdown = n;
  plan.error = std::move(error);
}

void FaultInjectionEnv::FailNth(FaultOp op, int64_t n, Status error, FailedWriteEffect effect) {
  Arm(op, n, std::move(error), effect, /*persistent=*/false);
}

void FaultInjectionEnv::FailFromNth(FaultOp op, int64_t n, Status error, FailedWriteEffect effect) {
  Arm(op, n, std::move(error), effect, /*persistent=*/true);
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

void FaultInjectionEnv::LosePowerAtNth(FaultOp op, int64_t n) {
  assert(n >= 1);
  std::lock_guard<std::mutex> guard(mutex_);
  power_loss_op_ = op;
  power_loss_countdown_ = n;
}

bool FaultInjectionEnv::PowerLost() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return power_lost_;
}

Status FaultInjectionEnv::CheckPowered() const {
  if (power_lost_) return Status::IOError("power lost (simulated)");
  return Status::Ok();
}

Status FaultInjectionEnv::CheckPower(FaultOp op) {
  if (!power_lost_ && power_loss_countdown_ > 0 && op == power_loss_op_ && --power_loss_countdown_ == 0) {
    power_lost_ = true;
  }
  return CheckPowered();
}

Status FaultInjectionEnv::ConsultFaultPlan(FaultOp op) {
  std::lock_guard<std::mutex> guard(mutex_);
  return CountCall(op);
}

Status FaultInjectionEnv::CountCall(FaultOp op, FailedWriteEffect* effect) {
  FaultPlan& plan = plans_[static_cast<int>(op)];
  ++plan.calls;
  if (!plan.active) return Status::Ok();
  if (plan.countdown > 1) {
    --plan.countdown;
    return Status::Ok();
  }
  ++plan.injected;
  Status error = plan.error;
  if (effect != nullptr) *effect = plan.effect;
  if (!plan.persistent) {
    plan.active = false;
    plan.error = Status::Ok();
  }
  return error;
}

std::shared_ptr<FaultInjectionEnv::FileData> FaultInjectionEnv::DataForWriting(const std::string& key,
                                                                               bool created) {
  auto it = files_.find(key);
  if (!created && it != files_.end()) return it->second;
  auto data = std::make_shared<FileData>();
  // A new file is known to be empty; an existing one is read at its first
  // change.
  data->loaded = created;
  files_[key] = data;
  return data;
}

Result<std::optional<std::string>> FaultInjectionEnv::DurableContents(const std::string& key) {
  auto it = files_.find(key);
  if (it != files_.end() && it->second->loaded) {
    if (!target()->FileExists(key)) return std::optional<std::string>();
    return std::optional<std::string>(it->second->durable);
  }
  Result<std::string> contents = target()->ReadFileToString(key);
  if (!contents.ok()) {
    if (contents.status().Is(StatusCode::kNotFound)) return std::optional<std::string>();
    return contents.status();
  }
  return std::optional<std::string>(std::move(contents).value());
}

Status FaultInjectionEnv::WriteWhole(const std::string& path, const std::string& contents) {
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<File> file, target()->OpenFile(path, OpenMode::kCreateTruncate));
  return file->WriteAt(0, contents);
}

Result<std::unique_ptr<File>> FaultInjectionEnv::OpenFile(const std::string& path, OpenMode mode) {
  std::lock_guard<std::mutex> guard(mutex_);
  CAIRN_RETURN_IF_ERROR(CheckPower(FaultOp::kOpen));
  CAIRN_RETURN_IF_ERROR(CountCall(FaultOp::kOpen));
  if (mode == OpenMode::kReadOnly) {
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<File> file, target()->OpenFile(path, mode));
    return std::unique_ptr<File>(
        std::make_unique<TrackedFile>(this, std::move(file), nullptr, generation_, 0));
  }
  const std::string key = NormalisePath(path);
  const bool existed = target()->FileExists(path);
  // An existing file is truncated here rather than by the open, so that the
  // truncation is recorded like any other change.
  const bool truncate_existing = mode == OpenMode::kCreateTruncate && existed;
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<File> file,
                         target()->OpenFile(path, truncate_existing ? OpenMode::kReadWrite : mode));
  std::shared_ptr<FileData> data = DataForWriting(key, !existed);
  if (!existed) {
    pending_changes_.push_back(
        EntryChange{EntryChange::Kind::kCreate, key, std::string(), std::nullopt, {DirName(key)}});
  }
  CAIRN_ASSIGN_OR_RETURN(uint64_t size, file->Size());
  if (truncate_existing && size > 0) {
    CAIRN_RETURN_IF_ERROR(TrackedFile::TruncateAndRecord(file.get(), data.get(), 0));
    size = 0;
  }
  return std::unique_ptr<File>(
      std::make_unique<TrackedFile>(this, std::move(file), std::move(data), generation_, size));
}

Status FaultInjectionEnv::RenameFile(const std::string& from, const std::string& to) {
  std::lock_guard<std::mutex> guard(mutex_);
  CAIRN_RETURN_IF_ERROR(CheckPower(FaultOp::kRename));
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
  CAIRN_RETURN_IF_ERROR(CheckPower(FaultOp::kRemove));
  CAIRN_RETURN_IF_ERROR(CountCall(FaultOp::kRemove));
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
  CAIRN_RETURN_IF_ERROR(CheckPower(FaultOp::kSync));
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
  for (const auto& [key, data] : files_) exposure.unsynced_bytes += data->unsynced_bytes + data->lost_bytes;
  exposure.unsynced_entry_changes = pending_changes_.size();
  return exposure;
}

Status FaultInjectionEnv::SimulatePowerCut(const PowerCutOptions& options, PowerCutReport* report) {
  assert(options.sector_bytes > 0);
  std::lock_guard<std::mutex> guard(mutex_);
  PowerCutReport local;
  PowerCutReport& out = report != nullptr ? *report : local;
  out = PowerCutReport{};
  crash::Rng rng(options.seed);
  Status first_error;
  // Data first, at the files' current names: the entry changes undone next
  // move whole files and do not care what is in them.
  CutFileData(options, rng, &out, &first_error);
  CutEntryChanges(options, rng, &out, &first_error);
  pending_changes_.clear();
  files_.clear();
  ++generation_;
  power_lost_ = false;
  power_loss_countdown_ = 0;
  return first_error;
}

void FaultInjectionEnv::CutFileData(const PowerCutOptions& options, crash::Rng& rng, PowerCutReport* report,
                                    Status* first_error) {
  for (const auto& [key, data] : files_) {
    if (!data->loaded || (data->unsynced.empty() && data->lost_bytes == 0)) continue;
    if (!target()->FileExists(key)) continue;
    crash::FileAfterCut after;
    if (data->unsynced.empty() || options.data == PowerCutOptions::Data::kDropUnsynced) {
      after.contents = data->durable;
      after.description = "dropped " + Plural(data->unsynced.size(), "unsynced write");
    } else if (options.data == PowerCutOptions::Data::kTornWrite) {
      after = crash::CutWithTornWrite(data->durable, data->unsynced, options.sector_bytes, rng);
    } else {
      after = crash::CutWithReorderedWrites(data->durable, data->unsynced, options.sector_bytes, rng);
    }
    if (data->lost_bytes > 0) after.description += "; " + Plural(data->lost_bytes, "byte") + " lost to a failed sync";
    ++report->files_cut;
    report->torn_writes += after.torn ? 1 : 0;
    report->sectors_kept += after.sectors_kept;
    report->sectors_lost += after.sectors_lost;
    report->lines.push_back(key + ": " + after.description);
    Status written = WriteWhole(key, after.contents);
    if (first_error->ok() && !written.ok()) *first_error = written;
  }
}

void FaultInjectionEnv::CutEntryChanges(const PowerCutOptions& options, crash::Rng& rng, PowerCutReport* report,
                                        Status* first_error) {
  const auto note = [first_error](const Status& status) {
    if (first_error->ok() && !status.ok()) *first_error = status;
  };
  // A missing file means an approximation of the model (see the header) met
  // its limit; the rest is still undone.
  const auto tolerate_missing = [](const Status& status) {
    return status.Is(StatusCode::kNotFound) ? Status::Ok() : status;
  };
  const auto paths = [](const EntryChange& change) {
    std::vector<const std::string*> out = {&change.path};
    if (!change.to.empty()) out.push_back(&change.to);
    return out;
  };
  // Which changes are undone: all, or a random subset closed under "an
  // earlier change of the same path was undone".
  std::vector<bool> undo(pending_changes_.size(), true);
  if (options.keep_some_entry_changes) {
    for (size_t i = 0; i < pending_changes_.size(); ++i) {
      const bool keep = rng.Percent(50);
      bool depends_on_undone = false;
      for (size_t j = 0; j < i && !depends_on_undone; ++j) {
        if (!undo[j]) continue;
        for (const std::string* a : paths(pending_changes_[j])) {
          for (const std::string* b : paths(pending_changes_[i])) depends_on_undone |= SamePathOrBelow(*a, *b);
        }
      }
      undo[i] = depends_on_undone || !keep;
    }
  }
  // Newest first, so each change is undone on the state it produced.
  for (size_t i = pending_changes_.size(); i-- > 0;) {
    const EntryChange& change = pending_changes_[i];
    std::string what;
    switch (change.kind) {
      case EntryChange::Kind::kCreate:
        what = "create " + change.path;
        if (undo[i]) note(tolerate_missing(target()->RemoveFile(change.path)));
        break;
      case EntryChange::Kind::kRename:
        what = "rename " + change.path + " -> " + change.to;
        if (undo[i]) {
          note(tolerate_missing(target()->RenameFile(change.to, change.path)));
          if (change.previous_contents) note(WriteWhole(change.to, *change.previous_contents));
        }
        break;
      case EntryChange::Kind::kRemove:
        what = "remove " + change.path;
        if (undo[i] && change.previous_contents) note(WriteWhole(change.path, *change.previous_contents));
        break;
    }
    (undo[i] ? report->entry_changes_undone : report->entry_changes_kept) += 1;
    report->lines.push_back(std::string(undo[i] ? "undone: " : "kept: ") + what);
  }
}

}  // namespace cairn
