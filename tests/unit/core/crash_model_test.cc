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
// the engine's answer settles them).
//
// Default sizes keep one run within a few minutes under sanitizers and under
// qemu-user; CAIRN_CRASH_ITERATIONS (steps per seed) and CAIRN_CRASH_SEEDS
// (extra seeds) make longer local runs. A failure prints the seed, the step
// and the latest actions.
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

// ---- descriptions for failure messages ---------------------------------------

std::string Escape(std::string_view text, size_t max_bytes = 48) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < max_bytes; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
    }
  }
  if (text.size() > max_bytes) out += "...(" + std::to_string(text.size()) + " bytes)";
  return out;
}

std::string Describe(const Identity& identity) {
  return "(" + Escape(identity.device_id) + ", " + identity.measure_name + ", " +
         std::to_string(identity.timestamp) + ")";
}

std::string Describe(const Value& value) {
  switch (value.index()) {
    case 0:
      return "absent";
    case 1: {
      char text[64];
      uint64_t bits;
      const double d = std::get<double>(value);
      std::memcpy(&bits, &d, sizeof bits);
      std::snprintf(text, sizeof text, "%.17g(0x%016" PRIx64 ")", d, bits);
      return text;
    }
    case 2:
      return std::to_string(std::get<int64_t>(value));
    case 3:
      return std::get<bool>(value) ? "true" : "false";
    case 4:
      return "\"" + Escape(std::get<std::string>(value)) + "\"";
    case 5:
      return "@" + std::to_string(std::get<Timestamp>(value).unix_nanos);
  }
  return "?";
}

std::string Describe(const std::vector<Field>& fields) {
  std::string out = "{";
  for (const Field& field : fields) {
    if (out.size() > 1) out += ", ";
    out += field.name + "=" + Describe(field.value);
  }
  return out + "}";
}

std::string Describe(const StoredRecord& record) {
  return "v" + std::to_string(record.version) + " ttl=" + std::to_string(record.ttl) + " " +
         Describe(record.fields);
}

std::string Describe(const RecordRow& row) {
  return Describe(IdentityOf(row)) + " shard=" + std::to_string(row.shard) + " " +
         Describe(StoredRecord{row.version, row.ttl, row.fields});
}

std::string OutcomeName(WriteOutcome outcome) {
  switch (outcome) {
    case WriteOutcome::kStored:
      return "stored";
    case WriteOutcome::kDuplicate:
      return "duplicate";
    case WriteOutcome::kRejectedVersion:
      return "rejected-version";
    case WriteOutcome::kInvalid:
      return "invalid";
  }
  return "?";
}

// Explains how two row lists differ: identities missing, unexpected,
// repeated, or present with other contents, and the first position where the
// order differs.
// `explain` adds what the run knows about an identity (its write history).
std::string DiffRows(const std::vector<RecordRow>& got, const std::vector<RecordRow>& want,
                     const std::function<std::string(const Identity&)>& explain) {
  std::map<Identity, std::vector<const RecordRow*>> got_by_identity, want_by_identity;
  for (const RecordRow& row : got) got_by_identity[IdentityOf(row)].push_back(&row);
  for (const RecordRow& row : want) want_by_identity[IdentityOf(row)].push_back(&row);
  std::string out = "got " + std::to_string(got.size()) + " rows, want " + std::to_string(want.size());
  int reported = 0;
  const auto add = [&](const std::string& line) {
    if (++reported <= 12) out += "\n    " + line;
  };
  for (const auto& [identity, rows] : want_by_identity) {
    auto it = got_by_identity.find(identity);
    if (it == got_by_identity.end()) {
      add("missing " + Describe(*rows.front()) + explain(identity));
    } else if (it->second.size() > 1) {
      add("returned " + std::to_string(it->second.size()) + " times: " + Describe(identity) +
          explain(identity));
    } else if (!SameRow(*it->second.front(), *rows.front())) {
      add("differs " + Describe(identity) + ": got " + Describe(*it->second.front()) + ", want " +
          Describe(*rows.front()) + explain(identity));
    }
  }
  for (const auto& [identity, rows] : got_by_identity) {
    if (want_by_identity.count(identity) == 0) {
      add("unexpected x" + std::to_string(rows.size()) + " " + Describe(*rows.front()) + explain(identity));
    }
  }
  if (reported == 0) {
    for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
      if (!SameRow(got[i], want[i])) {
        add("order differs at row " + std::to_string(i) + ": got " + Describe(IdentityOf(got[i])) +
            ", want " + Describe(IdentityOf(want[i])));
        break;
      }
    }
  }
  if (reported > 12) out += "\n    ... and " + std::to_string(reported - 12) + " more";
  return out;
}

bool SameRows(const std::vector<RecordRow>& a, const std::vector<RecordRow>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!SameRow(a[i], b[i])) return false;
  }
  return true;
}

std::optional<long double> AsNumber(const Value& value) {
  if (const int64_t* i = std::get_if<int64_t>(&value)) return static_cast<long double>(*i);
  if (const double* d = std::get_if<double>(&value)) return static_cast<long double>(*d);
  return std::nullopt;
}

// An exact statistic (min, max, first, last) of an int64 field may come back
// as int64 or as the double nearest to it; of a double field, as that double.
bool SameStatistic(const Value& got, const Value& want) {
  if (SameValue(got, want)) return true;
  if (const int64_t* i = std::get_if<int64_t>(&want)) {
    if (const double* d = std::get_if<double>(&got)) return *d == static_cast<double>(*i);
  }
  return false;
}

bool NearlyEqual(long double got, long double want, long double scale) {
  const long double tolerance = 1e-9L * std::max<long double>(1, scale);
  const long double difference = got > want ? got - want : want - got;
  return difference <= tolerance;
}

// ---- the run -------------------------------------------------------------------

class ModelRun {
 public:
  ModelRun(uint64_t seed, bool inject_faults)
      : seed_(seed),
        inject_faults_(inject_faults),
        dir_("cairn-crash-model"),
        no_sync_(Env::Default()),
        clock_(&no_sync_, ManualClockEnv::kDefaultStartUnixNanos +
                              static_cast<int64_t>(seed % 3600) * 61 * kNanosPerSecond),
        env_(&clock_),
        rng_(seed * 0x9E3779B97F4A7C15ull + 1),
        generator_(seed, kWindowNanos) {
    options_.durability = Durability::kFull;
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
  }

  void Run(uint64_t steps) {
    if (!Start()) return;
    for (step_ = 0; step_ < steps && !Failed(); ++step_) Step();
    Finish();
  }

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
  bool Failed() const { return ::testing::Test::HasFailure(); }

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
    run([&] {
      Note("SealAll");
      Succeeded("SealAll", engine_->SealAll());
    });
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
    run([&] {
      Note("SealAll");
      Succeeded("SealAll", engine_->SealAll());
    });
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

  void Note(std::string action) {
    trace_.push_back("step " + std::to_string(step_) + ": " + std::move(action));
    if (trace_.size() > 40) trace_.pop_front();
  }

  void Fail(const std::string& message) {
    std::string context = "seed " + std::to_string(seed_) + (inject_faults_ ? " (with faults)" : "") +
                          ", step " + std::to_string(step_) + ": " + message + "\n  latest actions:";
    for (const std::string& line : trace_) context += "\n    " + line;
    ADD_FAILURE() << context;
  }

  int64_t TotalInjected() const {
    return env_.InjectedCount(FaultOp::kWrite) + env_.InjectedCount(FaultOp::kSync) +
           env_.InjectedCount(FaultOp::kRename);
  }

  // True when an injected fault fired since the last call.
  bool FaultFired() {
    const int64_t injected = TotalInjected();
    const bool fired = injected != injected_seen_;
    injected_seen_ = injected;
    return fired;
  }

  bool Open() {
    RecoveryReport report;
    auto opened = Engine::Open(&env_, dir_.path(), options_, &report);
    FaultFired();
    if (!opened.ok()) {
      Fail("Engine::Open: " + opened.status().ToString());
      return false;
    }
    engine_ = std::move(opened).value();
    Note("opened: replayed " + std::to_string(report.records_replayed) + ", torn tail bytes " +
         std::to_string(report.torn_tail_bytes_truncated));
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

  // Same for a query: returns false (and has handled the failure) when the
  // result cannot be compared.
  template <typename T>
  bool QuerySucceeded(const std::string& what, const Result<T>& result) {
    return Succeeded(what, result.status());
  }

  void Step() {
    const int64_t draw = rng_.Between(0, 99);
    if (inject_faults_ && draw < 10) {
      ArmFault();
    } else if (draw < 50) {
      WriteBatch(/*after_fault=*/false);
    } else if (draw < 65) {
      RandomQueries();
    } else if (draw < 70) {
      Note("SealAll");
      Succeeded("SealAll", engine_->SealAll());
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

  // Describes, for a failure message, every write of `identity` in this run.
  std::function<std::string(const Identity&)> Explainer() const {
    return [this](const Identity& identity) {
      std::string text;
      auto it = history_.find(identity);
      if (it != history_.end()) {
        for (const std::string& event : it->second) text += "\n        " + event;
      }
      return text;
    };
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
    size_t want_stored = 0, want_duplicates = 0, want_rejected = 0, want_invalid = 0;
    for (const GeneratedRecord& generated : batch) {
      if (!generated.valid) {
        expected.push_back(WriteOutcome::kInvalid);
        ++want_invalid;
        continue;
      }
      model_.NoteAttempted(generated.record);
      const Identity identity = IdentityOf(generated.record);
      auto in_batch = overlay.find(identity);
      const StoredRecord* current = in_batch != overlay.end() ? &in_batch->second : model_.Find(identity);
      WriteOutcome outcome;
      if (current == nullptr || generated.record.version > current->version) {
        outcome = WriteOutcome::kStored;
        overlay[identity] = StoredRecordOf(generated.record);
        ++want_stored;
      } else if (generated.record.version == current->version) {
        outcome = WriteOutcome::kDuplicate;
        ++want_duplicates;
      } else {
        outcome = WriteOutcome::kRejectedVersion;
        ++want_rejected;
      }
      expected.push_back(outcome);
    }
    Note("write " + std::to_string(batch.size()) + " records (stored " + std::to_string(want_stored) +
         ", duplicate " + std::to_string(want_duplicates) + ", rejected " + std::to_string(want_rejected) +
         ", invalid " + std::to_string(want_invalid) + ")" + (after_fault ? " after a fault" : ""));

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
          uncertain_[IdentityOf(batch[i].record)].push_back(StoredRecordOf(batch[i].record));
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
      if ((got.outcome == WriteOutcome::kInvalid || got.outcome == WriteOutcome::kRejectedVersion) &&
          got.reason.empty()) {
        Fail("record " + std::to_string(i) + " is " + OutcomeName(got.outcome) + " without a reason");
        return;
      }
    }
    if (written.stored != want_stored || written.duplicates != want_duplicates ||
        written.rejected != want_rejected || written.invalid != want_invalid) {
      Fail("Write counted stored/duplicates/rejected/invalid " + std::to_string(written.stored) + "/" +
           std::to_string(written.duplicates) + "/" + std::to_string(written.rejected) + "/" +
           std::to_string(written.invalid) + ", want " + std::to_string(want_stored) + "/" +
           std::to_string(want_duplicates) + "/" + std::to_string(want_rejected) + "/" +
           std::to_string(want_invalid));
      return;
    }
    if ((written.first_lsn != 0) != (want_stored != 0)) {
      Fail("first_lsn " + std::to_string(written.first_lsn) + " with " + std::to_string(want_stored) +
           " records stored");
      return;
    }
    for (const auto& [identity, record] : overlay) model_.Set(identity, record);
    if (fired && !after_fault) {
      Note("write succeeded although a fault fired inside it");
      RecoverFromFault();
    }
  }

  // After an injected fault the process may go on for a moment (a few more
  // writes, whose acknowledgements must hold), then the power goes.
  void RecoverFromFault() {
    const int64_t more = rng_.Percent(50) ? rng_.Between(1, 3) : 0;
    for (int64_t i = 0; i < more && !Failed(); ++i) WriteBatch(/*after_fault=*/true);
    if (Failed()) return;
    Note("power cut after the fault");
    PowerCutAndRecover();
    if (!Failed()) CheckEverything();
  }

  void PowerCutAndRecover() {
    const Status cut = env_.SimulatePowerCut();
    if (!cut.ok()) {
      Fail("SimulatePowerCut: " + cut.ToString());
      return;
    }
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
        Fail("Engine::Open failed with no fault injected: " + opened.status().ToString());
        return;
      } else {
        Note("reopen failed on the injected " + std::string(FaultOpName(op)) + " fault at call " +
             std::to_string(n) + ": " + opened.status().ToString() + "; power cut again");
        const Status again = env_.SimulatePowerCut();
        if (!again.ok()) {
          Fail("SimulatePowerCut: " + again.ToString());
          return;
        }
      }
    }
    if (!engine_ && !Open()) return;
    ResolveUncertain();
  }

  // Learns from the reopened engine what became of records whose Write
  // failed: each must be in a state some prefix of the failed writes could
  // have left (the acknowledged record, or one of the attempted ones).
  void ResolveUncertain() {
    const int64_t now = clock_.NowUnixNanos();
    for (const auto& [identity, candidates] : uncertain_) {
      auto got = engine_->Get(kTable, identity.device_id, identity.measure_name, identity.timestamp);
      if (!got.ok()) {
        Fail("Get " + Describe(identity) + " after recovery: " + got.status().ToString());
        return;
      }
      const StoredRecord* acknowledged = model_.Find(identity);
      std::vector<std::optional<StoredRecord>> options;
      options.push_back(acknowledged ? std::optional<StoredRecord>(*acknowledged) : std::nullopt);
      for (const StoredRecord& candidate : candidates) options.push_back(candidate);
      bool matched = false;
      for (const std::optional<StoredRecord>& option : options) {
        const bool visible = option.has_value() && IsVisible(option->ttl, now);
        if (!got->has_value()) {
          matched = !visible;
        } else if (visible) {
          const RecordRow& row = **got;
          matched = SameRow(row, MakeRow(identity, *option));
        }
        if (matched) {
          model_.Set(identity, option);
          break;
        }
      }
      if (!matched) {
        std::string detail = "after recovery " + Describe(identity) + " is " +
                             (got->has_value() ? Describe(**got) : std::string("absent")) +
                             ", which neither the acknowledged state (" +
                             (acknowledged ? Describe(*acknowledged) : std::string("absent")) +
                             ") nor a failed write explains:";
        for (const StoredRecord& candidate : candidates) detail += " [" + Describe(candidate) + "]";
        Fail(detail);
        return;
      }
    }
    uncertain_.clear();
  }

  // ---- queries -------------------------------------------------------------------

  // Runs `query` page by page with `limit` rows a page and returns every row.
  std::optional<std::vector<RecordRow>> RangeAllPages(RangeQuery query, size_t limit, size_t expected_rows,
                                                      const std::string& what) {
    query.limit = limit;
    query.page_token.clear();
    std::vector<RecordRow> rows;
    const size_t max_pages = limit == 0 ? 1 : expected_rows / limit + 2;
    for (size_t page = 0;; ++page) {
      if (page >= max_pages) {
        Fail(what + ": paging does not end after " + std::to_string(page) + " pages of " +
             std::to_string(limit) + " (expected " + std::to_string(expected_rows) + " rows)");
        return std::nullopt;
      }
      Result<RangeResult> result = engine_->Range(query);
      if (!QuerySucceeded(what, result)) return std::nullopt;
      if (limit != 0 && result->rows.size() > limit) {
        Fail(what + ": a page of " + std::to_string(result->rows.size()) + " rows with limit " +
             std::to_string(limit));
        return std::nullopt;
      }
      rows.insert(rows.end(), result->rows.begin(), result->rows.end());
      if (result->next_page_token.empty()) break;
      query.page_token = result->next_page_token;
    }
    return rows;
  }

  std::string DescribeQuery(const RangeQuery& query) const {
    return "Range(" + Escape(query.device_id) + ", measure '" + query.measure_name + "', prefix '" +
           query.measure_prefix + "', [" + std::to_string(query.from) + ", " + std::to_string(query.to) +
           "), " + (query.order == Order::kAscending ? "asc" : "desc") + ")";
  }

  void CheckRange(const RangeQuery& query, size_t limit) {
    const int64_t now = clock_.NowUnixNanos();
    const std::vector<RecordRow> want = model_.Range(query, now);
    const std::string what = DescribeQuery(query) + " limit " + std::to_string(limit);
    std::optional<std::vector<RecordRow>> got = RangeAllPages(query, limit, want.size(), what);
    if (!got) return;
    if (!SameRows(*got, want)) Fail(what + ": " + DiffRows(*got, want, Explainer()));
  }

  void CheckGet(const Identity& identity) {
    const int64_t now = clock_.NowUnixNanos();
    auto got = engine_->Get(kTable, identity.device_id, identity.measure_name, identity.timestamp);
    if (!QuerySucceeded("Get", got)) return;
    const std::optional<RecordRow> want = model_.Get(identity, now);
    if (got->has_value() != want.has_value() || (want.has_value() && !SameRow(**got, *want))) {
      Fail("Get " + Describe(identity) + ": got " +
           (got->has_value() ? Describe(**got) : std::string("nothing")) + ", want " +
           (want ? Describe(*want) : std::string("nothing")));
    }
  }

  void CheckLatest(const std::string& device, const std::string& measure) {
    const int64_t now = clock_.NowUnixNanos();
    auto got = engine_->Latest(kTable, device, measure);
    if (!QuerySucceeded("Latest", got)) return;
    const std::vector<RecordRow> want = model_.Latest(device, measure, now);
    if (!SameRows(*got, want)) {
      Fail("Latest(" + Escape(device) + ", '" + measure + "'): " + DiffRows(*got, want, Explainer()));
    }
  }

  void CheckLatestBatch(const std::vector<std::string>& devices, const std::string& measure) {
    const int64_t now = clock_.NowUnixNanos();
    auto got = engine_->LatestBatch(kTable, devices, measure);
    if (!QuerySucceeded("LatestBatch", got)) return;
    std::vector<RecordRow> want;
    for (const std::string& device : devices) {
      for (RecordRow& row : model_.Latest(device, measure, now)) want.push_back(std::move(row));
    }
    // The order across devices is not part of the contract.
    std::vector<RecordRow> got_rows = *got;
    const auto by_series = [](const RecordRow& a, const RecordRow& b) {
      return std::tie(a.device_id, a.measure_name) < std::tie(b.device_id, b.measure_name);
    };
    std::sort(got_rows.begin(), got_rows.end(), by_series);
    std::sort(want.begin(), want.end(), by_series);
    if (!SameRows(got_rows, want))
      Fail("LatestBatch('" + measure + "'): " + DiffRows(got_rows, want, Explainer()));
  }

  void CheckAggregate(const AggregateQuery& query) {
    const int64_t now = clock_.NowUnixNanos();
    auto got = engine_->Aggregate(query);
    if (!QuerySucceeded("Aggregate", got)) return;
    const std::vector<ModelBucket> want = model_.Aggregate(query, now);
    const std::string what = "Aggregate(" + Escape(query.device_id) + ", " + query.measure_name + "." +
                             query.field + ", [" + std::to_string(query.from) + ", " +
                             std::to_string(query.to) + ") step " + std::to_string(query.step) + ")";
    if (got->buckets.size() != want.size()) {
      std::string detail = what + ": " + std::to_string(got->buckets.size()) + " buckets, want " +
                           std::to_string(want.size()) + "; got starts:";
      for (size_t i = 0; i < got->buckets.size() && i < 8; ++i) {
        detail += " " + std::to_string(got->buckets[i].start) + "x" + std::to_string(got->buckets[i].count);
      }
      detail += "; want starts:";
      for (size_t i = 0; i < want.size() && i < 8; ++i) {
        detail += " " + std::to_string(want[i].start) + "x" + std::to_string(want[i].count);
      }
      Fail(detail);
      return;
    }
    for (size_t b = 0; b < want.size(); ++b) {
      const AggregateBucket& bucket = got->buckets[b];
      const ModelBucket& model = want[b];
      const std::string where = what + " bucket " + std::to_string(model.start);
      if (bucket.start != model.start || bucket.count != model.count) {
        Fail(where + ": got start " + std::to_string(bucket.start) + " count " +
             std::to_string(bucket.count) + ", want count " + std::to_string(model.count));
        return;
      }
      if (bucket.values.size() != query.functions.size()) {
        Fail(where + ": " + std::to_string(bucket.values.size()) + " values for " +
             std::to_string(query.functions.size()) + " functions");
        return;
      }
      long double magnitude = 0;
      for (const Value* v : {&model.min, &model.max}) {
        const long double x = *AsNumber(*v);
        magnitude = std::max(magnitude, x < 0 ? -x : x);
      }
      for (size_t f = 0; f < query.functions.size(); ++f) {
        const Value& value = bucket.values[f];
        const AggregateFunction function = query.functions[f];
        bool ok = false;
        std::string want_text;
        switch (function) {
          case AggregateFunction::kMin:
            ok = SameStatistic(value, model.min);
            want_text = Describe(model.min);
            break;
          case AggregateFunction::kMax:
            ok = SameStatistic(value, model.max);
            want_text = Describe(model.max);
            break;
          case AggregateFunction::kFirst:
            ok = SameStatistic(value, model.first);
            want_text = Describe(model.first);
            break;
          case AggregateFunction::kLast:
            ok = SameStatistic(value, model.last);
            want_text = Describe(model.last);
            break;
          case AggregateFunction::kCount: {
            const std::optional<long double> n = AsNumber(value);
            ok = n && *n == static_cast<long double>(model.count);
            want_text = std::to_string(model.count);
            break;
          }
          case AggregateFunction::kSum: {
            const std::optional<long double> n = AsNumber(value);
            if (model.is_int && std::holds_alternative<int64_t>(value)) {
              ok = std::get<int64_t>(value) == model.int_sum;
            } else {
              ok = n && NearlyEqual(*n, model.sum, magnitude * static_cast<long double>(model.count));
            }
            want_text =
                model.is_int ? std::to_string(model.int_sum) : std::to_string(static_cast<double>(model.sum));
            break;
          }
          case AggregateFunction::kAvg: {
            const std::optional<long double> n = AsNumber(value);
            const long double average = model.sum / static_cast<long double>(model.count);
            ok = n && NearlyEqual(*n, average, magnitude);
            want_text = std::to_string(static_cast<double>(average));
            break;
          }
        }
        if (!ok) {
          Fail(where + " " + std::string(AggregateFunctionName(function)) + ": got " + Describe(value) +
               ", want " + want_text);
          return;
        }
      }
    }
  }

  // Devices and measures are catalog facts that may outlive their records
  // (expired, or written by a Write that failed), so listings are checked
  // between bounds: everything visible must be listed, and nothing may be
  // listed that no Write ever carried.
  void CheckListings() {
    const int64_t now = clock_.NowUnixNanos();
    const std::map<std::string, std::set<std::string>> visible = model_.VisibleSeries(now);
    const auto& attempted = model_.attempted_series();

    auto devices = engine_->ListDevices(kTable);
    if (!QuerySucceeded("ListDevices", devices)) return;
    std::map<std::string, std::vector<std::string>> listed;
    for (const DeviceInfo& device : *devices) {
      if (listed.count(device.device_id) != 0) {
        Fail("ListDevices lists " + Escape(device.device_id) + " twice");
        return;
      }
      listed[device.device_id] = device.measures;
      if (!std::is_sorted(device.measures.begin(), device.measures.end())) {
        Fail("ListDevices: measures of " + Escape(device.device_id) + " are not sorted");
        return;
      }
      for (const std::string& measure : device.measures) {
        if (attempted.count({device.device_id, measure}) == 0) {
          Fail("ListDevices lists series (" + Escape(device.device_id) + ", " + measure +
               ") that was never written");
          return;
        }
      }
    }
    for (const auto& [device, measures] : visible) {
      auto it = listed.find(device);
      if (it == listed.end()) {
        Fail("ListDevices leaves out " + Escape(device) + ", which has visible records");
        return;
      }
      for (const std::string& measure : measures) {
        if (std::find(it->second.begin(), it->second.end(), measure) == it->second.end()) {
          Fail("ListDevices leaves out measure " + measure + " of " + Escape(device));
          return;
        }
      }
    }

    auto measures = engine_->ListMeasures(kTable);
    if (!QuerySucceeded("ListMeasures", measures)) return;
    std::map<std::string, std::set<std::string>> visible_devices_by_measure;
    std::map<std::string, std::set<std::string>> attempted_devices_by_measure;
    for (const auto& [device, names] : visible) {
      for (const std::string& name : names) visible_devices_by_measure[name].insert(device);
    }
    for (const auto& [device, name] : attempted) attempted_devices_by_measure[name].insert(device);
    std::map<std::string, std::map<std::string, FieldType>> visible_fields;
    for (const auto& [identity, record] : model_.records()) {
      if (!IsVisible(record.ttl, now)) continue;
      for (const Field& field : record.fields) {
        visible_fields[identity.measure_name][field.name] = TypeOf(field.value);
      }
    }
    std::set<std::string> listed_measures;
    for (const MeasureInfo& info : *measures) {
      listed_measures.insert(info.measure_name);
      auto attempted_fields = model_.attempted_fields().find(info.measure_name);
      if (attempted_fields == model_.attempted_fields().end()) {
        Fail("ListMeasures lists " + info.measure_name + ", which was never written");
        return;
      }
      for (const auto& [name, type] : info.fields) {
        if (attempted_fields->second.count({name, type}) == 0) {
          Fail("ListMeasures: " + info.measure_name + " has field " + name + " of type " +
               std::string(FieldTypeName(type)) + ", which no write carried");
          return;
        }
      }
      for (const auto& [name, type] : visible_fields[info.measure_name]) {
        auto it = info.fields.find(name);
        if (it == info.fields.end() || it->second != type) {
          Fail("ListMeasures: " + info.measure_name + " lacks field " + name + " of type " +
               std::string(FieldTypeName(type)));
          return;
        }
      }
      const size_t low = visible_devices_by_measure[info.measure_name].size();
      const size_t high = attempted_devices_by_measure[info.measure_name].size();
      if (info.devices < low || info.devices > high) {
        Fail("ListMeasures: " + info.measure_name + " reports " + std::to_string(info.devices) +
             " devices; between " + std::to_string(low) + " and " + std::to_string(high) + " expected");
        return;
      }
    }
    for (const auto& [name, devices_with_it] : visible_devices_by_measure) {
      if (listed_measures.count(name) == 0) {
        Fail("ListMeasures leaves out " + name + ", which has visible records");
        return;
      }
    }
  }

  AggregateQuery DrawAggregate(const std::string& device, const std::string& measure) {
    const int64_t now = clock_.NowUnixNanos();
    AggregateQuery query;
    query.table = kTable;
    query.device_id = device;
    query.measure_name = measure;
    query.field = "value";
    const int64_t steps[] = {kNanosPerSecond, 60 * kNanosPerSecond, 7 * 60 * kNanosPerSecond,
                             3600 * kNanosPerSecond, 86400 * kNanosPerSecond};
    query.step = steps[rng_.Index(5)];
    if (rng_.Percent(50)) {
      // Everything the run can have written.
      query.from = ManualClockEnv::kDefaultStartUnixNanos - kWindowNanos - 86400 * kNanosPerSecond;
      query.to = now + kNanosPerSecond;
    } else {
      query.from = now - rng_.Between(0, kWindowNanos + kWindowNanos / 2);
      query.to = query.from + rng_.Between(1, kWindowNanos);
    }
    query.functions = {AggregateFunction::kMin, AggregateFunction::kMax,   AggregateFunction::kAvg,
                       AggregateFunction::kSum, AggregateFunction::kCount, AggregateFunction::kFirst,
                       AggregateFunction::kLast};
    for (size_t i = query.functions.size(); i > 1; --i)
      std::swap(query.functions[i - 1], query.functions[rng_.Index(i)]);
    query.functions.resize(static_cast<size_t>(rng_.Between(1, 7)));
    return query;
  }

  RangeQuery DrawRange() {
    const int64_t now = clock_.NowUnixNanos();
    RangeQuery query;
    query.table = kTable;
    query.device_id = DevicePool()[rng_.Index(DevicePool().size())];
    const int64_t measure_draw = rng_.Between(0, 9);
    if (measure_draw < 4) {
      query.measure_name = MeasureSpecs()[rng_.Index(MeasureSpecs().size())].name;
    } else if (measure_draw < 6) {
      query.measure_prefix = rng_.Percent(70) ? "env#" : "status#";
    } else if (measure_draw == 6) {
      query.measure_name = "no-such-measure";
    }
    if (rng_.Percent(60)) {
      query.from = now - rng_.Between(0, kWindowNanos);
      query.to = query.from + rng_.Between(1, kWindowNanos);
    }
    query.order = rng_.Percent(50) ? Order::kAscending : Order::kDescending;
    return query;
  }

  size_t DrawLimit() {
    const size_t limits[] = {0, 1, 3, 7, 50, 1000};
    return limits[rng_.Index(6)];
  }

  // A few queries of random kinds, each compared with the model.
  void RandomQueries() {
    Note("queries");
    const int64_t count = rng_.Between(1, 4);
    for (int64_t i = 0; i < count && !Failed() && engine_; ++i) {
      const std::string device = DevicePool()[rng_.Index(DevicePool().size())];
      switch (rng_.Between(0, 6)) {
        case 0: {
          // Known identities (some expired) and one that never existed.
          if (!model_.records().empty()) {
            auto it = model_.records().begin();
            std::advance(it, static_cast<std::ptrdiff_t>(rng_.Index(model_.records().size())));
            CheckGet(it->first);
          }
          CheckGet(Identity{device, "power", clock_.NowUnixNanos() + 17});
          break;
        }
        case 1:
          CheckRange(DrawRange(), DrawLimit());
          break;
        case 2:
          CheckLatest(device, rng_.Percent(50) ? "" : MeasureSpecs()[rng_.Index(MeasureSpecs().size())].name);
          break;
        case 3: {
          std::vector<std::string> devices;
          for (const std::string& d : DevicePool()) {
            if (rng_.Percent(60)) devices.push_back(d);
          }
          devices.push_back("never-seen-device");
          CheckLatestBatch(devices, rng_.Percent(50) ? "" : "env#temperature");
          break;
        }
        case 4:
          CheckAggregate(DrawAggregate(device, MeasureSpecs()[rng_.Index(MeasureSpecs().size())].name));
          break;
        default:
          CheckListings();
          break;
      }
    }
  }

  // The full comparison after a recovery: every series in full and in
  // pages, point reads, latest readings, aggregates and listings.
  void CheckEverything() {
    if (!engine_) return;
    for (const std::string& device : DevicePool()) {
      RangeQuery all;
      all.table = kTable;
      all.device_id = device;
      all.order = rng_.Percent(50) ? Order::kAscending : Order::kDescending;
      CheckRange(all, 0);
      if (Failed() || !engine_) return;
      all.order = rng_.Percent(50) ? Order::kAscending : Order::kDescending;
      CheckRange(all, static_cast<size_t>(rng_.Between(1, 40)));
      if (Failed() || !engine_) return;
      CheckLatest(device, "");
      if (Failed() || !engine_) return;
      AggregateQuery query = DrawAggregate(device, MeasureSpecs()[rng_.Index(MeasureSpecs().size())].name);
      query.from = ManualClockEnv::kDefaultStartUnixNanos - kWindowNanos - 86400 * kNanosPerSecond;
      query.to = clock_.NowUnixNanos() + kNanosPerSecond;
      CheckAggregate(query);
      if (Failed() || !engine_) return;
    }
    // Point reads of a sample of identities, expired ones included.
    const size_t stride = std::max<size_t>(1, model_.records().size() / 24);
    size_t index = 0;
    std::vector<Identity> sample;
    for (const auto& [identity, record] : model_.records()) {
      if (index++ % stride == 0) sample.push_back(identity);
    }
    for (const Identity& identity : sample) {
      CheckGet(identity);
      if (Failed() || !engine_) return;
    }
    std::vector<std::string> devices = DevicePool();
    devices.push_back("never-seen-device");
    CheckLatestBatch(devices, "");
    if (Failed() || !engine_) return;
    CheckListings();
  }

  const uint64_t seed_;
  const bool inject_faults_;
  ScopedTempDir dir_;
  // Durability is decided by env_'s simulated power cuts, so the real disk
  // is never synced: env_ -> clock_ -> no_sync_ -> the POSIX Env.
  NoSyncEnv no_sync_;
  ManualClockEnv clock_;
  FaultInjectionEnv env_;
  Rng rng_;
  WorkloadGenerator generator_;
  EngineOptions options_;
  std::unique_ptr<Engine> engine_;
  ReferenceModel model_;
  // Identities written by a Write that returned an error, with what each
  // such write would have stored, in order.
  std::map<Identity, std::vector<StoredRecord>> uncertain_;
  int64_t injected_seen_ = 0;
  int64_t advanced_ = 0;
  uint64_t step_ = 0;
  std::deque<std::string> trace_;
  std::map<Identity, std::vector<std::string>> history_;
};

uint64_t StepsPerSeed() { return EnvironmentCount("CAIRN_CRASH_ITERATIONS", 80); }

// Seeds 1..N; CAIRN_CRASH_SEEDS raises N for longer local runs.
std::vector<uint64_t> Seeds(uint64_t default_count) {
  std::vector<uint64_t> seeds;
  const uint64_t count = EnvironmentCount("CAIRN_CRASH_SEEDS", default_count);
  for (uint64_t seed = 1; seed <= count; ++seed) seeds.push_back(seed);
  return seeds;
}

class CrashModelTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(CrashModelTest, PowerCutsKeepEveryAcknowledgedRecordExactlyOnce) {
  ModelRun run(GetParam(), /*inject_faults=*/false);
  run.Run(StepsPerSeed());
}

TEST_P(CrashModelTest, InjectedIoFailuresNeverLoseAcknowledgedRecords) {
  ModelRun run(GetParam() + 1000, /*inject_faults=*/true);
  run.Run(StepsPerSeed());
}

INSTANTIATE_TEST_SUITE_P(Seeds, CrashModelTest, ::testing::ValuesIn(Seeds(4)));

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
    ModelRun baseline(kSeed, /*inject_faults=*/false);
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
    ModelRun run(kSeed, /*inject_faults=*/true);
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
