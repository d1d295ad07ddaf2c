#include "crash_no_sync_env.h"

#include <utility>

namespace cairn {

namespace {

class NoSyncFile : public File {
 public:
  explicit NoSyncFile(std::unique_ptr<File> target) : target_(std::move(target)) {}

  Result<size_t> ReadAt(uint64_t offset, size_t n, char* dst) override {
    return target_->ReadAt(offset, n, dst);
  }
  Status WriteAt(uint64_t offset, std::string_view data) override { return target_->WriteAt(offset, data); }
  Status Append(std::string_view data) override { return target_->Append(data); }
  Status Truncate(uint64_t size) override { return target_->Truncate(size); }
  Status Sync() override { return Status::Ok(); }
  Result<uint64_t> Size() override { return target_->Size(); }
  const std::string& path() const override { return target_->path(); }

 private:
  std::unique_ptr<File> target_;
};

}  // namespace

Result<std::unique_ptr<File>> NoSyncEnv::OpenFile(const std::string& path, OpenMode mode) {
  Result<std::unique_ptr<File>> file = target()->OpenFile(path, mode);
  if (!file.ok()) return file.status();
  return std::unique_ptr<File>(std::make_unique<NoSyncFile>(std::move(file).value()));
}

Status NoSyncEnv::SyncDir(const std::string&) { return Status::Ok(); }

}  // namespace cairn
