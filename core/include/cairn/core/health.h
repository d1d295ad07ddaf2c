// Engine health: what stands between the engine and normal service.
//
// Components of the engine (the log, the period files, the catalog, the
// clock, the disk) raise a problem under a stable key when they meet a
// condition an operator must know about, and clear it when the condition is
// gone. `health` on the shell, /healthz and /metrics read the same list.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cairn {

enum class HealthLevel : uint8_t {
  kOk = 0,
  // Service goes on but something is wrong: a damaged or quarantined file,
  // writes refused for now (disk full), an untrusted clock, a worn card.
  kDegraded = 1,
  // The engine cannot take writes or answer queries until an operator acts.
  kFailing = 2,
};

std::string_view HealthLevelName(HealthLevel level);  // "ok", "degraded", "failing"

struct HealthProblem {
  // Stable identity of the condition, e.g. "disk.full" or
  // "period.quarantined:sensors/2026-11-21.db"; raising the same key again
  // replaces the problem.
  std::string key;
  HealthLevel level = HealthLevel::kDegraded;
  // The part concerned: "log", "disk", "period_file", "catalog", "clock", ...
  std::string component;
  // What is wrong, for a person, naming the file or table where there is one.
  std::string message;
  // What fixes it (a command or an action), empty when nothing is needed.
  std::string remedy;
  // Unix ns when the problem was first raised under this key.
  int64_t since_unix_nanos = 0;
};

struct EngineHealth {
  HealthLevel level = HealthLevel::kOk;  // the worst level among `problems`
  std::vector<HealthProblem> problems;   // sorted by key
};

}  // namespace cairn
