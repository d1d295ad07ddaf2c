// PeriodFile's reads (period_file.h): chunks by series and time range, by
// LSN or all of a series, the file's series, and whether it is compacted.
// Opening, writing and compaction are period_file.cc's.
#include "storage/period_file.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include "storage/period_columns.h"
#include "storage/period_sql.h"

namespace cairn {

using namespace period_columns;
using namespace period_sql;

Result<std::vector<ChunkRow>> PeriodFile::ReadChunksByLsn(uint64_t after_lsn, uint64_t through_lsn,
                                                          size_t limit, bool with_data) {
  CAIRN_RETURN_IF_ERROR(CheckOpen());
  if (after_lsn >= through_lsn || limit == 0) return std::vector<ChunkRow>();
  CAIRN_ASSIGN_OR_RETURN(Statement * select,
                         db_->Prepare(with_data ? kSelectByLsnWithData : kSelectByLsnWithoutData));
  CAIRN_RETURN_IF_ERROR(select->BindInt64(1, ToStored(after_lsn)));
  CAIRN_RETURN_IF_ERROR(select->BindInt64(2, ToStored(through_lsn)));
  CAIRN_RETURN_IF_ERROR(select->BindInt64(3, static_cast<int64_t>(std::min<uint64_t>(limit, INT64_MAX))));
  return ReadChunkRows(select, with_data, /*with_data_bytes=*/true);
}

Result<uint64_t> PeriodFile::MaxLsn() {
  CAIRN_RETURN_IF_ERROR(CheckOpen());
  CAIRN_ASSIGN_OR_RETURN(Statement * select, db_->Prepare(kSelectMaxLsn));
  StatementResetter reset(select);
  CAIRN_ASSIGN_OR_RETURN(bool row, select->Step());
  if (!row) return uint64_t{0};
  return FromStored(select->ColumnInt64(0));
}

Status PeriodFile::ReadChunkFacts(const Statement& row, ChunkRow* chunk) const {
  chunk->series_id = row.ColumnInt64(0);
  chunk->start_ns = row.ColumnInt64(1);
  chunk->seq = row.ColumnInt64(2);
  chunk->end_ns = row.ColumnInt64(3);
  const int64_t count = row.ColumnInt64(4);
  if (count <= 0 || count > int64_t{std::numeric_limits<uint32_t>::max()}) {
    return Status::Corruption(path_ + ": chunk of series " + std::to_string(chunk->series_id) + " at " +
                              std::to_string(chunk->start_ns) + " has count " + std::to_string(count));
  }
  chunk->count = static_cast<uint32_t>(count);
  chunk->min_lsn = FromStored(row.ColumnInt64(5));
  chunk->max_lsn = FromStored(row.ColumnInt64(6));
  chunk->max_version = FromStored(row.ColumnInt64(7));
  chunk->min_ttl = row.ColumnInt64(8);
  return Status::Ok();
}

Result<std::vector<ChunkRow>> PeriodFile::ReadChunkRows(Statement* statement, bool with_data,
                                                        bool with_data_bytes) {
  std::vector<ChunkRow> rows;
  StatementResetter reset(statement);
  for (;;) {
    CAIRN_ASSIGN_OR_RETURN(bool row, statement->Step());
    if (!row) break;
    ChunkRow chunk;
    CAIRN_RETURN_IF_ERROR(ReadChunkFacts(*statement, &chunk));
    CAIRN_ASSIGN_OR_RETURN(chunk.fields, FieldsForSchemaId(statement->ColumnInt64(9)));
    chunk.stats = statement->ColumnBlob(10);
    Result<std::vector<uint64_t>> lsns = DecodeLsns(statement->ColumnBlob(11), chunk);
    if (!lsns.ok()) {
      return lsns.status().WithContext(path_ + ": chunk of series " + std::to_string(chunk.series_id) +
                                       " at " + std::to_string(chunk.start_ns));
    }
    chunk.lsns = std::move(lsns).value();
    int data_column = 12;
    if (with_data_bytes) chunk.data_bytes = static_cast<uint64_t>(statement->ColumnInt64(data_column++));
    if (with_data) chunk.data = statement->ColumnBlob(data_column);
    rows.push_back(std::move(chunk));
  }
  return rows;
}

Result<std::optional<int64_t>> PeriodFile::LowestOverlappingStart(int64_t series_id, int64_t from) {
  CAIRN_ASSIGN_OR_RETURN(Statement * span_query, db_->Prepare(kSelectSeriesSpan));
  CAIRN_RETURN_IF_ERROR(span_query->BindInt64(1, series_id));
  StatementResetter reset(span_query);
  CAIRN_ASSIGN_OR_RETURN(bool row, span_query->Step());
  if (!row) return std::optional<int64_t>();
  const int64_t max_span = span_query->ColumnInt64(0);
  if (max_span < 0)
    return Status::Corruption(path_ + ": series " + std::to_string(series_id) + " has a negative span");
  return std::optional<int64_t>(from < std::numeric_limits<int64_t>::min() + max_span
                                    ? std::numeric_limits<int64_t>::min()
                                    : from - max_span);
}

Result<std::vector<ChunkRow>> PeriodFile::ReadChunks(int64_t series_id, int64_t from, int64_t to,
                                                     bool with_data) {
  CAIRN_RETURN_IF_ERROR(CheckOpen());
  if (from >= to) return std::vector<ChunkRow>();
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> lowest_start, LowestOverlappingStart(series_id, from));
  if (!lowest_start) return std::vector<ChunkRow>();
  CAIRN_ASSIGN_OR_RETURN(Statement * select, db_->Prepare(with_data ? kSelectOverlappingWithData
                                                                    : kSelectOverlappingWithoutData));
  CAIRN_RETURN_IF_ERROR(select->BindInt64(1, series_id));
  CAIRN_RETURN_IF_ERROR(select->BindInt64(2, *lowest_start));
  CAIRN_RETURN_IF_ERROR(select->BindInt64(3, to));
  CAIRN_RETURN_IF_ERROR(select->BindInt64(4, from));
  return ReadChunkRows(select, with_data);
}

Status PeriodFile::ReadChunkBody(ChunkRow* chunk) {
  CAIRN_RETURN_IF_ERROR(CheckOpen());
  CAIRN_ASSIGN_OR_RETURN(Statement * select, db_->Prepare(kSelectChunkBody));
  CAIRN_RETURN_IF_ERROR(select->BindInt64(1, chunk->series_id));
  CAIRN_RETURN_IF_ERROR(select->BindInt64(2, chunk->start_ns));
  CAIRN_RETURN_IF_ERROR(select->BindInt64(3, chunk->seq));
  StatementResetter reset(select);
  CAIRN_ASSIGN_OR_RETURN(bool row, select->Step());
  const std::string where = " chunk of series " + std::to_string(chunk->series_id) + " at " +
                            std::to_string(chunk->start_ns) + " seq " + std::to_string(chunk->seq);
  if (!row) return Status::NotFound(path_ + ": no" + where);
  chunk->data = select->ColumnBlob(0);
  Result<std::vector<uint64_t>> lsns = DecodeLsns(select->ColumnBlob(1), *chunk);
  if (!lsns.ok()) return lsns.status().WithContext(path_ + ":" + where);
  chunk->lsns = std::move(lsns).value();
  return Status::Ok();
}

Result<std::vector<ChunkRow>> PeriodFile::ListChunks(int64_t series_id, int64_t from, int64_t to) {
  CAIRN_RETURN_IF_ERROR(CheckOpen());
  if (from >= to) return std::vector<ChunkRow>();
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> lowest_start, LowestOverlappingStart(series_id, from));
  if (!lowest_start) return std::vector<ChunkRow>();
  CAIRN_ASSIGN_OR_RETURN(Statement * select, db_->Prepare(kListOverlapping));
  CAIRN_RETURN_IF_ERROR(select->BindInt64(1, series_id));
  CAIRN_RETURN_IF_ERROR(select->BindInt64(2, *lowest_start));
  CAIRN_RETURN_IF_ERROR(select->BindInt64(3, to));
  CAIRN_RETURN_IF_ERROR(select->BindInt64(4, from));
  std::vector<ChunkRow> rows;
  StatementResetter reset(select);
  for (;;) {
    CAIRN_ASSIGN_OR_RETURN(bool row, select->Step());
    if (!row) break;
    CAIRN_RETURN_IF_ERROR(ReadChunkFacts(*select, &rows.emplace_back()));
  }
  return rows;
}

Result<std::vector<ChunkRow>> PeriodFile::ReadAllChunks(int64_t series_id) {
  CAIRN_ASSIGN_OR_RETURN(Statement * select, db_->Prepare(kSelectAllOfSeries));
  CAIRN_RETURN_IF_ERROR(select->BindInt64(1, series_id));
  return ReadChunkRows(select, /*with_data=*/true);
}

Result<std::vector<PeriodSeries>> PeriodFile::ListSeries() {
  CAIRN_RETURN_IF_ERROR(CheckOpen());
  CAIRN_ASSIGN_OR_RETURN(Statement * select, db_->Prepare(kListSeries));
  std::vector<PeriodSeries> list;
  StatementResetter reset(select);
  for (;;) {
    CAIRN_ASSIGN_OR_RETURN(bool row, select->Step());
    if (!row) break;
    PeriodSeries series;
    series.series_id = select->ColumnInt64(0);
    series.device_id = select->ColumnText(1);
    series.measure_name = select->ColumnText(2);
    int64_t shard = select->ColumnInt64(3);
    if (shard < 0 || shard > std::numeric_limits<int>::max()) {
      return Status::Corruption(path_ + ": series " + std::to_string(series.series_id) + " has shard " +
                                std::to_string(shard));
    }
    series.shard = static_cast<int>(shard);
    std::string which = path_ + ": series " + std::to_string(series.series_id);
    Result<std::vector<ChunkField>> fields = DecodeFields(select->ColumnText(4));
    if (!fields.ok()) return fields.status().WithContext(which + " fields");
    series.fields = std::move(fields).value();
    Result<std::map<std::string, std::string>> dimensions = DecodeDimensions(select->ColumnText(5));
    if (!dimensions.ok()) return dimensions.status().WithContext(which + " dimensions");
    series.dimensions = std::move(dimensions).value();
    list.push_back(std::move(series));
  }
  return list;
}

Result<bool> PeriodFile::IsCompacted() {
  CAIRN_RETURN_IF_ERROR(CheckOpen());
  CAIRN_ASSIGN_OR_RETURN(Statement * select, db_->Prepare(kSelectCompacted));
  StatementResetter reset(select);
  CAIRN_ASSIGN_OR_RETURN(bool row, select->Step());
  if (!row) return Status::Corruption(path_ + ": meta has no 'compacted'");
  return select->ColumnInt64(0) != 0;
}

}  // namespace cairn
