// The names of SyncConfirmation and the checks of SyncAgentOptions
// (sync_agent.h, sync_agent_options.h).
#include "sync_agent_options.h"

#include <string>

namespace cairn {

std::string_view SyncConfirmationName(SyncConfirmation confirmation) {
  return confirmation == SyncConfirmation::kReceipt ? "receipt" : "broker";
}

Result<SyncConfirmation> ParseSyncConfirmation(std::string_view name) {
  if (name == "receipt") return SyncConfirmation::kReceipt;
  if (name == "broker") return SyncConfirmation::kBroker;
  return Status::InvalidArgument("unknown sync confirmation '" + std::string(name) +
                                 "' (expected receipt or broker)");
}

Status CheckSyncAgentOptions(const SyncAgentOptions& options) {
  CAIRN_RETURN_IF_ERROR(ValidateGatewayId(options.gateway_id));
  if (options.key.size() < kMinSyncKeyBytes) {
    return Status::InvalidArgument("the sync key must have at least " + std::to_string(kMinSyncKeyBytes) +
                                   " bytes (it has " + std::to_string(options.key.size()) + ")");
  }
  if (options.live_max_records == 0 || options.backfill_max_records == 0 ||
      options.backfill_max_inflight == 0) {
    return Status::InvalidArgument("sync batch sizes and the backfill window must be at least 1");
  }
  if (options.live_interval_ms <= 0 || options.receipt_timeout_ms <= 0 || options.ledger_flush_ms < 0 ||
      options.poll_interval_ms <= 0) {
    return Status::InvalidArgument("sync intervals and timeouts must be positive");
  }
  CAIRN_RETURN_IF_ERROR(ReceiptTopic(options.topic_prefix, options.gateway_id).status());
  // Checks the prefix once, so that later topics cannot fail on it.
  CAIRN_RETURN_IF_ERROR(
      SyncTopic(options.topic_prefix, options.gateway_id, "t", SyncLane::kLive).status());
  return Status::Ok();
}

}  // namespace cairn
