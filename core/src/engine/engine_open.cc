// Opening a data directory and recovering it: the catalog (or its rebuild),
// period files, the checks of their WALs and seal marks, the quarantine,
// and the replay of the log.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/engine_impl.h"
#include "engine/write/write_batch.h"
#include "engine/health/write_failure.h"
#include "log/log_reader.h"
#include "storage/env_vfs.h"

namespace cairn {

Result<std::unique_ptr<Engine>> Engine::Open(Env* env, const std::string& data_dir,
                                             const EngineOptions& options, RecoveryReport* report) {
  if (options.seal_records == 0) return Status::InvalidArgument("seal_records must be positive");
  const SyncQuotaOptions& quota = options.sync_quota;
  if (quota.downsample_step_seconds < 1 || quota.downsample_step_seconds > 3600 ||
      3600 % quota.downsample_step_seconds != 0) {
    return Status::InvalidArgument(
        "the sync quota's downsample step must divide an hour (1 to 3600 s), not " +
        std::to_string(quota.downsample_step_seconds) + " s");
  }
  if (quota.check_interval_ms < 0)
    return Status::InvalidArgument("the sync quota's check interval is negative");
  CAIRN_RETURN_IF_ERROR(ValidateClockOptions(options.clock));
  auto engine = std::make_unique<EngineImpl>(env, data_dir, ApplyMemoryBudget(options));
  if (report) *report = RecoveryReport();  // what this open found, nothing older
  CAIRN_RETURN_IF_ERROR(engine->OpenAndRecover(report));
  return std::unique_ptr<Engine>(std::move(engine));
}

Status EngineImpl::OpenAndRecover(RecoveryReport* report) {
  if (report) *report = RecoveryReport{};
  CAIRN_RETURN_IF_ERROR(env_->CreateDirs(data_dir_));
  auto lock = env_->LockFile(JoinPath(data_dir_, "LOCK"));
  if (!lock.ok()) {
    if (lock.status().Is(StatusCode::kBusy)) {
      return Status::Busy("data directory " + data_dir_ + " is in use by another process");
    }
    return lock.status();
  }
  lock_ = std::move(lock).value();
  // Before anything is written: readings Open itself stores (the clock hold
  // stamping what waited) count too. It writes nothing before its first
  // sample, at the end of a start that succeeded.
  flash_wear_ = std::make_unique<FlashWearMonitor>(env_, data_dir_, options_.flash_wear, &health_);

  vfs_name_ = VfsNameFor(env_);
  CAIRN_RETURN_IF_ERROR(RegisterEnvVfs(env_, vfs_name_));
  CAIRN_ASSIGN_OR_RETURN(catalog_, OpenOrRebuildCatalog(report));
  reclaimer_ = std::make_unique<Reclaimer>(env_, data_dir_, options_.sync_quota, catalog_.get(), &quota_store_);
  CAIRN_RETURN_IF_ERROR(env_->SyncDir(data_dir_));

  uint64_t checkpoint_lsn = 0;
  {
    // Nothing else reaches the engine while it opens, so the state lock
    // costs nothing here; holding it lets the compiler check what opening
    // touches.
    WriterLock state(&state_mutex_);
    CAIRN_RETURN_IF_ERROR(RecoverState(report, &checkpoint_lsn));
  }
  // A full disk does not stop the start: queries work, writes wait for room.
  if (Status failure = log_->Failure(); !failure.ok()) {
    (void)ReportWriteFailure(env_, data_dir_, "the write-ahead log", failure, health_);
  }
  checkpointer_ = std::make_unique<Checkpointer>(&period_files_, catalog_.get(), log_.get(), checkpoint_lsn);
  sealer_ = std::make_unique<Sealer>(&period_files_, checkpointer_.get(), options_.seal_records);
  compactor_ = std::make_unique<Compactor>(&period_files_, catalog_.get());
  CAIRN_RETURN_IF_ERROR(OpenClock());

  // The first sample sets this run's baselines; its save failing (a full
  // disk) costs telemetry only, so the start goes on.
  (void)flash_wear_->Sample(/*force=*/true);

  if (options_.maintenance_interval_ms > 0) {
    maintenance_thread_ = env_->StartThread([this] { MaintenanceLoop(); });
  }
  if (options_.durability == Durability::kInterval) {
    sync_thread_ = env_->StartThread([this] { SyncLoop(); });
  }
  return Status::Ok();
}

Status EngineImpl::RecoverState(RecoveryReport* report, uint64_t* checkpoint_lsn) {
  CAIRN_RETURN_IF_ERROR(LoadTablesAndSeries());
  for (auto& [name, table] : tables_) {
    CAIRN_RETURN_IF_ERROR(LoadPeriodFiles(*table));
    // Before any connection opens a file and SQLite drops what it cannot read.
    CAIRN_RETURN_IF_ERROR(CheckPeriodWals(*table, report));
    CAIRN_RETURN_IF_ERROR(QuarantineUnreadablePeriods(*table, report));
    CAIRN_RETURN_IF_ERROR(RecomputeSealedMaxima(*table));
  }

  CAIRN_ASSIGN_OR_RETURN(*checkpoint_lsn, catalog_->CheckpointLsn());
  // Readings a period file lost since they were sealed are replayed too.
  CAIRN_ASSIGN_OR_RETURN(const uint64_t replay_from, CheckPeriodCoverage(*checkpoint_lsn, report));
  const std::string log_dir = JoinPath(data_dir_, "log");
  CAIRN_ASSIGN_OR_RETURN(const uint64_t log_end_lsn, ReplayLogFrom(log_dir, replay_from, *checkpoint_lsn, report));
  ReportCatalogRebuild(report);
  LogWriterOptions log_options;
  log_options.segment_bytes = options_.log_segment_bytes;
  // Sealed records leave the log a segment at a time: a sixteenth of a
  // segment is the slack the log keeps beside what is not sealed yet.
  log_options.release_roll_bytes = std::max<uint64_t>(1, options_.log_segment_bytes / 16);
  CAIRN_ASSIGN_OR_RETURN(log_, LogWriter::Open(env_, log_dir, next_lsn_, log_end_lsn, log_options));
  return Status::Ok();
}

Status EngineImpl::LoadTablesAndSeries() {
  CAIRN_ASSIGN_OR_RETURN(std::vector<TableInfo> tables, catalog_->LoadTables());
  for (TableInfo& info : tables) {
    auto state = std::make_unique<TableState>();
    state->info = std::move(info);
    tables_.emplace(state->info.name, std::move(state));
  }
  CAIRN_ASSIGN_OR_RETURN(std::vector<CatalogSeries> all_series, catalog_->LoadSeries());
  for (CatalogSeries& c : all_series) {
    auto table = tables_.find(c.table);
    if (table == tables_.end()) continue;
    auto series = std::make_unique<Series>();
    series->id = c.series_id;
    series->device_id = c.device_id;
    series->measure_name = c.measure_name;
    series->shard = c.shard;
    for (const ChunkField& f : c.fields) series->AddField(table->second->schemas, f.name, f.type);
    series->dimensions = std::move(c.dimensions);
    series->dimensions_key = EncodeTagMap(series->dimensions);
    series->attributes = std::move(c.attributes);
    next_series_id_ = std::max(next_series_id_, c.series_id + 1);
    const SeriesKeyRef key = series->KeyRef();
    table->second->series.emplace(key, std::move(series));
  }
  return Status::Ok();
}

Result<uint64_t> EngineImpl::ReplayLogFrom(const std::string& log_dir, uint64_t replay_from,
                                          uint64_t checkpoint_lsn, RecoveryReport* report) {
  // What a failed fdatasync of the previous run left readable but never
  // wrote must reach the disk before replay builds on it.
  CAIRN_RETURN_IF_ERROR(RewriteLogTail(env_, log_dir));
  LogReplayStats replay;
  LogCorruption corruption;
  uint64_t applied = 0;
  Status replayed = ReplayLog(
      env_, log_dir, replay_from,
      [&](uint64_t first_lsn, uint32_t count, std::string_view payload) -> Status {
        state_mutex_.AssertHeld();  // ReplayLog calls back on this thread
        CAIRN_ASSIGN_OR_RETURN(std::vector<DecodedWriteRecord> records, DecodeWriteBatch(payload));
        if (records.size() != count) {
          return Status::Corruption("log record at LSN " + std::to_string(first_lsn) + " holds " +
                                    std::to_string(records.size()) + " records, its frame says " +
                                    std::to_string(count));
        }
        for (size_t i = 0; i < records.size(); ++i) {
          const uint64_t lsn = first_lsn + i;
          if (lsn < replay_from) continue;
          CAIRN_RETURN_IF_ERROR(ReplayRecord(records[i].table, records[i].record, lsn));
          ++applied;
        }
        return Status::Ok();
      },
      &replay, &corruption);
  if (!replayed.ok()) {
    if (replayed.Is(StatusCode::kCorruption)) {
      return Status::Corruption(replayed.message() +
                                " (the log repair command keeps every intact record and reports the readings "
                                "lost)");
    }
    return replayed;
  }
  if (replay.start_lsn > std::max<uint64_t>(checkpoint_lsn, 1)) {
    return Status::Corruption("the log in " + log_dir + " starts at LSN " + std::to_string(replay.start_lsn) +
                              " but the checkpoint is at " + std::to_string(checkpoint_lsn) +
                              ": the segments holding the readings in between are missing (the log repair "
                              "command cannot bring them back)");
  }
  next_lsn_ = std::max(replay.next_lsn, checkpoint_lsn);
  // With durability other than full, acknowledged records can be lost in a
  // power cut after the sync sender read them. Their LSNs must not be given
  // to new records: the sync ledger may hold them as confirmed, and a new
  // record under a confirmed LSN would never be sent. The new segment's
  // header declares the LSNs skipped this way (log_format.md).
  {
    CAIRN_ASSIGN_OR_RETURN(std::vector<SyncLedger> ledgers, catalog_->LoadSyncLedgers());
    for (const SyncLedger& ledger : ledgers) {
      if (!ledger.confirmed.empty())
        next_lsn_ = std::max(next_lsn_, ledger.confirmed.ranges().back().last + 1);
      for (const SyncBatchState& batch : ledger.in_flight)
        next_lsn_ = std::max(next_lsn_, batch.last_lsn + 1);
    }
  }
  if (report) {
    report->records_replayed = applied;
    report->torn_tail_bytes_truncated = replay.torn_tail_bytes;
    report->sealed_damage_bytes_skipped = replay.damaged_bytes_skipped;
  }
  return replay.next_lsn;
}

Status EngineImpl::ReplayRecord(const std::string& table_name, Record& record, uint64_t lsn) {
  auto table = tables_.find(table_name);
  if (table == tables_.end() && catalog_rebuilt_ && ValidateTableName(table_name).ok()) {
    // The lost catalog held a table that no period file names yet: its
    // readings are kept under default options, reported by the rebuild.
    auto state = std::make_unique<TableState>();
    state->info.name = table_name;
    state->info.created_unix_nanos = env_->NowUnixNanos();
    CAIRN_RETURN_IF_ERROR(env_->CreateDirs(TableDir(table_name)));
    CAIRN_RETURN_IF_ERROR(env_->SyncDir(data_dir_));
    CAIRN_RETURN_IF_ERROR(catalog_->PutTable(state->info));
    tables_with_default_options_.push_back(table_name);
    table = tables_.emplace(table_name, std::move(state)).first;
  }
  if (table == tables_.end()) return Status::Ok();  // the table was dropped after this write
  TableState& t = *table->second;
  bool schema_changed = false;
  TagMap dimensions, attributes;
  SplitTags(t.info.options, record.dimensions, &dimensions, &attributes);
  Series* series = FindOrCreateSeries(t, record.device_id, record.measure_name, dimensions, &schema_changed);
  for (const Field& f : record.fields) {
    const std::optional<size_t> index = series->FieldIndex(f.name);
    if (!index) {
      series->AddField(t.schemas, f.name, TypeOf(f.value));
      schema_changed = true;
    } else if (series->fields()[*index].type != TypeOf(f.value)) {
      // Only possible if the catalog lost a schema change; keep the stored type.
      return Status::Corruption("log record " + std::to_string(lsn) + " has field '" + f.name +
                                "' of a type that conflicts with its series");
    }
  }
  if (!attributes.empty() && attributes != series->attributes) {
    series->attributes = std::move(attributes);
    schema_changed = true;
  }
  if (schema_changed) {
    CatalogSeries c{series->id,     t.info.name,        series->device_id,  series->measure_name,
                    series->shard,  series->fields(),     series->dimensions, series->attributes};
    CAIRN_RETURN_IF_ERROR(catalog_->PutSeries({c}));
  }
  CAIRN_ASSIGN_OR_RETURN(std::optional<StoredRecord> stored, FindStored(t, *series, record.timestamp));
  // Of equal versions the later LSN wins (on_conflict overwrite logs merged
  // records so); a record already sealed meets itself and is skipped.
  if (stored && std::pair(record.version, lsn) <= std::pair(stored->version, stored->lsn)) return Status::Ok();
  ChunkRecord r;
  r.timestamp = record.timestamp;
  r.version = record.version;
  r.ttl = record.ttl;
  r.values.resize(series->fields().size());
  for (Field& f : record.fields) r.values[*series->FieldIndex(f.name)] = std::move(f.value);
  head_.Insert(*series, std::move(r), lsn);
  return Status::Ok();
}

// ---- tables -------------------------------------------------------------------

}  // namespace cairn
