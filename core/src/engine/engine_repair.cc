// Engine::RepairLog: the operator's repair of the write-ahead log, told in
// readings (log_format.md, "Repair").
#include <algorithm>

#include "engine/engine_impl.h"
#include "log/log_repair.h"
#include "storage/env_vfs.h"

namespace cairn {

namespace {

// The checkpoint and the confirmed LSNs of every sync ledger, read from the
// catalog for a repair of the log; NotFound when there is no catalog.
Status ReadRepairContext(Env* env, const std::string& data_dir, uint64_t* checkpoint,
                         LsnRangeSet* confirmed) {
  const std::string path = JoinPath(data_dir, "catalog.db");
  if (!env->FileExists(path)) return Status::NotFound(path + " does not exist");
  const std::string vfs_name = VfsNameFor(env);
  CAIRN_RETURN_IF_ERROR(RegisterEnvVfs(env, vfs_name));
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<Catalog> catalog, Catalog::Open(vfs_name, path));
  CAIRN_ASSIGN_OR_RETURN(*checkpoint, catalog->CheckpointLsn());
  CAIRN_ASSIGN_OR_RETURN(std::vector<SyncLedger> ledgers, catalog->LoadSyncLedgers());
  for (const SyncLedger& ledger : ledgers) {
    for (const LsnRange& range : ledger.confirmed.ranges()) confirmed->Add(range.first, range.last);
  }
  return catalog->Close();
}

// How many LSNs of first..last are in `set`.
uint64_t CountContained(const LsnRangeSet& set, uint64_t first, uint64_t last) {
  uint64_t count = 0;
  for (const LsnRange& range : set.ranges()) {
    const uint64_t from = std::max(first, range.first), to = std::min(last, range.last);
    if (from <= to) count += to - from + 1;
  }
  return count;
}

}  // namespace

Result<std::unique_ptr<FileLock>> LockStoppedDataDir(Env* env, const std::string& data_dir) {
  auto lock = env->LockFile(JoinPath(data_dir, "LOCK"));
  if (!lock.ok() && lock.status().Is(StatusCode::kBusy)) {
    return Status::Busy("data directory " + data_dir + " is in use by another process");
  }
  return lock;
}

Result<LogRepairReport> Engine::RepairLog(Env* env, const std::string& data_dir) {
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<FileLock> lock, LockStoppedDataDir(env, data_dir));
  return RepairLogLocked(env, data_dir);
}

Result<LogRepairReport> RepairLogLocked(Env* env, const std::string& data_dir) {
  LogRepairReport report;
  uint64_t checkpoint = 0;
  LsnRangeSet confirmed;
  if (Status context = ReadRepairContext(env, data_dir, &checkpoint, &confirmed); !context.ok()) {
    // Without the checkpoint nothing tells sealed readings from lost ones:
    // count them all as lost rather than fewer.
    checkpoint = 0;
    confirmed = LsnRangeSet();
    report.note = "the checkpoint could not be read (" + context.message() +
                  "), so every damaged reading is counted as lost";
  }
  CAIRN_ASSIGN_OR_RETURN(LogRepairOutcome outcome,
                         cairn::RepairLog(env, JoinPath(data_dir, "log"), checkpoint));
  for (const LogRepairOutcome::LostLsns& lost : outcome.lost) {
    report.lost_lsns.push_back(LsnRange{lost.first_lsn, lost.end_lsn - 1});
    report.readings_lost += lost.end_lsn - lost.first_lsn;
    report.readings_lost_already_synced += CountContained(confirmed, lost.first_lsn, lost.end_lsn - 1);
  }
  report.readings_kept_after_damage = outcome.lsns_kept_after_damage;
  report.segments_trimmed = outcome.segments_trimmed;
  report.torn_tail_bytes = outcome.torn_tail_bytes;
  report.actions = std::move(outcome.actions);
  return report;
}

}  // namespace cairn
