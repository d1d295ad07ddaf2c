// What a failed write of the data directory means for a writer and for the
// engine's health (DESIGN §6, "disk full"): the filesystem is full, it
// refuses writes (read-only after errors, permissions), or the device failed
// an I/O. Each condition is raised on the health board under a stable key,
// with the data directory and a remedy, and cleared once a write succeeds.
//
// Thread-safety: plain functions; the health board is thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "cairn/platform/env.h"
#include "cairn/platform/status.h"

#include "engine/health/health_board.h"

namespace cairn {

inline constexpr std::string_view kDiskFullProblem = "disk.full";
inline constexpr std::string_view kDiskReadOnlyProblem = "disk.read_only";
inline constexpr std::string_view kLogIoErrorProblem = "log.io_error";

enum class WriteFailureKind : uint8_t {
  kDiskFull,     // ResourceExhausted from the OS or SQLite (ENOSPC, EDQUOT, SQLITE_FULL)
  kNotWritable,  // PermissionDenied (EROFS, EACCES, SQLITE_READONLY)
  kIoError,      // anything else the device or the OS reported
};

WriteFailureKind ClassifyWriteFailure(const Status& failure);

// Raises the health problem for `failure` (met while writing `what`, e.g.
// "the write-ahead log") in `data_dir`, and returns the status to give the
// writer: ResourceExhausted for a full or read-only filesystem (HTTP 507),
// Unavailable for an I/O error (503), each saying that nothing of the write
// was stored and when writes resume.
Status ReportWriteFailure(Env* env, const std::string& data_dir, std::string_view what, const Status& failure,
                          HealthBoard& health);

// Clears the problems ReportWriteFailure raises: a write went through.
void ClearWriteFailures(HealthBoard& health);

}  // namespace cairn
