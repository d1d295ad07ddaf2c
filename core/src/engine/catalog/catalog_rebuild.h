// Rebuilding a lost catalog (catalog.db) from what the data directory still
// holds: the self-describing period files (period_format.md) name their
// table, period, options and series; the log's records name the table,
// device and measure of every reading (write_batch_format.md).
//
// Thread-safety: pure functions over the files; the engine calls them while
// it opens, before any other thread runs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/core/table.h"
#include "cairn/platform/env.h"

#include "engine/catalog/catalog.h"

namespace cairn {

// A table's options as the text of a period file's meta `table_options`
// (period_format.md §2), and back. Decoding starts from `table`'s current
// options: keys the text lacks keep them, unknown keys are ignored (a newer
// cairn may add some). InvalidArgument when the result fails
// ValidateTableOptions, Corruption when the text is not a flat JSON object.
std::string EncodeTableOptions(const TableInfo& table);
Status DecodeTableOptions(std::string_view text, TableInfo* table);

// What a rebuild found.
struct CatalogRebuildPlan {
  // Every table with a period file, with the options stored in its newest
  // file that has them; tables whose files hold none get the defaults (and
  // the period of their files) and are named in default_option_tables.
  std::vector<TableInfo> tables;
  std::vector<std::string> default_option_tables;
  // Every series of every file, with the field list and dimensions of the
  // newest file holding it.
  std::vector<CatalogSeries> series;
  // Each file's highest LSN: its seal mark in the rebuilt catalog.
  std::vector<PeriodSealMark> marks;
  int64_t max_series_id = 0;  // highest series id in any file, 0 if none
  uint64_t max_lsn = 0;       // highest LSN in any file, 0 if none
  size_t files = 0;           // period files read
};

// True when `data_dir` holds period files or log segments: a catalog that
// is missing there was lost, not never made.
Result<bool> DataWithoutCatalog(Env* env, const std::string& data_dir);

// Reads every period file under `data_dir` (read-only, through the Env VFS
// `vfs_name`). A file that cannot be read, or files that disagree (one
// series id for two identities, one identity under two ids, a file naming
// another table or period), make the rebuild untrustworthy:
// FailedPrecondition naming the file and what to do.
Result<CatalogRebuildPlan> PlanCatalogRebuild(Env* env, const std::string& vfs_name,
                                              const std::string& data_dir);

}  // namespace cairn
