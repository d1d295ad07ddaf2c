// ModelRun: one seeded run of the crash model, step by step (crash_model_run.h).
#include "crash_model_run.h"

namespace cairn::crash {

void ModelRun::Run(uint64_t steps) {
  if (!Start()) return;
  for (step_ = 0; step_ < steps && !Failed(); ++step_) Step();
  Finish();
}

bool ModelRun::RunScript(FaultOp op, int64_t n) {
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

int64_t ModelRun::CountScriptCalls(FaultOp op) {
  if (!Start()) return 0;
  env_.ResetCounters();
  RunScriptSteps();
  const int64_t calls = env_.CallCount(op);
  Finish();
  return calls;
}

bool ModelRun::Start() {
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

void ModelRun::Finish() {
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

void ModelRun::RunScriptSteps() {
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

void ModelRun::SealAll() {
  Note("SealAll");
  if (Succeeded("SealAll", engine_->SealAll())) at_risk_.clear();
}

void ModelRun::Note(std::string action) {
  trace_.push_back("step " + std::to_string(step_) + ": " + std::move(action));
  if (trace_.size() > 40) trace_.pop_front();
}

void ModelRun::Fail(const std::string& message) {
  std::string context = std::string(config_.name) + " seed " + std::to_string(seed_);
  if (config_.replay_seed != 0) {
    context +=
        " (replay: CAIRN_CRASH_SEED=" + std::to_string(config_.replay_seed) + " with this test's filter)";
  }
  context += ", step " + std::to_string(step_) + ": " + message + "\n  latest actions:";
  for (const std::string& line : trace_) context += "\n    " + line;
  if (!last_cut_.empty()) context += "\n  the last power cut:";
  for (const std::string& line : last_cut_) context += "\n    " + line;
  ADD_FAILURE() << context;
}

std::string ModelRun::Explain(const Identity& identity) const {
  std::string text;
  auto it = history_.find(identity);
  if (it != history_.end()) {
    for (const std::string& event : it->second) text += "\n        " + event;
  }
  return text;
}

int64_t ModelRun::TotalInjected() const {
  int64_t total = 0;
  for (int op = 0; op < kFaultOpCount; ++op) total += env_.InjectedCount(static_cast<FaultOp>(op));
  return total;
}

bool ModelRun::FaultFired() {
  const int64_t injected = TotalInjected();
  const bool fired = injected != injected_seen_ || env_.PowerLost();
  injected_seen_ = injected;
  return fired;
}

bool ModelRun::Open() {
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

bool ModelRun::RepairAfterRefusal(const Status& refusal) {
  const std::string& message = refusal.message();
  const bool names_file_and_fix = refusal.Is(StatusCode::kCorruption) &&
                                  message.find(dir_.path()) != std::string::npos &&
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

bool ModelRun::Succeeded(const std::string& what, const Status& status) {
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

void ModelRun::Step() {
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

void ModelRun::ArmFault() {
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

void ModelRun::ArmPowerLoss() {
  const FaultOp op = rng_.Percent(60) ? FaultOp::kSync : FaultOp::kWrite;
  const int64_t n = rng_.Between(1, 30);
  env_.LosePowerAtNth(op, n);
  power_loss_armed_ = true;
  Note("power goes at " + std::string(FaultOpName(op)) + " call " + std::to_string(n) + " from now");
}

void ModelRun::AdvanceClock() {
  const int64_t advance = rng_.Percent(30)
                              ? rng_.Between(40 * 60, 75 * 60) * kNanosPerSecond
                              : rng_.Between(1, 600) * kNanosPerSecond + rng_.Between(0, kNanosPerSecond - 1);
  if (advanced_ + advance > kMaxClockAdvanceNanos) return;
  advanced_ += advance;
  clock_.AdvanceNanos(advance);
  Note("clock +" + std::to_string(advance / kNanosPerSecond) + " s -> " +
       std::to_string(clock_.NowUnixNanos()));
}

std::set<Identity> ModelRun::UncertainIdentities() const {
  std::set<Identity> identities;
  for (const auto& [identity, candidates] : uncertain_) identities.insert(identity);
  return identities;
}

void ModelRun::WriteBatch(bool after_fault) {
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
                           Describe(batch[i].record.fields) + ": outcome " + OutcomeName(got.outcome) + " (" +
                           got.reason + "), want " + OutcomeName(expected[i]);
      if (!batch[i].valid) detail += " because of " + batch[i].why_invalid;
      const StoredRecord* stored = model_.Find(IdentityOf(batch[i].record));
      if (stored != nullptr) detail += "; acknowledged before: " + Describe(*stored);
      Fail(detail);
      return;
    }
    if (got.outcome != WriteOutcome::kStored && got.outcome != WriteOutcome::kDuplicate &&
        got.reason.empty()) {
      Fail("record " + std::to_string(i) + " is " + OutcomeName(got.outcome) + " without a reason");
      return;
    }
  }
  if (written.stored != want_stored || written.duplicates != want_duplicates ||
      written.rejected != want_rejected || written.invalid != want_invalid ||
      written.conflicts != want_conflicts) {
    Fail("Write counted stored/duplicates/rejected/invalid/conflicts " + std::to_string(written.stored) +
         "/" + std::to_string(written.duplicates) + "/" + std::to_string(written.rejected) + "/" +
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

void ModelRun::RecoverFromFault() {
  int64_t more = rng_.Percent(50) ? rng_.Between(1, 3) : 0;
  if (env_.PowerLost()) more = 0;  // the machine is off: nothing goes on
  for (int64_t i = 0; i < more && !Failed(); ++i) WriteBatch(/*after_fault=*/true);
  if (Failed()) return;
  Note("power cut after the fault");
  PowerCutAndRecover();
  if (!Failed()) CheckEverything();
}

bool ModelRun::CutPower() {
  PowerCutOptions cut;
  cut.data = config_.cut_data ? *config_.cut_data : static_cast<PowerCutOptions::Data>(rng_.Between(0, 2));
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
       std::string(PowerCutDataName(cut.data)) + ", " + std::to_string(cut.sector_bytes) + "-byte sectors, " +
       (cut.keep_some_entry_changes ? "some" : "no") + " entry changes kept, cut seed " +
       std::to_string(cut.seed) + "): " + report.Summary());
  last_cut_ = std::move(report.lines);
  return true;
}

void ModelRun::PowerCutAndRecover() {
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

void ModelRun::ResolveUncertain() {
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
      if (!got->has_value() ? !visible : visible && SameRow(**got, MakeRow(identity, *options[i])))
        matched = i;
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
              std::string(ConflictPolicyName(config.on_conflict)).c_str(),
              static_cast<unsigned long long>(seed), run.stats().Summary().c_str());
}

}  // namespace cairn::crash
