// I/O-error sweep of the engine, SQLite's way: a representative workload
// (writes, late writes into sealed time, seals, checkpoints and log segment
// removal, compaction, retention, a close and reopen) runs once to count
// the calls of each kind, then once per point N with the N-th open, write,
// truncate, sync, rename or remove failing, once (a transient error) or
// from N on (a disk that stays full, broken or read-only), with the errors
// a Linux file system gives for that call (ENOSPC, EIO, EROFS; a write that
// runs out of space leaves half its bytes).
//
// The workload handles every error as an application would: a failed Write
// leaves its records uncertain, everything else goes on. Then the fault is
// cleared, and:
//   - once mode: writes must work again without a restart;
//   - the engine is closed and reopened: it must open (a refusal under
//     durability full is a defect), and every acknowledged reading must be
//     there exactly once with its value and version; a record of a failed
//     Write may be there or not, in a state the attempts explain;
//   - the power is cut (dropping, tearing or reordering what is unsynced,
//     by N) and the same holds again: what the engine took as durable after
//     an fsync error must really be (FaultInjectionEnv loses the data before
//     a failed sync, as Linux does).
//
// By default a few points per kind and mode spread over the range (stride);
// CAIRN_IO_SWEEP=full visits every N, CAIRN_IO_SWEEP_POINTS sets the points
// per kind and mode. Each test prints points tried, faults fired and
// failures by kind.
//
// The workload and the checks after it are SweepRun, in crash_io_sweep_run.h;
// this file is the sweep over it.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "crash_io_sweep_run.h"

namespace cairn::crash::io_sweep {
namespace {

// ---- the sweep ---------------------------------------------------------------------

// The calls of each kind the fault-free workload makes (run once per
// binary: every test sweeps the same workload).
const std::map<FaultOp, int64_t>& BaselineCalls() {
  static const std::map<FaultOp, int64_t> calls = [] {
    SweepRun baseline(std::nullopt);
    return baseline.CountCalls();
  }();
  return calls;
}

// The points of one kind: every call with CAIRN_IO_SWEEP=full, otherwise
// CAIRN_IO_SWEEP_POINTS (default 24) spread evenly from the first call to
// the last.
std::vector<int64_t> PointsToTry(int64_t calls) {
  const char* sweep = std::getenv("CAIRN_IO_SWEEP");
  const bool full = sweep != nullptr && std::string(sweep) == "full";
  const int64_t wanted = full ? calls : static_cast<int64_t>(EnvironmentCount("CAIRN_IO_SWEEP_POINTS", 24));
  std::vector<int64_t> points;
  if (calls <= 0) return points;
  if (wanted >= calls) {
    for (int64_t n = 1; n <= calls; ++n) points.push_back(n);
    return points;
  }
  for (int64_t i = 0; i < wanted; ++i) points.push_back(1 + i * (calls - 1) / std::max<int64_t>(1, wanted - 1));
  points.erase(std::unique(points.begin(), points.end()), points.end());
  return points;
}

struct SweepParam {
  FaultOp op;
  FaultMode mode;
};

class CrashIoSweepTest : public ::testing::TestWithParam<SweepParam> {};

TEST_P(CrashIoSweepTest, AcknowledgedReadingsSurviveEveryFailurePoint) {
  const SweepParam param = GetParam();
  const std::map<FaultOp, int64_t>& baseline = BaselineCalls();
  ASSERT_FALSE(HasFailure()) << "the workload fails without faults";
  const int64_t calls = baseline.at(param.op);
  if (calls == 0) GTEST_SKIP() << "the workload makes no " << FaultOpName(param.op) << " call";

  SweepFindings findings;
  for (int64_t n : PointsToTry(calls)) {
    SweepRun run(SweepPoint{param.op, param.mode, n});
    ++findings.points;
    if (run.RunPoint(&findings)) {
      ++findings.fired;
    } else {
      ADD_FAILURE() << FaultOpName(param.op) << " call " << n << " of " << calls << " never happened";
    }
  }
  std::printf("[ sweep    ] %s %s: %lld calls; %s\n", std::string(FaultOpName(param.op)).c_str(),
              std::string(FaultModeName(param.mode)).c_str(), static_cast<long long>(calls),
              findings.Summary().c_str());
  for (const auto& [kind, detail] : findings.first) std::printf("[ sweep    ]   first %s: %s\n", kind.c_str(), detail.c_str());
  std::string deferred;
  for (const auto& [kind, count] : findings.failures) {
    if (count == 0 || DeferredKinds().count(kind) == 0) continue;
    deferred += (deferred.empty() ? "" : "; ") + kind + " at " + std::to_string(count) + " points (" +
                DeferredKinds().at(kind) + ")";
  }
  if (!HasFailure() && !deferred.empty()) GTEST_SKIP() << "known defects: " << deferred;
}

std::vector<SweepParam> AllParams() {
  std::vector<SweepParam> params;
  for (FaultOp op : {FaultOp::kWrite, FaultOp::kSync, FaultOp::kOpen, FaultOp::kTruncate, FaultOp::kRename,
                     FaultOp::kRemove}) {
    for (FaultMode mode : {FaultMode::kOnce, FaultMode::kForever}) params.push_back(SweepParam{op, mode});
  }
  return params;
}

INSTANTIATE_TEST_SUITE_P(Faults, CrashIoSweepTest, ::testing::ValuesIn(AllParams()),
                         [](const ::testing::TestParamInfo<SweepParam>& info) {
                           return std::string(FaultOpName(info.param.op)) + "_" +
                                  std::string(FaultModeName(info.param.mode));
                         });

}  // namespace
}  // namespace cairn::crash::io_sweep
