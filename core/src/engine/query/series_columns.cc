#include "engine/query/series_columns.h"

#include <algorithm>

namespace cairn {

SeriesColumns::SeriesColumns(const std::vector<ChunkField>& schema, const std::vector<std::string>& scan_fields) {
  fields.resize(schema.size());
  wanted.resize(schema.size());
  for (size_t f = 0; f < schema.size(); ++f) {
    fields[f].name = schema[f].name;
    fields[f].type = schema[f].type;
    wanted[f] = scan_fields.empty() ||
                std::find(scan_fields.begin(), scan_fields.end(), schema[f].name) != scan_fields.end();
  }
}

void SeriesColumns::Reserve(size_t rows) {
  timestamps.reserve(rows);
  for (size_t f = 0; f < fields.size(); ++f) {
    if (wanted[f]) fields[f].Reserve(rows);
  }
}

bool SeriesColumns::Append(const ChunkRecord& record) {
  bool any = false;
  for (size_t f = 0; f < fields.size() && f < record.values.size(); ++f) {
    any |= wanted[f] && !std::holds_alternative<std::monostate>(record.values[f]);
  }
  if (!any) return false;
  AppendMostlyZero(&versions, timestamps.size(), record.version);
  AppendMostlyZero(&ttls, timestamps.size(), record.ttl);
  timestamps.push_back(record.timestamp);
  for (size_t f = 0; f < fields.size(); ++f) {
    if (!wanted[f]) continue;
    if (f < record.values.size()) {
      fields[f].Append(record.values[f]);
    } else {
      fields[f].AppendAbsent();
    }
  }
  return true;
}

bool SeriesColumns::AppendDecoded(const DecodedChunk& chunk, const std::vector<int>& column_to_field, size_t i) {
  bool any = false;
  for (size_t c = 0; c < chunk.columns.size(); ++c) {
    const int f = column_to_field[c];
    any |= f >= 0 && wanted[static_cast<size_t>(f)] && chunk.columns[c].typed.present[i];
  }
  if (!any) return false;
  AppendMostlyZero(&versions, timestamps.size(), chunk.versions[i]);
  AppendMostlyZero(&ttls, timestamps.size(), chunk.ttls[i]);
  timestamps.push_back(chunk.timestamps[i]);
  const size_t row = timestamps.size();
  for (size_t c = 0; c < chunk.columns.size(); ++c) {
    const int f = column_to_field[c];
    if (f >= 0 && wanted[static_cast<size_t>(f)]) fields[static_cast<size_t>(f)].AppendFrom(chunk.columns[c].typed, i);
  }
  // A field the chunk predates is absent in its records.
  for (size_t f = 0; f < fields.size(); ++f) {
    if (wanted[f] && fields[f].size() < row) fields[f].AppendAbsent();
  }
  return true;
}

namespace {

// Appends v[begin, end) to `out`, reversed when !ascending.
template <typename T>
void AppendRun(const std::vector<T>& v, size_t begin, size_t end, bool ascending, std::vector<T>* out) {
  if (ascending) {
    out->insert(out->end(), v.begin() + static_cast<ptrdiff_t>(begin), v.begin() + static_cast<ptrdiff_t>(end));
  } else {
    out->insert(out->end(), v.rbegin() + static_cast<ptrdiff_t>(v.size() - end),
                v.rbegin() + static_cast<ptrdiff_t>(v.size() - begin));
  }
}

// AppendRun into a column kept empty while every value is zero; `rows` is
// the number of rows before the run.
template <typename T>
void AppendRunMostlyZero(const std::vector<T>& v, size_t begin, size_t end, bool ascending, size_t rows,
                         std::vector<T>* out) {
  if (out->empty() && std::all_of(v.begin() + static_cast<ptrdiff_t>(begin), v.begin() + static_cast<ptrdiff_t>(end),
                                  [](T x) { return x == T{}; })) {
    return;
  }
  if (out->size() < rows) out->resize(rows, T{});
  AppendRun(v, begin, end, ascending, out);
}

}  // namespace

void SeriesColumns::AppendDecodedRun(const DecodedChunk& chunk, const std::vector<int>& column_to_field,
                                     size_t begin, size_t end, bool ascending) {
  AppendRunMostlyZero(chunk.versions, begin, end, ascending, timestamps.size(), &versions);
  AppendRunMostlyZero(chunk.ttls, begin, end, ascending, timestamps.size(), &ttls);
  AppendRun(chunk.timestamps, begin, end, ascending, &timestamps);
  const size_t rows = timestamps.size();
  for (size_t c = 0; c < chunk.columns.size(); ++c) {
    const int f = column_to_field[c];
    if (f < 0 || !wanted[static_cast<size_t>(f)]) continue;
    const ValueColumn& from = chunk.columns[c].typed;
    ValueColumn& to = fields[static_cast<size_t>(f)];
    AppendRun(from.present, begin, end, ascending, &to.present);
    switch (to.type) {
      case FieldType::kDouble: AppendRun(from.doubles, begin, end, ascending, &to.doubles); break;
      case FieldType::kInt64:
      case FieldType::kTimestamp: AppendRun(from.integers, begin, end, ascending, &to.integers); break;
      case FieldType::kBool: AppendRun(from.bools, begin, end, ascending, &to.bools); break;
      case FieldType::kString: AppendRun(from.strings, begin, end, ascending, &to.strings); break;
    }
  }
  for (size_t f = 0; f < fields.size(); ++f) {
    while (wanted[f] && fields[f].size() < rows) fields[f].AppendAbsent();
  }
}

void AppendChunkRecords(DecodedChunk&& chunk, const std::vector<uint64_t>& lsns,
                        const std::vector<ChunkField>& fields, int64_t from, int64_t to,
                        std::vector<ChunkRecord>* out) {
  std::vector<int> column_to_field;
  for (const ChunkColumn& column : chunk.columns) {
    auto it = std::find(fields.begin(), fields.end(), column.field);
    column_to_field.push_back(it == fields.end() ? -1 : static_cast<int>(it - fields.begin()));
  }
  const auto begin = std::lower_bound(chunk.timestamps.begin(), chunk.timestamps.end(), from);
  const auto end = std::lower_bound(begin, chunk.timestamps.end(), to);
  // Grown geometrically: a read appends chunk after chunk, and an exact
  // reserve per chunk would move every record each time.
  const size_t needed = out->size() + static_cast<size_t>(end - begin);
  if (needed > out->capacity()) out->reserve(std::max(needed, 2 * out->capacity()));
  for (size_t i = static_cast<size_t>(begin - chunk.timestamps.begin());
       i < static_cast<size_t>(end - chunk.timestamps.begin()); ++i) {
    ChunkRecord& r = out->emplace_back();
    r.timestamp = chunk.timestamps[i];
    r.version = chunk.versions[i];
    r.ttl = chunk.ttls[i];
    r.lsn = i < lsns.size() ? lsns[i] : 0;  // the file checks their count on reading
    r.values.resize(fields.size());
    for (size_t c = 0; c < chunk.columns.size(); ++c) {
      if (column_to_field[c] >= 0 && chunk.columns[c].present[i]) {
        // Decoded values are consumed exactly once: move, do not copy.
        r.values[static_cast<size_t>(column_to_field[c])] = std::move(chunk.columns[c].values[i]);
      }
    }
  }
}

}  // namespace cairn
