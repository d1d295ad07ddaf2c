// The checks of SyncAgentOptions that need no link. Private to cairn_sync;
// sync_agent.cc is the only caller.
#pragma once

#include "cairn/platform/status.h"
#include "cairn/sync/sync_agent.h"

namespace cairn {

// InvalidArgument (or the topic functions' error) unless the gateway id,
// the key's length, the batch sizes, the backfill window, the intervals
// and the topic prefix are usable; the receipt topic is then valid too.
Status CheckSyncAgentOptions(const SyncAgentOptions& options);

}  // namespace cairn
