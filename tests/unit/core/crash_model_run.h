// Model-based crash test of the engine.
//
// A seeded random sequence of writes, queries, seals, maintenance rounds,
// clock advances (crossing hourly period boundaries), injected I/O failures
// and simulated power cuts runs against the engine and, step by step, against
// ReferenceModel. After every power cut the engine is dropped without Close,
// reopened on what the disk kept, and compared with the model in full: with
// durability kFull every acknowledged record must be there exactly once with
// its winning version, and nothing else may appear except the records of a
// Write that returned an error (those may or may not have reached the disk;
// the engine's answer settles them). The engine must open after every cut.
//
// Each configuration cuts power its own way (FaultInjectionEnv's models):
// dropping what is unsynced, tearing the write in flight inside a sector,
// persisting a random subset of the unsynced sectors, and keeping a random
// subset of the directory changes not yet synced; "mixed" draws the way per
// cut. Under durability kInterval and kOff (engine.h) the records
// acknowledged since the last point that made everything durable (SealAll,
// a clean Close) are at risk: each may be found in any state it had since
// that point, and the engine may refuse to open with a Corruption that names
// the log segment and the repair command (log_format.md: unsynced pages
// persisted out of order); the run counts those refusals, repairs and goes
// on. Under kFull a refusal fails the run.
//
// Default sizes keep one run within a few minutes under sanitizers and under
// qemu-user; CAIRN_CRASH_ITERATIONS (steps per seed) and CAIRN_CRASH_SEEDS
// (seeds per configuration) make longer local runs, and CAIRN_CRASH_SEED
// runs that one seed alone. A failure prints the configuration, the seed,
// the step, the latest actions and what the last power cut did; each cut's
// own seed is in the actions. A run is deterministic from its seed except
// under kInterval, whose sync thread runs on the real clock.
//
// Under kInterval the bound on the risk window (at most sync_interval_ms of
// writes) is a timing property and is not asserted: the sync thread waits on
// the real clock, and tests here assert no timings. What is asserted is the
// weaker promise every mode shares: nothing made durable by a seal or a
// clean close is lost, and what is lost goes back to a state it had.
//
// ModelRun drives one run step by step and keeps the model, the uncertain
// records and the trace in step with it (crash_model_run.cc); its query
// checks live in crash_model_checks.h. The tests that run it are in
// crash_model_test.cc.
#pragma once

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/core/engine.h"
#include "cairn/core/record.h"
#include "cairn/core/table.h"
#include "cairn/platform/env.h"

#include "crash_describe.h"
#include "crash_model_checks.h"
#include "crash_no_sync_env.h"
#include "crash_workload.h"
#include "fault_injection_env.h"
#include "manual_clock_env.h"
#include "reference_model.h"
#include "test_dirs.h"

namespace cairn::crash {

constexpr char kTable[] = "readings";
// New timestamps fall within this window before now.
constexpr int64_t kWindowNanos = int64_t{4} * 3600 * kNanosPerSecond;
// Far more than the clock ever advances in a run plus the window, so the
// engine never has a reason to refuse or drop a record for its age.
constexpr int64_t kRetentionSeconds = int64_t{7} * 86400;
constexpr int64_t kMaxClockAdvanceNanos = int64_t{3} * 86400 * kNanosPerSecond;

// ---- configurations ----------------------------------------------------------------

// How a run acknowledges writes and cuts power.
struct RunConfig {
  const char* name = "";
  Durability durability = Durability::kFull;
  // The fate of unsynced writes at every cut; nullopt: drawn per cut.
  std::optional<PowerCutOptions::Data> cut_data = std::nullopt;
  // Whether cuts may keep some unsynced directory changes (drawn per cut).
  bool keep_some_entry_changes = false;
  bool inject_faults = false;
  // Whether power may go in the middle of an operation (between a write and
  // its sync), not only between operations: what a torn or reordered cut
  // needs to find anything unsynced under kFull.
  bool lose_power_mid_operation = false;
  // The test's seed parameter, which CAIRN_CRASH_SEED takes to replay a
  // run (its seed proper adds an offset per test); 0: not replayable so.
  uint64_t replay_seed = 0;
  // The table's policy for rewrites of the same version with other values
  // (the generator makes such rewrites): refused, or merged and stored.
  ConflictPolicy on_conflict = ConflictPolicy::kReject;
};

// What a run's power cuts did and what the engine made of them.
struct RunStats {
  uint64_t cuts[3] = {0, 0, 0};     // by PowerCutOptions::Data
  uint64_t mid_operation_cuts = 0;  // of those, cuts in the middle of an operation
  uint64_t torn_writes = 0, sectors_kept = 0, sectors_lost = 0;
  uint64_t entry_changes_kept = 0, entry_changes_undone = 0;
  uint64_t refusals = 0;      // opens refused with a message naming the file and the fix
  uint64_t acknowledged = 0;  // records acknowledged as stored
  uint64_t lost_at_risk = 0;  // of those, found in an earlier state after a cut (kInterval, kOff)
  uint64_t conflicts = 0;     // rewrites of the same version with other values refused (reject)
  uint64_t merged = 0;        // and merged (overwrite), acknowledged

  std::string Summary() const {
    return "cuts drop/torn/reordered " + std::to_string(cuts[0]) + "/" + std::to_string(cuts[1]) + "/" +
           std::to_string(cuts[2]) + " (" + std::to_string(mid_operation_cuts) +
           " in mid-operation), torn writes " + std::to_string(torn_writes) + ", sectors kept " +
           std::to_string(sectors_kept) + " lost " + std::to_string(sectors_lost) + ", entry changes kept " +
           std::to_string(entry_changes_kept) + " undone " + std::to_string(entry_changes_undone) +
           ", refusals " + std::to_string(refusals) + ", acknowledged " + std::to_string(acknowledged) +
           ", lost in the risk window " + std::to_string(lost_at_risk) + ", conflicts " +
           std::to_string(conflicts) + ", merged " + std::to_string(merged);
  }
};

// ---- the run -------------------------------------------------------------------

class ModelRun : public ModelChecks {
 public:
  ModelRun(uint64_t seed, const RunConfig& config)
      : ModelChecks(kTable, kWindowNanos, seed * 0x9E3779B97F4A7C15ull + 1),
        seed_(seed),
        config_(config),
        inject_faults_(config.inject_faults),
        dir_("cairn-crash-model"),
        no_sync_(Env::Default()),
        clock_(&no_sync_, ManualClockEnv::kDefaultStartUnixNanos +
                              static_cast<int64_t>(seed % 3600) * 61 * kNanosPerSecond),
        env_(&clock_),
        generator_(seed, kWindowNanos) {
    options_.durability = config.durability;
    // Long enough that kInterval's sync thread runs rarely in a run: the
    // records it has not synced are the ones at risk.
    options_.sync_interval_ms = 50;
    options_.maintenance_interval_ms = 0;  // the test decides when maintenance runs
    const uint64_t seal_choices[] = {4, 32, 1024};
    options_.seal_records = static_cast<size_t>(seal_choices[rng_.Index(3)]);
    options_.seal_age_ms = rng_.Percent(50) ? 60 * 1000 : 10 * 60 * 1000;
    const uint64_t segment_choices[] = {2048, 16 * 1024, 1024 * 1024};
    options_.log_segment_bytes = segment_choices[rng_.Index(3)];
    options_.head_memory_budget_bytes = rng_.Percent(30) ? 64 * 1024 : 64ull << 20;
    options_.writer_cache_kib = 256;
    options_.reader_cache_kib = 64;
    options_.max_open_period_files = rng_.Percent(50) ? 2 : 8;
    model_.set_on_conflict(config.on_conflict);
  }

  void Run(uint64_t steps);

  const RunStats& stats() const { return stats_; }

  // Runs a fixed script in which the `n`-th call of `op` (counted from
  // after the table exists) fails, handling the failure like any other.
  // Returns false when the script made fewer than `n` such calls, which ends
  // a sweep over n.
  bool RunScript(FaultOp op, int64_t n);

  // Calls of `op` that the fault-free script makes.
  int64_t CountScriptCalls(FaultOp op);

 private:
  // Opens a fresh engine and creates the table.
  bool Start();

  // A last power cut and full check, then a clean close and reopen, which
  // must keep everything too.
  void Finish();

  // Writes into the current and an older period, seals, crosses an hour
  // boundary, maintains and seals again: every kind of file the engine
  // writes is written at least once.
  void RunScriptSteps();

  // Seals everything; success makes every acknowledged record durable,
  // whatever the durability mode.
  void SealAll();

  // ---- ModelChecks ------------------------------------------------------------

  void Note(std::string action) override;

  void Fail(const std::string& message) override;

  bool QueryStatusOk(const std::string& what, const Status& status) override {
    return Succeeded(what, status);
  }

  std::string Explain(const Identity& identity) const override;

  int64_t NowNanos() override { return clock_.NowUnixNanos(); }

  // ---- the run's own ------------------------------------------------------------

  int64_t TotalInjected() const;

  // True when an injected fault fired since the last call.
  bool FaultFired();

  bool Open();

  // An engine that refuses to open must name the file and the way out.
  // Under kFull that is a failure of the run; under kInterval and kOff the
  // log may hold a hole that replay must not cut silently (log_format.md):
  // the refusal is counted and the repair run. Returns true when the open
  // may be retried.
  bool RepairAfterRefusal(const Status& refusal);

  // Judges the status of a maintenance call. An error is a bug unless an
  // injected fault fired; a fired fault leads to a power cut either way.
  bool Succeeded(const std::string& what, const Status& status);

  void Step();

  void ArmFault();

  // Power goes at the n-th next write or sync, in whatever operation makes
  // it; that operation's error leads to the cut like an injected fault's.
  void ArmPowerLoss();

  void AdvanceClock();

  std::set<Identity> UncertainIdentities() const;

  // Writes a random batch and checks every record's outcome against the
  // model. After a fault (`after_fault`) errors are expected, not judged: an
  // engine may refuse all writes after an I/O error.
  void WriteBatch(bool after_fault);

  // After an injected fault the process may go on for a moment (a few more
  // writes, whose acknowledgements must hold), then the power goes.
  void RecoverFromFault();

  // Cuts power the way the configuration says (drawing what it leaves
  // open), notes the cut's seed and what it did.
  bool CutPower();

  void PowerCutAndRecover();

  // Learns from the reopened engine what became of the records whose state
  // a power cut may have changed: those of a Write that failed (the
  // acknowledged state or one of the attempted ones, as some prefix of the
  // failed writes left it) and, under kInterval and kOff, those acknowledged
  // since everything was last made durable (any state they had since).
  void ResolveUncertain();

  const uint64_t seed_;
  const RunConfig config_;
  const bool inject_faults_;
  ScopedTempDir dir_;
  // Durability is decided by env_'s simulated power cuts, so the real disk
  // is never synced: env_ -> clock_ -> no_sync_ -> the POSIX Env.
  NoSyncEnv no_sync_;
  ManualClockEnv clock_;
  FaultInjectionEnv env_;
  WorkloadGenerator generator_;
  EngineOptions options_;
  // Identities written by a Write that returned an error, with what each
  // such write would have stored, in order.
  std::map<Identity, std::vector<StoredRecord>> uncertain_;
  // Under kInterval and kOff: identities acknowledged since everything was
  // last made durable, with the states each had before, oldest first.
  std::map<Identity, std::vector<std::optional<StoredRecord>>> at_risk_;
  RunStats stats_;
  bool power_loss_armed_ = false;
  // What the last power cut did, one line per file and entry change.
  std::vector<std::string> last_cut_;
  int64_t injected_seen_ = 0;
  int64_t advanced_ = 0;
  uint64_t step_ = 0;
  std::deque<std::string> trace_;
  std::map<Identity, std::vector<std::string>> history_;
};

// Steps of one run: CAIRN_CRASH_ITERATIONS, 80 by default.
uint64_t StepsPerSeed();

// Seeds 1..N (CAIRN_CRASH_SEEDS raises N for longer local runs), or the one
// seed CAIRN_CRASH_SEED names, to replay a failure.
std::vector<uint64_t> Seeds(uint64_t default_count);

// Runs seed `param` (from Seeds) of a test whose runs use seeds param +
// offset, and prints what its power cuts did.
// Even seeds run on a table whose on_conflict is overwrite, odd ones reject,
// so every test with two seeds or more covers both.
void RunAndReport(uint64_t param, uint64_t offset, RunConfig config);

}  // namespace cairn::crash
