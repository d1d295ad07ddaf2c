// What opening checks before it replays the log: a lost catalog is rebuilt
// from the period files, and the period files must hold every reading the
// catalog says was sealed into them (the coverage check).
#include <algorithm>

#include "engine/catalog/catalog_rebuild.h"
#include "engine/engine_impl.h"
#include "engine/health/quarantine.h"
#include "log/log_reader.h"
#include "storage/sqlite_wal_check.h"

namespace cairn {

namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;

// "sensors/2026-11-21.db": how health keys and messages name a period file.
std::string FileLabel(const std::string& table, const std::string& path) {
  return table + "/" + path.substr(path.find_last_of('/') + 1);
}

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace

Result<std::unique_ptr<Catalog>> EngineImpl::OpenOrRebuildCatalog(RecoveryReport* report) {
  const std::string path = JoinPath(data_dir_, "catalog.db");
  std::string reason;
  if (env_->FileExists(path)) {
    Result<std::unique_ptr<Catalog>> opened = Catalog::Open(vfs_name_, path);
    if (opened.ok() || !opened.status().Is(StatusCode::kCorruption)) return opened;
    // Unreadable: kept aside for whoever wants to look into it, and rebuilt.
    const std::string aside = path + ".damaged";
    for (const char* suffix : {"", "-wal", "-journal"}) {
      if (env_->FileExists(path + suffix)) CAIRN_RETURN_IF_ERROR(env_->RenameFile(path + suffix, aside + suffix));
    }
    CAIRN_RETURN_IF_ERROR(env_->SyncDir(data_dir_));
    reason = "catalog.db could not be read (" + opened.status().message() + ") and was moved to catalog.db.damaged";
  } else {
    CAIRN_ASSIGN_OR_RETURN(bool lost, DataWithoutCatalog(env_, data_dir_));
    if (!lost) return Catalog::Open(vfs_name_, path);
    reason = "catalog.db was missing while period files or log segments were present";
  }
  CAIRN_RETURN_IF_ERROR(RebuildCatalog(path, reason, report));
  return Catalog::Open(vfs_name_, path);
}

// The rebuilt catalog is written beside and renamed into place: a crash
// during the rebuild leaves no catalog.db, and the next start rebuilds
// again rather than starting from half a catalog.
Status EngineImpl::RebuildCatalog(const std::string& path, const std::string& reason, RecoveryReport* report) {
  CAIRN_ASSIGN_OR_RETURN(CatalogRebuildPlan plan, PlanCatalogRebuild(env_, vfs_name_, data_dir_));
  // Replay covers the whole log (ReplayRecord skips what the period files
  // hold already): the lost checkpoint lay somewhere in it, since the log
  // lets go only of segments below the checkpoint. Without a log, the
  // period files' highest LSN is where new records continue.
  CAIRN_ASSIGN_OR_RETURN(std::optional<uint64_t> log_first,
                         LogFirstSegmentLsn(env_, JoinPath(data_dir_, "log")));
  const uint64_t checkpoint = log_first ? std::max<uint64_t>(1, *log_first) : plan.max_lsn + 1;
  const std::string temp = path + ".rebuild";
  for (const char* suffix : {"", "-wal", "-journal"}) {
    if (env_->FileExists(temp + suffix)) CAIRN_RETURN_IF_ERROR(env_->RemoveFile(temp + suffix));
  }
  {
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<Catalog> catalog, Catalog::Open(vfs_name_, temp));
    for (const TableInfo& table : plan.tables) CAIRN_RETURN_IF_ERROR(catalog->PutTable(table));
    CAIRN_RETURN_IF_ERROR(catalog->PutSeries(plan.series));
    // The sync ledger lived only in the lost catalog. Decision: it starts
    // empty, so the sync sender offers every reading again from the start.
    // The cloud's ingest writes idempotently by each reading's identity and
    // version (transport/sync/src/envelope_format.md §2), so the resent
    // readings are stored there once; the cost is the bandwidth of one
    // resend. Guessing a ledger from the period files could only skip
    // readings the cloud never confirmed.
    CAIRN_RETURN_IF_ERROR(catalog->SetCheckpoint(checkpoint, plan.marks));
    CAIRN_RETURN_IF_ERROR(catalog->Close());
  }
  CAIRN_RETURN_IF_ERROR(env_->RenameFile(temp, path));
  CAIRN_RETURN_IF_ERROR(env_->SyncDir(data_dir_));

  catalog_rebuilt_ = true;
  catalog_rebuild_message_ = reason + "; rebuilt from " + std::to_string(plan.files) + " period files: " +
                             std::to_string(plan.tables.size()) + " tables, " +
                             std::to_string(plan.series.size()) + " series, replaying the log from LSN " +
                             std::to_string(checkpoint);
  if (report) {
    report->catalog_rebuilt = true;
    report->catalog_rebuilt_tables = plan.tables.size();
    report->catalog_rebuilt_series = plan.series.size();
    report->catalog_rebuilt_files = plan.files;
    report->tables_with_default_options = plan.default_option_tables;
  }
  tables_with_default_options_ = plan.default_option_tables;
  return Status::Ok();
}

void EngineImpl::ReportCatalogRebuild(RecoveryReport* report) {
  if (!catalog_rebuilt_) return;
  std::string message = catalog_rebuild_message_;
  if (!tables_with_default_options_.empty()) {
    message += "; tables given default options (their files stored none, or only the log names them): " +
               Join(tables_with_default_options_);
  }
  message += ". The sync ledger was lost with it: every reading is offered to the cloud again, which stores "
             "each once";
  if (report) {
    report->tables_with_default_options = tables_with_default_options_;
    report->notices.push_back(message);
  }
  health_.Raise(HealthProblem{"catalog.rebuilt", HealthLevel::kDegraded, "catalog", message,
                              "check each table's options (GET /v1/tables) and correct any with alter-table; "
                              "this notice clears at the next start",
                              0},
                env_->NowUnixNanos());
}

Status EngineImpl::CheckPeriodWals(const TableState& table, RecoveryReport* report) {
  for (int64_t start : table.period_starts) {
    const std::string path = PeriodPath(table.info.name, table.info.options.period, start);
    CAIRN_ASSIGN_OR_RETURN(WalCheck check, CheckSqliteWal(env_, path + "-wal"));
    if (!check.damaged()) continue;
    // The commits SQLite will ignore were seals whose WAL was never
    // checkpointed, so the checkpoint LSN stayed below their readings
    // (AdvanceCheckpoint): the log replays them into the head.
    const std::string label = FileLabel(table.info.name, path);
    const std::string message =
        "the WAL of period file " + label + " is damaged: " +
        (check.header_damaged ? std::string("its header is unreadable")
                              : std::to_string(check.commits_lost) + " committed seals after frame " +
                                    std::to_string(check.frames_committed) + " are unreadable") +
        "; their readings are recovered from the write-ahead log and sealed again";
    health_.Raise(HealthProblem{"period.wal_damaged:" + label, HealthLevel::kDegraded, "period_file", message,
                                "none needed for the readings; check the storage card (a damaged file is often "
                                "the first sign of a failing one)",
                                0},
                  env_->NowUnixNanos());
    if (report) {
      report->period_files_recovered.push_back(label);
      report->notices.push_back(message);
    }
  }
  return Status::Ok();
}

Result<uint64_t> EngineImpl::CheckPeriodCoverage(uint64_t checkpoint, RecoveryReport* report) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<PeriodSealMark> marks, catalog_->LoadSealMarks());
  // The lowest LSN the log may still hold; nothing when it is empty.
  CAIRN_ASSIGN_OR_RETURN(std::optional<uint64_t> log_first_segment,
                         LogFirstSegmentLsn(env_, JoinPath(data_dir_, "log")));
  const uint64_t log_first = log_first_segment.value_or(UINT64_MAX);
  const int64_t now = env_->NowUnixNanos();
  uint64_t replay_from = checkpoint;
  for (const PeriodSealMark& mark : marks) {
    auto table = tables_.find(mark.table);
    if (table == tables_.end()) {
      CAIRN_RETURN_IF_ERROR(catalog_->ForgetSealMark(mark.table, mark.period_start));
      continue;
    }
    const TableInfo& info = table->second->info;
    const std::string path = PeriodPath(info.name, info.options.period, mark.period_start);
    const std::string label = FileLabel(info.name, path);
    if (!table->second->period_starts.count(mark.period_start)) {
      const int64_t end = NextPeriodStart(info.options.period, mark.period_start);
      if (end <= now - info.options.retention_seconds * kNanosPerSecond) {
        // Retention dropped it and stopped before forgetting its mark.
        CAIRN_RETURN_IF_ERROR(catalog_->ForgetSealMark(mark.table, mark.period_start));
        continue;
      }
      // A file moved into the quarantine is reported as such already.
      const std::vector<std::string> quarantined = QuarantinedPeriodFiles(env_, QuarantineDir(data_dir_, info.name));
      const std::string name = path.substr(path.rfind('/') + 1);
      if (std::any_of(quarantined.begin(), quarantined.end(),
                      [&](const std::string& q) { return q.substr(q.rfind('/') + 1) == name; })) {
        continue;
      }
      const std::string message = "period file " + path + " is missing: the readings sealed into it (LSNs up to " +
                                  std::to_string(mark.max_lsn) + ") cannot be read";
      health_.Raise(HealthProblem{"period.missing:" + label, HealthLevel::kDegraded, "period_file", message,
                                  "put " + path + " back from a backup; " + VerifyCommand(false) +
                                      " to count the readings lost, and with --repair to accept the loss",
                                  0},
                    now);
      if (report) report->notices.push_back(message);
      continue;
    }
    CAIRN_ASSIGN_OR_RETURN(auto handle, GetPeriodFile(info.name, info.options.period, mark.period_start,
                                                      PeriodAccess::kRead));
    uint64_t file_max;
    {
      MutexLock file_lock(&handle->mutex);
      CAIRN_ASSIGN_OR_RETURN(file_max, handle->file->MaxLsn());
    }
    if (file_max >= mark.max_lsn) continue;
    // Chunks up to the mark were in the main file when it was recorded
    // (Checkpointer::CheckpointWals); the file has lost some since.
    if (log_first > file_max + 1) {
      return Status::FailedPrecondition(
          "period file " + path + " lacks readings the catalog records as sealed into it (its chunks end at LSN " +
          std::to_string(file_max) + ", sealed through " + std::to_string(mark.max_lsn) +
          ") and the write-ahead log no longer holds them (it starts at LSN " +
          (log_first_segment ? std::to_string(log_first) : std::string("nowhere: it is empty")) +
          "). Put back " + path + " from a backup, or move it out of " + TableDir(info.name) +
          " to start without the readings it held");
    }
    replay_from = std::min(replay_from, file_max + 1);
    const std::string message = "period file " + label + " lacks the readings sealed into it after LSN " +
                                std::to_string(file_max) + " (sealed through " + std::to_string(mark.max_lsn) +
                                "); they are recovered from the write-ahead log and sealed again";
    health_.Raise(HealthProblem{"period.recovered:" + label, HealthLevel::kDegraded, "period_file", message,
                                "none needed for the readings; check the storage card", 0},
                  now);
    if (report) {
      report->period_files_recovered.push_back(label);
      report->notices.push_back(message);
    }
  }
  return replay_from;
}

}  // namespace cairn
