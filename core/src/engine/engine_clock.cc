// Clock trust in the engine (cairn/core/clock.h): stamping the readings the
// receiver stamped, the hold for those that arrive while the clock is
// untrusted, and stamping the hold once it can be.
#include <algorithm>
#include <cstdio>

#include "engine/engine_impl.h"
#include "engine/health/write_failure.h"

namespace cairn {

namespace {

// A boot id for a system that does not name its boots: unique to this
// process, so readings held by an earlier process count as another boot's
// (estimated), never as this boot's (which would claim an exact stamp).
std::string ProcessBootId(Env* env) {
  uint8_t bytes[8] = {};
  (void)env->RandomBytes(bytes);
  std::string id = "process-";
  char hex[3];
  for (uint8_t b : bytes) {
    snprintf(hex, sizeof hex, "%02x", b);
    id += hex;
  }
  return id;
}

// Records the offset of every boot whose held readings can be stamped now:
// this boot's once the clock is trusted (exact), an earlier boot's as an
// estimate. A boot already resolved keeps its offset.
Status DecideBootOffsets(HeldReadings& held, ClockTrust& clock, const std::string& this_boot) {
  const bool trusted = clock.Trusted();
  // Wall time at monotonic 0 of this boot: every earlier boot ended before it.
  const int64_t this_boot_start = clock.TrustedOffsetNanos();
  struct BootSpan {
    int64_t max_monotonic = INT64_MIN;
    int64_t last_trusted = 0;
  };
  std::map<std::string, BootSpan> boots;
  for (const HeldReading& r : held.readings()) {
    BootSpan& span = boots[r.boot_id];
    span.max_monotonic = std::max(span.max_monotonic, r.monotonic_ns);
    span.last_trusted = std::max(span.last_trusted, r.last_trusted_ns);
  }
  for (const auto& [boot, span] : boots) {
    if (held.resolutions().count(boot)) continue;
    BootResolution resolution;
    if (boot == this_boot) {
      if (!trusted) continue;  // exact stamps come with trust in this boot
      resolution.offset_ns = clock.TrustedOffsetNanos();
    } else {
      // The boot never saw trust. It started after its last trusted time
      // (the best lower bound) and ended before this boot started (an upper
      // bound once this boot's clock is trusted).
      resolution.estimated = true;
      if (span.last_trusted > 0) {
        resolution.offset_ns = span.last_trusted;
        if (trusted) resolution.offset_ns = std::min(resolution.offset_ns, this_boot_start - span.max_monotonic);
      } else if (trusted) {
        resolution.offset_ns = this_boot_start - span.max_monotonic;
      } else {
        continue;  // nothing to estimate from yet
      }
    }
    CAIRN_RETURN_IF_ERROR(held.Resolve(boot, resolution));
  }
  return Status::Ok();
}

}  // namespace

Status EngineImpl::OpenClock() {
  CAIRN_RETURN_IF_ERROR(clock_->Open());
  boot_id_ = env_->BootId();
  if (boot_id_.empty()) boot_id_ = ProcessBootId(env_);
  CAIRN_ASSIGN_OR_RETURN(held_, HeldReadings::Open(env_, data_dir_));
  held_now_ = held_->readings().size();
  // Readings of an earlier boot can be stamped (with an estimate) at once;
  // this boot's wait for trust. A failure here (a full disk) leaves them
  // held for the next round: the start goes on.
  if (!held_->readings().empty()) (void)ResolveHeld();
  if (clock_->Trusted()) (void)clock_->SaveIfDue(/*force=*/true);
  UpdateClockHealth();
  return Status::Ok();
}

Result<WriteResult> EngineImpl::WriteThroughClock(const std::string& table, const std::vector<Record>& records) {
  const bool any_receiver_time =
      std::any_of(records.begin(), records.end(), [](const Record& r) { return r.receiver_time; });
  if (!any_receiver_time) return WriteAdmitted(table, records);
  if (clock_->Trusted()) {
    // A receiver stamp taken before trust arrived (or from a clock that
    // stepped since) is replaced by the trusted clock's reading now.
    std::vector<Record> stamped(records);
    const int64_t now = env_->NowUnixNanos();
    const int64_t since = clock_->TrustedSinceUnixNanos();
    for (Record& r : stamped) {
      if (r.receiver_time && (r.timestamp < since || r.timestamp > now)) r.timestamp = now;
    }
    return WriteAdmitted(table, stamped);
  }
  {
    ReaderLock state(&state_mutex_);
    if (!tables_.count(table)) return Status::NotFound("table '" + table + "' does not exist");
  }
  // Client-stamped records go through the log as usual; receiver-stamped
  // ones wait in the hold. The log first: when it refuses (disk full), the
  // call fails as a whole and nothing is stored.
  std::vector<Record> direct;
  std::vector<size_t> direct_index, held_index;
  for (size_t i = 0; i < records.size(); ++i) {
    if (records[i].receiver_time) {
      held_index.push_back(i);
    } else {
      direct.push_back(records[i]);
      direct_index.push_back(i);
    }
  }
  WriteResult out;
  out.records.resize(records.size());
  if (!direct.empty()) {
    CAIRN_ASSIGN_OR_RETURN(WriteResult written, WriteAdmitted(table, direct));
    for (size_t k = 0; k < direct_index.size(); ++k) out.records[direct_index[k]] = std::move(written.records[k]);
    out.first_lsn = written.first_lsn;
    out.stored += written.stored;
    out.duplicates += written.duplicates;
    out.rejected += written.rejected;
    out.invalid += written.invalid;
    out.conflicts += written.conflicts;
  }
  HoldRecords(table, records, held_index, &out);
  return out;
}

void EngineImpl::HoldRecords(const std::string& table, const std::vector<Record>& records,
                             const std::vector<size_t>& indexes, WriteResult* out) {
  const auto refuse = [&](size_t i, std::string reason) {
    out->records[i].outcome = WriteOutcome::kInvalid;
    out->records[i].reason = std::move(reason);
    ++out->invalid;
    ++records_invalid_;
  };
  const int64_t monotonic = env_->MonotonicNanos();
  const int64_t last_trusted = clock_->Snapshot().last_trusted_unix_nanos;
  std::vector<HeldReading> hold;
  std::vector<size_t> hold_index;
  {
    // What would be refused later, when the hold is stamped, is refused now
    // while the client can still hear it: bad records and type conflicts.
    ReaderLock state(&state_mutex_);
    auto table_it = tables_.find(table);
    for (size_t i : indexes) {
      const Record& r = records[i];
      if (Status valid = ValidateRecord(r); !valid.ok()) {
        refuse(i, valid.message());
        continue;
      }
      std::string conflict;
      if (table_it != tables_.end()) {
        TagMap dimensions, attributes;
        SplitTags(table_it->second->info.options, r.dimensions, &dimensions, &attributes);
        auto series =
            table_it->second->series.find(SeriesKey{r.device_id, r.measure_name, EncodeTagMap(dimensions)});
        for (const Field& f : r.fields) {
          if (series == table_it->second->series.end()) break;
          const Series& s = *series->second;
          conflict = s.TypeConflict(f.name, TypeOf(f.value));
          if (!conflict.empty()) break;
        }
      }
      if (!conflict.empty()) {
        refuse(i, std::move(conflict));
        continue;
      }
      hold.push_back(HeldReading{table, r, boot_id_, monotonic, last_trusted});
      hold_index.push_back(i);
    }
  }
  if (hold.empty()) return;
  MutexLock lock(&held_mutex_);
  const uint64_t limit = options_.clock.max_held_readings;
  if (held_->readings().size() + hold.size() > limit) {
    for (size_t i : hold_index) {
      refuse(i, "the gateway clock is not trusted yet and " + std::to_string(held_->readings().size()) +
                    " readings without a timestamp already wait for it (the limit is " + std::to_string(limit) +
                    "); send a timestamp, or let the clock be set (NTP)");
    }
    return;
  }
  const size_t count = hold.size();
  if (Status held = held_->Append(std::move(hold)); !held.ok()) {
    hold_error_ = held.message();
    (void)ReportWriteFailure(env_, data_dir_, "the clock hold", held, health_);
    for (size_t i : hold_index) refuse(i, "could not be held for the clock: " + held.message());
    return;
  }
  hold_error_.clear();
  for (size_t i : hold_index) out->records[i] = RecordResult{};
  out->stored += count;
  records_written_ += count;
  readings_held_ += count;
  held_now_ = held_->readings().size();
  UpdateClockHealth();
}

// Why this shape: a reading's stamp is decided once per boot, durably (the
// resolution frame) and before any of the boot's readings reaches its
// table, so that a crash at any point stamps the same readings identically
// on the next try (a duplicate then, not a second copy at another time).
Status EngineImpl::ResolveHeld() {
  MutexLock lock(&held_mutex_);
  if (held_->readings().empty()) return Status::Ok();
  if (Status decided = DecideBootOffsets(*held_, *clock_, boot_id_); !decided.ok()) {
    hold_error_ = decided.message();
    return decided;
  }
  // Stamp what has a resolution, one table at a time in arrival order.
  std::map<std::string, std::vector<Record>> by_table;
  std::map<std::string, std::vector<bool>> estimated_by_table;
  std::vector<HeldReading> keep;
  for (const HeldReading& r : held_->readings()) {
    auto resolution = held_->resolutions().find(r.boot_id);
    if (resolution == held_->resolutions().end()) {
      keep.push_back(r);
      continue;
    }
    Record record = r.record;
    record.timestamp = r.monotonic_ns + resolution->second.offset_ns;
    if (resolution->second.estimated) {
      const bool has_flag = std::any_of(record.fields.begin(), record.fields.end(),
                                        [](const Field& f) { return f.name == kClockEstimatedField; });
      if (!has_flag) record.fields.push_back(Field{std::string(kClockEstimatedField), true});
    }
    by_table[r.table].push_back(std::move(record));
    estimated_by_table[r.table].push_back(resolution->second.estimated);
  }
  if (by_table.empty()) return Status::Ok();
  for (auto& [table, records] : by_table) {
    Result<WriteResult> written = WriteAdmitted(table, records);
    if (!written.ok()) {
      if (written.status().Is(StatusCode::kNotFound)) {
        restamps_refused_ += records.size();  // the table was dropped meanwhile
        hold_error_ = written.status().message();
        continue;
      }
      // The log cannot take them now (disk full): all stay held, and the
      // resolutions written make the next try stamp them the same way.
      hold_error_ = written.status().message();
      return written.status();
    }
    const std::vector<bool>& estimated = estimated_by_table[table];
    for (size_t i = 0; i < written->records.size(); ++i) {
      const WriteOutcome outcome = written->records[i].outcome;
      if (outcome == WriteOutcome::kInvalid || outcome == WriteOutcome::kRejectedVersion ||
          outcome == WriteOutcome::kConflict) {
        ++restamps_refused_;
        hold_error_ = "a held reading was refused when stamped: " + written->records[i].reason;
      } else if (estimated[i]) {
        ++readings_estimated_;
      } else {
        ++readings_restamped_;
      }
    }
  }
  Status rewritten = held_->Rewrite(std::move(keep));
  if (!rewritten.ok()) hold_error_ = rewritten.message();
  held_now_ = held_->readings().size();
  UpdateClockHealth();
  return rewritten;
}

void EngineImpl::UpdateClockHealth() {
  constexpr std::string_view kKey = "clock.untrusted";
  const ClockStatus clock = clock_->Snapshot();
  const uint64_t held = held_now_;
  if (clock.trusted || held == 0) {
    health_.Clear(kKey);
    return;
  }
  HealthProblem problem;
  problem.key = std::string(kKey);
  problem.component = "clock";
  problem.message = "the gateway clock is not trusted: " + clock.reason + "; " + std::to_string(held) +
                    " reading(s) without a timestamp wait in " + JoinPath(data_dir_, "held.log") +
                    " to be stamped, and retention and ttl delete nothing meanwhile";
  problem.remedy =
      "let a time daemon set the clock (NTP), or set it by hand; if the clock is right, start with --clock "
      "trust=always";
  health_.Raise(std::move(problem), env_->NowUnixNanos());
}

ClockStatus EngineImpl::Clock() {
  ClockStatus status = clock_->Snapshot();
  status.held_readings = held_now_;
  status.readings_held = readings_held_;
  status.readings_restamped = readings_restamped_;
  status.readings_estimated = readings_estimated_;
  status.restamps_refused = restamps_refused_;
  {
    MutexLock lock(&held_mutex_);
    if (!hold_error_.empty()) status.last_error = hold_error_;
  }
  return status;
}

}  // namespace cairn
