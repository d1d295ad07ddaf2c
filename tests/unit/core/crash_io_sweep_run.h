// One run of the I/O-error sweep's workload (crash_io_sweep_test.cc): the
// fault points, what a sweep found, and SweepRun, which runs the workload
// with one fault and then checks what the engine kept.
//
// Longer than most files: the workload and the checks after it are one
// procedure, read top-down; the query checks it shares with the model test
// live in crash_model_checks.h.
#pragma once

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
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

namespace cairn::crash::io_sweep {

inline constexpr char kTable[] = "sweep";
inline constexpr int64_t kMinute = 60 * kNanosPerSecond;
inline constexpr int64_t kHour = 60 * kMinute;
inline constexpr int64_t kRetentionSeconds = 2 * 3600;
inline const std::vector<std::string> kDevices = {"gw-1", "gw-2", "gw-3"};
inline constexpr char kMeasure[] = "env#temperature";

enum class FaultMode : uint8_t { kOnce, kForever };

inline std::string_view FaultModeName(FaultMode mode) { return mode == FaultMode::kOnce ? "once" : "forever"; }

// What a Linux file system answers for each kind of call when the disk is
// full, failing or read-only (the POSIX Env maps ENOSPC to
// ResourceExhausted, EIO and EROFS to IOError).
inline std::vector<Status> ErrorsFor(FaultOp op) {
  const std::string call = std::string(FaultOpName(op));
  const Status full = Status::ResourceExhausted(call + ": No space left on device (injected)");
  const Status eio = Status::IOError(call + ": Input/output error (injected)");
  const Status erofs = Status::IOError(call + ": Read-only file system (injected)");
  switch (op) {
    case FaultOp::kWrite:
    case FaultOp::kSync:
      return {full, eio};
    case FaultOp::kOpen:
    case FaultOp::kRename:
      return {full, eio, erofs};
    case FaultOp::kTruncate:
    case FaultOp::kRemove:
      return {eio, erofs};
  }
  return {eio};
}

// One point of the sweep.
struct SweepPoint {
  FaultOp op;
  FaultMode mode;
  int64_t n;

  Status Error() const {
    const std::vector<Status> errors = ErrorsFor(op);
    return errors[static_cast<size_t>(n) % errors.size()];
  }
  // A write that runs out of space has written part of its bytes.
  FailedWriteEffect Effect() const {
    return Error().Is(StatusCode::kResourceExhausted) ? FailedWriteEffect::kHalfWritten
                                                      : FailedWriteEffect::kNothing;
  }
  PowerCutOptions Cut() const {
    PowerCutOptions cut;
    cut.data = static_cast<PowerCutOptions::Data>(n % 3);
    cut.keep_some_entry_changes = n % 2 == 1;
    cut.seed = static_cast<uint64_t>(n) * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(op);
    return cut;
  }
  std::string Describe() const {
    return std::string(FaultOpName(op)) + " call " + std::to_string(n) + " failing " +
           std::string(FaultModeName(mode)) + " with " + Error().ToString();
  }
};

// What a sweep found, by kind.
struct SweepFindings {
  uint64_t points = 0, fired = 0;
  std::map<std::string, uint64_t> failures;  // kind -> points
  std::map<std::string, std::string> first;  // kind -> the first such point, described

  uint64_t Count(const std::string& kind) const {
    auto it = failures.find(kind);
    return it == failures.end() ? 0 : it->second;
  }
  void Add(const std::string& kind, const std::string& detail) {
    if (failures[kind]++ == 0) first[kind] = detail;
  }
  std::string Summary() const {
    std::string text = std::to_string(points) + " points tried, " + std::to_string(fired) + " faults fired";
    for (const auto& [kind, count] : failures) text += ", " + kind + ": " + std::to_string(count);
    return text;
  }
};

// Kinds of failure that a known, open defect of the engine explains, with
// the reproducer in crash_io_regression_test.cc that names it. They are
// counted and reported, and a test that finds only those is skipped with
// the defect's name instead of failing; every other kind fails the test.
// Remove an entry once its defect is fixed.
inline const std::map<std::string, std::string>& DeferredKinds() {
  static const std::map<std::string, std::string> kinds = {};
  return kinds;
}

// ---- one run of the workload -----------------------------------------------------

class SweepRun : public ModelChecks {
 public:
  explicit SweepRun(std::optional<SweepPoint> point)
      : ModelChecks(kTable, 4 * kHour, 17),
        point_(point),
        dir_("cairn-io-sweep"),
        no_sync_(Env::Default()),
        clock_(&no_sync_, PeriodStart(Period::kHour, ManualClockEnv::kDefaultStartUnixNanos) + 40 * kMinute),
        env_(&clock_) {
    options_.durability = Durability::kFull;
    options_.maintenance_interval_ms = 0;
    options_.seal_records = 8;
    options_.seal_age_ms = 60 * 1000;
    options_.log_segment_bytes = 4096;
    options_.writer_cache_kib = 128;
    options_.reader_cache_kib = 64;
    options_.max_open_period_files = 2;
  }

  // Runs the workload without faults and returns the calls of each kind
  // it makes once the table exists.
  std::map<FaultOp, int64_t> CountCalls() {
    std::map<FaultOp, int64_t> calls;
    if (!Setup()) return calls;
    Workload();
    for (int op = 0; op < kFaultOpCount; ++op) {
      calls[static_cast<FaultOp>(op)] = env_.CallCount(static_cast<FaultOp>(op));
    }
    SweepFindings findings;
    Verify(&findings);
    return calls;
  }

  // Runs the workload with the point's fault and checks what it left;
  // returns whether the fault fired.
  bool RunPoint(SweepFindings* findings) {
    if (!Setup()) return false;
    if (point_->mode == FaultMode::kOnce) {
      env_.FailNth(point_->op, point_->n, point_->Error(), point_->Effect());
    } else {
      env_.FailFromNth(point_->op, point_->n, point_->Error(), point_->Effect());
    }
    Workload();
    const bool fired = env_.InjectedCount(point_->op) > 0;
    env_.ClearFaults();
    if (fired && point_->mode == FaultMode::kOnce && engine_) CheckWritesResume(findings);
    Verify(findings);
    return fired;
  }

 private:
  // ---- ModelChecks -----------------------------------------------------------------

  void Fail(const std::string& message) override {
    if (range_findings_ != nullptr) {
      SweepFindings* findings = range_findings_;
      range_findings_ = nullptr;  // Report fails through here when not deferred
      Report(findings, LossKind(true), message);
      range_findings_ = findings;
      return;
    }
    std::string context = (point_ ? point_->Describe() : std::string("no fault")) + ": " + message +
                          "\n  actions:";
    for (const std::string& line : trace_) context += "\n    " + line;
    if (!last_cut_.empty()) context += "\n  the power cut:";
    for (const std::string& line : last_cut_) context += "\n    " + line;
    ADD_FAILURE() << context;
  }

  // Queries run only in Verify, after the fault is cleared: an error there
  // is a failure.
  bool QueryStatusOk(const std::string& what, const Status& status) override {
    if (status.ok()) return true;
    Fail(what + " after the fault was cleared: " + status.ToString());
    return false;
  }

  std::string Explain(const Identity& identity) const override {
    auto it = history_.find(identity);
    return it == history_.end() ? std::string() : "\n        " + it->second;
  }

  void Note(std::string action) override {
    trace_.push_back(std::move(action));
    if (trace_.size() > 60) trace_.pop_front();
  }

  int64_t NowNanos() override { return clock_.NowUnixNanos(); }

  // ---- the workload ------------------------------------------------------------------

  bool Setup() {
    auto opened = Engine::Open(&env_, dir_.path(), options_);
    if (!opened.ok()) {
      Fail("Engine::Open of an empty directory: " + opened.status().ToString());
      return false;
    }
    engine_ = std::move(opened).value();
    TableOptions table;
    table.period = Period::kHour;
    table.retention_seconds = kRetentionSeconds;
    table.attributes = {kAttributeTag};  // as the workload expects (crash_workload.h)
    const Status created = engine_->CreateTable(kTable, table);
    if (!created.ok()) {
      Fail("CreateTable: " + created.ToString());
      return false;
    }
    env_.ResetCounters();
    return true;
  }

  // True once the point's fault has fired (a fault-free run: never).
  bool FaultHasFired() const { return point_ && env_.InjectedCount(point_->op) > 0; }

  // Judges an error of a step: expected once the fault has fired; without
  // a fault it is a failure of the engine.
  void Judge(const std::string& what, const Status& status) {
    if (status.ok()) return;
    Note(what + " returned " + status.ToString());
    if (!FaultHasFired()) Fail(what + " failed with no fault injected: " + status.ToString());
  }

  void Workload() {
    const int64_t hour_start = PeriodStart(Period::kHour, clock_.NowUnixNanos());
    Write(0, hour_start + 5 * kMinute);
    Write(1, hour_start + 15 * kMinute);
    Step("SealAll", [&] { return engine_->SealAll(); });
    Write(2, hour_start + 25 * kMinute);
    Advance(65 * kMinute);
    Write(3, hour_start + kHour + 10 * kMinute);
    // Late writes into the sealed hour, some of them new versions.
    Write(4, hour_start + 6 * kMinute, /*rewrite_from=*/0);
    Step("Maintain", [&] { return engine_->Maintain(); });  // seals, compacts the closed hour
    Reopen();
    Write(5, hour_start + kHour + 20 * kMinute, /*rewrite_from=*/3);
    Step("SealAll", [&] { return engine_->SealAll(); });
    Advance(3 * kHour);
    // Both hours written so far are now past retention: the next Maintain
    // may drop them, whether it reports success or not.
    ExpireBefore(hour_start + 2 * kHour);
    Step("Maintain", [&] { return engine_->Maintain(); });
    Write(6, hour_start + 4 * kHour + 30 * kMinute);
    Step("SealAll", [&] { return engine_->SealAll(); });
  }

  void Step(const std::string& what, const std::function<Status()>& action) {
    if (!engine_) return;
    Note(what);
    Judge(what, action());
  }

  void Advance(int64_t nanos) {
    clock_.AdvanceNanos(nanos);
    Note("clock +" + std::to_string(nanos / kNanosPerSecond) + " s");
  }

  // Batch `index`: four readings per device a few seconds apart from
  // `base`; with `rewrite_from`, also every acknowledged reading of that
  // batch again, at a higher version.
  std::vector<Record> Batch(int index, int64_t base, std::optional<int> rewrite_from) {
    std::vector<Record> records;
    for (size_t d = 0; d < kDevices.size(); ++d) {
      for (int i = 0; i < 4; ++i) {
        Record record;
        record.device_id = kDevices[d];
        record.measure_name = kMeasure;
        record.timestamp = base + static_cast<int64_t>(d) * kNanosPerSecond + i * 7 * kNanosPerSecond;
        record.fields = {Field{"value", 20.0 + index + 0.25 * i}, Field{"batch", int64_t{index}}};
        records.push_back(std::move(record));
      }
    }
    if (rewrite_from) {
      for (const auto& [identity, stored] : model_.records()) {
        for (const Field& field : stored.fields) {
          const int64_t* batch = std::get_if<int64_t>(&field.value);
          if (field.name != "batch" || batch == nullptr || *batch != *rewrite_from) continue;
          if (uncertain_.count(identity) != 0) continue;
          Record record;
          record.device_id = identity.device_id;
          record.measure_name = identity.measure_name;
          record.timestamp = identity.timestamp;
          record.version = stored.version + 1;
          record.fields = {Field{"value", -1.0 - index}, Field{"batch", int64_t{index}}};
          records.push_back(std::move(record));
          break;
        }
      }
    }
    return records;
  }

  void Write(int index, int64_t base, std::optional<int> rewrite_from = std::nullopt) {
    if (!engine_) return;
    const std::vector<Record> records = Batch(index, base, rewrite_from);
    Note("write batch " + std::to_string(index) + " (" + std::to_string(records.size()) + " records)");
    Result<WriteResult> written = engine_->Write(kTable, records);
    if (!written.ok()) {
      Judge("Write", written.status());
      for (const Record& record : records) {
        MakeUncertain(record);
        history_[IdentityOf(record)] = "batch " + std::to_string(index) + " v" +
                                       std::to_string(record.version) + ": the Write failed";
      }
      return;
    }
    for (size_t i = 0; i < records.size(); ++i) {
      const WriteOutcome outcome = written->records[i].outcome;
      if (outcome != WriteOutcome::kStored) {
        Fail("batch " + std::to_string(index) + " record " + Describe(IdentityOf(records[i])) + ": outcome " +
             OutcomeName(outcome) + " (" + written->records[i].reason + "), want stored");
        return;
      }
      model_.Apply(records[i]);
      history_[IdentityOf(records[i])] = "batch " + std::to_string(index) + " v" +
                                         std::to_string(records[i].version) + ": acknowledged";
    }
  }

  // The record of a failed Write may or may not be stored, now and after
  // any later recovery: its state before and the attempt both stay possible
  // to the end. (A clean reopen may show an attempt that the page cache
  // holds and the disk never got; a power cut then takes it away.)
  void MakeUncertain(const Record& record) {
    std::vector<std::optional<StoredRecord>>& states = uncertain_[IdentityOf(record)];
    if (states.empty()) {
      const StoredRecord* before = model_.Find(IdentityOf(record));
      states.push_back(before ? std::optional<StoredRecord>(*before) : std::nullopt);
    }
    states.push_back(StoredRecordOf(record));
  }

  // A clean close and reopen in the middle of the workload. A close error
  // is judged like any other; an open that fails leaves the workload
  // without an engine (the rest is skipped) unless the fault was transient,
  // in which case a second open must work.
  void Reopen() {
    if (!engine_) return;
    Note("Close");
    Judge("Close", engine_->Close());
    engine_.reset();
    Note("Open");
    auto opened = Engine::Open(&env_, dir_.path(), options_);
    if (!opened.ok() && FaultHasFired() && point_->mode == FaultMode::kOnce) {
      Note("Open returned " + opened.status().ToString() + "; again, the fault being gone");
      opened = Engine::Open(&env_, dir_.path(), options_);
    }
    if (!opened.ok()) {
      Judge("Open", opened.status());
      return;
    }
    engine_ = std::move(opened).value();
  }

  // Identities of readings before `cutoff` may be dropped by retention from
  // now on: present as acknowledged, or absent, and present again after a
  // power cut that undid the unlink of their period file.
  void ExpireBefore(int64_t cutoff) {
    for (const auto& [identity, stored] : model_.records()) {
      if (identity.timestamp < cutoff) expiring_.emplace(identity, stored);
    }
    for (const auto& [identity, candidates] : uncertain_) {
      if (identity.timestamp < cutoff) expiring_.emplace(identity, std::nullopt);
    }
  }

  // ---- after the fault -------------------------------------------------------------

  // In once mode the fault is gone: a write must work again at once.
  void CheckWritesResume(SweepFindings* findings) {
    const int64_t base = clock_.NowUnixNanos() - 10 * kMinute;
    const std::vector<Record> records = Batch(9, base, std::nullopt);
    Note("write after the fault is gone");
    Result<WriteResult> written = engine_->Write(kTable, records);
    if (!written.ok()) {
      Report(findings, "writes refused after a transient fault", written.status().ToString());
      for (const Record& record : records) MakeUncertain(record);
      return;
    }
    for (const Record& record : records) model_.Apply(record);
  }

  // Close, reopen and check; then cut the power, reopen and check again.
  void Verify(SweepFindings* findings) {
    if (engine_) {
      Note("Close after the workload");
      const Status closed = engine_->Close();
      if (!closed.ok()) Judge("Close", closed);
      engine_.reset();
    }
    if (!OpenForCheck(findings, "clean reopen")) return;
    CheckAll(findings, "after a clean reopen");
    // The gateway goes on taking readings; they must survive the power cut
    // that follows as much as the older ones.
    const int64_t now = clock_.NowUnixNanos();
    const std::vector<Record> records = Batch(10, now - 5 * kMinute, std::nullopt);
    Note("write after the clean reopen");
    Result<WriteResult> written = engine_->Write(kTable, records);
    if (!written.ok()) {
      Fail("Write after a clean reopen, with no fault: " + written.status().ToString());
      return;
    }
    for (const Record& record : records) {
      model_.Apply(record);
      history_[IdentityOf(record)] = "batch 10: acknowledged after the clean reopen";
    }
    engine_.reset();
    const PowerCutOptions cut = point_ ? point_->Cut() : PowerCutOptions{};
    PowerCutReport report;
    const Status status = env_.SimulatePowerCut(cut, &report);
    if (!status.ok()) {
      Fail("SimulatePowerCut: " + status.ToString());
      return;
    }
    Note("power cut (" + std::string(PowerCutDataName(cut.data)) + ", cut seed " + std::to_string(cut.seed) +
         "): " + report.Summary());
    last_cut_ = std::move(report.lines);
    if (!OpenForCheck(findings, "reopen after a power cut")) return;
    CheckAll(findings, "after a power cut");
    if (engine_) {
      const Status closed = engine_->Close();
      if (!closed.ok()) Fail("Close with no fault: " + closed.ToString());
    }
  }

  // Opens the engine after the fault. A refusal under durability full is a
  // failure; when it names the file and the repair command, the repair is
  // run and the engine opened again, so that what the way out costs is
  // measured too (acknowledged readings it loses are failures of their own).
  bool OpenForCheck(SweepFindings* findings, const std::string& what) {
    Note(what);
    auto opened = Engine::Open(&env_, dir_.path(), options_);
    if (opened.ok()) {
      engine_ = std::move(opened).value();
      return true;
    }
    const std::string refusal = opened.status().ToString();
    Report(findings, "open refused under durability full", what + ": " + refusal);
    if (!opened.status().Is(StatusCode::kCorruption) || refusal.find(dir_.path()) == std::string::npos ||
        refusal.find("repair") == std::string::npos) {
      Report(findings, "refusal without the file and the fix", refusal);
      return false;
    }
    Result<LogRepairReport> repaired = Engine::RepairLog(&env_, dir_.path());
    if (!repaired.ok()) {
      Fail("RepairLog: " + repaired.status().ToString());
      return false;
    }
    Note("the repair lost " + std::to_string(repaired->readings_lost) + " readings");
    opened = Engine::Open(&env_, dir_.path(), options_);
    if (!opened.ok()) {
      Fail("Engine::Open after RepairLog: " + opened.status().ToString());
      return false;
    }
    engine_ = std::move(opened).value();
    repaired_ = true;
    return true;
  }

  // Every acknowledged reading exactly once with its value and version;
  // records of failed writes and expiring ones in a state that explains.
  void CheckAll(SweepFindings* findings, const std::string& when) {
    const int64_t now = clock_.NowUnixNanos();
    std::set<Identity> open_questions;
    for (const auto& [identity, acknowledged] : expiring_) open_questions.insert(identity);
    for (const auto& [identity, candidates] : uncertain_) open_questions.insert(identity);
    for (const Identity& identity : open_questions) {
      auto got = engine_->Get(kTable, identity.device_id, identity.measure_name, identity.timestamp,
                              identity.dimensions);
      if (!got.ok()) {
        Report(findings, "query failed after recovery", "Get " + Describe(identity) + " " + when + ": " +
                                                              got.status().ToString());
        return;
      }
      const StoredRecord* acknowledged = model_.Find(identity);
      std::vector<std::optional<StoredRecord>> options = {
          acknowledged ? std::optional<StoredRecord>(*acknowledged) : std::nullopt};
      if (auto it = expiring_.find(identity); it != expiring_.end()) {
        options.push_back(std::nullopt);
        options.push_back(it->second);
      }
      if (auto it = uncertain_.find(identity); it != uncertain_.end()) {
        options.insert(options.end(), it->second.begin(), it->second.end());
      }
      bool matched = false;
      for (const std::optional<StoredRecord>& option : options) {
        const bool visible = option.has_value() && IsVisible(option->ttl, now);
        matched = !got->has_value() ? !visible : visible && SameRow(**got, MakeRow(identity, *option));
        if (matched) {
          model_.Set(identity, option);
          break;
        }
      }
      if (!matched) {
        Report(findings, expiring_.count(identity) != 0 ? "expired reading back in another state"
                                                        : LossKind(acknowledged != nullptr),
               Describe(identity) + " " + when + " is " +
                   (got->has_value() ? Describe(**got) : std::string("absent")) + ", acknowledged " +
                   (acknowledged ? Describe(*acknowledged) : std::string("nothing")) + Explain(identity));
        return;
      }
    }
    // A difference CheckRange finds goes through Fail as this kind.
    range_findings_ = findings;
    for (const std::string& device : kDevices) {
      RangeQuery all;
      all.table = kTable;
      all.device_id = device;
      all.limit = 0;
      const uint64_t before = findings->Count(LossKind(true));
      CheckRange(all, 0);
      if (findings->Count(LossKind(true)) != before) break;
    }
    range_findings_ = nullptr;
  }

  std::string LossKind(bool acknowledged) const {
    if (!acknowledged) return "unacknowledged reading appeared";
    return repaired_ ? "acknowledged reading lost by the repair" : "acknowledged reading lost or changed";
  }

  // A failure of `kind`: counted, and a test failure unless a known defect
  // explains it.
  void Report(SweepFindings* findings, const std::string& kind, const std::string& detail) {
    findings->Add(kind, (point_ ? point_->Describe() : std::string("no fault")) + ": " + detail);
    Note(kind + ": " + detail);
    if (DeferredKinds().count(kind) == 0) Fail(kind + ": " + detail);
  }

  const std::optional<SweepPoint> point_;
  ScopedTempDir dir_;
  // Durability is decided by env_'s simulated power cuts, so the real disk
  // is never synced: env_ -> clock_ -> no_sync_ -> the POSIX Env.
  NoSyncEnv no_sync_;
  ManualClockEnv clock_;
  FaultInjectionEnv env_;
  EngineOptions options_;
  // Identities written by a Write that failed: the state before the first
  // failure, then what each attempt would have stored.
  std::map<Identity, std::vector<std::optional<StoredRecord>>> uncertain_;
  // Identities that retention may have dropped, with their acknowledged
  // state when it began to.
  std::map<Identity, std::optional<StoredRecord>> expiring_;
  std::map<Identity, std::string> history_;
  std::deque<std::string> trace_;
  std::vector<std::string> last_cut_;
  // Whether the log repair ran (a refused open was forced open).
  bool repaired_ = false;
  // Set while CheckAll compares whole ranges: where their differences are
  // counted.
  SweepFindings* range_findings_ = nullptr;
};

}  // namespace cairn::crash::io_sweep
