// HealthBoard: the engine's list of open health problems (cairn/core/health.h).
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "cairn/core/health.h"
#include "cairn/platform/mutex.h"

namespace cairn {

class HealthBoard {
 public:
  // Records `problem` under problem.key. A problem raised again under the same
  // key keeps its original since_unix_nanos; `now_unix_nanos` is used for a
  // new one.
  void Raise(HealthProblem problem, int64_t now_unix_nanos);
  // Forgets the problem under `key`, if any.
  void Clear(std::string_view key);
  // Forgets every problem whose key starts with `prefix`.
  void ClearPrefix(std::string_view prefix);
  bool Has(std::string_view key) const;
  EngineHealth Snapshot() const;

 private:
  mutable Mutex mutex_;
  std::map<std::string, HealthProblem, std::less<>> problems_ GUARDED_BY(mutex_);
};

}  // namespace cairn
