// EngineImpl: the Engine behind cairn/core/engine.h.
//
// Locks, in the order they may be taken:
//   held_mutex_      the clock hold (engine_clock.cc); its holder may write
//   writers_mutex_   the group-commit queue (never held during I/O)
//   commit_mutex_    held by the leader through one group commit
//   seal_mutex_      one seal / maintenance round at a time
//   state_mutex_     tables, series, heads (shared for queries, exclusive
//                    for changes; released during log and period-file I/O)
//   the components' own: Checkpointer, then PeriodFiles' cache, then a
//   PeriodHandle's mutex; Catalog and LogWriter lock internally.
// The Mutex members state this order with ACQUIRED_AFTER and their guarded
// members with GUARDED_BY, which clang's -Wthread-safety checks.
//
// The storage half lives in components this class owns and wires:
// PeriodFiles (the open period files), Sealer (heads into chunk rows),
// Checkpointer (WAL checkpoints, seal marks, the log's release) and
// Compactor (closed periods rewritten once).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "cairn/core/engine.h"
#include "cairn/platform/mutex.h"

#include "engine/catalog/catalog.h"
#include "engine/sealing/checkpointer.h"
#include "engine/sealing/chunk_rows.h"
#include "engine/sealing/compactor.h"
#include "engine/clock/clock_trust.h"
#include "engine/clock/held_readings.h"
#include "engine/health/flash_wear_monitor.h"
#include "engine/head/head.h"
#include "engine/health/health_board.h"
#include "engine/query/aggregate_bucket.h"
#include "engine/query/series_columns.h"
#include "engine/sealing/period_files.h"
#include "engine/reclaim/reclaimer.h"
#include "engine/sealing/sealer.h"
#include "engine/head/series.h"
#include "log/log_writer.h"
#include "storage/env_vfs.h"
#include "storage/period_file.h"

namespace cairn {

// Calls `visit` once for every chunk of `file` that holds an LSN at or
// below `through` not in `confirmed`, read without data, paging through
// ReadChunksByLsn gap by gap; stops early when `visit` returns false.
// The caller holds the file's handle mutex.
Status ForEachUnconfirmedChunk(PeriodFile& file, const LsnRangeSet& confirmed, uint64_t through,
                               const std::function<bool(ChunkRow&)>& visit);

// Takes <data_dir>/LOCK for a tool that works on a stopped data directory;
// Busy, naming the directory, while another process holds it.
Result<std::unique_ptr<FileLock>> LockStoppedDataDir(Env* env, const std::string& data_dir);

// Engine::RepairLog for a caller that holds the data directory's lock.
Result<LogRepairReport> RepairLogLocked(Env* env, const std::string& data_dir);


class EngineImpl final : public Engine {
 public:
  EngineImpl(Env* env, std::string data_dir, const EngineOptions& options);
  ~EngineImpl() override;

  Status OpenAndRecover(RecoveryReport* report);

  Status CreateTable(const std::string& name, const TableOptions& options) override;
  Status AlterTable(const std::string& name, const TableOptions& options) override;
  Status DropTable(const std::string& name) override;
  Result<std::vector<TableInfo>> ListTables() override;
  Result<TableInfo> GetTable(const std::string& name) override;

  Result<WriteResult> Write(const std::string& table, const std::vector<Record>& records) override;
  Result<WriteResult> WriteReceived(const std::string& table, const std::vector<Record>& records) override;

  Result<std::optional<RecordRow>> Get(const std::string& table, const std::string& device_id,
                                       const std::string& measure_name, int64_t timestamp,
                                       const TagMap& dimensions) override;
  Result<RangeResult> Range(const RangeQuery& query) override;
  Result<ColumnarRangeResult> RangeColumnar(const RangeQuery& query) override;
  Result<std::vector<RecordRow>> Latest(const std::string& table, const std::string& device_id,
                                        const std::string& measure_name, const TagMap& tags) override;
  Result<std::vector<RecordRow>> LatestBatch(const std::string& table,
                                             const std::vector<std::string>& device_ids,
                                             const std::string& measure_name, const TagMap& tags) override;
  Result<AggregateResult> Aggregate(const AggregateQuery& query) override;
  Result<std::vector<DeviceInfo>> ListDevices(const std::string& table) override;
  Result<std::vector<MeasureInfo>> ListMeasures(const std::string& table) override;

  Result<ChangeBatch> ReadChanges(const std::string& table, uint64_t after_lsn, uint64_t through_lsn,
                                  size_t max_records) override;
  Result<UnsyncedSummary> SummarizeUnsynced(const std::string& table, const LsnRangeSet& confirmed) override;
  Result<std::vector<SyncLedger>> LoadSyncLedgers() override;
  Status SaveSyncLedger(const SyncLedger& ledger) override;

  Status SealAll() override;
  Status Maintain() override;
  EngineStats Stats() override;
  SyncQuotaStatus QuotaStatus() override;
  EngineHealth Health() override;
  ClockStatus Clock() override;
  FlashWearStatus FlashWear() override;
  Status Close() override;

 private:
  // ---- write path (engine_write.cc) ----
  struct PendingWrite;
  struct AcceptedRecord;
  // A series as it was before a group commit changed it.
  struct SeriesUndo {
    TableState* table;
    Series* series;
    bool created;
    std::shared_ptr<const SeriesSchema> schema;
    TagMap attributes;
  };
  // While the heads (with running seals' copies) are over their budget,
  // asks for a maintenance round and waits until one ends (at most
  // kHeadRoomWaitLimit): writers that outran the sealer would otherwise grow
  // the heads without bound (a seal takes a few hundred milliseconds; HTTP
  // ingest adds tens of megabytes a second), and a gateway's RAM is fixed.
  // The heads so exceed the budget by about one group per round. Called by
  // the group leader, commit_mutex_ held, so later groups queue behind it.
  void WaitForHeadRoom() REQUIRES(commit_mutex_) EXCLUDES(seal_mutex_, state_mutex_, background_mutex_);
  // Long enough for a seal on a slow SD card; short enough that a stuck
  // round slows writers rather than stopping them.
  static constexpr std::chrono::seconds kHeadRoomWaitLimit{5};
  Status CommitGroup(const std::vector<PendingWrite*>& group) EXCLUDES(state_mutex_);
  // A group's accepted records by identity: index into its accepted list.
  using PendingIdentities = std::unordered_map<const Series*, std::map<int64_t, size_t>>;
  // Judges `r` against the record its identity holds: the group's own
  // earlier record of it (not in the head yet), else the head or the sealed
  // chunks. True when `r` is to be stored (`*merged` set when on_conflict
  // overwrite merges it with the stored record); false with `*out` saying why
  // not (duplicate, lower version, conflict).
  Result<bool> JudgeWrite(TableState& table, const Series& series, const Record& r,
                          const PendingIdentities& pending, const std::vector<AcceptedRecord>& accepted,
                          RecordResult* out, std::unique_ptr<Record>* merged);
  // Takes back, newest first, series changes the catalog could not record.
  void UndoSeriesChanges(const std::vector<SeriesUndo>& undo);
  // The record stored at one identity, as a write at it is judged (DESIGN §3).
  struct StoredRecord {
    uint64_t version = 0;
    uint64_t lsn = 0;
    std::vector<Field> fields;  // the fields it carries, in its series' schema order
  };
  // The newest (by version, then LSN) record at (series, timestamp) in the
  // head or the sealed chunks, nullopt if none. Decodes only the chunks whose
  // range holds `timestamp`, and only for a timestamp in sealed time.
  Result<std::optional<StoredRecord>> FindStored(TableState& table, const Series& series, int64_t timestamp);
  // The series of (device, measure, dimensions), created (with a new id,
  // not yet in the catalog) when the table has none.
  Series* FindOrCreateSeries(TableState& table, const std::string& device_id, const std::string& measure_name,
                             const TagMap& dimensions, bool* created) REQUIRES(state_mutex_);
  // The table's max_series, or the engine's default for 0. Replay does not
  // apply it: what the log holds was acknowledged.
  uint64_t SeriesLimit(const TableState& table) const;
  // Why a record that would start a series beyond SeriesLimit is refused.
  std::string SeriesLimitReason(const TableState& table, const Record& record) const;
  void CountOutcomes(const std::vector<PendingWrite*>& group);
  // What judging a group decided: the records to log, by identity too, and
  // the series changes the catalog must record first (with their undo).
  struct GroupJudgement;
  // Judges every record of `group` (RefusalOf, then JudgeWrite), creating
  // series and adding fields as accepted records need. Under the exclusive
  // state lock.
  Status JudgeGroup(const std::vector<PendingWrite*>& group, GroupJudgement* judged) REQUIRES(state_mutex_);
  // Why `r` cannot be stored in `table`, empty when it can: invalid, older
  // than retention (`oldest_allowed`), a client timestamp the clock refuses
  // at `now`, a field typed otherwise in its series (`existing`, null when
  // it would be new), or a new series past the table's limit.
  std::string RefusalOf(const TableState& table, const Record& r, const Series* existing, int64_t oldest_allowed,
                        int64_t now);
  // Records the judged series changes in the catalog; on failure takes them
  // back in memory and reports the write failure.
  Status RecordSeriesChanges(const GroupJudgement& judged);
  // Puts a logged group's accepted records, LSNs from `first_lsn` on, into
  // the heads, adding their size to `reading_bytes`; true when a seal is
  // due. Under the exclusive state lock.
  bool ApplyToHeads(std::vector<AcceptedRecord>& accepted, uint64_t first_lsn, uint64_t* reading_bytes)
      REQUIRES(state_mutex_);
  Status ReplayRecord(const std::string& table, Record& record, uint64_t lsn) REQUIRES(state_mutex_);

  // ---- clock trust (engine_clock.cc) ----
  // Opens the clock and the hold, and stamps what the hold can stamp now.
  Status OpenClock();
  // Stamps the records the receiver stamped (Record::receiver_time) with
  // the trusted clock, or holds them while it is untrusted; the rest go to
  // WriteAdmitted as they are.
  Result<WriteResult> WriteThroughClock(const std::string& table, const std::vector<Record>& records);
  // Holds `records` (receiver-stamped, untrusted clock) filling `out`.
  void HoldRecords(const std::string& table, const std::vector<Record>& records,
                   const std::vector<size_t>& indexes, WriteResult* out);
  // Writes held readings whose boot has (or now gets) an offset into their
  // tables and keeps the rest held.
  Status ResolveHeld();
  // Raises or clears the clock's health problem.
  void UpdateClockHealth();

  // ---- opening (engine_open.cc) ----
  // Loads the tables and their period files, replays the log into the heads
  // and opens the log writer; `*checkpoint_lsn` is the catalog's.
  Status RecoverState(RecoveryReport* report, uint64_t* checkpoint_lsn) REQUIRES(state_mutex_);
  // The tables and series catalog.db lists, into tables_.
  Status LoadTablesAndSeries() REQUIRES(state_mutex_);
  // Replays the log in `log_dir` from `replay_from` into the heads, sets
  // next_lsn_ past every LSN the log or a sync ledger used, and fills the
  // replay counts of `report`; returns the LSN the log ended at.
  // Corruption when the log is damaged or starts above `checkpoint_lsn`.
  Result<uint64_t> ReplayLogFrom(const std::string& log_dir, uint64_t replay_from, uint64_t checkpoint_lsn,
                                 RecoveryReport* report) REQUIRES(state_mutex_);

  // ---- open-time checks (engine_open_checks.cc) ----
  // Opens catalog.db; when it is missing while period files or log
  // segments exist, or unreadable (moved to catalog.db.damaged), rebuilds
  // it from the period files first (RebuildCatalog). FailedPrecondition
  // naming the file when a rebuild cannot be trusted.
  Result<std::unique_ptr<Catalog>> OpenOrRebuildCatalog(RecoveryReport* report);
  Status RebuildCatalog(const std::string& path, const std::string& reason, RecoveryReport* report);
  // After replay: the rebuild's log line and health problem.
  void ReportCatalogRebuild(RecoveryReport* report);
  // Raises a health problem for each period file whose -wal lost commits.
  Status CheckPeriodWals(const TableState& table, RecoveryReport* report);
  // Compares each period file's chunks with its seal mark; returns the LSN
  // replay must start from so that what a file lost comes back from the
  // log. FailedPrecondition naming the file when the log no longer holds it.
  Result<uint64_t> CheckPeriodCoverage(uint64_t checkpoint, RecoveryReport* report) REQUIRES(state_mutex_);

  // ---- reads (engine_query.cc) ----
  struct SeriesSnapshot;
  // Damaged chunks and unreadable period files are stepped over: each is
  // appended to `skipped` and raised in health_ (NoteReadDamage).
  Result<std::vector<ChunkRecord>> CollectSeries(const std::string& table, const SeriesSnapshot& series,
                                                 int64_t from, int64_t to, Order order, size_t limit,
                                                 int64_t now_ns, std::vector<SkippedDamage>* skipped);
  // The visible rows of one series for a columnar range, in the scan's
  // order (engine_range_columns.cc). Reads chunk rows first and decodes only
  // the chunks it takes rows from when the series' chunks and head records
  // do not overlap in time (the common case: nothing to merge); otherwise
  // collects through CollectSeries.
  Result<SeriesColumns> CollectSeriesColumns(const std::string& table, const SeriesSnapshot& series,
                                             const SeriesScan& scan, std::vector<SkippedDamage>* skipped);
  // CollectSeriesColumns' streaming merge; false (nothing reported) when the
  // series needs CollectSeries: a chunk it listed went away, or a file could
  // not list its chunks.
  Result<bool> CollectMergedColumns(const std::string& table, const SeriesSnapshot& series,
                                    const SeriesScan& scan, SeriesColumns* out,
                                    std::vector<SkippedDamage>* skipped);
  // Fetches and decodes (only `fields`, all when empty) one chunk the
  // period file `handle` (starting at `period_start`) listed, filling its
  // row's lsns. Nothing when it is damaged (noted: NoteReadDamage); an error
  // when it cannot be fetched.
  Result<std::optional<DecodedChunk>> FetchChunk(const std::string& table, const SeriesSnapshot& series,
                                                 PeriodHandle* handle, int64_t period_start, ChunkRow* row,
                                                 const std::vector<std::string>& fields,
                                                 std::vector<SkippedDamage>* skipped);
  // The records of one series in one period file within [from, to), laid
  // out along `fields` (engine_damage.cc).
  Result<std::vector<ChunkRecord>> ReadSealed(const std::string& table, Period period, int64_t period_start,
                                              int64_t series_id, const std::vector<ChunkField>& fields,
                                              int64_t from, int64_t to, std::vector<SkippedDamage>* skipped);
  // The first start and last end of the series' chunks in one period file
  // overlapping [from, to), and how many there are, from the chunk rows
  // alone (nothing decoded); nothing when it has none there. A file that
  // cannot tell gives all of [from, to) as one chunk.
  struct SealedExtentInfo {
    int64_t first = 0, last = 0;
    size_t chunks = 0;
  };
  std::optional<SealedExtentInfo> SealedExtent(const std::string& table, Period period,
                                                          int64_t period_start, int64_t series_id, int64_t from,
                                                          int64_t to);
  RecordRow MakeRow(const SeriesSnapshot& series, const ChunkRecord& record) const;
  // Adds one series' readings of `field` (of `type`) to the buckets of an
  // aggregate.
  Status AccumulateSeries(const AggregateQuery& query, const SeriesSnapshot& series, size_t field, FieldType type,
                          int64_t now, std::map<int64_t, BucketAccumulator>* buckets,
                          std::vector<SkippedDamage>* skipped);
  // The chunk rows (no data) of one series in one period file within
  // [from, to) (engine_aggregate.cc); none when the file is gone or damaged
  // (NoteReadDamage).
  Result<std::vector<ChunkRow>> SealedChunkRows(const std::string& table, Period period, int64_t start,
                                                int64_t series_id, int64_t from, int64_t to,
                                                std::vector<SkippedDamage>* skipped);
  Result<std::vector<RecordRow>> LatestRows(const std::string& table,
                                              const std::vector<std::string>& devices,
                                              const std::string& measure_name, const TagMap& tags)
      EXCLUDES(state_mutex_);

  // ---- sync feed (engine_changes.cc) ----
  // True when the period file holds a record whose LSN is not in `confirmed`.
  Result<bool> PeriodHasUnsynced(const std::string& table, Period period, int64_t start,
                                 const LsnRangeSet& confirmed);

  // ---- sync quota (engine_quota.cc) ----
  // The tables and period files as the Reclaimer reaches them.
  class QuotaStore final : public ReclaimerStore {
   public:
    explicit QuotaStore(EngineImpl* engine) : engine_(engine) {}
    Result<std::vector<SyncedTable>> SyncedTables() override;
    bool IsSynced(const std::string& table) override;
    Result<UnsyncedSummary> SummarizeUnsynced(const std::string& table, const LsnRangeSet& confirmed) override;
    Status WithPeriodFile(const std::string& table, Period period, int64_t start,
                          const std::function<Status(PeriodFile&)>& work) override;
    Status EnsureAggregateSeries(const std::string& table, const std::vector<AggregateRequest>& requests,
                                 std::map<int64_t, AggregateTarget>* targets) override;
    void SeriesRewritten(const std::string& table, const std::set<int64_t>& touched,
                         const std::vector<ChunkRow>& added) override;
    Result<uint64_t> WithSealsHeld(const std::function<Result<uint64_t>()>& work) override;

   private:
    EngineImpl* const engine_;
  };
  Result<WriteResult> WriteAdmitted(const std::string& table, const std::vector<Record>& records);

  // ---- storage (engine_storage.cc) ----
  // The period files are PeriodFiles'; these name its calls for the rest
  // of the engine.
  std::string TableDir(const std::string& table) const { return period_files_.TableDir(table); }
  std::string PeriodPath(const std::string& table, Period period, int64_t start) const {
    return period_files_.PeriodPath(table, period, start);
  }
  Result<std::shared_ptr<PeriodHandle>> GetPeriodFile(const std::string& table, Period period, int64_t start,
                                                      PeriodAccess access) {
    return period_files_.Get(table, period, start, access);
  }
  void ForgetPeriodFiles(const std::string& table, int64_t start_or_all) {
    period_files_.Forget(table, start_or_all);
  }
  // Seals the heads `due` picks (Sealer) and removes what was sealed from
  // them, then advances the checkpoint. Takes seal_mutex_.
  //
  // In batches of copies of at most SealBatchBytes() (at least one head
  // each): a seal's copies and encoded chunks are memory on top of the
  // heads, and sealing every head at once (a stop, SealAll) doubled the
  // heads' memory at the very end of a run.
  Status SealWhere(const std::function<bool(const Series&)>& due) EXCLUDES(state_mutex_);
  size_t SealBatchBytes() const;
  // Copies of heads `due` picks that are not in `taken`, until their bytes
  // reach `limit`; adds them to `taken`. *complete: every due head is
  // taken. Under state_mutex_.
  std::vector<SealJob> CollectSealJobs(const std::function<bool(const Series&)>& due, size_t limit,
                                       std::set<const Series*>* taken, std::vector<Series*>* series,
                                       bool* complete) REQUIRES_SHARED(state_mutex_);
  // Removes from the heads the entries `outcome` says were sealed and
  // lists the period files written. Takes state_mutex_.
  void ApplySealed(const std::vector<SealJob>& jobs, const std::vector<Series*>& series,
                   const SealOutcome& outcome) EXCLUDES(state_mutex_);
  // The lowest LSN still held only by the log (heads, the group being
  // logged, or the next LSN), for the Checkpointer. Takes state_mutex_.
  uint64_t UnsealedFloor() EXCLUDES(state_mutex_);
  Status AdvanceCheckpoint();
  Status LoadPeriodFiles(TableState& table);

  // ---- damage (engine_damage.cc) ----
  // Opens every period file of `table` once; one that fails as damaged
  // (Corruption) is moved into the quarantine, raised in health_, listed in
  // `report` and forgotten, so that the rest is served. Also raises the
  // files an earlier run left in the quarantine.
  Status QuarantineUnreadablePeriods(TableState& table, RecoveryReport* report);
  void RaiseQuarantined(const std::string& table, const std::string& original, const std::string& moved_to,
                        const std::string& reason);
  // Raises `damage` (met by a read of `table`) in health_ and appends it to
  // `skipped` when not null.
  void NoteReadDamage(const std::string& table, SkippedDamage damage, std::vector<SkippedDamage>* skipped);
  // "stop cairnd and run: cairnd verify [--repair] --data-dir <dir>"
  std::string VerifyCommand(bool repair) const;
  Status RecomputeSealedMaxima(TableState& table);
  // Removes a period file past retention: the .db, a checked directory sync,
  // then its -wal (and -journal). On error the caller retries later.
  Status DropPeriodFile(const std::string& table, Period period, int64_t start);

  // ---- maintenance (engine_maintenance.cc) ----
  // The steps of Maintain, in its order; each takes state_mutex_ itself.
  // Polls the clock, stamps the hold once it is trusted, saves the clock.
  void MaintainClock();
  // The heads to seal for the memory budget; FailedPrecondition once closed.
  Result<std::set<const Series*>> HeadsOverBudget() EXCLUDES(state_mutex_);
  // By the deletion clock's `now`: creates the current and next period
  // files, drops those past retention (unless held for sync), compacts one
  // closed period. Returns the first error, having tried everything.
  Status TendPeriodFiles(int64_t now) EXCLUDES(state_mutex_);
  Status CreatePeriodsAhead(const std::string& table, Period period, const std::set<int64_t>& starts, int64_t now)
      EXCLUDES(state_mutex_);
  Status DropExpiredPeriod(const std::string& table, Period period, int64_t start) EXCLUDES(state_mutex_);
  Status CompactClosedPeriod(const std::string& table, Period period, int64_t start) EXCLUDES(state_mutex_);
  void MaintenanceLoop();
  void SyncLoop();

  Env* const env_;
  const std::string data_dir_;
  const EngineOptions options_;
  std::string vfs_name_;
  PeriodFiles period_files_{env_, data_dir_, VfsNameFor(env_),
                            PeriodFiles::Options{options_.writer_cache_kib, options_.reader_cache_kib,
                                                 options_.max_open_period_files}};

  std::unique_ptr<FileLock> lock_;
  // Open problems, raised and cleared by the components that find them.
  HealthBoard health_;
  // Samples the write counters (end of Open, Maintain, Close); created as
  // soon as the data directory is locked.
  std::unique_ptr<FlashWearMonitor> flash_wear_;
  std::unique_ptr<Catalog> catalog_;
  std::unique_ptr<LogWriter> log_;
  std::unique_ptr<ClockTrust> clock_;
  // Created once the catalog and the log are open (OpenAndRecover).
  std::unique_ptr<Checkpointer> checkpointer_;
  std::unique_ptr<Sealer> sealer_;
  std::unique_ptr<Compactor> compactor_;

  // The clock hold and what it did; the counters are read without the mutex.
  Mutex held_mutex_;
  std::unique_ptr<HeldReadings> held_;
  std::string boot_id_;
  std::atomic<uint64_t> held_now_{0}, readings_held_{0}, readings_restamped_{0}, readings_estimated_{0},
      restamps_refused_{0};
  std::string hold_error_ GUARDED_BY(held_mutex_);

  // Group commit queue.
  Mutex writers_mutex_ ACQUIRED_AFTER(held_mutex_);
  std::deque<PendingWrite*> writers_ GUARDED_BY(writers_mutex_);

  // Held by the group-commit leader for a whole commit, so Close can wait
  // for it.
  Mutex commit_mutex_ ACQUIRED_AFTER(writers_mutex_);
  Mutex seal_mutex_ ACQUIRED_AFTER(commit_mutex_);

  SharedMutex state_mutex_ ACQUIRED_AFTER(seal_mutex_);
  std::map<std::string, std::unique_ptr<TableState>> tables_ GUARDED_BY(state_mutex_);
  int64_t next_series_id_ GUARDED_BY(state_mutex_) = 1;
  uint64_t next_lsn_ GUARDED_BY(state_mutex_) = 1;
  // First LSN of the group being logged, 0 if none.
  uint64_t inflight_first_lsn_ GUARDED_BY(state_mutex_) = 0;
  Head head_ GUARDED_BY(state_mutex_);

  // Set while opening when the catalog was rebuilt: replay then creates,
  // with default options, the tables only the log names.
  bool catalog_rebuilt_ = false;
  std::string catalog_rebuild_message_;
  std::vector<std::string> tables_with_default_options_;

  std::atomic<uint64_t> records_written_{0}, records_duplicate_{0}, records_rejected_{0}, records_invalid_{0};
  std::atomic<uint64_t> records_over_series_limit_{0};
  std::atomic<uint64_t> records_conflict_{0}, records_overwritten_{0};
  std::atomic<uint64_t> chunks_sealed_{0};
  std::atomic<uint64_t> seal_copies_peak_bytes_{0};  // EngineStats::seal_copies_peak_bytes
  std::atomic<uint64_t> chunks_decoded_{0};

  // The sync quota; created once the catalog is open.
  QuotaStore quota_store_{this};
  std::unique_ptr<Reclaimer> reclaimer_;

  Mutex background_mutex_;
  CondVar background_cv_;
  bool stopping_ GUARDED_BY(background_mutex_) = false;
  // Set by writers when a head is full or the head budget is exceeded, so
  // that sealing starts now rather than at the next tick.
  bool maintenance_requested_ GUARDED_BY(background_mutex_) = false;
  // Rounds the maintenance thread has finished: what a writer waiting for
  // head room waits to see move.
  uint64_t maintenance_rounds_ended_ GUARDED_BY(background_mutex_) = 0;
  std::thread maintenance_thread_;
  std::thread sync_thread_;
  bool closed_ = false;
};

}  // namespace cairn
