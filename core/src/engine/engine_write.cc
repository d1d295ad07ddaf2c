// Tables and the write path (group commit); opening and recovery are in
// engine_open.cc.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/engine_impl.h"
#include "engine/write/write_batch.h"
#include "engine/write/write_conflict.h"
#include "engine/health/write_failure.h"
#include "log/log_reader.h"
#include "storage/env_vfs.h"

namespace cairn {

namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;

}  // namespace

std::string_view AggregateFunctionName(AggregateFunction fn) {
  switch (fn) {
    case AggregateFunction::kMin:
      return "min";
    case AggregateFunction::kMax:
      return "max";
    case AggregateFunction::kAvg:
      return "avg";
    case AggregateFunction::kSum:
      return "sum";
    case AggregateFunction::kCount:
      return "count";
    case AggregateFunction::kFirst:
      return "first";
    case AggregateFunction::kLast:
      return "last";
  }
  return "unknown";
}

Result<AggregateFunction> ParseAggregateFunction(std::string_view name) {
  for (auto fn :
       {AggregateFunction::kMin, AggregateFunction::kMax, AggregateFunction::kAvg, AggregateFunction::kSum,
        AggregateFunction::kCount, AggregateFunction::kFirst, AggregateFunction::kLast}) {
    if (AggregateFunctionName(fn) == name) return fn;
  }
  return Status::InvalidArgument("unknown aggregate function '" + std::string(name) +
                                 "' (min, max, avg, sum, count, first, last)");
}

struct EngineImpl::PendingWrite {
  const std::string* table;
  const std::vector<Record>* records;
  WriteResult result;
  Status status;
  bool done = false;  // these four under writers_mutex_
  CondVar cv;
};

struct EngineImpl::AcceptedRecord {
  PendingWrite* writer;
  size_t index;
  Series* series;
  ChunkRecord record;
  int64_t ttl;
  // on_conflict overwrite: the union of the stored record and the write,
  // logged and applied in place of the write.
  std::unique_ptr<Record> merged;

  const Record& source() const { return merged ? *merged : (*writer->records)[index]; }
};

EngineImpl::EngineImpl(Env* env, std::string data_dir, const EngineOptions& options)
    : env_(env),
      data_dir_(std::move(data_dir)),
      options_(options),
      clock_(std::make_unique<ClockTrust>(env, data_dir_, options.clock)),
      head_(env, options.head_memory_budget_bytes, options.seal_records) {}

EngineImpl::~EngineImpl() { (void)Close(); }

Status EngineImpl::CreateTable(const std::string& name, const TableOptions& options) {
  CAIRN_RETURN_IF_ERROR(ValidateTableName(name));
  CAIRN_RETURN_IF_ERROR(ValidateTableOptions(options));
  WriterLock state(&state_mutex_);
  if (closed_) return Status::FailedPrecondition("engine is closed");
  if (tables_.count(name)) return Status::AlreadyExists("table '" + name + "' exists");
  auto table = std::make_unique<TableState>();
  table->info.name = name;
  table->info.options = options;
  table->info.created_unix_nanos = env_->NowUnixNanos();
  CAIRN_RETURN_IF_ERROR(env_->CreateDirs(TableDir(name)));
  CAIRN_RETURN_IF_ERROR(env_->SyncDir(data_dir_));
  CAIRN_RETURN_IF_ERROR(catalog_->PutTable(table->info));
  tables_.emplace(name, std::move(table));
  return Status::Ok();
}

Status EngineImpl::AlterTable(const std::string& name, const TableOptions& options) {
  CAIRN_RETURN_IF_ERROR(ValidateTableOptions(options));
  WriterLock state(&state_mutex_);
  auto it = tables_.find(name);
  if (it == tables_.end()) return Status::NotFound("table '" + name + "' does not exist");
  TableState& t = *it->second;
  if (options.period != t.info.options.period && (!t.period_starts.empty() || !t.series.empty())) {
    return Status::InvalidArgument("the period of table '" + name + "' cannot change once it holds data");
  }
  TableInfo updated = t.info;
  updated.options = options;
  CAIRN_RETURN_IF_ERROR(catalog_->PutTable(updated));
  t.info = std::move(updated);
  return Status::Ok();
}

Status EngineImpl::DropTable(const std::string& name) {
  // A group commit holds series pointers across its log write, and a seal
  // across its period-file writes: neither may see the table vanish.
  MutexLock commit(&commit_mutex_);
  MutexLock seal(&seal_mutex_);
  WriterLock state(&state_mutex_);
  auto it = tables_.find(name);
  if (it == tables_.end()) return Status::NotFound("table '" + name + "' does not exist");
  // The catalog first: once the table is gone there, a crash leaves only
  // orphan files, and replay skips the table's log records.
  CAIRN_RETURN_IF_ERROR(catalog_->DeleteTable(name));
  for (const auto& [key, series] : it->second->series) head_.Forget(*series);
  tables_.erase(it);
  ForgetPeriodFiles(name, INT64_MIN);
  const std::string dir = TableDir(name);
  if (auto files = env_->ListDir(dir); files.ok()) {
    for (const std::string& file : *files) CAIRN_RETURN_IF_ERROR(env_->RemoveFile(JoinPath(dir, file)));
  }
  CAIRN_RETURN_IF_ERROR(env_->RemoveDir(dir));
  return env_->SyncDir(data_dir_);
}

Result<std::vector<TableInfo>> EngineImpl::ListTables() {
  ReaderLock state(&state_mutex_);
  std::vector<TableInfo> out;
  for (const auto& [name, t] : tables_) out.push_back(t->info);
  return out;
}

Result<TableInfo> EngineImpl::GetTable(const std::string& name) {
  ReaderLock state(&state_mutex_);
  auto it = tables_.find(name);
  if (it == tables_.end()) return Status::NotFound("table '" + name + "' does not exist");
  return it->second->info;
}

// ---- writes -------------------------------------------------------------------

Result<WriteResult> EngineImpl::Write(const std::string& table, const std::vector<Record>& records) {
  // Refused before the log: nothing of a refused batch is stored.
  CAIRN_RETURN_IF_ERROR(reclaimer_->Admit(table, /*received=*/false));
  return WriteThroughClock(table, records);
}

Result<WriteResult> EngineImpl::WriteReceived(const std::string& table, const std::vector<Record>& records) {
  CAIRN_RETURN_IF_ERROR(reclaimer_->Admit(table, /*received=*/true));
  return WriteThroughClock(table, records);
}

Result<WriteResult> EngineImpl::WriteAdmitted(const std::string& table, const std::vector<Record>& records) {
  PendingWrite w;
  w.table = &table;
  w.records = &records;
  writers_mutex_.Lock();
  writers_.push_back(&w);
  while (!w.done && &w != writers_.front()) w.cv.Wait(&writers_mutex_);
  if (w.done) {
    writers_mutex_.Unlock();
    if (!w.status.ok()) return w.status;
    return std::move(w.result);
  }
  // This writer leads: it commits every batch queued so far in one log write.
  std::vector<PendingWrite*> group;
  size_t group_records = 0;
  for (PendingWrite* p : writers_) {
    if (!group.empty() && group_records + p->records->size() > 65536) break;
    group.push_back(p);
    group_records += p->records->size();
  }
  writers_mutex_.Unlock();
  Status status = CommitGroup(group);
  writers_mutex_.Lock();
  for (PendingWrite* p : group) {
    writers_.pop_front();
    if (p != &w) {
      if (!status.ok()) p->status = status;
      p->done = true;
      p->cv.Signal();
    }
  }
  if (!writers_.empty()) writers_.front()->cv.Signal();
  writers_mutex_.Unlock();
  if (!status.ok()) return status;
  if (!w.status.ok()) return w.status;
  return std::move(w.result);
}

uint64_t EngineImpl::SeriesLimit(const TableState& table) const {
  return table.info.options.max_series != 0 ? table.info.options.max_series : options_.default_max_series;
}

std::string EngineImpl::SeriesLimitReason(const TableState& table, const Record& record) const {
  const std::string& name = table.info.name;
  return "table '" + name + "' holds its limit of " + std::to_string(SeriesLimit(table)) +
         " series (max_series) and this record would start another (device '" + record.device_id +
         "', measure '" + record.measure_name + "'); raise the limit to store it: alter-table " + name +
         " --max-series N in the shell, or PATCH /v1/tables/" + name + "?max_series=N";
}

Series* EngineImpl::FindOrCreateSeries(TableState& table, const std::string& device_id,
                                       const std::string& measure_name, const TagMap& dimensions,
                                       bool* created) {
  SeriesKey key{device_id, measure_name, EncodeTagMap(dimensions)};
  auto it = table.series.find(key);
  *created = false;
  if (it != table.series.end()) return it->second.get();
  *created = true;
  auto series = std::make_unique<Series>();
  series->id = next_series_id_++;
  series->device_id = device_id;
  series->measure_name = measure_name;
  series->dimensions = dimensions;
  series->dimensions_key = key.dimensions_key;
  series->latest_known = true;  // a new series has no older data anywhere
  Series* raw = series.get();
  table.series.emplace(raw->KeyRef(), std::move(series));
  return raw;
}

void EngineImpl::UndoSeriesChanges(const std::vector<SeriesUndo>& undo) {
  for (auto it = undo.rbegin(); it != undo.rend(); ++it) {
    Series* series = it->series;
    if (it->created) {
      it->table->series.erase(it->table->series.find(series->KeyRef()));
      continue;
    }
    series->schema = it->schema;
    series->attributes = it->attributes;
  }
}

void EngineImpl::CountOutcomes(const std::vector<PendingWrite*>& group) {
  for (PendingWrite* w : group) {
    if (!w->status.ok()) continue;
    for (const RecordResult& r : w->result.records) {
      switch (r.outcome) {
        case WriteOutcome::kStored:
          ++w->result.stored;
          break;
        case WriteOutcome::kDuplicate:
          ++w->result.duplicates;
          break;
        case WriteOutcome::kRejectedVersion:
          ++w->result.rejected;
          break;
        case WriteOutcome::kInvalid:
          ++w->result.invalid;
          break;
        case WriteOutcome::kConflict:
          ++w->result.conflicts;
          break;
      }
    }
    records_written_ += w->result.stored;
    records_duplicate_ += w->result.duplicates;
    records_rejected_ += w->result.rejected;
    records_invalid_ += w->result.invalid;
    records_conflict_ += w->result.conflicts;
  }
}

Result<bool> EngineImpl::JudgeWrite(TableState& table, const Series& series, const Record& r,
                                    const PendingIdentities& pending, const std::vector<AcceptedRecord>& accepted,
                                    RecordResult* out, std::unique_ptr<Record>* merged) {
  std::optional<StoredRecord> stored;
  if (auto p = pending.find(&series); p != pending.end()) {
    if (auto q = p->second.find(r.timestamp); q != p->second.end()) {
      const Record& earlier = accepted[q->second].source();
      stored = StoredRecord{earlier.version, 0, earlier.fields};
    }
  }
  if (!stored) {
    CAIRN_ASSIGN_OR_RETURN(stored, FindStored(table, series, r.timestamp));
  }
  if (!stored || r.version > stored->version) return true;
  if (r.version < stored->version) {
    out->outcome = WriteOutcome::kRejectedVersion;
    out->reason = "version " + std::to_string(r.version) + " is lower than the stored version " +
                  std::to_string(stored->version);
    return false;
  }
  SameVersionJudgement judged = JudgeSameVersion(r, stored->fields, table.info.options.on_conflict);
  if (judged.outcome != WriteOutcome::kStored) {
    out->outcome = judged.outcome;
    out->reason = std::move(judged.reason);
    return false;
  }
  *merged = std::move(judged.merged);
  return true;
}

// One function, because one state-lock scope admits the whole group (judging
// each record, recording new series in the catalog) and another applies it
// after the log write; splitting them would hand partial state between
// functions.
struct EngineImpl::GroupJudgement {
  std::vector<AcceptedRecord> accepted;
  // The accepted records by identity (index into `accepted`): a later
  // record of the group is judged against them, not yet in the head.
  PendingIdentities pending;
  // Series created or whose schema or attributes changed, with their table.
  std::map<Series*, const std::string*> changed_series;
  // How to take those changes back if the catalog cannot record them.
  std::vector<SeriesUndo> undo;

  void WillChange(TableState& table, Series* series, bool created) {
    if (!changed_series.emplace(series, &table.info.name).second) return;
    undo.push_back(SeriesUndo{&table, series, created, series->schema, series->attributes});
  }
};

std::string EngineImpl::RefusalOf(const TableState& table, const Record& r, const Series* existing,
                                  int64_t oldest_allowed, int64_t now) {
  if (Status valid = ValidateRecord(r); !valid.ok()) return valid.message();
  if (r.timestamp < oldest_allowed) {
    return "timestamp " + std::to_string(r.timestamp) + " is older than the table's retention of " +
           std::to_string(table.info.options.retention_seconds) + " s";
  }
  // The receiver's own stamps come from the trusted clock (or from the
  // hold, stamped by it): only a client's timestamp is judged.
  if (!r.receiver_time) {
    if (std::string why = clock_->CheckClientTimestamp(r.timestamp, now); !why.empty()) return why;
  }
  // Types must agree with the series before anything changes.
  for (const Field& f : r.fields) {
    if (!existing) break;
    if (std::string conflict = existing->TypeConflict(f.name, TypeOf(f.value)); !conflict.empty()) return conflict;
  }
  if (existing == nullptr && table.series.size() >= SeriesLimit(table)) {
    ++records_over_series_limit_;
    return SeriesLimitReason(table, r);
  }
  return "";
}

Status EngineImpl::JudgeGroup(const std::vector<PendingWrite*>& group, GroupJudgement* judged) {
  const int64_t now = env_->NowUnixNanos();
  // Retention refuses old readings only by a clock that may delete: on an
  // untrusted clock (1970, or stepped a year ahead) it would refuse the very
  // readings it cannot judge.
  const std::optional<int64_t> deletion_now = clock_->DeletionNow();
  for (PendingWrite* w : group) {
    const std::vector<Record>& records = *w->records;
    w->result.records.assign(records.size(), RecordResult{});
    auto table_it = tables_.find(*w->table);
    if (table_it == tables_.end()) {
      w->status = Status::NotFound("table '" + *w->table + "' does not exist");
      continue;
    }
    TableState& table = *table_it->second;
    const int64_t oldest_allowed =
        deletion_now ? *deletion_now - table.info.options.retention_seconds * kNanosPerSecond : INT64_MIN;
    for (size_t i = 0; i < records.size(); ++i) {
      const Record& r = records[i];
      RecordResult& out = w->result.records[i];
      TagMap dimensions, attributes;
      SplitTags(table.info.options, r.dimensions, &dimensions, &attributes);
      auto series_it = table.series.find(SeriesKey{r.device_id, r.measure_name, EncodeTagMap(dimensions)});
      Series* series = series_it == table.series.end() ? nullptr : series_it->second.get();
      if (std::string why = RefusalOf(table, r, series, oldest_allowed, now); !why.empty()) {
        out.outcome = WriteOutcome::kInvalid;
        out.reason = std::move(why);
        continue;
      }
      if (series == nullptr) {
        bool created = false;
        series = FindOrCreateSeries(table, r.device_id, r.measure_name, dimensions, &created);
        if (created) judged->WillChange(table, series, /*created=*/true);
      }
      std::unique_ptr<Record> merged;
      CAIRN_ASSIGN_OR_RETURN(bool store,
                             JudgeWrite(table, *series, r, judged->pending, judged->accepted, &out, &merged));
      if (!store) continue;
      for (const Field& f : (merged ? *merged : r).fields) {
        if (!series->FieldIndex(f.name)) {
          judged->WillChange(table, series, /*created=*/false);
          series->AddField(table.schemas, f.name, TypeOf(f.value));
        }
      }
      if (!attributes.empty() && attributes != series->attributes) {
        judged->WillChange(table, series, /*created=*/false);
        series->attributes = std::move(attributes);
      }
      judged->pending[series][r.timestamp] = judged->accepted.size();
      const int64_t ttl = RecordExpiry(r.ttl, r.timestamp, table.info.options.default_ttl_seconds);
      AcceptedRecord a{w, i, series, ChunkRecord{}, ttl, std::move(merged)};
      a.record.timestamp = r.timestamp;
      a.record.version = r.version;
      a.record.ttl = ttl;
      judged->accepted.push_back(std::move(a));
    }
  }
  return Status::Ok();
}

Status EngineImpl::RecordSeriesChanges(const GroupJudgement& judged) {
  if (judged.changed_series.empty()) return Status::Ok();
  std::vector<CatalogSeries> changes;
  for (const auto& [series, table_name] : judged.changed_series) {
    changes.push_back(CatalogSeries{series->id, *table_name, series->device_id, series->measure_name,
                                    series->shard, series->fields(), series->dimensions, series->attributes});
  }
  if (Status put = catalog_->PutSeries(changes); !put.ok()) {
    // Memory must not hold a series id or a field the catalog lacks: a
    // later write would use it without recording it.
    UndoSeriesChanges(judged.undo);
    return ReportWriteFailure(env_, data_dir_, "the catalog", put, health_);
  }
  return Status::Ok();
}

bool EngineImpl::ApplyToHeads(std::vector<AcceptedRecord>& accepted, uint64_t first_lsn,
                              uint64_t* reading_bytes) {
  bool seal_due = head_.OverBudget();
  for (size_t k = 0; k < accepted.size(); ++k) {
    AcceptedRecord& a = accepted[k];
    const Record& r = a.source();
    if (a.merged) ++records_overwritten_;
    *reading_bytes += ReadingBytes(r);
    const SeriesSchema& schema = *a.series->schema;
    a.record.values.resize(schema.size());
    for (const Field& f : r.fields) a.record.values[*schema.Find(f.name)] = f.value;
    head_.Insert(*a.series, std::move(a.record), first_lsn + k);
    seal_due = seal_due || head_.Full(*a.series);
    WriteResult& result = a.writer->result;
    if (result.first_lsn == 0) result.first_lsn = first_lsn + k;
  }
  return seal_due;
}

void EngineImpl::WaitForHeadRoom() {
  // Without a maintenance thread (tests that drive Maintain themselves)
  // nothing would end the wait.
  if (options_.maintenance_interval_ms <= 0) return;
  {
    ReaderLock state(&state_mutex_);
    if (!head_.OverBudget()) return;
  }
  MutexLock lock(&background_mutex_);
  const uint64_t seen = maintenance_rounds_ended_;
  maintenance_requested_ = true;
  background_cv_.SignalAll();
  // One round, whatever it achieved: a seal that fails (a full disk) must
  // slow writers, not stop them; they then gain one group per round.
  background_cv_.WaitFor(&background_mutex_, kHeadRoomWaitLimit, [&]() REQUIRES(background_mutex_) {
    return stopping_ || maintenance_rounds_ended_ != seen;
  });
}

Status EngineImpl::CommitGroup(const std::vector<PendingWrite*>& group) {
  MutexLock commit(&commit_mutex_);
  WaitForHeadRoom();
  GroupJudgement judged;
  std::vector<LoggedRecord> logged;
  uint64_t first_lsn = 0;
  {
    WriterLock state(&state_mutex_);
    if (closed_) return Status::FailedPrecondition("engine is closed");
    CAIRN_RETURN_IF_ERROR(JudgeGroup(group, &judged));
    // Series ids and schemas reach the catalog before any log record uses them.
    CAIRN_RETURN_IF_ERROR(RecordSeriesChanges(judged));
    if (judged.accepted.empty()) {
      CountOutcomes(group);
      return Status::Ok();
    }
    logged.reserve(judged.accepted.size());
    for (AcceptedRecord& a : judged.accepted) {
      logged.push_back(LoggedRecord{a.writer->table, &a.source(), a.ttl});
    }
    first_lsn = next_lsn_;
    next_lsn_ += judged.accepted.size();
    inflight_first_lsn_ = first_lsn;
  }

  // The log write and its sync run without the state lock: queries go on.
  const std::string payload = EncodeWriteBatch(logged);
  Status status = log_->Append(first_lsn, static_cast<uint32_t>(judged.accepted.size()), payload,
                               /*sync=*/options_.durability == Durability::kFull);

  uint64_t reading_bytes = 0;
  bool seal_due = false;
  {
    WriterLock state(&state_mutex_);
    inflight_first_lsn_ = 0;
    // Nothing of a failed group is in the log (the writer settles back to
    // what it holds durably), so its LSNs go to the next group: numbering
    // stays contiguous, and a clean stop leaves a log the next start accepts.
    if (!status.ok()) next_lsn_ = first_lsn;
    else seal_due = ApplyToHeads(judged.accepted, first_lsn, &reading_bytes);
  }
  if (!status.ok()) return ReportWriteFailure(env_, data_dir_, "the write-ahead log", status, health_);
  ClearWriteFailures(health_);
  flash_wear_->CountReadingBytes(reading_bytes);
  if (seal_due && options_.maintenance_interval_ms > 0) {
    {
      MutexLock lock(&background_mutex_);
      maintenance_requested_ = true;
    }
    background_cv_.SignalAll();
  }
  CountOutcomes(group);
  return Status::Ok();
}

}  // namespace cairn
