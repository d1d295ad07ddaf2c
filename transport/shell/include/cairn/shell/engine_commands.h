// The storage engine's shell commands (DESIGN §5, §7): each parses its
// words, makes one Engine call and returns a CommandResult, so every one of
// them renders as aligned text or, with --json, as JSON.
//
//   tables                                     the tables and their options
//   create-table NAME [--period P] [--retention D] [--ttl D] [--max-series N]
//   alter-table NAME [--retention D] [--ttl D] [--max-series N]
//   drop-table NAME                            the table and all its data
//   devices TABLE [--after D] [--limit N]      devices and the measures they report, by id
//   measures TABLE                             measures: field types, dimensions, devices
//   latest TABLE DEVICE [MEASURE]              the newest record per measure
//   latest-batch TABLE DEVICE... [--measure M] the same for up to kMaxBatchDevices devices
//   range TABLE DEVICE [--measure M | --prefix P] [--from T] [--to T] [--desc]
//                      [--limit N] [--page TOKEN] [--all-columns]
//   agg TABLE DEVICE MEASURE FIELD --step D [--fn F,...] [--from T] [--to T]
//   put [--precision P] TABLE LINE             one line-protocol point (line_protocol.h)
//   stats                                      engine counters
//   health                                     ok / degraded / failing / unavailable, the open problems,
//                                              free space
//
// Over an EngineHolder that is still empty (cairnd could not open its data
// directory, engine_holder.h) every command but `health` answers the error
// "storage unavailable: PROBLEM; REMEDY" (StatusCode::kUnavailable), and
// `health` says status `unavailable`, names the outage and its remedy as
// problem.storage, and the free space where the file system answers.
//
// Times (T) are RFC 3339 (`2026-11-21T09:41:07Z`, `2026-11-21T10:41:07.25+01:00`,
// `2026-11-21` for midnight UTC), integer nanoseconds since the epoch, `now`,
// or relative to now (`-1h`, `-30m`, `+10s`). Durations (D) are one or more
// number-unit pairs: `30d`, `12h`, `90m`, `3600s`, `1h30m`; units ns, us, ms,
// s, m, h, d, w.
//
// `agg` buckets start at whole multiples of the step since the epoch, as
// InfluxDB's GROUP BY time does: the first bucket may begin before --from,
// but counts only records from --from on.
//
// A `range` that stops at its limit while more rows match ends with the note
// "more: use --page TOKEN" (in JSON: "next_page": "TOKEN"); repeating the
// same query with --page TOKEN continues it.
//
// A `range` or `agg` that stepped over damaged stored data (Engine's
// RangeResult::skipped) ends with the note "incomplete: N damaged part(s)
// ... skipped: <file>: <chunk> (<reason>); see `health`" (in JSON:
// "incomplete": true and "skipped": "<file>: <chunk> (<reason>); ...").
//
// Thread-safety: the handlers call only the Engine and the Env, so they may
// run concurrently (the Engine is thread-safe).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cairn/core/engine.h"
#include "cairn/platform/env.h"
#include "cairn/platform/status.h"
#include "cairn/shell/command_registry.h"
#include "cairn/shell/engine_holder.h"

namespace cairn {

// The most devices one `latest-batch` asks for.
inline constexpr size_t kMaxBatchDevices = 1000;

struct EngineCommandOptions {
  // The engine's data directory: `health` reports its filesystem's free
  // space. Must not be empty.
  std::string data_dir;
  // The line-protocol tag that names the device in `put`.
  std::string device_tag = "device";
  // Rows of a `range` without --limit, and the largest --limit accepted.
  // Keep max_limit within the shell's row cap (SerialShellOptions::render),
  // or rows cut by the renderer would be skipped by the page token.
  size_t default_limit = 100;
  size_t max_limit = 1000;
};

// The `status` of `health` while the storage is unavailable.
inline constexpr std::string_view kStorageUnavailableStatus = "unavailable";

// Registers the commands above in `registry`. `engine` and `env` are not
// owned and must outlive every use of the registry. InvalidArgument for an
// empty data_dir or inconsistent limits; AlreadyExists if a name is taken.
Status RegisterEngineCommands(CommandRegistry* registry, Engine* engine, Env* env,
                              const EngineCommandOptions& options);

// The same over a holder whose engine may come later (engine_holder.h).
// `storage` is not owned and must outlive every use of the registry.
Status RegisterEngineCommands(CommandRegistry* registry, const EngineHolder* storage, Env* env,
                              const EngineCommandOptions& options);

}  // namespace cairn
