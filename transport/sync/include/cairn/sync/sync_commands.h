// The shell's view of sync (DESIGN §6, §7): the `sync` command, and the
// Prometheus lines of /metrics.
//
//   sync            one row per synced table and lane: unsynced records and
//                   bytes, the oldest unsynced timestamp, what is held for
//                   the archive lane, batches in flight, confirmed batches
//                   and records, bytes sent, the last error; notes say
//                   whether the broker is connected
//   sync batches    every batch in flight: table, lane, sequence, LSN range,
//                   records, bytes, first sent, attempts, last error
//   sync quota      the sync quota (EngineOptions::sync_quota): limits,
//                   policy, what the last check measured, whether writes
//                   are refused, and what was dropped or downsampled
// `sync` and `sync batches` end with a note on the quota, and one saying
// so when the quota refuses writes.
//
// Thread-safety: the handlers call SyncAgent::GetStatus, which is safe from
// any thread.
#pragma once

#include <functional>
#include <string>

#include "cairn/core/engine.h"
#include "cairn/platform/status.h"
#include "cairn/shell/command_registry.h"
#include "cairn/shell/engine_holder.h"
#include "cairn/sync/sync_agent.h"

namespace cairn {

// Registers `sync`. While `storage` holds no engine the command answers its
// outage (engine_holder.h). `current_agent` gives the agent (asked on every
// run, so that it may start after the registry is shared) or null (sync not
// configured or not started): the command then says so, except for
// `sync quota`. `storage` and every agent returned must outlive the
// registry.
Status RegisterSyncCommands(CommandRegistry* registry, const EngineHolder* storage,
                            std::function<SyncAgent*()> current_agent);

// The sync gauges and counters in Prometheus text format, one family per
// quantity, labelled by table and lane: cairn_sync_connected,
// cairn_sync_unsynced_records, cairn_sync_unsynced_bytes,
// cairn_sync_oldest_unsynced_seconds, cairn_sync_held_for_archive_records,
// cairn_sync_batches_in_flight, cairn_sync_confirmed_batches_total,
// cairn_sync_confirmed_records_total, cairn_sync_sent_bytes_total,
// cairn_sync_receipts_total{outcome}.
std::string RenderSyncMetrics(const SyncStatus& status);

// The quota's gauges and counters in Prometheus text format:
// cairn_sync_quota_info{policy}, cairn_sync_quota_budget_bytes,
// cairn_sync_quota_floor_bytes, cairn_sync_quota_unsynced_bytes,
// cairn_sync_quota_free_bytes, cairn_sync_quota_refusing_writes,
// cairn_sync_quota_writes_refused_total, cairn_sync_quota_dropped_records_total,
// cairn_sync_quota_downsampled_records_total,
// cairn_sync_quota_aggregates_written_total. Empty when the quota is off.
std::string RenderQuotaMetrics(const SyncQuotaStatus& quota);

}  // namespace cairn
