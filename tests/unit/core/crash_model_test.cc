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
// The file is longer than most: one class drives a run step by step and
// keeps the model, the uncertain records and the trace in step with it; its
// query checks live in crash_model_checks.h.
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
namespace {

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
  uint64_t cuts[3] = {0, 0, 0};  // by PowerCutOptions::Data
  uint64_t mid_operation_cuts = 0;  // of those, cuts in the middle of an operation
  uint64_t torn_writes = 0, sectors_kept = 0, sectors_lost = 0;
  uint64_t entry_changes_kept = 0, entry_changes_undone = 0;
  uint64_t refusals = 0;          // opens refused with a message naming the file and the fix
  uint64_t acknowledged = 0;      // records acknowledged as stored
  uint64_t lost_at_risk = 0;      // of those, found in an earlier state after a cut (kInterval, kOff)
  uint64_t conflicts = 0;         // rewrites of the same version with other values refused (reject)
  uint64_t merged = 0;            // and merged (overwrite), acknowledged

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

  void Run(uint64_t steps) {
    if (!Start()) return;
    for (step_ = 0; step_ < steps && !Failed(); ++step_) Step();
    Finish();
  }

  const RunStats& stats() const { return stats_; }

  // Runs a fixed script in which the `n`-th call of `op` (counted from
  // after the table exists) fails, handling the failure like any other.
  // Returns false when the script made fewer than `n` such calls, which ends
  // a sweep over n.
  bool RunScript(FaultOp op, int64_t n) {
    if (!Start()) return false;
    env_.ResetCounters();
    injected_seen_ = 0;
    env_.FailNth(op, n, Status::IOError("injected " + std::string(FaultOpName(op)) + " failure"));
    Note("armed " + std::string(FaultOpName(op)) + " failure at call " + std::to_string(n));
    RunScriptSteps();
    const bool fired = env_.InjectedCount(op) > 0;
    Finish();
    return fired;
  }

  // Calls of `op` that the fault-free script makes.
  int64_t CountScriptCalls(FaultOp op) {
    if (!Start()) return 0;
    env_.ResetCounters();
    RunScriptSteps();
    const int64_t calls = env_.CallCount(op);
    Finish();
    return calls;
  }

 private:
  // Opens a fresh engine and creates the table.
  bool Start() {
    Note("options seal_records=" + std::to_string(options_.seal_records) +
         " seal_age_ms=" + std::to_string(options_.seal_age_ms) +
         " log_segment_bytes=" + std::to_string(options_.log_segment_bytes) +
         " head_memory_budget_bytes=" + std::to_string(options_.head_memory_budget_bytes) +
         " max_open_period_files=" + std::to_string(options_.max_open_period_files));
    if (!Open()) return false;
    TableOptions table;
    table.period = Period::kHour;
    table.retention_seconds = kRetentionSeconds;
    table.on_conflict = config_.on_conflict;
    table.attributes = {kAttributeTag};
    Note("on_conflict " + std::string(ConflictPolicyName(table.on_conflict)));
    return Succeeded("CreateTable", engine_->CreateTable(kTable, table));
  }

  // A last power cut and full check, then a clean close and reopen, which
  // must keep everything too.
  void Finish() {
    if (Failed()) return;
    Note("final power cut");
    PowerCutAndRecover();
    if (Failed()) return;
    CheckEverything();
    if (Failed()) return;
    Note("final close and reopen");
    const Status closed = engine_->Close();
    if (!closed.ok()) Fail("Close after the run: " + closed.ToString());
    // A clean close syncs the log: nothing is at risk any more.
    at_risk_.clear();
    engine_.reset();
    if (!Open()) return;
    CheckEverything();
    if (engine_) {
      const Status closed_again = engine_->Close();
      if (!closed_again.ok()) Fail("Close after the reopen: " + closed_again.ToString());
    }
  }

  // Writes into the current and an older period, seals, crosses an hour
  // boundary, maintains and seals again: every kind of file the engine
  // writes is written at least once.
  void RunScriptSteps() {
    const auto run = [&](auto&& action) {
      if (!Failed() && engine_) action();
      ++step_;
    };
    for (int i = 0; i < 3; ++i) run([&] { WriteBatch(/*after_fault=*/false); });
    run([&] { SealAll(); });
    run([&] { WriteBatch(/*after_fault=*/false); });
    run([&] {
      clock_.AdvanceNanos(int64_t{65} * 60 * kNanosPerSecond);
      Note("clock +3900 s");
    });
    for (int i = 0; i < 2; ++i) run([&] { WriteBatch(/*after_fault=*/false); });
    run([&] {
      Note("Maintain");
      Succeeded("Maintain", engine_->Maintain());
    });
    run([&] { WriteBatch(/*after_fault=*/false); });
    run([&] { SealAll(); });
    run([&] {
      clock_.AdvanceNanos(int64_t{20} * 60 * kNanosPerSecond);
      Note("clock +1200 s");
    });
    run([&] {
      Note("Maintain");
      Succeeded("Maintain", engine_->Maintain());
    });
    run([&] { WriteBatch(/*after_fault=*/false); });
  }

  // Seals everything; success makes every acknowledged record durable,
  // whatever the durability mode.
  void SealAll() {
    Note("SealAll");
    if (Succeeded("SealAll", engine_->SealAll())) at_risk_.clear();
  }

  // ---- ModelChecks ------------------------------------------------------------

  void Note(std::string action) override {
    trace_.push_back("step " + std::to_string(step_) + ": " + std::move(action));
    if (trace_.size() > 40) trace_.pop_front();
  }

  void Fail(const std::string& message) override {
    std::string context = std::string(config_.name) + " seed " + std::to_string(seed_);
    if (config_.replay_seed != 0) {
      context += " (replay: CAIRN_CRASH_SEED=" + std::to_string(config_.replay_seed) + " with this test's filter)";
    }
    context += ", step " + std::to_string(step_) + ": " + message + "\n  latest actions:";
    for (const std::string& line : trace_) context += "\n    " + line;
    if (!last_cut_.empty()) context += "\n  the last power cut:";
    for (const std::string& line : last_cut_) context += "\n    " + line;
    ADD_FAILURE() << context;
  }

  bool QueryStatusOk(const std::string& what, const Status& status) override { return Succeeded(what, status); }

  std::string Explain(const Identity& identity) const override {
    std::string text;
    auto it = history_.find(identity);
    if (it != history_.end()) {
      for (const std::string& event : it->second) text += "\n        " + event;
    }
    return text;
  }

  int64_t NowNanos() override { return clock_.NowUnixNanos(); }

  // ---- the run's own ------------------------------------------------------------

  int64_t TotalInjected() const {
    int64_t total = 0;
    for (int op = 0; op < kFaultOpCount; ++op) total += env_.InjectedCount(static_cast<FaultOp>(op));
    return total;
  }

  // True when an injected fault fired since the last call.
  bool FaultFired() {
    const int64_t injected = TotalInjected();
    const bool fired = injected != injected_seen_ || env_.PowerLost();
    injected_seen_ = injected;
    return fired;
  }

  bool Open() {
    RecoveryReport report;
    auto opened = Engine::Open(&env_, dir_.path(), options_, &report);
    FaultFired();
    if (!opened.ok() && !RepairAfterRefusal(opened.status())) return false;
    if (!opened.ok()) opened = Engine::Open(&env_, dir_.path(), options_, &report);
    if (!opened.ok()) {
      Fail("Engine::Open: " + opened.status().ToString());
      return false;
    }
    engine_ = std::move(opened).value();
    Note("opened: replayed " + std::to_string(report.records_replayed) + ", torn tail bytes " +
         std::to_string(report.torn_tail_bytes_truncated));
    return true;
  }

  // An engine that refuses to open must name the file and the way out.
  // Under kFull that is a failure of the run; under kInterval and kOff the
  // log may hold a hole that replay must not cut silently (log_format.md):
  // the refusal is counted and the repair run. Returns true when the open
  // may be retried.
  bool RepairAfterRefusal(const Status& refusal) {
    const std::string& message = refusal.message();
    const bool names_file_and_fix =
        refusal.Is(StatusCode::kCorruption) && message.find(dir_.path()) != std::string::npos &&
        message.find("repair") != std::string::npos;
    if (config_.durability == Durability::kFull || !names_file_and_fix) {
      Fail("Engine::Open refused: " + refusal.ToString());
      return false;
    }
    ++stats_.refusals;
    Note("open refused (" + message + "); repairing the log");
    Result<LogRepairReport> repaired = Engine::RepairLog(&env_, dir_.path());
    if (!repaired.ok()) {
      Fail("RepairLog after a refusal: " + repaired.status().ToString());
      return false;
    }
    Note("repair lost " + std::to_string(repaired->readings_lost) + " readings");
    return true;
  }

  // Judges the status of a maintenance call. An error is a bug unless an
  // injected fault fired; a fired fault leads to a power cut either way.
  bool Succeeded(const std::string& what, const Status& status) {
    const bool fired = FaultFired();
    if (!status.ok() && !fired) {
      Fail(what + " failed with no fault injected: " + status.ToString());
      return false;
    }
    if (fired) {
      Note(what + " hit an injected fault, returned " + status.ToString());
      RecoverFromFault();
      return false;
    }
    return true;
  }

  void Step() {
    if (config_.lose_power_mid_operation && !power_loss_armed_ && rng_.Percent(10)) ArmPowerLoss();
    const int64_t draw = rng_.Between(0, 99);
    if (inject_faults_ && draw < 10) {
      ArmFault();
    } else if (draw < 50) {
      WriteBatch(/*after_fault=*/false);
    } else if (draw < 65) {
      RandomQueries();
    } else if (draw < 70) {
      SealAll();
    } else if (draw < 77) {
      Note("Maintain");
      Succeeded("Maintain", engine_->Maintain());
    } else if (draw < 89) {
      AdvanceClock();
    } else if (draw < 97) {
      Note("power cut");
      PowerCutAndRecover();
      if (!Failed()) CheckEverything();
    } else {
      Note("full check");
      CheckEverything();
    }
  }

  void ArmFault() {
    const int64_t kind = rng_.Between(0, 9);
    const FaultOp op = kind < 5 ? FaultOp::kWrite : kind < 9 ? FaultOp::kSync : FaultOp::kRename;
    const int64_t n = rng_.Between(1, 40);
    if (rng_.Percent(20)) {
      env_.FailFromNth(op, n, Status::ResourceExhausted("injected: disk full"));
      Note("armed persistent " + std::string(FaultOpName(op)) + " failure from call " + std::to_string(n));
    } else {
      env_.FailNth(op, n, Status::IOError("injected " + std::string(FaultOpName(op)) + " failure"));
      Note("armed " + std::string(FaultOpName(op)) + " failure at call " + std::to_string(n));
    }
  }

  // Power goes at the n-th next write or sync, in whatever operation makes
  // it; that operation's error leads to the cut like an injected fault's.
  void ArmPowerLoss() {
    const FaultOp op = rng_.Percent(60) ? FaultOp::kSync : FaultOp::kWrite;
    const int64_t n = rng_.Between(1, 30);
    env_.LosePowerAtNth(op, n);
    power_loss_armed_ = true;
    Note("power goes at " + std::string(FaultOpName(op)) + " call " + std::to_string(n) + " from now");
  }

  void AdvanceClock() {
    const int64_t advance =
        rng_.Percent(30) ? rng_.Between(40 * 60, 75 * 60) * kNanosPerSecond
                         : rng_.Between(1, 600) * kNanosPerSecond + rng_.Between(0, kNanosPerSecond - 1);
    if (advanced_ + advance > kMaxClockAdvanceNanos) return;
    advanced_ += advance;
    clock_.AdvanceNanos(advance);
    Note("clock +" + std::to_string(advance / kNanosPerSecond) + " s -> " +
         std::to_string(clock_.NowUnixNanos()));
  }

  std::set<Identity> UncertainIdentities() const {
    std::set<Identity> identities;
    for (const auto& [identity, candidates] : uncertain_) identities.insert(identity);
    return identities;
  }

  // Writes a random batch and checks every record's outcome against the
  // model. After a fault (`after_fault`) errors are expected, not judged: an
  // engine may refuse all writes after an I/O error.
  void WriteBatch(bool after_fault) {
    const int64_t now = clock_.NowUnixNanos();
    std::vector<GeneratedRecord> batch = generator_.NextBatch(model_, UncertainIdentities(), now);
    std::vector<Record> records;
    records.reserve(batch.size());
    for (const GeneratedRecord& generated : batch) records.push_back(generated.record);

    // Predict sequentially: a record sees the batch's earlier records.
    std::map<Identity, StoredRecord> overlay;
    std::vector<WriteOutcome> expected;
    // What each record expected to be stored stores (under overwrite, the
    // union with the record it meets).
    std::vector<StoredRecord> would_store(batch.size());
    std::vector<size_t> merging;
    size_t want_stored = 0, want_duplicates = 0, want_rejected = 0, want_invalid = 0, want_conflicts = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      const GeneratedRecord& generated = batch[i];
      if (!generated.valid) {
        expected.push_back(WriteOutcome::kInvalid);
        ++want_invalid;
        continue;
      }
      model_.NoteAttempted(generated.record);
      const Identity identity = IdentityOf(generated.record);
      auto in_batch = overlay.find(identity);
      const StoredRecord* current = in_batch != overlay.end() ? &in_batch->second : model_.Find(identity);
      Prediction predicted = PredictWrite(current, generated.record, model_.on_conflict());
      switch (predicted.outcome) {
        case WriteOutcome::kStored:
          if (current != nullptr && current->version == generated.record.version) merging.push_back(i);
          would_store[i] = predicted.stored;
          overlay[identity] = std::move(predicted.stored);
          ++want_stored;
          break;
        case WriteOutcome::kDuplicate:
          ++want_duplicates;
          break;
        case WriteOutcome::kRejectedVersion:
          ++want_rejected;
          break;
        case WriteOutcome::kConflict:
          ++want_conflicts;
          break;
        case WriteOutcome::kInvalid:
          break;
      }
      expected.push_back(predicted.outcome);
    }
    Note("write " + std::to_string(batch.size()) + " records (stored " + std::to_string(want_stored) +
         ", duplicate " + std::to_string(want_duplicates) + ", rejected " + std::to_string(want_rejected) +
         ", conflicts " + std::to_string(want_conflicts) + ", invalid " + std::to_string(want_invalid) + ")" +
         (after_fault ? " after a fault" : ""));

    Result<WriteResult> result = engine_->Write(kTable, records);
    const bool fired = FaultFired();
    for (size_t i = 0; i < batch.size(); ++i) {
      if (!batch[i].valid) continue;
      std::string event = "step " + std::to_string(step_) + ": wrote v" +
                          std::to_string(batch[i].record.version) +
                          " ttl=" + std::to_string(batch[i].record.ttl) + " " +
                          Describe(batch[i].record.fields) + ", expected " + OutcomeName(expected[i]);
      event += result.ok() && i < result->records.size() ? ", got " + OutcomeName(result->records[i].outcome)
                                                         : ", the Write failed";
      history_[IdentityOf(batch[i].record)].push_back(std::move(event));
    }
    if (!result.ok()) {
      if (!fired && !after_fault) {
        Fail("Write failed with no fault injected: " + result.status().ToString());
        return;
      }
      Note("write returned " + result.status().ToString() + "; its stored records are now uncertain");
      // Each record the batch would have stored may or may not be on disk.
      for (size_t i = 0; i < batch.size(); ++i) {
        if (expected[i] == WriteOutcome::kStored) {
          uncertain_[IdentityOf(batch[i].record)].push_back(would_store[i]);
        }
      }
      if (!after_fault) RecoverFromFault();
      return;
    }

    const WriteResult& written = result.value();
    if (written.records.size() != batch.size()) {
      Fail("Write returned " + std::to_string(written.records.size()) + " outcomes for " +
           std::to_string(batch.size()) + " records");
      return;
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      const RecordResult& got = written.records[i];
      if (got.outcome != expected[i]) {
        std::string detail = "record " + std::to_string(i) + " " + Describe(IdentityOf(batch[i].record)) +
                             " v" + std::to_string(batch[i].record.version) + " " +
                             Describe(batch[i].record.fields) + ": outcome " + OutcomeName(got.outcome) +
                             " (" + got.reason + "), want " + OutcomeName(expected[i]);
        if (!batch[i].valid) detail += " because of " + batch[i].why_invalid;
        const StoredRecord* stored = model_.Find(IdentityOf(batch[i].record));
        if (stored != nullptr) detail += "; acknowledged before: " + Describe(*stored);
        Fail(detail);
        return;
      }
      if (got.outcome != WriteOutcome::kStored && got.outcome != WriteOutcome::kDuplicate && got.reason.empty()) {
        Fail("record " + std::to_string(i) + " is " + OutcomeName(got.outcome) + " without a reason");
        return;
      }
    }
    if (written.stored != want_stored || written.duplicates != want_duplicates ||
        written.rejected != want_rejected || written.invalid != want_invalid || written.conflicts != want_conflicts) {
      Fail("Write counted stored/duplicates/rejected/invalid/conflicts " + std::to_string(written.stored) + "/" +
           std::to_string(written.duplicates) + "/" + std::to_string(written.rejected) + "/" +
           std::to_string(written.invalid) + "/" + std::to_string(written.conflicts) + ", want " +
           std::to_string(want_stored) + "/" + std::to_string(want_duplicates) + "/" +
           std::to_string(want_rejected) + "/" + std::to_string(want_invalid) + "/" +
           std::to_string(want_conflicts));
      return;
    }
    if ((written.first_lsn != 0) != (want_stored != 0)) {
      Fail("first_lsn " + std::to_string(written.first_lsn) + " with " + std::to_string(want_stored) +
           " records stored");
      return;
    }
    for (const auto& [identity, record] : overlay) {
      // Under kInterval and kOff the state it replaces may come back after
      // a power cut, until the next point that makes everything durable.
      if (config_.durability != Durability::kFull) {
        const StoredRecord* before = model_.Find(identity);
        at_risk_[identity].push_back(before ? std::optional<StoredRecord>(*before) : std::nullopt);
      }
      model_.Set(identity, record);
    }
    stats_.acknowledged += want_stored;
    stats_.conflicts += want_conflicts;
    stats_.merged += merging.size();
    if (fired && !after_fault) {
      Note("write succeeded although a fault fired inside it");
      RecoverFromFault();
    }
  }

  // After an injected fault the process may go on for a moment (a few more
  // writes, whose acknowledgements must hold), then the power goes.
  void RecoverFromFault() {
    int64_t more = rng_.Percent(50) ? rng_.Between(1, 3) : 0;
    if (env_.PowerLost()) more = 0;  // the machine is off: nothing goes on
    for (int64_t i = 0; i < more && !Failed(); ++i) WriteBatch(/*after_fault=*/true);
    if (Failed()) return;
    Note("power cut after the fault");
    PowerCutAndRecover();
    if (!Failed()) CheckEverything();
  }

  // Cuts power the way the configuration says (drawing what it leaves
  // open), notes the cut's seed and what it did.
  bool CutPower() {
    PowerCutOptions cut;
    cut.data = config_.cut_data ? *config_.cut_data
                                : static_cast<PowerCutOptions::Data>(rng_.Between(0, 2));
    cut.keep_some_entry_changes = config_.keep_some_entry_changes && rng_.Percent(50);
    cut.sector_bytes = rng_.Percent(50) ? 512 : 4096;
    cut.seed = rng_.Next();
    PowerCutReport report;
    const bool mid_operation = env_.PowerLost();
    const Status status = env_.SimulatePowerCut(cut, &report);
    if (!status.ok()) {
      Fail("SimulatePowerCut: " + status.ToString());
      return false;
    }
    ++stats_.cuts[static_cast<int>(cut.data)];
    if (mid_operation) ++stats_.mid_operation_cuts;
    power_loss_armed_ = false;
    stats_.torn_writes += report.torn_writes;
    stats_.sectors_kept += report.sectors_kept;
    stats_.sectors_lost += report.sectors_lost;
    stats_.entry_changes_kept += report.entry_changes_kept;
    stats_.entry_changes_undone += report.entry_changes_undone;
    Note(std::string(mid_operation ? "power cut in mid-operation (" : "power cut (") +
         std::string(PowerCutDataName(cut.data)) + ", " + std::to_string(cut.sector_bytes) +
         "-byte sectors, " + (cut.keep_some_entry_changes ? "some" : "no") + " entry changes kept, cut seed " +
         std::to_string(cut.seed) + "): " + report.Summary());
    last_cut_ = std::move(report.lines);
    return true;
  }

  void PowerCutAndRecover() {
    if (!CutPower()) return;
    // Dropped without Close: the power cut made its files fail, and its
    // destructor must cope with that.
    engine_.reset();
    env_.ClearFaults();
    FaultFired();
    if (inject_faults_ && rng_.Percent(30)) {
      // A second crash during recovery itself.
      const FaultOp op = rng_.Percent(60) ? FaultOp::kWrite : FaultOp::kSync;
      const int64_t n = rng_.Between(1, 12);
      env_.FailNth(op, n, Status::IOError("injected failure during recovery"));
      auto opened = Engine::Open(&env_, dir_.path(), options_);
      const bool fired = FaultFired();
      env_.ClearFaults();
      if (opened.ok()) {
        engine_ = std::move(opened).value();
        Note("reopened with a " + std::string(FaultOpName(op)) + " fault at call " + std::to_string(n) +
             (fired ? " (fired)" : " (not reached)"));
      } else if (!fired) {
        // The damage the cut left, not the fault: judged like any refusal,
        // and Open below tries again.
        if (!RepairAfterRefusal(opened.status())) return;
      } else {
        Note("reopen failed on the injected " + std::string(FaultOpName(op)) + " fault at call " +
             std::to_string(n) + ": " + opened.status().ToString() + "; power cut again");
        if (!CutPower()) return;
      }
    }
    if (!engine_ && !Open()) return;
    ResolveUncertain();
  }

  // Learns from the reopened engine what became of the records whose state
  // a power cut may have changed: those of a Write that failed (the
  // acknowledged state or one of the attempted ones, as some prefix of the
  // failed writes left it) and, under kInterval and kOff, those acknowledged
  // since everything was last made durable (any state they had since).
  void ResolveUncertain() {
    const int64_t now = clock_.NowUnixNanos();
    std::set<Identity> identities = UncertainIdentities();
    for (const auto& [identity, states] : at_risk_) identities.insert(identity);
    for (const Identity& identity : identities) {
      auto got = engine_->Get(kTable, identity.device_id, identity.measure_name, identity.timestamp,
                              identity.dimensions);
      if (!got.ok()) {
        Fail("Get " + Describe(identity) + " after recovery: " + got.status().ToString());
        return;
      }
      const StoredRecord* acknowledged = model_.Find(identity);
      std::vector<std::optional<StoredRecord>> options;
      options.push_back(acknowledged ? std::optional<StoredRecord>(*acknowledged) : std::nullopt);
      const size_t risky_from = options.size();
      if (auto risky = at_risk_.find(identity); risky != at_risk_.end()) {
        options.insert(options.end(), risky->second.rbegin(), risky->second.rend());
      }
      const size_t failed_from = options.size();
      if (auto failed = uncertain_.find(identity); failed != uncertain_.end()) {
        options.insert(options.end(), failed->second.begin(), failed->second.end());
      }
      std::optional<size_t> matched;
      for (size_t i = 0; i < options.size() && !matched; ++i) {
        const bool visible = options[i].has_value() && IsVisible(options[i]->ttl, now);
        if (!got->has_value() ? !visible : visible && SameRow(**got, MakeRow(identity, *options[i]))) matched = i;
      }
      if (!matched) {
        std::string detail = "after recovery " + Describe(identity) + " is " +
                             (got->has_value() ? Describe(**got) : std::string("absent")) +
                             ", which neither the acknowledged state (" +
                             (acknowledged ? Describe(*acknowledged) : std::string("absent")) +
                             ") nor an earlier state at risk nor a failed write explains:";
        for (size_t i = 1; i < options.size(); ++i) {
          detail += " [" + (options[i] ? Describe(*options[i]) : std::string("absent")) + "]";
        }
        Fail(detail);
        return;
      }
      if (*matched >= risky_from && *matched < failed_from) {
        ++stats_.lost_at_risk;
        history_[identity].push_back("step " + std::to_string(step_) +
                                     ": after the power cut back in an earlier state at risk");
      }
      model_.Set(identity, options[*matched]);
    }
    uncertain_.clear();
    at_risk_.clear();
  }

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

uint64_t StepsPerSeed() { return EnvironmentCount("CAIRN_CRASH_ITERATIONS", 80); }

// Seeds 1..N (CAIRN_CRASH_SEEDS raises N for longer local runs), or the one
// seed CAIRN_CRASH_SEED names, to replay a failure.
std::vector<uint64_t> Seeds(uint64_t default_count) {
  if (const uint64_t only = EnvironmentCount("CAIRN_CRASH_SEED", 0); only != 0) return {only};
  std::vector<uint64_t> seeds;
  const uint64_t count = EnvironmentCount("CAIRN_CRASH_SEEDS", default_count);
  for (uint64_t seed = 1; seed <= count; ++seed) seeds.push_back(seed);
  return seeds;
}

// Runs seed `param` (from Seeds) of a test whose runs use seeds param +
// offset, and prints what its power cuts did.
// Even seeds run on a table whose on_conflict is overwrite, odd ones reject,
// so every test with two seeds or more covers both.
void RunAndReport(uint64_t param, uint64_t offset, RunConfig config) {
  config.replay_seed = param;
  config.on_conflict = param % 2 == 0 ? ConflictPolicy::kOverwrite : ConflictPolicy::kReject;
  const uint64_t seed = param + offset;
  ModelRun run(seed, config);
  run.Run(StepsPerSeed());
  std::printf("[ crash    ] %s, on_conflict %s, seed %llu: %s\n", config.name,
              std::string(ConflictPolicyName(config.on_conflict)).c_str(), static_cast<unsigned long long>(seed),
              run.stats().Summary().c_str());
}

class CrashModelTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(CrashModelTest, PowerCutsKeepEveryAcknowledgedRecordExactlyOnce) {
  RunAndReport(GetParam(), 0, RunConfig{.name = "full, drop", .cut_data = PowerCutOptions::Data::kDropUnsynced});
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
