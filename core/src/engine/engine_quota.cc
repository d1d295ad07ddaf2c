// The engine's side of the sync quota: the tables, series and period files
// as the Reclaimer (reclaimer.h) reaches them, through EngineImpl::QuotaStore.
#include "engine/engine_impl.h"

namespace cairn {

SyncQuotaStatus EngineImpl::QuotaStatus() { return reclaimer_->QuotaStatus(); }

Result<std::vector<ReclaimerStore::SyncedTable>> EngineImpl::QuotaStore::SyncedTables() {
  std::vector<SyncedTable> synced;
  ReaderLock state(&engine_->state_mutex_);
  if (engine_->closed_) return Status::FailedPrecondition("engine is closed");
  for (const auto& [name, table] : engine_->tables_) {
    if (table->info.options.sync) synced.push_back({name, table->info.options.period, table->period_starts});
  }
  return synced;
}

bool EngineImpl::QuotaStore::IsSynced(const std::string& table) {
  ReaderLock state(&engine_->state_mutex_);
  auto it = engine_->tables_.find(table);
  return it != engine_->tables_.end() && it->second->info.options.sync;
}

Result<UnsyncedSummary> EngineImpl::QuotaStore::SummarizeUnsynced(const std::string& table,
                                                                  const LsnRangeSet& confirmed) {
  return engine_->SummarizeUnsynced(table, confirmed);
}

Status EngineImpl::QuotaStore::WithPeriodFile(const std::string& table, Period period, int64_t start,
                                              const std::function<Status(PeriodFile&)>& work) {
  CAIRN_ASSIGN_OR_RETURN(auto handle, engine_->GetPeriodFile(table, period, start, PeriodAccess::kWrite));
  MutexLock file_lock(&handle->mutex);
  return work(*handle->file);
}

Status EngineImpl::QuotaStore::EnsureAggregateSeries(const std::string& table,
                                                     const std::vector<AggregateRequest>& requests,
                                                     std::map<int64_t, AggregateTarget>* targets) {
  WriterLock state(&engine_->state_mutex_);
  auto t = engine_->tables_.find(table);
  if (t == engine_->tables_.end()) return Status::NotFound("table '" + table + "' does not exist");
  std::vector<CatalogSeries> changes;
  for (const AggregateRequest& request : requests) {
    const PeriodSeries& raw = *request.raw;
    bool created = false;
    // The aggregates of each raw series stay apart by its dimensions.
    Series* series =
        engine_->FindOrCreateSeries(*t->second, raw.device_id, request.measure, raw.dimensions, &created);
    bool changed = created, fits = true;
    for (const ChunkField& f : request.fields) {
      const std::optional<size_t> index = series->FieldIndex(f.name);
      if (!index) {
        series->AddField(t->second->schemas, f.name, f.type);
        changed = true;
      } else if (series->fields()[*index].type != f.type) {
        fits = false;  // a client wrote this series with other types
      }
    }
    if (created) {
      series->shard = raw.shard;
      auto raw_series =
          t->second->series.find(SeriesKey{raw.device_id, raw.measure_name, EncodeTagMap(raw.dimensions)});
      if (raw_series != t->second->series.end()) series->attributes = raw_series->second->attributes;
    }
    if (changed) {
      changes.push_back(CatalogSeries{series->id, table, series->device_id, series->measure_name,
                                      series->shard, series->fields(), series->dimensions, series->attributes});
    }
    if (fits) {
      (*targets)[raw.series_id] = AggregateTarget{series->id,         request.measure,    series->fields(),
                                                  series->dimensions, series->attributes, series->shard};
    }
  }
  if (!changes.empty()) CAIRN_RETURN_IF_ERROR(engine_->catalog_->PutSeries(changes));
  return Status::Ok();
}

void EngineImpl::QuotaStore::SeriesRewritten(const std::string& table, const std::set<int64_t>& touched,
                                             const std::vector<ChunkRow>& added) {
  WriterLock state(&engine_->state_mutex_);
  auto t = engine_->tables_.find(table);
  if (t == engine_->tables_.end()) return;
  for (auto& [key, series] : t->second->series) {
    if (!touched.count(series->id)) continue;
    series->latest_known = false;
    series->latest_in_head = false;
    series->latest.reset();
    ++series->generation;
    for (const ChunkRow& row : added) {
      if (row.series_id == series->id) {
        series->sealed_max_timestamp = std::max(series->sealed_max_timestamp, row.end_ns);
      }
    }
  }
}

Result<uint64_t> EngineImpl::QuotaStore::WithSealsHeld(const std::function<Result<uint64_t>()>& work) {
  MutexLock seal_lock(&engine_->seal_mutex_);
  return work();
}

}  // namespace cairn
