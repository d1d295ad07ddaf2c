// An Env whose syncs return at once without reaching the disk.
//
// Crash tests that simulate power cuts with FaultInjectionEnv decide what
// survives from the syncs *they* see; the real fdatasync underneath adds
// nothing to such a test but waiting (tens of milliseconds per call on slow
// disks and under emulation). Placing this Env below a FaultInjectionEnv
// keeps the simulated durability exact and the run short. Never use it where
// a real crash of the process or the machine is the point (kill -9 tests run
// on Env::Default()).
//
// Thread-safety: as the wrapped Env; files as any File.
#pragma once

#include <memory>
#include <string>

#include "cairn/platform/env.h"

namespace cairn {

class NoSyncEnv : public EnvWrapper {
 public:
  // `target` must outlive this object and every File it returns.
  explicit NoSyncEnv(Env* target) : EnvWrapper(target) {}

  // Files whose Sync() returns OK without syncing; every other call is
  // forwarded.
  Result<std::unique_ptr<File>> OpenFile(const std::string& path, OpenMode mode) override;

  // Returns OK without syncing the directory.
  Status SyncDir(const std::string& path) override;
};

}  // namespace cairn
