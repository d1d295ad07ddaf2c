#include "cairn/transport/sync_commands.h"

#include <algorithm>

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

Status RegisterSyncCommands(CommandRegistry* registry, SyncAgent* agent) {
  return registry->Register(
      {.name = "sync",
       .arguments = "[batches]",
       .summary =
           "what is not yet in the cloud, per table and lane; `sync batches` lists the batches in flight",
       .options = {},
       .min_arguments = 0,
       .max_arguments = 1},
      [agent](const CommandInvocation& invocation) -> CommandResult {
        if (agent == nullptr) {
          return CommandResult::Error(Status::FailedPrecondition(
              "sync is off: start cairnd with --sync-broker to send data to the cloud"));
        }
        if (invocation.arguments().empty()) return Overview(agent);
        if (invocation.arguments()[0] == "batches") return Batches(agent);
        return CommandResult::Error(Status::InvalidArgument(
            "unknown sync view '" + invocation.arguments()[0] + "' (expected nothing or batches)"));
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

}  // namespace cairn
