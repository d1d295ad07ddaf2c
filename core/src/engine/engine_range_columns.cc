// One series' rows for a columnar range (RangeColumnar, engine_range.cc).
//
// The chunks of a series and its head are merged as sorted sources, in the
// query's direction, each chunk fetched and decoded only when the merge
// reaches its first (last, descending) timestamp. Where one source alone
// covers the next stretch of time (the common case: chunks follow one
// another), its records go straight into the columns in a tight loop; where
// sources meet on a timestamp (late records sealed into a chunk of their
// own, rewrites), the highest version wins, of equal versions the later LSN,
// as MergeVersions rules. A period file's chunk rows are listed (no data)
// when the merge reaches the period, and a chunk's data is fetched when the
// merge reaches the chunk, so a limited read opens the files and decodes the
// chunks it takes rows from: `limit=1` over a year of daily files opens one
// file and decodes one chunk. Each listed chunk holds its file's handle until
// it is fetched, so a range over more files than the handle cache keeps
// (PeriodFiles::Options::max_open) opens each file once, and at most the
// files of two neighbouring periods are held at a time. A chunk replaced
// while the read runs, or a file that cannot list its chunks, sends the
// series through CollectSeries, which reports the damage.
#include <algorithm>
#include <deque>
#include <memory>

#include "engine/engine_impl.h"
#include "engine/query/series_snapshot.h"

namespace cairn {

namespace {

// A chunk in range, with the open period file that listed it.
struct ListedChunk {
  std::shared_ptr<PeriodHandle> file;  // released once the chunk is fetched
  int64_t period_start;
  ChunkRow row;  // without data until fetched
};

// One sorted input of the merge: the head (chunk == nullptr) or a decoded
// chunk, read from its first row in range towards its last in the query's
// direction.
struct Source {
  const std::vector<ChunkRecord>* head = nullptr;
  std::optional<DecodedChunk> chunk;
  const ChunkRow* row = nullptr;
  std::vector<int> column_to_field;
  size_t begin = 0, end = 0;  // rows in range: [begin, end)
  size_t taken = 0;           // rows consumed
  bool bulk = false;          // runs may be copied whole (AppendDecodedRun)

  size_t size() const { return end - begin; }
  bool done() const { return taken == size(); }
  size_t Index(bool ascending) const { return ascending ? begin + taken : end - 1 - taken; }
  int64_t TimestampAt(size_t i) const { return head ? (*head)[i].timestamp : chunk->timestamps[i]; }
  int64_t Timestamp(bool ascending) const { return TimestampAt(Index(ascending)); }
  uint64_t VersionAt(size_t i) const { return head ? (*head)[i].version : chunk->versions[i]; }
  uint64_t LsnAt(size_t i) const {
    if (head) return (*head)[i].lsn;
    return i < row->lsns.size() ? row->lsns[i] : 0;
  }
};

// [begin, end) of the ascending `timestamps` inside [from, to).
template <typename Timestamps>
std::pair<size_t, size_t> InRange(const Timestamps& ts, int64_t from, int64_t to) {
  const auto b = std::lower_bound(ts.begin(), ts.end(), from);
  return {static_cast<size_t>(b - ts.begin()), static_cast<size_t>(std::lower_bound(b, ts.end(), to) - ts.begin())};
}

}  // namespace

Result<SeriesColumns> EngineImpl::CollectSeriesColumns(const std::string& table, const SeriesSnapshot& series,
                                                       const SeriesScan& scan,
                                                       std::vector<SkippedDamage>* skipped) {
  SeriesColumns fast(series.fields, scan.fields);
  CAIRN_ASSIGN_OR_RETURN(bool served, CollectMergedColumns(table, series, scan, &fast, skipped));
  if (served) return fast;
  SeriesColumns merged(series.fields, scan.fields);
  // CollectSeries stops at `limit` visible records; with a field filter some
  // of them may not be rows, so it reads all of them then.
  const size_t limit = scan.fields.empty() ? scan.limit : 0;
  CAIRN_ASSIGN_OR_RETURN(std::vector<ChunkRecord> records,
                         CollectSeries(table, series, scan.from, scan.to, scan.order, limit, scan.now_ns, skipped));
  for (const ChunkRecord& r : records) {
    if (scan.limit != 0 && merged.size() >= scan.limit) break;
    merged.Append(r);
  }
  return merged;
}

Result<std::optional<DecodedChunk>> EngineImpl::FetchChunk(const std::string& table, const SeriesSnapshot& series,
                                                           PeriodHandle* handle, int64_t period_start,
                                                           ChunkRow* row, const std::vector<std::string>& fields,
                                                           std::vector<SkippedDamage>* skipped) {
  {
    MutexLock file_lock(&handle->mutex);
    CAIRN_RETURN_IF_ERROR(handle->file->ReadChunkBody(row));
  }
  chunks_decoded_.fetch_add(1, std::memory_order_relaxed);
  Result<DecodedChunk> decoded = DecodeChunkTyped(row->data, fields.empty() ? nullptr : &fields);
  row->data.clear();
  row->data.shrink_to_fit();  // decoded now: only the columns are kept
  if (decoded.ok() && decoded->size() != row->count) {
    decoded = Status::Corruption("the chunk decodes to " + std::to_string(decoded->size()) +
                                 " records, its row says " + std::to_string(row->count));
  }
  if (!decoded.ok()) {
    // The other chunks are intact: serve them, say what is missing.
    NoteReadDamage(table,
                   SkippedDamage{PeriodPath(table, series.period, period_start),
                                 "chunk of series " + std::to_string(row->series_id) + " from " +
                                     std::to_string(row->start_ns) + " seq " + std::to_string(row->seq),
                                 decoded.status().message(), row->count},
                   skipped);
    return std::optional<DecodedChunk>();
  }
  return std::optional<DecodedChunk>(std::move(decoded).value());
}

// Longer than most: the merge loop shares its sources, cursor and output
// with the listing of periods, the activation of chunks and the run copy,
// and split apart they would pass all of them around.
Result<bool> EngineImpl::CollectMergedColumns(const std::string& table, const SeriesSnapshot& series,
                                              const SeriesScan& scan, SeriesColumns* out,
                                              std::vector<SkippedDamage>* skipped) {
  std::vector<ChunkRecord> head = series.head;
  MergeVersions(&head);
  const bool ascending = scan.order == Order::kAscending;
  const auto before = [ascending](int64_t a, int64_t b) { return ascending ? a < b : a > b; };

  // The periods in range, in the order the merge reaches them, each reached
  // at its first (last, descending) instant inside the scan.
  std::vector<int64_t> periods;
  for (int64_t start : series.period_starts) {
    if (start < scan.to && NextPeriodStart(series.period, start) > scan.from) periods.push_back(start);
  }
  std::sort(periods.begin(), periods.end());
  if (!ascending) std::reverse(periods.begin(), periods.end());
  const auto period_reach = [&](int64_t start) {
    return ascending ? std::max(start, scan.from) : std::min(NextPeriodStart(series.period, start), scan.to) - 1;
  };
  size_t next_period = 0;

  // Listed chunks not yet fetched, in the order the merge reaches them: by
  // first timestamp ascending, by last descending. A deque, so that the
  // rows the active sources point to stay put as periods are listed.
  std::deque<ListedChunk> chunks;
  std::vector<size_t> pending;
  size_t next_pending = 0;
  const auto reach = [&](size_t c) { return ascending ? chunks[c].row.start_ns : chunks[c].row.end_ns; };
  size_t listed_records = head.size();
  out->Reserve(scan.limit == 0 ? listed_records : std::min(listed_records, scan.limit));
  // Lists the chunks of periods[next_period]; false when the file cannot.
  const auto list_next_period = [&]() -> Result<bool> {
    const int64_t start = periods[next_period++];
    const int64_t end = NextPeriodStart(series.period, start);
    auto handle = GetPeriodFile(table, series.period, start, PeriodAccess::kRead);
    if (!handle.ok()) return handle.status().Is(StatusCode::kNotFound);  // dropped by retention meanwhile
    Result<std::vector<ChunkRow>> rows = [&] {
      MutexLock file_lock(&(*handle)->mutex);
      return (*handle)->file->ListChunks(series.id, std::max(scan.from, start), std::min(scan.to, end));
    }();
    if (!rows.ok()) return false;
    for (ChunkRow& row : *rows) {
      listed_records += row.count;
      pending.push_back(chunks.size());
      chunks.push_back(ListedChunk{*handle, start, std::move(row)});
    }
    std::stable_sort(pending.begin() + static_cast<std::ptrdiff_t>(next_pending), pending.end(),
                     [&](size_t a, size_t b) { return before(reach(a), reach(b)); });
    // Room for every record listed (at most the limit), so that appending
    // rarely moves the columns.
    out->Reserve(scan.limit == 0 ? listed_records : std::min(listed_records, scan.limit));
    return true;
  };

  std::vector<Source> active;
  if (!head.empty()) {
    Source& h = active.emplace_back();
    h.head = &head;
    h.end = head.size();
  }
  const auto full = [&] { return scan.limit != 0 && out->size() >= scan.limit; };
  while (!full()) {
    std::erase_if(active, [](const Source& s) { return s.done(); });
    // The next timestamp among the active sources; activate every chunk
    // that begins at or before it.
    bool have = false;
    int64_t next = 0;
    for (const Source& s : active) {
      if (!have || before(s.Timestamp(ascending), next)) next = s.Timestamp(ascending);
      have = true;
    }
    // The period or chunk the merge reaches next, if it reaches it before
    // (or at) `next`; a period before a chunk reached at the same instant.
    if (next_period < periods.size() &&
        (next_pending == pending.size() || !before(reach(pending[next_pending]), period_reach(periods[next_period]))) &&
        (!have || !before(next, period_reach(periods[next_period])))) {
      CAIRN_ASSIGN_OR_RETURN(bool listed, list_next_period());
      if (!listed) return false;  // the merging path reports it
      continue;
    }
    if (next_pending < pending.size() && (!have || !before(next, reach(pending[next_pending])))) {
      ListedChunk& listed = chunks[pending[next_pending++]];
      Result<std::optional<DecodedChunk>> decoded =
          FetchChunk(table, series, listed.file.get(), listed.period_start, &listed.row, scan.fields, skipped);
      listed.file.reset();
      if (!decoded.ok()) return false;  // replaced meanwhile, or the file failed: merge and report
      if (!decoded->has_value()) continue;  // damaged: noted, the rest is served
      Source& source = active.emplace_back();
      source.chunk = std::move(*decoded);
      source.row = &listed.row;
      for (const ChunkColumn& column : source.chunk->columns) {
        auto it = std::find(series.fields.begin(), series.fields.end(), column.field);
        source.column_to_field.push_back(it == series.fields.end() ? -1
                                                                   : static_cast<int>(it - series.fields.begin()));
      }
      std::tie(source.begin, source.end) = InRange(source.chunk->timestamps, scan.from, scan.to);
      // Bulk-copyable: no record can expire, and every record is a row
      // (a record carries at least one field, each a field of the series,
      // and no field filter drops it).
      source.bulk = listed.row.min_ttl == 0 && scan.fields.empty() &&
                    std::none_of(source.column_to_field.begin(), source.column_to_field.end(),
                                 [](int f) { return f < 0; });
      continue;
    }
    if (!have) break;
    if (active.size() == 1 && active[0].chunk) {
      // One chunk alone up to the next chunk's (or period's) reach: copy
      // the run.
      Source& s = active[0];
      const bool chunk_next = next_pending < pending.size();
      const bool period_next = next_period < periods.size();
      const bool bounded = chunk_next || period_next;
      int64_t limit_ts = 0;
      if (chunk_next) limit_ts = reach(pending[next_pending]);
      if (period_next && (!chunk_next || before(period_reach(periods[next_period]), limit_ts))) {
        limit_ts = period_reach(periods[next_period]);
      }
      if (s.bulk) {
        // No ttl and every record a row: the run is copied column by column.
        size_t n = s.size() - s.taken;
        if (bounded) {
          const auto& ts = s.chunk->timestamps;
          const size_t stop = ascending ? static_cast<size_t>(std::lower_bound(ts.begin() + s.begin, ts.begin() + s.end,
                                                                               limit_ts) - ts.begin())
                                        : static_cast<size_t>(std::upper_bound(ts.begin() + s.begin, ts.begin() + s.end,
                                                                               limit_ts) - ts.begin());
          const size_t untaken_first = s.begin + s.taken, untaken_end = s.end - s.taken;
          n = std::min(n, ascending ? (stop > untaken_first ? stop - untaken_first : 0)
                                    : (untaken_end > stop ? untaken_end - stop : 0));
        }
        if (scan.limit != 0) n = std::min(n, scan.limit - out->size());
        const size_t first = ascending ? s.begin + s.taken : s.end - s.taken - n;
        out->AppendDecodedRun(*s.chunk, s.column_to_field, first, first + n, ascending);
        s.taken += n;
        continue;
      }
      while (!s.done() && !full()) {
        const size_t i = s.Index(ascending);
        if (bounded && !before(s.TimestampAt(i), limit_ts)) break;
        if (!TtlExpired(s.chunk->ttls[i], scan.now_ns)) out->AppendDecoded(*s.chunk, s.column_to_field, i);
        ++s.taken;
      }
      continue;
    }
    // Every source at `next` holds a version of it: the highest wins.
    Source* winner = nullptr;
    size_t winner_index = 0;
    for (Source& s : active) {
      if (s.Timestamp(ascending) != next) continue;
      const size_t i = s.Index(ascending);
      if (winner == nullptr || s.VersionAt(i) > winner->VersionAt(winner_index) ||
          (s.VersionAt(i) == winner->VersionAt(winner_index) && s.LsnAt(i) > winner->LsnAt(winner_index))) {
        winner = &s;
        winner_index = i;
      }
      ++s.taken;
    }
    if (winner->head) {
      if (!Expired((*winner->head)[winner_index], scan.now_ns)) out->Append((*winner->head)[winner_index]);
    } else if (!TtlExpired(winner->chunk->ttls[winner_index], scan.now_ns)) {
      out->AppendDecoded(*winner->chunk, winner->column_to_field, winner_index);
    }
  }
  return true;
}

}  // namespace cairn
