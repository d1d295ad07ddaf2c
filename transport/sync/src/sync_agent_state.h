// What SyncAgent keeps per synced table: its confirmed LSNs, the batches in
// flight and the counters of each lane; and how that is reported in
// SyncStatus. Private to cairn_sync; sync_agent.cc is the only user, and
// guards all of it with the agent's mutex.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "cairn/sync/sync_agent.h"

namespace cairn::sync_agent_state {

struct InFlight {
  SyncBatchState state;
  EnvelopeHeader header;
  std::string topic;
  std::string payload;
  bool needs_publish = true;  // not handed to the broker yet, or to hand again
  bool acknowledged = false;  // PUBACK of the latest attempt received
  int64_t sent_monotonic_ns = 0;
  int64_t retry_at_monotonic_ns = 0;
};

struct LaneCounters {
  uint64_t batches_confirmed = 0, records_confirmed = 0, bytes_sent = 0;
  std::string last_error;
};

struct TableSync {
  std::string name;
  Period period = Period::kDay;
  int64_t retention_ns = 0;
  LsnRangeSet confirmed;
  std::map<SyncLane, uint64_t> next_sequence;
  // LSNs above live_start belong to the live lane, those at or below it to
  // backfill. live_sent: live batches cover everything through it.
  uint64_t live_start = 0;
  uint64_t live_sent = 0;
  int64_t last_live_monotonic_ns = 0;
  std::map<std::pair<SyncLane, uint64_t>, InFlight> in_flight;
  std::map<SyncLane, LaneCounters> lanes;
  bool dirty = false;
};

// The status of `table` (named `name`) without its unsynced summary, which
// the caller asks of the engine outside the agent's mutex.
SyncTableStatus DescribeTableSync(const std::string& name, const TableSync& table);

}  // namespace cairn::sync_agent_state
