// The sync feed: a table's records read back by LSN (ReadChanges), what of
// a table lies outside its confirmed set (SummarizeUnsynced), the ledger in
// the catalog, and the retention hold that keeps unsynced period files.
//
// Records live in two places, the head (each entry with its LSN) and sealed
// chunks (each with the LSN of every record, period_format.md). A record can
// move from the head to a chunk between the two reads, so the feed takes the
// head first, under the state lock, then the period files, and keeps one
// copy per LSN: a record sealed meanwhile is in the head copy, and one
// sealed before is already committed in its file.
#include <algorithm>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "engine/engine_impl.h"

namespace cairn {

namespace {

// What the feed needs of a series, copied under the state lock.
struct SeriesIdentity {
  std::string device_id, measure_name;
  int shard = 0;
  std::vector<ChunkField> fields;
  TagMap dimensions, attributes;
};

// A record found by LSN, not yet turned into a RecordRow.
struct Candidate {
  uint64_t lsn = 0;
  int64_t series_id = 0;
  ChunkRecord record;
  std::vector<ChunkField> fields;  // parallel to record.values
};

// How many chunks beginning inside the range one period file contributes to
// one call: enough for a full batch of small chunks, bounded so that a
// week-long backlog is not read in one go.
size_t ChunkLimitFor(size_t max_records) { return 64 + max_records / 64; }

RecordRow RowOf(const SeriesIdentity& series, const Candidate& candidate) {
  RecordRow row;
  row.device_id = series.device_id;
  row.measure_name = series.measure_name;
  row.dimensions = series.dimensions;
  row.attributes = series.attributes;
  row.shard = series.shard;
  row.timestamp = candidate.record.timestamp;
  row.version = candidate.record.version;
  row.ttl = candidate.record.ttl;
  for (size_t i = 0; i < candidate.fields.size() && i < candidate.record.values.size(); ++i) {
    if (!std::holds_alternative<std::monostate>(candidate.record.values[i])) {
      row.fields.push_back(Field{candidate.fields[i].name, candidate.record.values[i]});
    }
  }
  std::sort(row.fields.begin(), row.fields.end(),
            [](const Field& a, const Field& b) { return a.name < b.name; });
  return row;
}

// What the feed has gathered before the cut: the identity of every series of
// the table, the head records it may return, and where the sealed ones lie.
struct FeedSources {
  std::unordered_map<int64_t, SeriesIdentity> series_by_id;
  std::vector<Candidate> candidates;
  Period period = Period::kDay;
  std::set<int64_t> period_starts;
};

// Copies the identity of every series of `table` and the head records with
// an LSN in (after_lsn, through_lsn] into `sources`. Only the max_records
// lowest LSNs can make it into the batch, and one more bounds the cut. Runs
// under the shared state lock.
void CollectHeadChanges(const TableState& table, uint64_t after_lsn, uint64_t through_lsn, size_t max_records,
                        FeedSources* sources) {
  sources->period = table.info.options.period;
  sources->period_starts = table.period_starts;
  struct HeadRef {
    uint64_t lsn;
    const Series* series;
    size_t index;
  };
  std::vector<HeadRef> refs;
  for (const auto& [key, series] : table.series) {
    SeriesIdentity& identity = sources->series_by_id[series->id];
    identity.device_id = series->device_id;
    identity.measure_name = series->measure_name;
    identity.shard = series->shard;
    identity.fields = series->fields();
    identity.dimensions = series->dimensions;
    identity.attributes = series->attributes;
    for (size_t i = 0; i < series->head.size(); ++i) {
      const uint64_t lsn = series->head.lsn(i);
      if (lsn > after_lsn && lsn <= through_lsn) refs.push_back({lsn, series.get(), i});
    }
  }
  if (refs.size() > max_records) {
    std::nth_element(refs.begin(), refs.begin() + static_cast<ptrdiff_t>(max_records), refs.end(),
                     [](const HeadRef& a, const HeadRef& b) { return a.lsn < b.lsn; });
    refs.resize(max_records + 1);  // the extra one bounds the cut below
  }
  for (const HeadRef& ref : refs) {
    Candidate& c = sources->candidates.emplace_back();
    c.lsn = ref.lsn;
    c.series_id = ref.series->id;
    c.record = ref.series->head.Record(ref.index, ref.series->fields());
    c.fields = ref.series->fields();
  }
}

// The chunks (with their data) holding records with an LSN in
// (after_lsn, through_lsn], and `bound`: no record with an LSN at or below
// it can be missing from them.
struct SealedChanges {
  std::vector<ChunkRow> chunks;
  uint64_t bound = 0;
};

// Reads the sealed chunks of the feed, period file by period file.
Result<SealedChanges> CollectSealedChanges(PeriodFiles& files, const std::string& table_name,
                                           const FeedSources& sources, uint64_t after_lsn, uint64_t through_lsn,
                                           size_t max_records) {
  SealedChanges sealed;
  sealed.bound = through_lsn;
  const size_t chunk_limit = ChunkLimitFor(max_records);
  for (int64_t start : sources.period_starts) {
    auto handle = files.Get(table_name, sources.period, start, PeriodAccess::kRead);
    if (!handle.ok()) {
      if (handle.status().Is(StatusCode::kNotFound)) continue;  // dropped by retention meanwhile
      return handle.status();
    }
    std::vector<ChunkRow> rows;
    {
      MutexLock file_lock(&(*handle)->mutex);
      CAIRN_ASSIGN_OR_RETURN(rows, (*handle)->file->ReadChunksByLsn(after_lsn, through_lsn, chunk_limit,
                                                                    /*with_data=*/true));
    }
    size_t beginning_inside = 0;
    uint64_t last_min = 0;
    for (const ChunkRow& row : rows) {
      if (row.min_lsn > after_lsn) {
        ++beginning_inside;
        last_min = std::max(last_min, row.min_lsn);
      }
    }
    // More chunks may begin after the last one returned.
    if (beginning_inside == chunk_limit) sealed.bound = std::min(sealed.bound, last_min - 1);
    std::move(rows.begin(), rows.end(), std::back_inserter(sealed.chunks));
  }
  return sealed;
}

// The cut: the highest LSN the batch covers, at most max_records LSNs at
// or below `sealed.bound`.
uint64_t CutOf(const std::vector<Candidate>& head, const SealedChanges& sealed, uint64_t after_lsn,
               size_t max_records) {
  std::vector<uint64_t> lsns;
  for (const Candidate& c : head) {
    if (c.lsn <= sealed.bound) lsns.push_back(c.lsn);
  }
  for (const ChunkRow& chunk : sealed.chunks) {
    for (uint64_t lsn : chunk.lsns) {
      if (lsn > after_lsn && lsn <= sealed.bound) lsns.push_back(lsn);
    }
  }
  std::sort(lsns.begin(), lsns.end());
  lsns.erase(std::unique(lsns.begin(), lsns.end()), lsns.end());
  return lsns.size() > max_records ? lsns[max_records - 1] : sealed.bound;
}

// Keeps the head candidates at or below `cut` and adds the sealed records
// in (after_lsn, cut] the head does not hold, decoding only the chunks that
// have one; sorts them all by LSN.
Status MergeSealedCandidates(const std::string& table_name, const std::vector<ChunkRow>& chunks,
                             uint64_t after_lsn, uint64_t cut, std::vector<Candidate>* candidates) {
  std::erase_if(*candidates, [&](const Candidate& c) { return c.lsn > cut; });
  std::unordered_set<uint64_t> seen;
  for (const Candidate& c : *candidates) seen.insert(c.lsn);
  for (const ChunkRow& chunk : chunks) {
    const bool wanted = std::any_of(chunk.lsns.begin(), chunk.lsns.end(), [&](uint64_t lsn) {
      return lsn > after_lsn && lsn <= cut && !seen.count(lsn);
    });
    if (!wanted) continue;
    CAIRN_ASSIGN_OR_RETURN(DecodedChunk decoded, DecodeChunk(chunk.data));
    if (decoded.size() != chunk.lsns.size()) {
      return Status::Corruption("table '" + table_name + "': chunk of series " +
                                std::to_string(chunk.series_id) + " holds " + std::to_string(decoded.size()) +
                                " records but " + std::to_string(chunk.lsns.size()) + " LSNs");
    }
    const std::vector<ChunkField> schema = decoded.Schema();
    for (size_t i = 0; i < decoded.size(); ++i) {
      const uint64_t lsn = chunk.lsns[i];
      if (lsn <= after_lsn || lsn > cut || !seen.insert(lsn).second) continue;
      Candidate& c = candidates->emplace_back();
      c.lsn = lsn;
      c.series_id = chunk.series_id;
      c.record = decoded.RecordAt(i);
      c.fields = schema;
    }
  }
  std::sort(candidates->begin(), candidates->end(),
            [](const Candidate& a, const Candidate& b) { return a.lsn < b.lsn; });
  return Status::Ok();
}

// The batch of the candidates (sorted by LSN) whose ttl has not passed at
// `now` and whose series is still known.
ChangeBatch BatchOf(const FeedSources& sources, uint64_t cut, int64_t now) {
  ChangeBatch batch;
  batch.covered_through = cut;
  for (const Candidate& c : sources.candidates) {
    if (TtlExpired(c.record.ttl, now)) continue;
    auto identity = sources.series_by_id.find(c.series_id);
    if (identity == sources.series_by_id.end()) continue;  // its table was dropped and recreated meanwhile
    batch.records.push_back(RowOf(identity->second, c));
    batch.lsns.push_back(c.lsn);
    batch.records.back().lsn = c.lsn;
    const int64_t ts = c.record.timestamp;
    if (batch.records.size() == 1) batch.min_timestamp = batch.max_timestamp = ts;
    batch.min_timestamp = std::min(batch.min_timestamp, ts);
    batch.max_timestamp = std::max(batch.max_timestamp, ts);
  }
  return batch;
}

}  // namespace

Result<ChangeBatch> EngineImpl::ReadChanges(const std::string& table_name, uint64_t after_lsn,
                                            uint64_t through_lsn, size_t max_records) {
  if (max_records == 0) return Status::InvalidArgument("ReadChanges needs max_records > 0");
  const int64_t now = clock_->ExpiryNow();  // ttl and retention by the deletion clock
  FeedSources sources;
  {
    ReaderLock state(&state_mutex_);
    if (closed_) return Status::FailedPrecondition("engine is closed");
    auto it = tables_.find(table_name);
    if (it == tables_.end()) return Status::NotFound("table '" + table_name + "' does not exist");
    // LSNs of a group being logged are not acknowledged yet.
    uint64_t last_acknowledged = next_lsn_ - 1;
    if (inflight_first_lsn_ != 0) last_acknowledged = std::min(last_acknowledged, inflight_first_lsn_ - 1);
    through_lsn = std::min(through_lsn, last_acknowledged);
    if (after_lsn >= through_lsn) {
      ChangeBatch empty;
      empty.covered_through = std::max(after_lsn, through_lsn);
      return empty;
    }
    CollectHeadChanges(*it->second, after_lsn, through_lsn, max_records, &sources);
  }
  CAIRN_ASSIGN_OR_RETURN(SealedChanges sealed,
                         CollectSealedChanges(period_files_, table_name, sources, after_lsn, through_lsn, max_records));
  const uint64_t cut = CutOf(sources.candidates, sealed, after_lsn, max_records);
  CAIRN_RETURN_IF_ERROR(MergeSealedCandidates(table_name, sealed.chunks, after_lsn, cut, &sources.candidates));
  return BatchOf(sources, cut, now);
}

Result<UnsyncedSummary> EngineImpl::SummarizeUnsynced(const std::string& table_name,
                                                      const LsnRangeSet& confirmed) {
  const int64_t now = clock_->ExpiryNow();  // ttl and retention by the deletion clock
  UnsyncedSummary summary;
  Period period = Period::kDay;
  std::set<int64_t> period_starts;
  int64_t retention_seconds = 0;
  uint64_t through = 0;
  auto note_oldest = [&](int64_t ts) {
    if (summary.oldest_timestamp == 0 || ts < summary.oldest_timestamp) summary.oldest_timestamp = ts;
  };
  {
    ReaderLock state(&state_mutex_);
    auto it = tables_.find(table_name);
    if (it == tables_.end()) return Status::NotFound("table '" + table_name + "' does not exist");
    through = next_lsn_ - 1;
    const TableState& table = *it->second;
    period = table.info.options.period;
    period_starts = table.period_starts;
    retention_seconds = table.info.options.retention_seconds;
    for (const auto& [key, series] : table.series) {
      const SeriesHead& head = series->head;
      // Each entry's share of the head's memory.
      const size_t entry_bytes = head.empty() ? 0 : head.bytes() / head.size();
      for (size_t i = 0; i < head.size(); ++i) {
        if (confirmed.Contains(head.lsn(i)) || TtlExpired(head.ttl(i), now)) continue;
        ++summary.records;
        summary.bytes += entry_bytes;
        summary.head_bytes += entry_bytes;
        note_oldest(head.timestamp(i));
      }
    }
  }
  if (confirmed.Gaps(through).empty()) return summary;
  for (int64_t start : period_starts) {
    auto handle = GetPeriodFile(table_name, period, start, PeriodAccess::kRead);
    if (!handle.ok()) {
      if (handle.status().Is(StatusCode::kNotFound)) continue;
      return handle.status();
    }
    const bool past_retention = now != 0 && PastRetention(period, start, retention_seconds, now);
    MutexLock file_lock(&(*handle)->mutex);
    CAIRN_RETURN_IF_ERROR(ForEachUnconfirmedChunk(*(*handle)->file, confirmed, through, [&](ChunkRow& row) {
      uint64_t unsynced = 0;
      for (uint64_t lsn : row.lsns) {
        if (lsn <= through && !confirmed.Contains(lsn)) ++unsynced;
      }
      if (unsynced == 0) return true;
      summary.records += unsynced;
      const uint64_t chunk_bytes = row.stats.size() + row.data_bytes;
      summary.bytes += unsynced * chunk_bytes / row.count;
      note_oldest(row.start_ns);
      if (past_retention) summary.held_for_archive += unsynced;
      return true;
    }));
  }
  return summary;
}

Result<std::vector<SyncLedger>> EngineImpl::LoadSyncLedgers() {
  {
    ReaderLock state(&state_mutex_);
    if (closed_) return Status::FailedPrecondition("engine is closed");
  }
  return catalog_->LoadSyncLedgers();
}

Status EngineImpl::SaveSyncLedger(const SyncLedger& ledger) {
  ReaderLock state(&state_mutex_);
  if (closed_) return Status::FailedPrecondition("engine is closed");
  if (!tables_.count(ledger.table)) return Status::NotFound("table '" + ledger.table + "' does not exist");
  // Under the shared state lock: DropTable, which deletes the ledger with
  // the table, takes it exclusively, so a save cannot bring a dropped
  // table's ledger back.
  return catalog_->SaveSyncLedger(ledger);
}

Result<bool> EngineImpl::PeriodHasUnsynced(const std::string& table, Period period, int64_t start,
                                           const LsnRangeSet& confirmed) {
  auto handle = GetPeriodFile(table, period, start, PeriodAccess::kRead);
  if (!handle.ok()) {
    if (handle.status().Is(StatusCode::kNotFound)) return false;
    return handle.status();
  }
  MutexLock file_lock(&(*handle)->mutex);
  CAIRN_ASSIGN_OR_RETURN(uint64_t max_lsn, (*handle)->file->MaxLsn());
  bool found = false;
  CAIRN_RETURN_IF_ERROR(ForEachUnconfirmedChunk(*(*handle)->file, confirmed, max_lsn, [&](ChunkRow& row) {
    for (uint64_t lsn : row.lsns) found = found || !confirmed.Contains(lsn);
    return !found;
  }));
  return found;
}

Status ForEachUnconfirmedChunk(PeriodFile& file, const LsnRangeSet& confirmed, uint64_t through,
                               const std::function<bool(ChunkRow&)>& visit) {
  constexpr size_t kPage = 4096;
  std::set<std::tuple<int64_t, int64_t, int64_t>> visited;  // a chunk may reach into several gaps
  for (const LsnRange& gap : confirmed.Gaps(through)) {
    uint64_t after = gap.first - 1;
    for (;;) {
      CAIRN_ASSIGN_OR_RETURN(std::vector<ChunkRow> rows,
                             file.ReadChunksByLsn(after, gap.last, kPage, /*with_data=*/false));
      uint64_t last_min = 0;
      size_t beginning_inside = 0;
      for (ChunkRow& row : rows) {
        if (row.min_lsn > after) {
          ++beginning_inside;
          last_min = std::max(last_min, row.min_lsn);
        }
        if (visited.insert({row.series_id, row.start_ns, row.seq}).second && !visit(row)) return Status::Ok();
      }
      if (beginning_inside < kPage) break;
      after = last_min;  // chunks that began at or before it were returned
    }
  }
  return Status::Ok();
}

}  // namespace cairn
