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
//
// Thread-safety: the handlers call SyncAgent::GetStatus, which is safe from
// any thread.
#pragma once

#include <string>

#include "cairn/platform/status.h"
#include "cairn/transport/command_registry.h"
#include "cairn/transport/sync_agent.h"

namespace cairn {

// Registers `sync`. `agent` may be null (sync not configured): the command
// then says so. A non-null agent must outlive the registry.
Status RegisterSyncCommands(CommandRegistry* registry, SyncAgent* agent);

// The sync gauges and counters in Prometheus text format, one family per
// quantity, labelled by table and lane: cairn_sync_connected,
// cairn_sync_unsynced_records, cairn_sync_unsynced_bytes,
// cairn_sync_oldest_unsynced_seconds, cairn_sync_held_for_archive_records,
// cairn_sync_batches_in_flight, cairn_sync_confirmed_batches_total,
// cairn_sync_confirmed_records_total, cairn_sync_sent_bytes_total,
// cairn_sync_receipts_total{outcome}.
std::string RenderSyncMetrics(const SyncStatus& status);

}  // namespace cairn
