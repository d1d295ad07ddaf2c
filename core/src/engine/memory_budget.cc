// EngineOptions::memory_budget_bytes divided among the engine's pools
// (engine.h says how).
#include <algorithm>

#include "cairn/core/engine.h"

namespace cairn {

namespace {

constexpr size_t kKiB = 1024;
constexpr size_t kMinWriterCacheKib = 256;
constexpr size_t kMinReaderCacheKib = 64;
constexpr size_t kMinHeadBytes = 1 << 20;

}  // namespace

EngineOptions ApplyMemoryBudget(EngineOptions options) {
  const size_t budget = options.memory_budget_bytes;
  if (budget == 0) return options;
  options.head_memory_budget_bytes = std::max(budget / 2, kMinHeadBytes);
  // Two writers: the current period's file and the next one's, open
  // together around a period boundary.
  options.writer_cache_kib = static_cast<int>(std::max(budget / 8 / kKiB, kMinWriterCacheKib));
  const size_t readers = std::max<size_t>(options.max_open_period_files, 1);
  options.reader_cache_kib = static_cast<int>(std::max(budget / 8 / readers / kKiB, kMinReaderCacheKib));
  return options;
}

}  // namespace cairn
