#include "batch_plan.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

namespace cairn::ingest {

BatchPlan PlanBatch(const std::vector<RecordRow>& records) {
  std::vector<size_t> order(records.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto identity = [&records](size_t i) {
    const RecordRow& row = records[i];
    return std::tie(row.device_id, row.measure_name, row.dimensions, row.timestamp);
  };
  // Within an identity: greatest (version, LSN) first, as the gateway orders
  // equal versions (envelope_format.md §4), then input order.
  const auto rank = [&records](size_t i) { return std::pair(records[i].version, records[i].lsn); };
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (identity(a) != identity(b)) return identity(a) < identity(b);
    if (rank(a) != rank(b)) return rank(a) > rank(b);
    return a < b;
  });
  BatchPlan plan;
  size_t i = 0;
  while (i < order.size()) {
    const size_t winner = order[i];
    plan.winners.push_back(winner);
    size_t j = i + 1;
    for (; j < order.size() && identity(order[j]) == identity(winner); ++j) {
      if (rank(order[j]) == rank(winner)) {
        ++plan.losers.duplicates;
      } else {
        ++plan.losers.older;
      }
    }
    i = j;
  }
  return plan;
}

std::vector<BatchSeries> SeriesOf(const std::vector<RecordRow>& records) {
  using Key = std::tuple<const std::string&, const std::string&, const TagMap&, int>;
  std::map<Key, size_t> index;
  std::vector<BatchSeries> series;
  for (const RecordRow& row : records) {
    const auto [it, added] =
        index.emplace(Key{row.device_id, row.measure_name, row.dimensions, row.shard}, series.size());
    if (added) series.push_back(BatchSeries{&row, nullptr});
    if (added || !row.attributes.empty()) series[it->second].attributes = &row.attributes;
  }
  return series;
}

}  // namespace cairn::ingest
