#include "cairn/sync/sync_commands.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace cairn {

namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;

Value Count(uint64_t value) { return static_cast<int64_t>(std::min<uint64_t>(value, INT64_MAX)); }

Value TimestampOrNull(int64_t unix_nanos) {
  if (unix_nanos == 0) return std::monostate();
  return Timestamp{unix_nanos};
}

Value TextOrNull(const std::string& text) {
  if (text.empty()) return std::monostate();
  return text;
}

void AddConnectionNotes(const SyncStatus& status, CommandResult* result) {
  result->AddNote(
      "connected", status.connected,
      std::string("broker: ") + (status.connected ? "connected" : "not connected") +
          (status.link.last_error.empty() || status.connected ? "" : " (" + status.link.last_error + ")"));
  result->AddNote("gateway", status.gateway_id,
                  "gateway " + status.gateway_id + ", confirmation by " +
                      std::string(SyncConfirmationName(status.confirmation)));
}

std::string Bytes(uint64_t bytes) {
  char text[64];
  if (bytes >= (uint64_t{1} << 30)) {
    std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1 << 30));
  } else if (bytes >= (uint64_t{1} << 20)) {
    std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  } else if (bytes >= 1024) {
    std::snprintf(text, sizeof text, "%.1f KiB", static_cast<double>(bytes) / 1024);
  } else {
    std::snprintf(text, sizeof text, "%" PRIu64 " B", bytes);
  }
  return text;
}

// One line on the quota after `sync`, and one more while it refuses writes.
void AddQuotaNotes(const SyncQuotaStatus& quota, CommandResult* result) {
  if (!quota.enabled) {
    result->AddNote("quota", std::monostate(),
                    "quota: off (no budget for unsynced data, no free-disk floor)");
    return;
  }
  std::string text = "quota (" + std::string(QuotaPolicyName(quota.policy)) + "): ";
  if (quota.checked_at == 0) {
    text += "not measured yet";
  } else {
    text += Bytes(quota.unsynced_bytes) + " unsynced";
    if (quota.max_unsynced_bytes != 0) text += " of a " + Bytes(quota.max_unsynced_bytes) + " budget";
    text += ", " + Bytes(quota.free_bytes) + " free";
    if (quota.min_free_bytes != 0) text += " (floor " + Bytes(quota.min_free_bytes) + ")";
  }
  if (quota.records_dropped != 0) text += "; " + std::to_string(quota.records_dropped) + " records dropped";
  if (quota.records_downsampled != 0) {
    text += "; " + std::to_string(quota.records_downsampled) + " records downsampled into " +
            std::to_string(quota.aggregates_written) + " aggregates";
  }
  if (!quota.last_error.empty()) text += "; last error: " + quota.last_error;
  result->AddNote("quota", std::string(QuotaPolicyName(quota.policy)), text);
  if (quota.refusing_writes) {
    result->AddNote("quota_refusing_writes", true,
                    quota.below_floor ? "writes to every table are refused: free space is below the floor"
                                      : "writes to synced tables are refused until the backlog drains");
  }
}

CommandResult Quota(const SyncQuotaStatus& quota) {
  return CommandResult::KeyValues({
      {"enabled", quota.enabled},
      {"policy", std::string(QuotaPolicyName(quota.policy))},
      {"budget_bytes", Count(quota.max_unsynced_bytes)},
      {"floor_bytes", Count(quota.min_free_bytes)},
      {"checked_at", TimestampOrNull(quota.checked_at)},
      {"unsynced_bytes", Count(quota.unsynced_bytes)},
      {"free_bytes", Count(quota.free_bytes)},
      {"over_budget", quota.over_budget},
      {"below_floor", quota.below_floor},
      {"refusing_writes", quota.refusing_writes},
      {"writes_refused", Count(quota.writes_refused)},
      {"records_dropped", Count(quota.records_dropped)},
      {"records_downsampled", Count(quota.records_downsampled)},
      {"aggregates_written", Count(quota.aggregates_written)},
      {"last_error", TextOrNull(quota.last_error)},
  });
}

CommandResult Overview(SyncAgent* agent) {
  Result<SyncStatus> status = agent->GetStatus();
  if (!status.ok()) return CommandResult::Error(status.status());
  std::vector<CommandResult::Row> rows;
  for (const SyncTableStatus& table : status->tables) {
    for (const SyncLaneStatus& lane : table.lanes) {
      rows.push_back({table.table, std::string(SyncLaneName(lane.lane)), Count(table.unsynced.records),
                      Count(table.unsynced.bytes), TimestampOrNull(table.unsynced.oldest_timestamp),
                      Count(table.unsynced.held_for_archive), Count(lane.in_flight),
                      Count(lane.batches_confirmed), Count(lane.records_confirmed), Count(lane.bytes_sent),
                      TextOrNull(lane.last_error)});
    }
  }
  CommandResult result = CommandResult::Table(
      {"table", "lane", "unsynced_records", "unsynced_bytes", "oldest_unsynced", "held_for_archive",
       "in_flight", "confirmed_batches", "confirmed_records", "sent_bytes", "last_error"},
      std::move(rows));
  AddConnectionNotes(*status, &result);
  return result;
}

CommandResult Batches(SyncAgent* agent) {
  Result<SyncStatus> status = agent->GetStatus();
  if (!status.ok()) return CommandResult::Error(status.status());
  std::vector<CommandResult::Row> rows;
  for (const SyncTableStatus& table : status->tables) {
    for (const SyncBatchState& batch : table.in_flight) {
      rows.push_back({table.table, std::string(SyncLaneName(batch.lane)), Count(batch.sequence),
                      Count(batch.first_lsn), Count(batch.last_lsn), Count(batch.records), Count(batch.bytes),
                      TimestampOrNull(batch.first_sent_unix_ns), Count(batch.attempts),
                      TextOrNull(batch.last_error)});
    }
  }
  CommandResult result = CommandResult::Table({"table", "lane", "sequence", "first_lsn", "last_lsn",
                                               "records", "bytes", "first_sent", "attempts", "last_error"},
                                              std::move(rows));
  AddConnectionNotes(*status, &result);
  return result;
}

std::string LabelValue(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace

Status RegisterSyncCommands(CommandRegistry* registry, const EngineHolder* storage,
                            std::function<SyncAgent*()> current_agent) {
  return registry->Register(
      {.name = "sync",
       .arguments = "[batches|quota]",
       .summary = "what is not yet in the cloud, per table and lane; `sync batches` lists the batches in "
                  "flight, `sync quota` the limits on unsynced data",
       .options = {},
       .min_arguments = 0,
       .max_arguments = 1},
      [storage, current_agent = std::move(current_agent)](
          const CommandInvocation& invocation) -> CommandResult {
        if (Status available = storage->Check(); !available.ok()) return CommandResult::Error(available);
        Engine* engine = storage->engine();
        SyncAgent* agent = current_agent ? current_agent() : nullptr;
        if (!invocation.arguments().empty() && invocation.arguments()[0] == "quota") {
          return Quota(engine->QuotaStatus());
        }
        if (agent == nullptr) {
          return CommandResult::Error(Status::FailedPrecondition(
              "sync is off: start cairnd with --sync-broker to send data to the cloud"));
        }
        CommandResult result = CommandResult::Error(Status::InvalidArgument(
            "unknown sync view '" + (invocation.arguments().empty() ? "" : invocation.arguments()[0]) +
            "' (expected nothing, batches or quota)"));
        if (invocation.arguments().empty()) {
          result = Overview(agent);
        } else if (invocation.arguments()[0] == "batches") {
          result = Batches(agent);
        }
        AddQuotaNotes(engine->QuotaStatus(), &result);  // no-op on an error
        return result;
      });
}

std::string RenderSyncMetrics(const SyncStatus& status) {
  std::string out;
  auto family = [&](const char* name, const char* type, const char* help) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  };
  auto sample = [&](const char* name, const std::string& labels, uint64_t value) {
    out +=
        std::string(name) + (labels.empty() ? "" : "{" + labels + "}") + " " + std::to_string(value) + "\n";
  };
  family("cairn_sync_connected", "gauge", "1 when the sync connection to the broker is up");
  sample("cairn_sync_connected", "", status.connected ? 1 : 0);
  family("cairn_sync_receipts_total", "counter", "receipts received, by outcome");
  sample("cairn_sync_receipts_total", "outcome=\"accepted\"", status.receipts_accepted);
  sample("cairn_sync_receipts_total", "outcome=\"rejected\"", status.receipts_rejected_by_ingest);
  sample("cairn_sync_receipts_total", "outcome=\"invalid\"", status.receipts_invalid);
  struct TableGauge {
    const char* name;
    const char* help;
    uint64_t (*value)(const SyncTableStatus&);
  };
  const TableGauge table_gauges[] = {
      {"cairn_sync_unsynced_records", "records not yet confirmed by the cloud",
       [](const SyncTableStatus& t) { return t.unsynced.records; }},
      {"cairn_sync_unsynced_bytes", "bytes on disk of the records not yet confirmed",
       [](const SyncTableStatus& t) { return t.unsynced.bytes; }},
      {"cairn_sync_held_for_archive_records", "unsynced records kept past retention for the archive lane",
       [](const SyncTableStatus& t) { return t.unsynced.held_for_archive; }},
      {"cairn_sync_oldest_unsynced_timestamp_seconds", "timestamp of the oldest unsynced record (0: none)",
       [](const SyncTableStatus& t) {
         return static_cast<uint64_t>(std::max<int64_t>(0, t.unsynced.oldest_timestamp / kNanosPerSecond));
       }},
  };
  for (const TableGauge& gauge : table_gauges) {
    family(gauge.name, "gauge", gauge.help);
    for (const SyncTableStatus& table : status.tables) {
      sample(gauge.name, "table=\"" + LabelValue(table.table) + "\"", gauge.value(table));
    }
  }
  struct LaneValue {
    const char* name;
    const char* type;
    const char* help;
    uint64_t (*value)(const SyncLaneStatus&);
  };
  const LaneValue lane_values[] = {
      {"cairn_sync_batches_in_flight", "gauge", "batches sent and not yet confirmed",
       [](const SyncLaneStatus& l) { return static_cast<uint64_t>(l.in_flight); }},
      {"cairn_sync_confirmed_batches_total", "counter", "batches confirmed since start",
       [](const SyncLaneStatus& l) { return l.batches_confirmed; }},
      {"cairn_sync_confirmed_records_total", "counter", "records confirmed since start",
       [](const SyncLaneStatus& l) { return l.records_confirmed; }},
      {"cairn_sync_sent_bytes_total", "counter", "envelope bytes published since start, resends included",
       [](const SyncLaneStatus& l) { return l.bytes_sent; }},
  };
  for (const LaneValue& value : lane_values) {
    family(value.name, value.type, value.help);
    for (const SyncTableStatus& table : status.tables) {
      for (const SyncLaneStatus& lane : table.lanes) {
        sample(
            value.name,
            "table=\"" + LabelValue(table.table) + "\",lane=\"" + std::string(SyncLaneName(lane.lane)) + "\"",
            value.value(lane));
      }
    }
  }
  return out;
}

std::string RenderQuotaMetrics(const SyncQuotaStatus& quota) {
  if (!quota.enabled) return std::string();
  std::string out;
  auto single = [&](const char* name, const char* type, const char* help, const std::string& labels,
                    uint64_t value) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name +
           (labels.empty() ? "" : "{" + labels + "}") + " " + std::to_string(value) + "\n";
  };
  single("cairn_sync_quota_info", "gauge", "the sync quota's policy (value 1)",
         "policy=\"" + std::string(QuotaPolicyName(quota.policy)) + "\"", 1);
  single("cairn_sync_quota_budget_bytes", "gauge", "budget for unsynced bytes (0: none)", "",
         quota.max_unsynced_bytes);
  single("cairn_sync_quota_floor_bytes", "gauge", "free bytes that must remain (0: none)", "",
         quota.min_free_bytes);
  single("cairn_sync_quota_unsynced_bytes", "gauge", "unsynced bytes of every synced table at the last check",
         "", quota.unsynced_bytes);
  single("cairn_sync_quota_free_bytes", "gauge", "free bytes on the data filesystem at the last check", "",
         quota.free_bytes);
  single("cairn_sync_quota_refusing_writes", "gauge", "1 while the quota refuses writes", "",
         quota.refusing_writes ? 1 : 0);
  single("cairn_sync_quota_writes_refused_total", "counter", "writes refused by the quota since start", "",
         quota.writes_refused);
  single("cairn_sync_quota_dropped_records_total", "counter",
         "unsynced records dropped by the quota since start", "", quota.records_dropped);
  single("cairn_sync_quota_downsampled_records_total", "counter",
         "unsynced records replaced by aggregates since start", "", quota.records_downsampled);
  single("cairn_sync_quota_aggregates_written_total", "counter", "aggregate records written by downsampling",
         "", quota.aggregates_written);
  return out;
}

}  // namespace cairn
