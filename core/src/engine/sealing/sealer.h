// Sealer: writes head records into their period files as chunk rows.
//
// The engine hands it copies of the heads it wants sealed (SealJob); the
// Sealer groups their records by period file, encodes them, writes each
// file's batch in one transaction, tells the Checkpointer about every file
// written, and checkpoints the files' WALs. It touches no head: the engine
// removes what the outcome says was sealed, under its own lock, so writers
// may go on meanwhile.
//
// Thread-safety: one Seal at a time (the engine's seal round); the period
// files and the Checkpointer it uses are safe to share with readers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/sealing/checkpointer.h"
#include "engine/sealing/period_files.h"
#include "engine/head/head.h"

namespace cairn {

// One series' head, copied for a seal.
struct SealJob {
  std::string table;
  Period period = Period::kDay;
  int64_t retention_seconds = 0;
  // The table's options as its files store them (EncodeTableOptions), so
  // that a catalog rebuilt from the files restores them.
  std::string table_options;
  PeriodSeries meta;
  // A copy of the series' head (ascending timestamps): its columns, not a
  // record object per reading, so that sealing many heads at once costs
  // little more memory than the heads themselves.
  SeriesHead head;
};

struct SealOutcome {
  // entries [begin, end) of jobs[job] that may leave the head: written to
  // their period file, or of a period already past retention.
  struct Range {
    size_t job;
    size_t begin, end;
  };
  std::vector<Range> sealed;
  // (job, period start) of each period file written, one per file.
  std::vector<std::pair<size_t, int64_t>> written_periods;
  uint64_t chunks_written = 0;
  // The first error writing a file or checkpointing a WAL; the files that
  // succeeded are in `sealed` all the same.
  Status status;
};

class Sealer {
 public:
  // `files` and `checkpointer` must outlive this object; chunks hold at
  // most `max_chunk_records` records (EncodeSeriesChunks).
  Sealer(PeriodFiles* files, Checkpointer* checkpointer, size_t max_chunk_records);

  // Seals `jobs`. Records of a period wholly older than `deletion_now` minus
  // the table's retention are not written (the file is, or will be, gone);
  // with no `deletion_now` (an untrusted clock, clock_trust.h) every record
  // is written. An error encoding the chunks returns before anything is
  // written; errors writing are in the outcome.
  Result<SealOutcome> Seal(const std::vector<SealJob>& jobs, std::optional<int64_t> deletion_now);

 private:
  struct PeriodBatch;
  // Writes one period file's batch: the table options when they changed,
  // then the series and chunks, in one transaction.
  Status WriteBatch(const SealJob& first_job, int64_t start, PeriodBatch& batch);

  PeriodFiles* const files_;
  Checkpointer* const checkpointer_;
  const size_t max_chunk_records_;
};

}  // namespace cairn
