// One SQLite file per table per period (DESIGN §4): the sealed chunks of every
// series of one table over one period, with what is needed to read them
// without the catalog. The schema is specified in period_format.md beside
// this file.
//
// A period file has at most one connection at a time: the writer (the
// current period, or an older one being compacted) or one read-only handle.
// Chunk and stats bytes are opaque here; the chunk codec (chunk/chunk_codec.h)
// makes and reads them.
//
// Thread-safety: none. A PeriodFile belongs to one thread at a time; the
// engine serialises access with its own mutex.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cairn/core/sqlite_database.h"
#include "cairn/core/table.h"
#include "cairn/platform/env.h"
#include "cairn/platform/status.h"

#include "chunk/chunk_codec.h"

namespace cairn {

// A series as a period file records it: identity, latest field list and
// latest dimensions.
struct PeriodSeries {
  int64_t series_id = 0;  // the catalog's id; unique within the table
  std::string device_id, measure_name;
  int shard = 0;
  std::vector<ChunkField> fields;
  std::map<std::string, std::string> dimensions;
  friend bool operator==(const PeriodSeries&, const PeriodSeries&) = default;
};

// One sealed chunk and its decode-free facts.
struct ChunkRow {
  int64_t series_id = 0;
  int64_t start_ns = 0, end_ns = 0;  // first and last (inclusive) timestamp
  // Tells apart chunks of one series with the same start. Assigned by
  // WriteChunks and Compact: the value passed in is ignored.
  int64_t seq = 0;
  uint32_t count = 0;                 // records in the chunk
  uint64_t min_lsn = 0, max_lsn = 0;  // log sequence numbers of its records
  uint64_t max_version = 0;
  int64_t min_ttl = 0;  // smallest non-zero ttl (Unix seconds), 0 if none
  // The chunk's own schema, needed to decode `stats` without `data` (a
  // series' field list can grow during a period). Empty on write means the
  // series' field list; always filled on read.
  std::vector<ChunkField> fields;
  std::string stats;  // EncodeChunkStats bytes
  std::string data;   // EncodeChunk bytes; empty when read without data
  // The LSN of each record, in the chunk's record order (count entries,
  // each within [min_lsn, max_lsn]). The sync feed uses it to tell which of
  // a chunk's records a confirmation covers.
  std::vector<uint64_t> lsns;
  // The size of `data` on disk; filled by ReadChunksByLsn only (0 otherwise).
  uint64_t data_bytes = 0;
  friend bool operator==(const ChunkRow&, const ChunkRow&) = default;
};

class PeriodFile {
 public:
  // The format_version this code writes and reads.
  // Version 2 added the per-record `lsns` column; version 1 files are
  // refused with a message naming both versions.
  static constexpr int64_t kFormatVersion = 2;

  // Opens the period file at `path` read-write, creating it (schema and meta)
  // if missing. `period_start_ns` must be the start of a `period`. The
  // directory must exist. One writer per file, ever: Busy if this process has
  // the file open already. Corruption if the file's meta names another table,
  // period or start, or if it is not a period file. `env` (used for the
  // creation time) must outlive the PeriodFile; `vfs_name` must be an Env VFS
  // (storage/env_vfs.h). `cache_kib`: SQLite page cache size.
  // Commits are synchronous=FULL: a WriteChunks that returned OK survives a
  // power cut, because the engine lets the log go once a seal is in.
  static Result<std::unique_ptr<PeriodFile>> OpenWritable(Env* env, const std::string& vfs_name,
                                                          const std::string& path, const std::string& table,
                                                          Period period, int64_t period_start_ns,
                                                          int cache_kib);

  // Opens an existing period file read-only (NotFound if missing). Such a
  // handle never writes, never checkpoints and creates no file; it sees
  // commits left in a WAL by a writer that did not close cleanly.
  static Result<std::unique_ptr<PeriodFile>> OpenReadOnly(Env* env, const std::string& vfs_name,
                                                          const std::string& path, int cache_kib);

  // Closes, ignoring errors (call Close to see them).
  ~PeriodFile();
  PeriodFile(const PeriodFile&) = delete;
  PeriodFile& operator=(const PeriodFile&) = delete;

  // In one transaction, all or nothing: upserts `series` (identity must not
  // change for an existing series_id: InvalidArgument), then inserts `chunks`,
  // assigning each its seq (0 for a new (series_id, start_ns), one more than
  // the highest otherwise). On OK, durable, and chunks[i].seq holds the
  // assigned seq. Every chunk's series must be in `series` or already in the
  // file, its [start_ns, end_ns] within the period, count > 0 and
  // min_lsn <= max_lsn (InvalidArgument otherwise, nothing written).
  // FailedPrecondition on a read-only handle.
  // An I/O error leaves the file as before for this handle. One case stays
  // open, as for any database: when the commit's sync failed, its bytes may
  // still have reached the disk, and if the process stops before the next
  // commit, the chunks can be there after a restart. Callers that must not
  // store a record twice check the LSN ranges already in the file on restart.
  Status WriteChunks(const std::vector<PeriodSeries>& series, std::vector<ChunkRow>& chunks);

  // Chunks of `series_id` whose [start_ns, end_ns] overlaps [from, to),
  // ordered by (start_ns, seq). with_data=false leaves `data` empty and does
  // not read it from disk (aggregates from stats). Empty for an unknown
  // series or an empty range.
  Result<std::vector<ChunkRow>> ReadChunks(int64_t series_id, int64_t from, int64_t to, bool with_data);

  // ReadChunks(with_data=false) without the chunk's schema, stats and LSNs:
  // the identity, span, count and LSN, version and ttl bounds of each chunk,
  // all a range needs to plan which chunks to fetch.
  Result<std::vector<ChunkRow>> ListChunks(int64_t series_id, int64_t from, int64_t to);
  // Fills `chunk`'s data (EncodeChunk bytes) and lsns, the chunk as
  // ListChunks or ReadChunks listed it: a read that decides from the rows
  // which chunks it needs fetches only those. NotFound when the chunk is
  // gone (compacted or replaced since it was listed).
  Status ReadChunkBody(ChunkRow* chunk);
  // The chunks holding any LSN in (after_lsn, through_lsn], ordered by
  // min_lsn: every chunk that began at or before after_lsn and reaches past
  // it, then at most `limit` chunks beginning inside the range. When that
  // second part returns `limit` chunks, more may follow beyond the last one's
  // min_lsn. with_data as for ReadChunks.
  Result<std::vector<ChunkRow>> ReadChunksByLsn(uint64_t after_lsn, uint64_t through_lsn, size_t limit,
                                                bool with_data);

  // The highest LSN of any chunk in the file, 0 when it has none.
  Result<uint64_t> MaxLsn();

  // Every series recorded in the file, by series_id.
  Result<std::vector<PeriodSeries>> ListSeries();

  // Replaces all chunks of each series with what `merge` returns for them,
  // in one transaction for the whole file, and marks the file compacted; then
  // checkpoints the WAL and VACUUMs, so the file shrinks to its live pages.
  // `merge` receives the series and its chunks (with data) in (start_ns, seq)
  // order; what it returns must satisfy WriteChunks' rules and belong to
  // that series. An error from `merge` rolls everything back and is
  // returned. VACUUM builds the new file in memory (temp_store=MEMORY), so it
  // needs about the file's size in RAM. FailedPrecondition on a read-only
  // handle.
  using MergeFunction =
      std::function<Result<std::vector<ChunkRow>>(const PeriodSeries&, std::vector<ChunkRow>&&)>;
  Status Compact(const MergeFunction& merge);

  // Identifies one chunk in the file.
  struct ChunkKey {
    int64_t series_id = 0, start_ns = 0, seq = 0;
  };

  // In one transaction, all or nothing: deletes the chunks named by
  // `removed` (NotFound if one is missing), upserts `series`, then inserts
  // `added` under WriteChunks' rules (seq assigned, written back on OK).
  // Afterwards gives the freed pages back to the filesystem where the file
  // allows it (auto_vacuum=INCREMENTAL, set on every file created since
  // format 2; older files keep the pages for later chunks). The sync quota
  // uses it to drop or downsample sealed records without a whole-file
  // rewrite. FailedPrecondition on a read-only handle.
  Status ReplaceChunks(const std::vector<ChunkKey>& removed, const std::vector<PeriodSeries>& series,
                       std::vector<ChunkRow>& added);

  // True once Compact committed.
  Result<bool> IsCompacted();

  // Copies every commit in the WAL into the database file, syncs it and
  // empties the WAL (writer only; FailedPrecondition on a read-only handle).
  // Once it returns OK the chunks committed so far are in the main file:
  // damage to the -wal can no longer take them, so the engine lets the log
  // go of sealed records only after this (period_format.md §1).
  Status CheckpointWal();

  // The owning table's options as stored by StoreTableOptions (meta key
  // `table_options`, period_format.md §2), empty when the file has none.
  Result<std::string> TableOptionsText();
  // Stores `text` under meta `table_options` in one commit (writer only).
  Status StoreTableOptions(std::string_view text);

  const std::string& table() const { return table_; }
  Period period() const { return period_; }
  int64_t period_start_ns() const { return period_start_ns_; }
  // Exclusive end: the next period's start (saturated at INT64_MAX).
  int64_t period_end_ns() const { return period_end_ns_; }
  const std::string& path() const { return path_; }
  bool read_only() const { return read_only_; }

  // Checkpoints the WAL into the file (writer only) and closes. Idempotent;
  // every other call fails with FailedPrecondition afterwards.
  Status Close();

 private:
  PeriodFile(std::unique_ptr<SqliteDb> db, std::string path, bool read_only)
      : db_(std::move(db)), path_(std::move(path)), read_only_(read_only) {}

  Status CreateSchemaIfMissing(Env* env, const std::string& table, Period period, int64_t period_start_ns);
  Status LoadMeta();
  Status CheckOpen() const;
  Status CheckWritable() const;
  Status ValidateChunk(const ChunkRow& chunk) const;
  Status UpsertSeries(const PeriodSeries& series);
  Result<int64_t> SchemaIdFor(const std::vector<ChunkField>& fields);
  Result<std::vector<ChunkField>> FieldsForSchemaId(int64_t schema_id);
  Result<std::vector<ChunkField>> SeriesFields(int64_t series_id);
  Status InsertChunk(ChunkRow& chunk, const std::vector<ChunkField>& fields);
  // Upserts `series`, then inserts `chunks` (seq assigned), a chunk without
  // fields taking its series'; the caller owns the transaction.
  Status InsertSeriesAndChunks(const std::vector<PeriodSeries>& series, std::vector<ChunkRow>& chunks);
  // The lowest chunk start that can overlap `from` for the series (its
  // chunks start at most max_span_ns before their end); nothing for a series
  // the file does not know.
  Result<std::optional<int64_t>> LowestOverlappingStart(int64_t series_id, int64_t from);
  // Fills the first nine columns every chunk query selects (series_id,
  // start_ns, seq, end_ns, count, min_lsn, max_lsn, max_version, min_ttl)
  // from the current row; Corruption on an impossible count.
  Status ReadChunkFacts(const Statement& row, ChunkRow* chunk) const;
  Result<std::vector<ChunkRow>> ReadChunkRows(Statement* statement, bool with_data,
                                              bool with_data_bytes = false);
  Result<std::vector<ChunkRow>> ReadAllChunks(int64_t series_id);
  // Writes the body of Compact; the caller owns the transaction.
  Status CompactInTransaction(const MergeFunction& merge);
  void ForgetCachedSchemas();

  std::unique_ptr<SqliteDb> db_;
  std::string path_;
  bool read_only_;
  std::string table_;
  Period period_ = Period::kDay;
  int64_t period_start_ns_ = 0;
  int64_t period_end_ns_ = 0;
  // Field lists by schema_id and back; a cache of the schemas table.
  std::map<int64_t, std::vector<ChunkField>> fields_by_schema_id_;
  std::map<std::string, int64_t> schema_id_by_text_;
};

}  // namespace cairn
