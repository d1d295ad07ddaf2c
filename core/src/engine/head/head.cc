#include "engine/head/head.h"

#include <algorithm>

#include "engine/query/series_snapshot.h"

namespace cairn {

Head::Head(Env* env, size_t memory_budget_bytes, size_t seal_records)
    : env_(env), memory_budget_bytes_(memory_budget_bytes), seal_records_(seal_records) {}

void Head::Insert(Series& series, ChunkRecord record, uint64_t lsn) {
  ++series.generation;
  if (series.latest_known && (!series.latest || record.timestamp >= series.latest->timestamp)) {
    series.latest = record;
  }
  auto it = std::lower_bound(series.head.begin(), series.head.end(), record.timestamp,
                             [](const HeadEntry& e, int64_t ts) { return e.record.timestamp < ts; });
  if (series.head.empty()) series.head_since_monotonic_ns = env_->MonotonicNanos();
  HeadEntry entry{std::move(record), lsn};
  const size_t bytes = HeadEntryBytes(entry);
  if (it != series.head.end() && it->record.timestamp == entry.record.timestamp) {
    const size_t old_bytes = HeadEntryBytes(*it);
    series.head_bytes -= old_bytes;
    bytes_ -= old_bytes;
    *it = std::move(entry);
  } else {
    series.head.insert(it, std::move(entry));
    ++records_;
  }
  series.head_bytes += bytes;
  bytes_ += bytes;
}

void Head::RemoveSealed(Series& series, std::vector<const HeadEntry*> sealed) {
  std::sort(sealed.begin(), sealed.end(),
            [](const HeadEntry* a, const HeadEntry* b) { return a->record.timestamp < b->record.timestamp; });
  size_t next_sealed = 0, kept = 0;
  for (size_t i = 0; i < series.head.size(); ++i) {
    HeadEntry& entry = series.head[i];
    while (next_sealed < sealed.size() && sealed[next_sealed]->record.timestamp < entry.record.timestamp) {
      ++next_sealed;
    }
    // A newer version written meanwhile has another LSN and stays.
    const bool was_sealed = next_sealed < sealed.size() &&
                            sealed[next_sealed]->record.timestamp == entry.record.timestamp &&
                            sealed[next_sealed]->lsn == entry.lsn;
    if (was_sealed) {
      const size_t bytes = HeadEntryBytes(entry);
      series.head_bytes -= bytes;
      bytes_ -= bytes;
      --records_;
      continue;
    }
    if (kept != i) series.head[kept] = std::move(entry);
    ++kept;
  }
  series.head.resize(kept);
  for (const HeadEntry* e : sealed) {
    series.sealed_max_timestamp = std::max(series.sealed_max_timestamp, e->record.timestamp);
  }
  if (!series.head.empty()) series.head_since_monotonic_ns = env_->MonotonicNanos();
}

void Head::Forget(const Series& series) {
  bytes_ -= series.head_bytes;
  records_ -= series.head.size();
}

std::set<const Series*> Head::SealForBudget(std::vector<const Series*> heads) const {
  std::set<const Series*> chosen;
  if (!OverBudget()) return chosen;
  std::sort(heads.begin(), heads.end(),
            [](const Series* a, const Series* b) { return a->head_bytes > b->head_bytes; });
  size_t to_free = bytes_ - memory_budget_bytes_ / 2;
  for (const Series* s : heads) {
    if (to_free == 0) break;
    chosen.insert(s);
    to_free -= std::min(to_free, s->head_bytes);
  }
  return chosen;
}

bool Head::LatestAnswers(const Series& series, int64_t now_ns) {
  return series.latest_known && (!series.latest || !Expired(*series.latest, now_ns));
}

void Head::CacheLatest(Series& series, uint64_t generation, const std::optional<ChunkRecord>& newest) {
  if (series.generation != generation) return;
  series.latest_known = true;
  series.latest = newest;
}

}  // namespace cairn
