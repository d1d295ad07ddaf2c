// Engine: cairn's storage engine over one data directory.
//
//   <data_dir>/LOCK                 held by the one process that has it open
//   <data_dir>/catalog.db           tables, series dictionary, checkpoint
//   <data_dir>/log/<lsn>.log        write-ahead log segments (log_format.md)
//   <data_dir>/<table>/<period>.db  sealed chunks of one period (period_format.md)
//   <data_dir>/flash_wear.state     write totals behind FlashWear() (flash_wear_state_format.md)
//
// Writes are validated, version-checked, appended to the log, applied to the
// in-memory head and only then acknowledged. Concurrent writers share one log
// write and one fdatasync (group commit). A background thread seals head
// records into compressed chunks in per-period SQLite files and lets old log
// segments go.
//
// Thread-safety: every method may be called concurrently from any number of
// threads. Close() (or destruction) must not race with other calls.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/core/clock.h"
#include "cairn/core/flash_wear.h"
#include "cairn/core/health.h"
#include "cairn/core/range_columns.h"
#include "cairn/core/record.h"
#include "cairn/core/sync_ledger.h"
#include "cairn/core/table.h"
#include "cairn/core/verify.h"
#include "cairn/platform/env.h"
#include "cairn/platform/status.h"

namespace cairn {

// When a write is acknowledged relative to its fdatasync.
enum class Durability : uint8_t {
  kFull,      // after the log record is fdatasync'ed (default)
  kInterval,  // before the sync; a background sync runs every interval: a power
              // cut can lose at most the last `sync_interval_ms` of acknowledged writes
  kOff,       // synced by cairn only at seal, segment roll and close, and when 4 MiB of log
              // wait unsynced (the log keeps them in memory to write them again after a
              // failed sync): otherwise the OS decides
};

// What the engine does when the sync quota is reached (DESIGN §6).
enum class QuotaPolicy : uint8_t {
  // Writes are refused with ResourceExhausted until the backlog drains below
  // the budget (or free space is back above the floor). Nothing acknowledged
  // is ever lost.
  kBackpressure,
  // The oldest unsynced records (lowest LSN) are deleted until the backlog
  // is back under the budget; counted in SyncQuotaStatus::records_dropped.
  kDropOldest,
  // The oldest unsynced records are replaced by one aggregate record per
  // series and step (quota_format.md beside the engine); when nothing is
  // left to downsample, the oldest unsynced records are dropped.
  kDownsample,
};

std::string_view QuotaPolicyName(QuotaPolicy policy);  // "backpressure", "drop_oldest", "downsample"
Result<QuotaPolicy> ParseQuotaPolicy(std::string_view name);

// The sync quota: how much unsynced data tables with sync on may hold, and
// how much free disk must remain. Both limits 0 (the default) turn it off.
struct SyncQuotaOptions {
  // Budget for the on-disk bytes of unconfirmed records of every synced
  // table together (UnsyncedSummary::bytes, summed). 0: no budget.
  uint64_t max_unsynced_bytes = 0;
  // Free bytes that must remain on the data directory's filesystem. 0: no
  // floor. The floor is hard: below it, writes to every table are refused
  // whatever the policy, once the policy has reclaimed what it can.
  uint64_t min_free_bytes = 0;
  QuotaPolicy policy = QuotaPolicy::kBackpressure;
  // Width of one downsampling step; must divide an hour (1..3600 s).
  int64_t downsample_step_seconds = 60;
  // The quota is measured (one index scan per period file holding unsynced
  // chunks) by Maintain at most this often, so a write between two checks
  // may overshoot the budget by what arrives meanwhile. 0: every Maintain.
  int64_t check_interval_ms = 5000;
};

struct EngineOptions {
  Durability durability = Durability::kFull;
  int64_t sync_interval_ms = 100;  // used with kInterval

  uint64_t log_segment_bytes = 64ull << 20;  // a segment rolls over past this size

  // One bound on the memory the engine keeps (0: the pools below as given).
  // When set, Open divides it among the pools that grow with the data and
  // overrides them: half for the heads (head_memory_budget_bytes), a
  // quarter for the page caches of the two files being written (the
  // current and the next period, writer_cache_kib each), an eighth for the
  // caches of older files held open (reader_cache_kib each, times
  // max_open_period_files), and an eighth left for what does not grow with
  // the data (the catalog's cache, the log's buffers, a query's decoded
  // chunks). A smaller budget seals heads earlier (smaller chunks: a few
  // more bytes per reading and more writes to the card) and rereads more
  // pages from the card; see ApplyMemoryBudget.
  size_t memory_budget_bytes = 0;

  // Sealing: a series' head becomes chunks when it holds this many records,
  // or when it has waited this long since it became non-empty (monotonic
  // clock). A chunk holds at most seal_records records.
  size_t seal_records = 1024;
  int64_t seal_age_ms = 10 * 60 * 1000;
  // Under memory pressure (head above this budget) the largest heads are
  // sealed early; while the heads, with the copies a running seal holds,
  // stay above it, a write waits for the next maintenance round (at most
  // 5 s) before it is logged, so writers that outrun the sealer cannot grow
  // the heads without bound.
  size_t head_memory_budget_bytes = 64ull << 20;
  // How often the background thread looks for work; a full head or a head
  // over budget wakes it at once. 0 disables the thread (tests then call
  // SealAll / Maintain themselves).
  int64_t maintenance_interval_ms = 1000;

  // Page cache of the current period file's writer connection and of each
  // read-only handle to older period files, and how many of those stay open.
  int writer_cache_kib = 8 * 1024;
  int reader_cache_kib = 512;
  size_t max_open_period_files = 8;

  // When true, a period file past retention of a table with sync on is kept
  // until every record in it is confirmed in the table's sync ledger (the
  // archive lane sends them first); the daemon sets it when sync is
  // configured. When false, retention drops files on time, synced or not.
  bool retention_waits_for_sync = false;

  // Limits on unsynced data; the confirmations are read from the sync
  // ledgers in the catalog (SaveSyncLedger).
  SyncQuotaOptions sync_quota;

  // The series limit of tables whose max_series is 0 (TableOptions). A
  // series costs a few hundred bytes for as long as its table exists.
  uint64_t default_max_series = 100'000;

  // When the wall clock is trusted, and the bounds on client timestamps
  // (cairn/core/clock.h).
  ClockOptions clock;

  // Flash-wear telemetry: the card's endurance, the warning thresholds and
  // how often the write counters are sampled (flash_wear.h).
  FlashWearOptions flash_wear;
};

// What happened to one record of a write batch.
enum class WriteOutcome : uint8_t {
  // New identity, a higher version replaced an older one, or (on_conflict
  // overwrite) the same version with other values was merged into it.
  kStored,
  // Same identity, same version, same values already stored (an earlier
  // write or one before it in this batch): dropped, so retries are idempotent.
  kDuplicate,
  kRejectedVersion,  // a higher version of this identity is stored; `reason` names both
  kInvalid,          // failed validation; `reason` says why
  // Same identity and version stored with other values, on a table whose
  // on_conflict is reject: refused; `reason` names the first field that
  // differs and both of its values.
  kConflict,
};

struct RecordResult {
  WriteOutcome outcome = WriteOutcome::kStored;
  std::string reason;  // empty unless kInvalid, kRejectedVersion or kConflict
};

struct WriteResult {
  std::vector<RecordResult> records;  // one per input record, same order
  uint64_t first_lsn = 0;             // LSN of the first stored record (0 if none stored)
  size_t stored = 0, duplicates = 0, rejected = 0, invalid = 0, conflicts = 0;
};

// A record as a query returns it: its series, its identity and its fields.
struct RecordRow {
  std::string device_id;
  std::string measure_name;
  TagMap dimensions;  // the series' dimensions (part of the identity)
  TagMap attributes;  // the series' attributes (metadata) as last written
  int shard = 0;
  int64_t timestamp = 0;
  uint64_t version = 0;
  int64_t ttl = 0;            // 0 = none
  std::vector<Field> fields;  // only the fields this record carries, sorted by name
  // The LSN the gateway stored it under: set by ReadChanges and carried by the
  // sync envelope, so that a receiver orders equal versions as the gateway
  // does (the later LSN wins); 0 from every other read.
  uint64_t lsn = 0;
};

enum class Order : uint8_t { kAscending, kDescending };

struct RangeQuery {
  std::string table;
  std::string device_id;
  // Exactly one of measure_name (exact) or measure_prefix (hierarchical
  // prefix, e.g. "env#" matches "env#temperature"); both empty = all measures.
  std::string measure_name;
  std::string measure_prefix;
  // Only series whose dimension or attribute of each name given here has
  // the value given (a series without that tag does not match).
  TagMap tags;
  int64_t from = INT64_MIN;  // inclusive, ns
  int64_t to = INT64_MAX;    // exclusive, ns
  Order order = Order::kAscending;
  size_t limit = 1000;     // at most this many rows; 0 = no limit
  std::string page_token;  // from a previous RangeResult to continue it
  // Only these fields (empty = all). A record carrying none of them is not
  // a row of the answer. Chunks are decoded for these columns only.
  std::vector<std::string> fields;
};

// Stored data a read could not use and stepped over: a chunk that fails its
// checksum or does not decode, or a whole period file SQLite reports as
// malformed. The rest of the answer is served; the damage is also raised in
// Health() under "period.damaged:<table>/<file>".
struct SkippedDamage {
  std::string file;    // path of the period file
  std::string where;   // "chunk of series 3 from <ns> seq 0", or "the whole file"
  std::string reason;  // what the decoder or SQLite said
  // Readings the skipped part holds as its chunk row counts them; 0 when
  // unknown (the rows themselves could not be read).
  uint64_t readings = 0;
};

// Range's answer as columns (cairn/core/range_columns.h).
struct ColumnarRangeResult {
  RangeColumns columns;
  std::string next_page_token;          // as RangeResult::next_page_token
  std::vector<SkippedDamage> skipped;   // as RangeResult::skipped
};

struct RangeResult {
  // Ordered by (timestamp, measure_name, dimensions) ascending or all
  // descending; dimensions compare as their sorted (name, value) lists.
  std::vector<RecordRow> rows;
  // Non-empty when more rows match: pass it as page_token to continue.
  std::string next_page_token;
  // Damaged stored data in the query's range that was stepped over: when
  // not empty the rows are incomplete.
  std::vector<SkippedDamage> skipped;
};

// On an int64 field every function is exact: `sum` is an int64 (the total
// is accumulated in 128 bits, and Aggregate fails with InvalidArgument
// naming the bucket when it does not fit int64), `avg` is a double, the
// exact sum divided by the count rounded once; `min`, `max`, `first`,
// `last` are the stored int64 values and `count` an int64. On a double
// field all but `count` are doubles.
enum class AggregateFunction : uint8_t { kMin, kMax, kAvg, kSum, kCount, kFirst, kLast };

std::string_view AggregateFunctionName(AggregateFunction fn);
// Parses "min", "max", "avg", "sum", "count", "first", "last".
Result<AggregateFunction> ParseAggregateFunction(std::string_view name);

struct AggregateQuery {
  std::string table;
  std::string device_id;
  std::string measure_name;
  // Only series matching these tags, as RangeQuery::tags. The readings of
  // every matching series fall into the same buckets, unless group_by names
  // tags: then each combination of their values (a series without one of
  // them counts as "") gets buckets of its own.
  TagMap tags;
  std::vector<std::string> group_by;
  std::string field;  // a double or int64 field
  int64_t from = 0;   // inclusive, ns; buckets start at from + k*step
  int64_t to = 0;     // exclusive, ns
  int64_t step = 0;   // bucket width in ns, > 0
  std::vector<AggregateFunction> functions;
};

struct AggregateBucket {
  TagMap group;       // the group_by tags' values (empty without group_by)
  int64_t start = 0;  // bucket start, ns
  uint64_t count = 0;
  // One value per requested function, in request order; monostate where the
  // bucket is empty (count is reported as int64 0).
  std::vector<Value> values;
};

struct AggregateResult {
  std::vector<AggregateBucket> buckets;  // only non-empty buckets, ascending by (group, start)
  // As RangeResult::skipped: when not empty, the buckets miss those readings.
  std::vector<SkippedDamage> skipped;
};

struct DeviceInfo {
  std::string device_id;
  std::vector<std::string> measures;  // sorted, each once
};

struct MeasureInfo {
  std::string measure_name;
  std::map<std::string, FieldType> fields;
  std::set<std::string> dimensions;  // the dimension names its series use
  std::set<std::string> attributes;  // the attribute names its series carry
  size_t devices = 0;                // how many devices report it
  size_t series = 0;                 // how many series (devices x dimension sets)
};

// `options` with its pools derived from memory_budget_bytes (unchanged when
// that is 0), as Engine::Open applies them. The writer's cache is at least
// 256 KiB, a reader's at least 64 KiB, and the heads get at least 1 MiB, so
// a budget under about 4 MiB is exceeded rather than made unusable.
EngineOptions ApplyMemoryBudget(EngineOptions options);

struct EngineStats {
  uint64_t records_written = 0, records_duplicate = 0, records_rejected = 0, records_invalid = 0;
  // Records refused as conflicts (WriteOutcome::kConflict), and records
  // merged into a stored one of the same version (on_conflict overwrite;
  // also counted in records_written).
  uint64_t records_conflict = 0, records_overwritten = 0;
  uint64_t last_lsn = 0;        // highest LSN assigned
  uint64_t checkpoint_lsn = 0;  // every record below it is in a period file
  // head_bytes: the heads' columns, and the copies a running seal holds of
  // them. While it is over head_budget_bytes a write waits for a
  // maintenance round to seal (at most 5 s), so it exceeds the budget by
  // about one group commit per round.
  uint64_t head_records = 0, head_bytes = 0;
  // The most bytes of head copies one seal batch has held at once since
  // Open. A seal copies the heads it takes in batches of at most a quarter
  // of head_budget_bytes (one head when a single head is larger), so a stop
  // that seals every head needs that much beside them, not their size again.
  uint64_t seal_copies_peak_bytes = 0;
  uint64_t chunks_sealed = 0;
  uint64_t chunks_decoded = 0;  // sealed chunks decoded to answer queries
  // The memory budget (EngineOptions::memory_budget_bytes, 0 when unset) and
  // what it allows each pool, against what they hold: the heads'
  // (head_bytes) and SQLite's whole heap, page caches included.
  uint64_t memory_budget_bytes = 0;
  uint64_t head_budget_bytes = 0;
  uint64_t page_cache_budget_bytes = 0;  // writers' and readers' caches together
  uint64_t sqlite_memory_bytes = 0;
  // Period files opened since Open; far above the number of files means
  // EngineOptions::max_open_period_files is too small for the queries.
  uint64_t period_file_opens = 0;
  uint64_t log_bytes = 0;  // log segments on disk
  uint64_t period_file_bytes = 0;
  uint64_t series = 0;
  // Estimated memory the series themselves hold (names, schema, dimensions,
  // latest reading, index nodes), beside head_bytes; it stays until their
  // table is dropped, so TableOptions::max_series bounds it.
  uint64_t series_bytes = 0;
  // Records refused because they would have started a series beyond their
  // table's max_series (also counted in records_invalid).
  uint64_t records_over_series_limit = 0;
};

// The sync quota as the last check found it, and what it has done since Open.
struct SyncQuotaStatus {
  bool enabled = false;  // either limit set
  QuotaPolicy policy = QuotaPolicy::kBackpressure;
  uint64_t max_unsynced_bytes = 0, min_free_bytes = 0;
  // Measured at checked_at (Unix ns; 0 before the first check).
  int64_t checked_at = 0;
  uint64_t unsynced_bytes = 0;
  uint64_t free_bytes = 0;
  bool over_budget = false;  // unsynced_bytes > max_unsynced_bytes
  bool below_floor = false;  // free_bytes < min_free_bytes
  bool refusing_writes = false;
  uint64_t writes_refused = 0;       // Write calls refused by the quota
  uint64_t records_dropped = 0;      // unsynced records deleted (drop_oldest, or downsample's fallback)
  uint64_t records_downsampled = 0;  // unsynced records replaced by aggregates
  uint64_t aggregates_written = 0;   // aggregate records that replaced them
  std::string last_error;            // the last check's or reclaim's failure, empty when it worked
};

// Records of one table read back by LSN, for the sync sender.
struct ChangeBatch {
  std::vector<RecordRow> records;  // ascending LSN
  std::vector<uint64_t> lsns;      // lsns[i] is the LSN of records[i]
  // Every record of the table with an LSN in (after_lsn, covered_through]
  // that is still stored and unexpired is in `records`. covered_through is
  // through_lsn unless the batch filled up (then it is the batch's last LSN).
  uint64_t covered_through = 0;
  // Smallest and largest timestamp among `records` (0 when empty).
  int64_t min_timestamp = 0, max_timestamp = 0;
};

// What of a table is not yet in its ledger's confirmed set.
struct UnsyncedSummary {
  uint64_t records = 0;
  // On-disk bytes those records take: the stored chunk bytes, shared pro
  // rata by a chunk's unsynced records, plus the head's in-memory estimate.
  uint64_t bytes = 0;
  // The part of `bytes` that is the head's estimate (records not sealed
  // yet: their size on disk is not known before they are).
  uint64_t head_bytes = 0;
  // The oldest unsynced record's timestamp, to the start of its chunk;
  // 0 when nothing is unsynced.
  int64_t oldest_timestamp = 0;
  // Unsynced records in period files past retention, held for the archive
  // lane (EngineOptions::retention_waits_for_sync).
  uint64_t held_for_archive = 0;
};

// What Open found while replaying the log.
struct RecoveryReport {
  uint64_t records_replayed = 0;           // log records at or past the checkpoint applied to the head
  uint64_t torn_tail_bytes_truncated = 0;  // a write cut by a crash, dropped
  // Damaged log bytes stepped over because every reading they could hold is
  // below the checkpoint, i.e. already sealed into period files: nothing was
  // lost. The segments holding them go with the next checkpoint.
  uint64_t sealed_damage_bytes_skipped = 0;
  // catalog.db was missing (or unreadable, and moved aside to
  // catalog.db.damaged) while period files or log segments were present:
  // the catalog was rebuilt from the period files and the log, with these
  // counts. The sync ledger is not in those files: every reading is offered
  // to the cloud again, whose ingest stores each once (identity and version).
  bool catalog_rebuilt = false;
  uint64_t catalog_rebuilt_tables = 0;
  uint64_t catalog_rebuilt_series = 0;
  uint64_t catalog_rebuilt_files = 0;
  // Tables the rebuild gave default options: their period files stored
  // none (written before files carried them) or only the log names them.
  std::vector<std::string> tables_with_default_options;
  // Period files that lacked readings the engine had sealed into them (a
  // damaged -wal, or chunks ending below the file's seal mark), whose
  // readings were replayed from the log instead.
  std::vector<std::string> period_files_recovered;
  // What recovery did that an operator must hear of, one line each (also
  // raised as health problems while they matter).
  std::vector<std::string> notices;
  // Period files Open could not read (damaged header, not a database, bad
  // meta) and moved into <data_dir>/quarantine/<table>/ so the rest of the
  // data is served; Health() names each one until the quarantine is emptied.
  struct QuarantinedFile {
    std::string path;      // where the file was
    std::string moved_to;  // where it is now
    std::string reason;    // why it could not be read
  };
  std::vector<QuarantinedFile> quarantined;
};

// What Engine::RepairLog did. Readings are counted by LSN: every stored
// reading has one.
struct LogRepairReport {
  // Readings at or above the checkpoint (not yet sealed into period files)
  // that the log held, or claimed to hold, before the repair and no longer
  // does: lost from this gateway.
  uint64_t readings_lost = 0;
  std::vector<LsnRange> lost_lsns;  // the same readings as LSN ranges
  // Of those, readings a table's sync ledger shows as confirmed by the
  // cloud: a copy exists there.
  uint64_t readings_lost_already_synced = 0;
  // Intact readings after the first damage that the repair kept.
  uint64_t readings_kept_after_damage = 0;
  // Log segments removed because every reading in them was already sealed.
  uint64_t segments_trimmed = 0;
  // Bytes of a write a crash cut short, dropped (never acknowledged under
  // full durability).
  uint64_t torn_tail_bytes = 0;
  // What was done, one line per damaged place (file, offset, reason, action).
  std::vector<std::string> actions;
  // Said when the checkpoint could not be read, so that every damaged
  // reading was counted as lost.
  std::string note;
};

class Engine {
 public:
  virtual ~Engine() = default;

  // Opens (creating if needed) the engine on `data_dir` through `env`, takes
  // <data_dir>/LOCK (Busy if another process holds it) and replays the log
  // from the checkpoint. Damage among log records below the checkpoint
  // (already sealed) is stepped over and reported; damage above it fails with
  // Corruption naming segment and offset, and RepairLog mends it. A full disk
  // does not stop Open: writes are refused (ResourceExhausted, `Health`
  // says why) until there is room. Neither does a period file it cannot
  // read: it is moved into <data_dir>/quarantine/<table>/ (never deleted),
  // listed in report->quarantined and raised in Health. `env` must outlive
  // the engine.
  static Result<std::unique_ptr<Engine>> Open(Env* env, const std::string& data_dir,
                                              const EngineOptions& options, RecoveryReport* report = nullptr);

  // Mends a log that Open refuses, keeping every intact record it can:
  // segments whose readings are all sealed are removed, a damaged stretch is
  // cut out while the intact records after it are kept, gaps are declared.
  // Only the damaged records' readings are lost; the report names them and
  // says which of them the cloud already holds. An intact log is left as it
  // is (empty report). The engine must not be open (Busy otherwise).
  static Result<LogRepairReport> RepairLog(Env* env, const std::string& data_dir);

  // Checks every file of a stopped data directory (cairn/core/verify.h):
  // the catalog, each period file (SQLite integrity, meta, every chunk's
  // checksum and decode, LSNs), the log segments (every record's checksum)
  // and the LSN coverage against the checkpoint. With `repair`, moves
  // unreadable period files and damaged chunks into <data_dir>/quarantine/
  // (nothing is deleted) and mends the log as RepairLog does, counting the
  // readings lost. Takes <data_dir>/LOCK: Busy while an engine has it open.
  static Result<VerifyReport> Verify(Env* env, const std::string& data_dir, bool repair);

  // ---- tables ---------------------------------------------------------------

  virtual Status CreateTable(const std::string& name, const TableOptions& options) = 0;
  // Changes retention, default ttl, period (from the next period on) and sync.
  virtual Status AlterTable(const std::string& name, const TableOptions& options) = 0;
  // Drops the table and deletes its files.
  virtual Status DropTable(const std::string& name) = 0;
  virtual Result<std::vector<TableInfo>> ListTables() = 0;
  virtual Result<TableInfo> GetTable(const std::string& name) = 0;

  // ---- writes ---------------------------------------------------------------

  // Writes a batch to `table`. The call fails as a whole only when the table
  // does not exist, the sync quota refuses it, or the data directory cannot
  // be written: ResourceExhausted when its filesystem is full or refuses
  // writes (read-only), Unavailable after an I/O error; nothing of the batch
  // is stored then, `Health` names the condition until a write succeeds
  // again, and writes resume by themselves once it is over. A batch that
  // failed this way can reappear after a restart only if the device refused
  // every write until the process stopped and the batch's bytes still read
  // back intact at the next start; a retry of the same readings is then a
  // duplicate (same identity and version). Otherwise each record gets an outcome. Returns after the stored
  // records are durable per the durability mode.
  virtual Result<WriteResult> Write(const std::string& table, const std::vector<Record>& records) = 0;

  // As Write, for records whose source has already been told they are
  // delivered and cannot take them back (an MQTT broker whose client library
  // acknowledged them on receipt): the sync quota's budget does not refuse
  // them, so they may overshoot it; the free-disk floor still does.
  virtual Result<WriteResult> WriteReceived(const std::string& table, const std::vector<Record>& records) = 0;

  // ---- reads ----------------------------------------------------------------
  //
  // Damaged stored data (a chunk failing its checksum or decode, a period
  // file SQLite calls malformed) does not fail a read: it is stepped over,
  // raised in Health() under "period.damaged:...", and Range and Aggregate
  // list it in their result's `skipped`. Get, Latest and LatestBatch serve
  // what remains without saying so beyond Health().

  // The record with this identity, if present and not expired. `dimensions`
  // are the series' dimensions, all of them (attributes are not identity).
  virtual Result<std::optional<RecordRow>> Get(const std::string& table, const std::string& device_id,
                                               const std::string& measure_name, int64_t timestamp,
                                               const TagMap& dimensions = {}) = 0;

  // The records of one device in [from, to) matching the query, in the
  // query's order, at most `limit` of them (RangeResult). Work is bounded by
  // the limit, not by the range: a limited read decodes the chunks it
  // returns rows from and stops.
  virtual Result<RangeResult> Range(const RangeQuery& query) = 0;
  // Range's rows (the same rows, order, paging and skipped damage) as typed
  // columns: no object per reading. Serialisers and bulk readers use it.
  virtual Result<ColumnarRangeResult> RangeColumnar(const RangeQuery& query) = 0;

  // The most recent unexpired record of each of the device's series (of
  // `measure_name`'s alone when non-empty; of those matching `tags` as
  // RangeQuery::tags), sorted by measure name, then dimensions.
  virtual Result<std::vector<RecordRow>> Latest(const std::string& table, const std::string& device_id,
                                                const std::string& measure_name = "",
                                                const TagMap& tags = {}) = 0;

  // Latest for many devices at once; devices without data are left out.
  virtual Result<std::vector<RecordRow>> LatestBatch(const std::string& table,
                                                     const std::vector<std::string>& device_ids,
                                                     const std::string& measure_name = "",
                                                     const TagMap& tags = {}) = 0;

  virtual Result<AggregateResult> Aggregate(const AggregateQuery& query) = 0;

  virtual Result<std::vector<DeviceInfo>> ListDevices(const std::string& table) = 0;
  virtual Result<std::vector<MeasureInfo>> ListMeasures(const std::string& table) = 0;

  // ---- sync feed and ledger (DESIGN §6) ---------------------------------------

  // The table's records with an LSN in (after_lsn, through_lsn], ascending
  // by LSN, at most max_records (> 0) of them, from the head and the sealed
  // chunks alike. Expired records are left out; of two versions of one
  // identity both may be returned while both are stored (the receiver keeps
  // the higher). NotFound for an unknown table.
  virtual Result<ChangeBatch> ReadChanges(const std::string& table, uint64_t after_lsn, uint64_t through_lsn,
                                          size_t max_records) = 0;

  // Counts what of the table lies outside `confirmed`, up to the current
  // last LSN. Reads chunk metadata only. NotFound for an unknown table.
  virtual Result<UnsyncedSummary> SummarizeUnsynced(const std::string& table,
                                                    const LsnRangeSet& confirmed) = 0;

  // The ledgers of every table that has one.
  virtual Result<std::vector<SyncLedger>> LoadSyncLedgers() = 0;
  // Replaces the table's ledger in one catalog transaction. NotFound for an
  // unknown table. A dropped table's ledger goes with it.
  virtual Status SaveSyncLedger(const SyncLedger& ledger) = 0;

  // ---- maintenance ----------------------------------------------------------

  // Seals every head record into chunks and advances the checkpoint.
  virtual Status SealAll() = 0;
  // One round of background work: seal what is due, create the next period
  // file ahead of the boundary, compact closed periods, drop expired ones.
  virtual Status Maintain() = 0;

  virtual EngineStats Stats() = 0;

  // The sync quota's state as of the last Maintain that checked it. Cheap.
  virtual SyncQuotaStatus QuotaStatus() = 0;

  // The problems the engine knows of now (health.h): damaged or quarantined
  // files, writes refused for lack of space, and the like. Cheap; never
  // touches the disk.
  virtual EngineHealth Health() = 0;

  // Whether the wall clock is trusted, the readings waiting for it and what
  // clock trust did since Open (cairn/core/clock.h). Cheap.
  virtual ClockStatus Clock() = 0;

  // Bytes written per day, write amplification and the card's projected
  // life, as of the last sample of the write counters (Maintain takes one
  // every FlashWearOptions::sample_interval_ms; Open and Close take one
  // too). Cheap; never touches the disk. Its warnings are in Health under
  // the keys "flash.life" and "flash.amplification".
  virtual FlashWearStatus FlashWear() = 0;

  // Seals nothing, syncs the log, releases the lock. Idempotent.
  virtual Status Close() = 0;
};

}  // namespace cairn
