#include "cairn/shell/engine_holder.h"

#include <utility>

namespace cairn {

EngineHolder::EngineHolder() : EngineHolder(nullptr) {}

EngineHolder::EngineHolder(Engine* engine) : engine_(engine) {
  if (engine == nullptr) {
    MutexLock lock(&mutex_);
    outage_.problem = "the storage engine is not open yet";
  }
}

Status EngineHolder::Check() const {
  if (engine() != nullptr) return Status::Ok();
  const Outage why = outage();
  std::string message = "storage unavailable: " + why.problem;
  if (!why.remedy.empty()) message += "; " + why.remedy;
  return Status::Unavailable(std::move(message));
}

EngineHolder::Outage EngineHolder::outage() const {
  MutexLock lock(&mutex_);
  return outage_;
}

void EngineHolder::SetUnavailable(Outage outage) {
  MutexLock lock(&mutex_);
  if (engine_.load(std::memory_order_relaxed) != nullptr) return;
  outage_ = std::move(outage);
}

void EngineHolder::Publish(Engine* engine) {
  MutexLock lock(&mutex_);
  outage_ = Outage();
  engine_.store(engine, std::memory_order_release);
}

}  // namespace cairn
