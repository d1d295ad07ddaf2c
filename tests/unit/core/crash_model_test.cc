// The crash model's tests (crash_model_run.h describes the model): power cuts
// of every kind under each durability mode, with and without injected I/O
// failures, and a sweep that fails every call of one kind in turn.
#include <cstdint>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "crash_model_run.h"

namespace cairn::crash {
namespace {

class CrashModelTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(CrashModelTest, PowerCutsKeepEveryAcknowledgedRecordExactlyOnce) {
  RunAndReport(GetParam(), 0,
               RunConfig{.name = "full, drop", .cut_data = PowerCutOptions::Data::kDropUnsynced});
}

TEST_P(CrashModelTest, InjectedIoFailuresNeverLoseAcknowledgedRecords) {
  RunConfig config{.name = "full, drop, faults", .cut_data = PowerCutOptions::Data::kDropUnsynced};
  config.inject_faults = true;
  RunAndReport(GetParam(), 1000, config);
}

INSTANTIATE_TEST_SUITE_P(Seeds, CrashModelTest, ::testing::ValuesIn(Seeds(4)));

// The same runs with the other ways a power cut treats unsynced data, and
// with the durability modes that acknowledge before the sync.
class CrashCutModelTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(CrashCutModelTest, TornWritesKeepEveryAcknowledgedRecordExactlyOnce) {
  RunConfig config{.name = "full, torn"};
  config.lose_power_mid_operation = true;
  config.cut_data = PowerCutOptions::Data::kTornWrite;
  RunAndReport(GetParam(), 2000, config);
}

TEST_P(CrashCutModelTest, ReorderedWritesAndEntryChangesKeepEveryAcknowledgedRecordExactlyOnce) {
  RunConfig config{.name = "full, reordered, some entry changes"};
  config.lose_power_mid_operation = true;
  config.cut_data = PowerCutOptions::Data::kReorderedWrites;
  config.keep_some_entry_changes = true;
  RunAndReport(GetParam(), 3000, config);
}

TEST_P(CrashCutModelTest, MixedCutsAndInjectedIoFailuresNeverLoseAcknowledgedRecords) {
  RunConfig config{.name = "full, mixed, faults"};
  config.lose_power_mid_operation = true;
  config.keep_some_entry_changes = true;
  config.inject_faults = true;
  RunAndReport(GetParam(), 4000, config);
}

TEST_P(CrashCutModelTest, IntervalDurabilityLosesOnlyRecordsInTheRiskWindow) {
  RunConfig config{.name = "interval, mixed"};
  config.lose_power_mid_operation = true;
  config.durability = Durability::kInterval;
  config.keep_some_entry_changes = true;
  RunAndReport(GetParam(), 5000, config);
}

TEST_P(CrashCutModelTest, OffDurabilityLosesOnlyRecordsInTheRiskWindow) {
  RunConfig config{.name = "off, mixed, faults"};
  config.lose_power_mid_operation = true;
  config.durability = Durability::kOff;
  config.keep_some_entry_changes = true;
  config.inject_faults = true;
  RunAndReport(GetParam(), 6000, config);
}

INSTANTIATE_TEST_SUITE_P(Seeds, CrashCutModelTest, ::testing::ValuesIn(Seeds(2)));

// SQLite's way: fail the 1st, 2nd, 3rd ... call of one kind in a fixed
// script until the script makes no more such calls, so every failure point is
// visited (with a stride by default; CAIRN_CRASH_SWEEP_POINTS sets how many
// points per kind, and a large value visits all of them).
class CrashSweepTest : public ::testing::TestWithParam<FaultOp> {};

TEST_P(CrashSweepTest, EveryFailurePointRecovers) {
  const FaultOp op = GetParam();
  constexpr uint64_t kSeed = 77;
  int64_t calls = 0;
  {
    ModelRun baseline(kSeed,
                      RunConfig{.name = "sweep baseline", .cut_data = PowerCutOptions::Data::kDropUnsynced});
    calls = baseline.CountScriptCalls(op);
  }
  ASSERT_FALSE(HasFailure());
  if (op != FaultOp::kRename) {
    ASSERT_GT(calls, 0) << "the script made no " << FaultOpName(op) << " call";
  }
  const int64_t points = static_cast<int64_t>(EnvironmentCount("CAIRN_CRASH_SWEEP_POINTS", 8));
  const int64_t stride = std::max<int64_t>(1, (calls + points - 1) / points);
  for (int64_t n = 1; n <= calls + 1 && !HasFailure(); n += stride) {
    SCOPED_TRACE("failing " + std::string(FaultOpName(op)) + " call " + std::to_string(n) + " of " +
                 std::to_string(calls));
    RunConfig config{.name = "sweep", .cut_data = PowerCutOptions::Data::kDropUnsynced};
    config.inject_faults = true;
    ModelRun run(kSeed, config);
    const bool fired = run.RunScript(op, n);
    if (!fired) {
      // Only past the last call may the fault go unused.
      EXPECT_GT(n, calls) << "the fault at call " << n << " never fired";
      break;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, CrashSweepTest,
                         ::testing::Values(FaultOp::kWrite, FaultOp::kSync, FaultOp::kRename),
                         [](const ::testing::TestParamInfo<FaultOp>& info) {
                           return std::string(FaultOpName(info.param));
                         });

}  // namespace
}  // namespace cairn::crash
