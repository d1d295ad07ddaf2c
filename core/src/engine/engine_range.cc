// Ranges: RangeColumnar collects each matching series' rows as typed
// columns (engine_range_columns.cc), puts them in the answer's order, cuts
// the page and lays the rows out as the answer's columns. Range is the same
// answer as row objects.
#include <algorithm>
#include <charconv>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>

#include "cairn/util/hex.h"

#include "engine/engine_impl.h"
#include "engine/query/series_snapshot.h"

namespace cairn {

namespace {

// Page tokens are "<timestamp>:<dimensions key in hex>:<measure_name>" of
// the last row returned: the hex never holds ':', the measure may.
std::string MakePageToken(int64_t timestamp, const std::string& dimensions_key, const std::string& measure) {
  std::string token = std::to_string(timestamp) + ":";
  util::AppendHex(dimensions_key, &token);
  return token + ":" + measure;
}

Status ParsePageToken(const std::string& token, int64_t* timestamp, std::string* dimensions_key,
                      std::string* measure) {
  const Status malformed = Status::InvalidArgument("malformed page token");
  const size_t colon = token.find(':');
  const size_t second = colon == std::string::npos ? colon : token.find(':', colon + 1);
  if (second == std::string::npos) return malformed;
  auto [end, ec] = std::from_chars(token.data(), token.data() + colon, *timestamp);
  if (ec != std::errc() || end != token.data() + colon) return malformed;
  std::optional<std::string> key = util::HexDecode(std::string_view(token).substr(colon + 1, second - colon - 1));
  if (!key) return malformed;
  *dimensions_key = std::move(*key);
  *measure = token.substr(second + 1);
  return Status::Ok();
}

bool MeasureMatches(const std::string& measure, const std::string& exact, const std::string& prefix) {
  if (!exact.empty()) return measure == exact;
  if (!prefix.empty()) return measure.compare(0, prefix.size(), prefix) == 0;
  return true;
}

// Where a paged query resumes: the last row of the page before.
struct PageStart {
  bool paged = false;
  int64_t timestamp = 0;
  std::string dimensions_key, measure;
  TagMap dimensions;
};

// Reads the query's page token into `page` and narrows [from, to) to the
// rows at or after (before, descending) the row it names.
Status ResumePage(const RangeQuery& query, PageStart* page, int64_t* from, int64_t* to) {
  page->paged = !query.page_token.empty();
  if (!page->paged) return Status::Ok();
  CAIRN_RETURN_IF_ERROR(ParsePageToken(query.page_token, &page->timestamp, &page->dimensions_key, &page->measure));
  Result<TagMap> decoded = DecodeTagMap(page->dimensions_key);
  if (!decoded.ok()) return Status::InvalidArgument("malformed page token");
  page->dimensions = std::move(decoded).value();
  if (query.order == Order::kAscending) {
    *from = std::max(*from, page->timestamp);
  } else if (page->timestamp < INT64_MAX) {
    *to = std::min(*to, page->timestamp + 1);
  }
  return Status::Ok();
}

// A row of one series' columns.
struct RowRef {
  uint32_t series;
  uint32_t row;
};

// Rows are ordered by (timestamp, measure, dimensions), the dimensions as
// their sorted (name, value) lists.
struct RowKey {
  int64_t timestamp;
  const std::string* measure;
  const TagMap* dimensions;
  bool operator<(const RowKey& o) const {
    if (timestamp != o.timestamp) return timestamp < o.timestamp;
    if (int c = measure->compare(*o.measure); c != 0) return c < 0;
    return *dimensions < *o.dimensions;
  }
};

// The columns of the answer: one per (name, type) that a contributing
// series wants, sorted, and for each series which of its fields fills each.
struct AnswerLayout {
  std::vector<std::pair<std::string, FieldType>> columns;
  std::vector<std::vector<int>> field_of_column;  // [series][column] -> field index, -1 = absent
};

AnswerLayout LayOut(const std::vector<SeriesColumns>& series, const std::vector<uint8_t>& contributes) {
  AnswerLayout layout;
  for (size_t s = 0; s < series.size(); ++s) {
    if (!contributes[s]) continue;
    for (size_t f = 0; f < series[s].fields.size(); ++f) {
      if (series[s].wanted[f]) layout.columns.emplace_back(series[s].fields[f].name, series[s].fields[f].type);
    }
  }
  std::sort(layout.columns.begin(), layout.columns.end());
  layout.columns.erase(std::unique(layout.columns.begin(), layout.columns.end()), layout.columns.end());
  layout.field_of_column.resize(series.size());
  for (size_t s = 0; s < series.size(); ++s) {
    if (!contributes[s]) continue;
    std::vector<int>& map = layout.field_of_column[s];
    map.assign(layout.columns.size(), -1);
    for (size_t f = 0; f < series[s].fields.size(); ++f) {
      if (!series[s].wanted[f]) continue;
      const std::pair<std::string, FieldType> key(series[s].fields[f].name, series[s].fields[f].type);
      map[static_cast<size_t>(std::lower_bound(layout.columns.begin(), layout.columns.end(), key) -
                              layout.columns.begin())] = static_cast<int>(f);
    }
  }
  return layout;
}

// Rows [first, first + count) of one series' columns as the whole answer,
// moved rather than copied.
void MoveRows(SeriesColumns&& series, size_t first, size_t count, RangeColumns* out) {
  const auto cut = [first, count](auto& v) {
    if (v.empty()) return;  // versions and ttls when all are 0
    v.erase(v.begin() + static_cast<ptrdiff_t>(first + count), v.end());
    v.erase(v.begin(), v.begin() + static_cast<ptrdiff_t>(first));
  };
  cut(series.timestamps);
  cut(series.versions);
  cut(series.ttls);
  out->timestamps = std::move(series.timestamps);
  out->versions = std::move(series.versions);
  out->ttls = std::move(series.ttls);
  out->row_series.assign(count, 0);
  if (count == 0) return;
  for (size_t f = 0; f < series.fields.size(); ++f) {
    if (!series.wanted[f]) continue;
    ValueColumn& column = out->columns.emplace_back(std::move(series.fields[f]));
    cut(column.present);
    if (!column.doubles.empty()) cut(column.doubles);
    if (!column.integers.empty()) cut(column.integers);
    if (!column.bools.empty()) cut(column.bools);
    if (!column.strings.empty()) cut(column.strings);
  }
  std::sort(out->columns.begin(), out->columns.end(), [](const ValueColumn& a, const ValueColumn& b) {
    return std::tie(a.name, a.type) < std::tie(b.name, b.type);
  });
}

}  // namespace

Result<ColumnarRangeResult> EngineImpl::RangeColumnar(const RangeQuery& query) {
  if (!query.measure_name.empty() && !query.measure_prefix.empty()) {
    return Status::InvalidArgument("give a measure name or a measure prefix, not both");
  }
  CAIRN_RETURN_IF_ERROR(ValidateIdentifier("device_id", query.device_id, kMaxDeviceIdBytes));
  for (const std::string& field : query.fields)
    CAIRN_RETURN_IF_ERROR(ValidateIdentifier("field", field, kMaxFieldNameBytes));
  SeriesScan scan;
  scan.from = query.from;
  scan.to = query.to;
  PageStart page;
  CAIRN_RETURN_IF_ERROR(ResumePage(query, &page, &scan.from, &scan.to));
  ColumnarRangeResult result;
  if (scan.from >= scan.to) return result;

  std::vector<SeriesSnapshot> snapshots;
  {
    ReaderLock state(&state_mutex_);
    auto table = tables_.find(query.table);
    if (table == tables_.end()) return Status::NotFound("table '" + query.table + "' does not exist");
    const auto& all = table->second->series;
    for (auto it = all.lower_bound(SeriesKey{query.device_id, "", ""});
         it != all.end() && it->first.device_id == query.device_id; ++it) {
      if (MeasureMatches(it->second->measure_name, query.measure_name, query.measure_prefix) &&
          TagsMatch(*it->second, query.tags)) {
        snapshots.push_back(TakeSnapshot<SeriesSnapshot>(*table->second, *it->second, scan.from, scan.to));
      }
    }
  }
  scan.order = query.order;
  scan.now_ns = clock_->ExpiryNow();  // ttl by the deletion clock (clock_trust.h)
  // One more than the limit per series, plus the row the token names.
  scan.limit = query.limit == 0 ? 0 : query.limit + 2;
  scan.fields = query.fields;
  std::vector<SeriesColumns> series;
  series.reserve(snapshots.size());
  for (const SeriesSnapshot& snapshot : snapshots) {
    CAIRN_ASSIGN_OR_RETURN(SeriesColumns columns,
                           CollectSeriesColumns(query.table, snapshot, scan, &result.skipped));
    series.push_back(std::move(columns));
  }

  // The answer's order: one series comes out in order already.
  const bool ascending = query.order == Order::kAscending;
  const auto key = [&](const RowRef& r) {
    return RowKey{series[r.series].timestamps[r.row], &snapshots[r.series].measure_name,
                  &snapshots[r.series].dimensions};
  };
  const RowKey token_key{page.timestamp, &page.measure, &page.dimensions};
  if (series.size() == 1) {
    // One series: the page is a stretch of its rows, in order already.
    // Only rows at the token's timestamp can precede it.
    const uint32_t n = static_cast<uint32_t>(series[0].size());
    uint32_t first = 0;
    while (page.paged && first < n && !(ascending ? token_key < key(RowRef{0, first}) : key(RowRef{0, first}) < token_key)) ++first;
    size_t count = n - first;
    if (query.limit != 0 && count > query.limit) {
      count = query.limit;
      const uint32_t last = first + static_cast<uint32_t>(count) - 1;
      result.next_page_token = MakePageToken(series[0].timestamps[last], snapshots[0].dimensions_key,
                                             snapshots[0].measure_name);
    }
    if (count > 0) {
      const SeriesSnapshot& s = snapshots[0];
      result.columns.series.push_back(ColumnSeries{s.device_id, s.measure_name, s.dimensions, s.attributes, s.shard});
    }
    MoveRows(std::move(series[0]), first, count, &result.columns);
    return result;
  }
  std::vector<RowRef> rows;
  for (size_t s = 0; s < series.size(); ++s) {
    for (size_t i = 0; i < series[s].size(); ++i) rows.push_back(RowRef{static_cast<uint32_t>(s), static_cast<uint32_t>(i)});
  }
  {
    std::sort(rows.begin(), rows.end(),
              [&](const RowRef& a, const RowRef& b) { return ascending ? key(a) < key(b) : key(b) < key(a); });
  }
  // The page: rows past the one the token names, at most `limit`.
  std::vector<RowRef> selected;
  for (const RowRef& r : rows) {
    if (page.paged && !(ascending ? token_key < key(r) : key(r) < token_key)) continue;
    if (query.limit != 0 && selected.size() == query.limit) {
      const RowRef& last = selected.back();
      result.next_page_token = MakePageToken(series[last.series].timestamps[last.row],
                                             snapshots[last.series].dimensions_key,
                                             snapshots[last.series].measure_name);
      break;
    }
    selected.push_back(r);
  }

  // Lay the page out as the answer's columns.
  std::vector<uint8_t> contributes(series.size());
  for (const RowRef& r : selected) contributes[r.series] = 1;
  const AnswerLayout layout = LayOut(series, contributes);
  RangeColumns& out = result.columns;
  std::vector<uint32_t> answer_series(series.size(), UINT32_MAX);
  for (const RowRef& r : selected) {
    if (answer_series[r.series] != UINT32_MAX) continue;
    answer_series[r.series] = static_cast<uint32_t>(out.series.size());
    const SeriesSnapshot& s = snapshots[r.series];
    out.series.push_back(ColumnSeries{s.device_id, s.measure_name, s.dimensions, s.attributes, s.shard});
  }
  out.row_series.reserve(selected.size());
  out.timestamps.reserve(selected.size());
  out.columns.resize(layout.columns.size());
  for (size_t c = 0; c < layout.columns.size(); ++c) {
    out.columns[c].name = layout.columns[c].first;
    out.columns[c].type = layout.columns[c].second;
    out.columns[c].Reserve(selected.size());
  }
  for (const RowRef& r : selected) {
    const SeriesColumns& s = series[r.series];
    out.row_series.push_back(answer_series[r.series]);
    out.timestamps.push_back(s.timestamps[r.row]);
    AppendMostlyZero(&out.versions, out.timestamps.size() - 1, s.version(r.row));
    AppendMostlyZero(&out.ttls, out.timestamps.size() - 1, s.ttl(r.row));
    const std::vector<int>& field_of = layout.field_of_column[r.series];
    for (size_t c = 0; c < out.columns.size(); ++c) {
      if (field_of[c] < 0) {
        out.columns[c].AppendAbsent();
      } else {
        out.columns[c].AppendFrom(s.fields[static_cast<size_t>(field_of[c])], r.row);
      }
    }
  }
  return result;
}

Result<RangeResult> EngineImpl::Range(const RangeQuery& query) {
  CAIRN_ASSIGN_OR_RETURN(ColumnarRangeResult columnar, RangeColumnar(query));
  RangeResult result;
  result.next_page_token = std::move(columnar.next_page_token);
  result.skipped = std::move(columnar.skipped);
  const RangeColumns& c = columnar.columns;
  result.rows.reserve(c.size());
  for (size_t i = 0; i < c.size(); ++i) {
    const ColumnSeries& s = c.series[c.row_series[i]];
    RecordRow& row = result.rows.emplace_back();
    row.device_id = s.device_id;
    row.measure_name = s.measure_name;
    row.dimensions = s.dimensions;
    row.attributes = s.attributes;
    row.shard = s.shard;
    row.timestamp = c.timestamps[i];
    row.version = c.version(i);
    row.ttl = c.ttl(i);
    for (const ValueColumn& column : c.columns) {
      if (column.present[i]) row.fields.push_back(Field{column.name, column.ValueAt(i)});
    }
  }
  return result;
}

}  // namespace cairn
