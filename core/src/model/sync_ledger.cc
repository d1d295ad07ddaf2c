#include "cairn/core/sync_ledger.h"

#include <algorithm>

namespace cairn {

std::string_view SyncLaneName(SyncLane lane) {
  switch (lane) {
    case SyncLane::kLive:
      return "live";
    case SyncLane::kAlarm:
      return "alarm";
    case SyncLane::kBackfill:
      return "backfill";
    case SyncLane::kArchive:
      return "archive";
  }
  return "unknown";
}

Result<SyncLane> ParseSyncLane(std::string_view name) {
  for (SyncLane lane : kAllSyncLanes) {
    if (name == SyncLaneName(lane)) return lane;
  }
  return Status::InvalidArgument("unknown sync lane '" + std::string(name) +
                                 "' (expected live, alarm, backfill or archive)");
}

LsnRangeSet::LsnRangeSet(std::vector<LsnRange> ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const LsnRange& a, const LsnRange& b) { return a.first < b.first; });
  for (const LsnRange& range : ranges) {
    if (range.first > range.last) continue;
    // Adjacent ranges merge too: last + 1 == next first (no overflow: last
    // < UINT64_MAX whenever something can follow it).
    if (!ranges_.empty() && ranges_.back().last != UINT64_MAX && range.first <= ranges_.back().last + 1) {
      ranges_.back().last = std::max(ranges_.back().last, range.last);
    } else if (!ranges_.empty() && ranges_.back().last == UINT64_MAX) {
      continue;
    } else {
      ranges_.push_back(range);
    }
  }
}

void LsnRangeSet::Add(uint64_t first, uint64_t last) {
  if (first > last) return;
  std::vector<LsnRange> ranges = std::move(ranges_);
  ranges.push_back({first, last});
  *this = LsnRangeSet(std::move(ranges));
}

bool LsnRangeSet::Contains(uint64_t lsn) const { return ContainsAll(lsn, lsn); }

bool LsnRangeSet::ContainsAll(uint64_t first, uint64_t last) const {
  if (first > last) return true;
  // The last range starting at or before `first`.
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), first,
                             [](uint64_t lsn, const LsnRange& r) { return lsn < r.first; });
  if (it == ranges_.begin()) return false;
  --it;
  return it->last >= last;
}

uint64_t LsnRangeSet::ContiguousFrom(uint64_t from) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), from,
                             [](uint64_t lsn, const LsnRange& r) { return lsn < r.first; });
  if (it == ranges_.begin()) return from - 1;
  --it;
  return it->last >= from ? it->last : from - 1;
}

std::vector<LsnRange> LsnRangeSet::Gaps(uint64_t through) const {
  std::vector<LsnRange> gaps;
  uint64_t next = 1;
  for (const LsnRange& range : ranges_) {
    if (next > through) break;
    if (range.first > next) gaps.push_back({next, std::min(range.first - 1, through)});
    if (range.last == UINT64_MAX) return gaps;
    next = std::max(next, range.last + 1);
  }
  if (next <= through) gaps.push_back({next, through});
  return gaps;
}

}  // namespace cairn
