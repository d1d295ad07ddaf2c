// Table options: the per-namespace settings of DESIGN §3.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "cairn/core/record.h"
#include "cairn/platform/status.h"

namespace cairn {

// How a table's data is split into files. Each period is one SQLite file
// named after its start in UTC (hour: 2026-11-21T09, day: 2026-11-21,
// week: 2026-W47 (ISO week, Monday start), month: 2026-11).
enum class Period : uint8_t { kHour = 1, kDay = 2, kWeek = 3, kMonth = 4 };

std::string_view PeriodName(Period period);
Result<Period> ParsePeriod(std::string_view name);

// What a write does when its identity is stored with the same version but
// other values (DESIGN §3). A retry with the same values is a duplicate under
// either policy. The numeric values are stored in the catalog.
enum class ConflictPolicy : uint8_t {
  // Refused and reported to the writer (WriteOutcome::kConflict), naming the
  // first field that differs: Timestream's rule.
  kReject = 1,
  // Stored: the record's fields become the union of the stored and the new
  // ones, new values winning; of two writes with equal versions the later
  // arrival (higher LSN) wins, as in InfluxDB.
  kOverwrite = 2,
};

// "reject" / "overwrite".
std::string_view ConflictPolicyName(ConflictPolicy policy);
Result<ConflictPolicy> ParseConflictPolicy(std::string_view name);

// Start of the period holding `unix_nanos`, and of the next one. Both
// saturate: INT64_MIN for the first period int64 nanoseconds can express
// (1677), INT64_MAX as the end of the last one (2262).
int64_t PeriodStart(Period period, int64_t unix_nanos);
int64_t NextPeriodStart(Period period, int64_t unix_nanos);
// File stem of the period starting at `start`, e.g. "2026-11-21".
std::string PeriodFileStem(Period period, int64_t start);
// The start of the period whose file stem is `stem` (the inverse of
// PeriodFileStem); InvalidArgument if `stem` is not such a name.
Result<int64_t> ParsePeriodFileStem(Period period, std::string_view stem);

struct TableOptions {
  Period period = Period::kDay;
  int64_t retention_seconds = 30 * 86400;  // whole periods older than this are dropped
  int64_t default_ttl_seconds = 0;         // 0: records without ttl never expire
  bool sync = true;                        // forwarded to the cloud (sync issue)
  // Write sharding (DESIGN §4): reserved, only 1 / "random" accepted for now.
  int shards = 1;
  std::string shard_by = "random";
  // Sparse indexes: index name -> attribute. Reserved for a later version.
  std::map<std::string, std::string> sparse_indexes;
  // The most series (device x measure x dimensions) the table may hold; a record that
  // would start one more is refused (WriteOutcome::kInvalid, with a reason
  // naming the limit, the table and how to raise it), while records of
  // existing series go on being stored. Every series costs memory for as
  // long as the table holds it (EngineStats::series_bytes), so this bounds
  // what a client inventing device ids can make the engine keep.
  // 0: the engine's default (EngineOptions::default_max_series).
  uint64_t max_series = 0;
  // Tag names that are metadata, not identity (DESIGN §3): a record's tags
  // named here are stored once per series (the latest write that carries
  // any replaces them), returned with its rows and usable as filters, but
  // do not split series: `firmware=1.2` then `firmware=1.3` on one device
  // and measure stay one series. Every other tag but the device is a
  // dimension and part of the series' identity. Changing the set later
  // applies to the writes that follow; existing series keep their identity.
  std::set<std::string> attributes;
  // Same identity, same version, other values: refused or merged.
  ConflictPolicy on_conflict = ConflictPolicy::kReject;
};

struct TableInfo {
  std::string name;
  TableOptions options;
  int64_t created_unix_nanos = 0;
};

// Names that belong to the files beside the tables' directories in a data
// directory (the log, the lock, the daemon's tokens, and two kept for later).
inline constexpr std::string_view kReservedTableNames[] = {"log", "LOCK", "tokens", "sync", "tmp"};

// Table names: 1-64 bytes of [A-Za-z0-9_-], not starting with '-' (they name
// directories), and none of kReservedTableNames in any case.
Status ValidateTableName(std::string_view name);

// Checks ranges: retention > 0, default ttl >= 0, max_series at most
// kMaxSeriesLimit, attributes valid tag names (at most
// kMaxDimensionsPerSeries of them), on_conflict one of ConflictPolicy, shards == 1 and shard_by == "random" (sharding arrives
// with its own capability).
Status ValidateTableOptions(const TableOptions& options);

// The largest max_series a table may be given: far beyond what a gateway's
// memory holds, it only catches nonsense (a negative number read unsigned).
inline constexpr uint64_t kMaxSeriesLimit = 100'000'000;

}  // namespace cairn
