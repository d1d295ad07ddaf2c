// How SyncAgent reports a table's state in SyncStatus (sync_agent_state.h).
#include "sync_agent_state.h"

namespace cairn::sync_agent_state {

SyncTableStatus DescribeTableSync(const std::string& name, const TableSync& table) {
  SyncTableStatus t;
  t.table = name;
  t.confirmed_through = table.confirmed.ContiguousFrom(1);
  t.live_start = table.live_start;
  for (SyncLane lane : {SyncLane::kLive, SyncLane::kBackfill, SyncLane::kArchive}) {
    SyncLaneStatus& l = t.lanes.emplace_back();
    l.lane = lane;
    auto counters = table.lanes.find(lane);
    if (counters != table.lanes.end()) {
      l.batches_confirmed = counters->second.batches_confirmed;
      l.records_confirmed = counters->second.records_confirmed;
      l.bytes_sent = counters->second.bytes_sent;
      l.last_error = counters->second.last_error;
    }
  }
  for (const auto& [key, batch] : table.in_flight) {
    t.in_flight.push_back(batch.state);
    for (SyncLaneStatus& l : t.lanes) {
      if (l.lane == key.first) ++l.in_flight;
    }
  }
  return t;
}

}  // namespace cairn::sync_agent_state
