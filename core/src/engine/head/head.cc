#include "engine/head/head.h"

#include <algorithm>

#include "engine/query/series_snapshot.h"

namespace cairn {

Head::Head(Env* env, size_t memory_budget_bytes, size_t seal_records)
    : env_(env), memory_budget_bytes_(memory_budget_bytes), seal_records_(seal_records) {}

void Head::Insert(Series& series, ChunkRecord record, uint64_t lsn) {
  ++series.generation;
  if (series.head.empty()) series.head_since_monotonic_ns = env_->MonotonicNanos();
  if (series.head.Upsert(record, lsn, series.fields())) ++records_;
  Recount(series);
  if (series.latest_known && !series.latest_in_head &&
      (!series.latest || record.timestamp >= series.latest->timestamp)) {
    // The newest record of all is the head's newest: its last entry.
    series.latest_in_head = true;
    series.latest.reset();
  }
}

std::optional<ChunkRecord> Head::Latest(const Series& series) {
  if (series.latest_in_head) return series.head.Record(series.head.size() - 1, series.fields());
  if (series.latest == nullptr) return std::nullopt;
  return *series.latest;
}

void Head::Recount(Series& series) {
  const size_t bytes = series.head.bytes();
  bytes_ = bytes_ - series.head_bytes + bytes;
  series.head_bytes = bytes;
}

void Head::RemoveSealed(Series& series, std::vector<SealedEntry> sealed) {
  std::sort(sealed.begin(), sealed.end(),
            [](const SealedEntry& a, const SealedEntry& b) { return a.timestamp < b.timestamp; });
  size_t next_sealed = 0;
  const size_t before = series.head.size();
  if (series.latest_in_head) {
    // The head's last entry may leave it: the index keeps a copy until it
    // is back in the head's last place (below).
    series.latest = std::make_unique<ChunkRecord>(series.head.Record(series.head.size() - 1, series.fields()));
    series.latest_in_head = false;
  }
  series.head.Retain([&](size_t i) {
    const int64_t timestamp = series.head.timestamp(i);
    while (next_sealed < sealed.size() && sealed[next_sealed].timestamp < timestamp) ++next_sealed;
    // A newer version written meanwhile has another LSN and stays.
    return !(next_sealed < sealed.size() && sealed[next_sealed].timestamp == timestamp &&
             sealed[next_sealed].lsn == series.head.lsn(i));
  });
  records_ -= before - series.head.size();
  Recount(series);
  if (series.latest && !series.head.empty()) {
    const size_t last = series.head.size() - 1;
    if (series.head.timestamp(last) == series.latest->timestamp && series.head.lsn(last) == series.latest->lsn) {
      series.latest.reset();
      series.latest_in_head = true;
    }
  }
  for (const SealedEntry& e : sealed) series.sealed_max_timestamp = std::max(series.sealed_max_timestamp, e.timestamp);
  if (!series.head.empty()) series.head_since_monotonic_ns = env_->MonotonicNanos();
}

void Head::Forget(const Series& series) {
  bytes_ -= series.head_bytes;
  records_ -= series.head.size();
}

std::set<const Series*> Head::SealForBudget(std::vector<const Series*> heads) const {
  std::set<const Series*> chosen;
  // Read once: a seal running beside this call may release its copies
  // (sealing_bytes_) between two reads, and the total must not fall below
  // half the budget between the check and the subtraction.
  const size_t total = bytes();
  if (total <= memory_budget_bytes_) return chosen;
  std::sort(heads.begin(), heads.end(),
            [](const Series* a, const Series* b) { return a->head_bytes > b->head_bytes; });
  size_t to_free = total - memory_budget_bytes_ / 2;
  for (const Series* s : heads) {
    if (to_free == 0) break;
    chosen.insert(s);
    to_free -= std::min(to_free, s->head_bytes);
  }
  return chosen;
}

bool Head::LatestAnswers(const Series& series, int64_t now_ns) {
  if (!series.latest_known) return false;
  if (series.latest_in_head) {
    const size_t last = series.head.size() - 1;
    return !TtlExpired(series.head.ttl(last), now_ns);
  }
  return !series.latest || !Expired(*series.latest, now_ns);
}

void Head::CacheLatest(Series& series, uint64_t generation, const std::optional<ChunkRecord>& newest) {
  if (series.generation != generation) return;
  series.latest_known = true;
  series.latest_in_head = false;
  series.latest = newest ? std::make_unique<ChunkRecord>(*newest) : nullptr;
}

}  // namespace cairn
