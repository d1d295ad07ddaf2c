#include "engine/health/write_failure.h"

namespace cairn {

WriteFailureKind ClassifyWriteFailure(const Status& failure) {
  if (failure.Is(StatusCode::kResourceExhausted)) return WriteFailureKind::kDiskFull;
  if (failure.Is(StatusCode::kPermissionDenied)) return WriteFailureKind::kNotWritable;
  return WriteFailureKind::kIoError;
}

Status ReportWriteFailure(Env* env, const std::string& data_dir, std::string_view what, const Status& failure,
                          HealthBoard& health) {
  HealthProblem problem;
  problem.level = HealthLevel::kDegraded;
  const std::string fs = "the filesystem holding " + data_dir;
  switch (ClassifyWriteFailure(failure)) {
    case WriteFailureKind::kDiskFull: {
      Result<uint64_t> free_bytes = env->FreeSpace(data_dir);
      const std::string free_text =
          free_bytes.ok() ? std::to_string(*free_bytes) + " bytes free" : "free space unknown";
      problem.key = kDiskFullProblem;
      problem.component = "disk";
      problem.message = "no space left on " + fs + " (" + free_text + "): writes are refused";
      problem.remedy = "free space on " + fs + "; writes resume by themselves";
      health.Raise(problem, env->NowUnixNanos());
      return Status::ResourceExhausted(
          "no space left on " + fs + ": " + free_text +
          "; nothing of this write was stored; writes resume once space is freed (" + std::string(what) +
          ": " + failure.message() + ")");
    }
    case WriteFailureKind::kNotWritable:
      problem.key = kDiskReadOnlyProblem;
      problem.component = "disk";
      problem.message = fs + " refuses writes (" + failure.message() + "): writes are refused";
      problem.remedy =
          "make it writable again (a filesystem remounts read-only after errors: check the kernel log); "
          "writes resume by themselves";
      health.Raise(problem, env->NowUnixNanos());
      return Status::ResourceExhausted(fs +
                                       " refuses writes (read-only or not permitted); nothing of this write "
                                       "was stored; writes resume once it is writable again (" +
                                       std::string(what) + ": " + failure.message() + ")");
    case WriteFailureKind::kIoError:
      problem.key = kLogIoErrorProblem;
      problem.component = "log";
      problem.message = "writing " + std::string(what) + " in " + data_dir + " failed: " + failure.message();
      problem.remedy = "check the storage device (kernel log); writes resume once it accepts them";
      health.Raise(problem, env->NowUnixNanos());
      return Status::Unavailable("storage error while writing " + std::string(what) + " in " + data_dir +
                                 ": nothing of this write was stored; retry (" + failure.message() + ")");
  }
  return failure;
}

void ClearWriteFailures(HealthBoard& health) {
  health.Clear(kDiskFullProblem);
  health.Clear(kDiskReadOnlyProblem);
  health.Clear(kLogIoErrorProblem);
}

}  // namespace cairn
