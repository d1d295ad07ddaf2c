#include "engine/health/health_board.h"

#include <algorithm>

namespace cairn {

std::string_view HealthLevelName(HealthLevel level) {
  switch (level) {
    case HealthLevel::kOk:
      return "ok";
    case HealthLevel::kDegraded:
      return "degraded";
    case HealthLevel::kFailing:
      return "failing";
  }
  return "unknown";
}

void HealthBoard::Raise(HealthProblem problem, int64_t now_unix_nanos) {
  MutexLock lock(&mutex_);
  auto it = problems_.find(problem.key);
  problem.since_unix_nanos = it != problems_.end() ? it->second.since_unix_nanos : now_unix_nanos;
  std::string key = problem.key;
  problems_.insert_or_assign(std::move(key), std::move(problem));
}

void HealthBoard::Clear(std::string_view key) {
  MutexLock lock(&mutex_);
  if (auto it = problems_.find(key); it != problems_.end()) problems_.erase(it);
}

void HealthBoard::ClearPrefix(std::string_view prefix) {
  MutexLock lock(&mutex_);
  for (auto it = problems_.lower_bound(prefix); it != problems_.end() && it->first.starts_with(prefix);)
    it = problems_.erase(it);
}

bool HealthBoard::Has(std::string_view key) const {
  MutexLock lock(&mutex_);
  return problems_.find(key) != problems_.end();
}

EngineHealth HealthBoard::Snapshot() const {
  MutexLock lock(&mutex_);
  EngineHealth health;
  for (const auto& [key, problem] : problems_) {
    health.level = std::max(health.level, problem.level);
    health.problems.push_back(problem);
  }
  return health;
}

}  // namespace cairn
