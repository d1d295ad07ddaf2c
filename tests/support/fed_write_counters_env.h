// An Env whose write counters (Env::ProcessBytesWritten and
// Env::BlockDeviceWritesOf) hold what the test feeds them, over any other
// Env (a ManualClockEnv, a FaultInjectionEnv) for everything else.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "cairn/platform/env.h"

namespace cairn {

// Until fed, both counters answer Unavailable ("not fed"): a test sees the
// unknown path unless it chooses numbers. Thread-safe.
class FedWriteCountersEnv : public EnvWrapper {
 public:
  explicit FedWriteCountersEnv(Env* target) : EnvWrapper(target) {}

  // The process counter from now on; nullopt makes it unknown again.
  void FeedProcessBytesWritten(std::optional<uint64_t> bytes) {
    std::lock_guard lock(mutex_);
    process_ = bytes;
  }
  // Adds to the process counter (which must have been fed).
  void AddProcessBytesWritten(uint64_t bytes) {
    std::lock_guard lock(mutex_);
    process_ = process_.value_or(0) + bytes;
  }

  // The device answer from now on, whatever the path; nullopt makes it
  // unknown (as for tmpfs) with `reason` as the message.
  void FeedBlockDevice(std::optional<BlockDeviceWrites> device,
                       std::string reason = "no block device (fed)") {
    std::lock_guard lock(mutex_);
    device_ = std::move(device);
    device_reason_ = std::move(reason);
  }
  // Adds to the fed device's counter.
  void AddDeviceBytesWritten(uint64_t bytes) {
    std::lock_guard lock(mutex_);
    if (device_) device_->bytes_written_since_boot += bytes;
  }
  // A reboot as the kernel shows it: the device counter restarts at
  // `since_boot` under a new boot id.
  void RebootDevice(std::string new_boot_id, uint64_t since_boot) {
    std::lock_guard lock(mutex_);
    if (!device_) return;
    device_->boot_id = std::move(new_boot_id);
    device_->bytes_written_since_boot = since_boot;
  }

  Result<uint64_t> ProcessBytesWritten() override {
    std::lock_guard lock(mutex_);
    if (!process_) return Status::Unavailable("process write counter not fed");
    return *process_;
  }
  Result<BlockDeviceWrites> BlockDeviceWritesOf(const std::string& path) override {
    std::lock_guard lock(mutex_);
    if (!device_) return Status::Unavailable(path + ": " + device_reason_);
    return *device_;
  }

 private:
  std::mutex mutex_;
  std::optional<uint64_t> process_;
  std::optional<BlockDeviceWrites> device_;
  std::string device_reason_ = "no block device (fed)";
};

}  // namespace cairn
