// Finding the record stored at an identity, and judging a write of the same
// version against it (write_conflict.h).
#include "engine/write/write_conflict.h"

#include <algorithm>
#include <bit>
#include <charconv>

#include "engine/engine_impl.h"

namespace cairn {

namespace {

// A value as a conflict's reason shows it: line protocol's spelling.
std::string ValueText(const Value& value) {
  struct Text {
    std::string operator()(std::monostate) const { return "nothing"; }
    std::string operator()(double v) const {
      char buf[32];  // the shortest text that reads back as the same double
      const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
      return std::string(buf, end);
    }
    std::string operator()(int64_t v) const { return std::to_string(v) + "i"; }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(const std::string& v) const { return "\"" + v + "\""; }
    std::string operator()(Timestamp v) const { return std::to_string(v.unix_nanos) + "t"; }
  };
  return std::visit(Text{}, value);
}

// Doubles compare by their bits: a retry carries the very bits it carried
// the first time, and 0.0 and -0.0 are different readings.
bool SameValue(const Value& a, const Value& b) {
  if (const auto* x = std::get_if<double>(&a)) {
    const auto* y = std::get_if<double>(&b);
    return y != nullptr && std::bit_cast<uint64_t>(*x) == std::bit_cast<uint64_t>(*y);
  }
  return a == b;
}

const Field* FindField(const std::vector<Field>& fields, const std::string& name) {
  for (const Field& f : fields) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

}  // namespace

SameVersionJudgement JudgeSameVersion(const Record& r, const std::vector<Field>& stored, ConflictPolicy policy) {
  SameVersionJudgement out;
  std::string difference;
  for (const Field& f : r.fields) {
    const Field* old = FindField(stored, f.name);
    if (old == nullptr) {
      difference = "field '" + f.name + "' is " + ValueText(f.value) + " here and absent from the stored record";
    } else if (!SameValue(old->value, f.value)) {
      difference = "field '" + f.name + "' is " + ValueText(f.value) + " here, " + ValueText(old->value) + " stored";
    }
    if (!difference.empty()) break;
  }
  const bool adds_nothing = difference.empty();  // every field of the write is stored as it is
  if (adds_nothing) {
    for (const Field& f : stored) {
      if (FindField(r.fields, f.name) == nullptr) {
        difference = "field '" + f.name + "' is stored (" + ValueText(f.value) + ") and absent here";
        break;
      }
    }
  }
  // Merging a write that adds nothing would store what is stored.
  if (difference.empty() || (adds_nothing && policy == ConflictPolicy::kOverwrite)) {
    out.outcome = WriteOutcome::kDuplicate;
    return out;
  }
  const std::string version = "version " + std::to_string(r.version);
  if (policy == ConflictPolicy::kReject) {
    out.outcome = WriteOutcome::kConflict;
    out.reason = version + " of this point is stored with other values: " + difference +
                 " (the table's on_conflict is reject: write a higher version to replace it)";
    return out;
  }
  out.merged = std::make_unique<Record>(r);
  for (const Field& f : stored) {
    if (FindField(r.fields, f.name) == nullptr) out.merged->fields.push_back(f);
  }
  if (out.merged->fields.size() > kMaxFieldsPerRecord) {
    out.outcome = WriteOutcome::kConflict;
    out.reason = version + " of this point is stored with other fields, and with them it would carry " +
                 std::to_string(out.merged->fields.size()) + " fields, more than a record may (" +
                 std::to_string(kMaxFieldsPerRecord) + ")";
    out.merged.reset();
  }
  return out;
}


Result<std::optional<EngineImpl::StoredRecord>> EngineImpl::FindStored(TableState& table, const Series& series,
                                                                       int64_t timestamp) {
  // A head record is never older than a sealed one of its timestamp: a
  // write reaches the head only when it beats what is stored.
  if (size_t i = series.FindInHead(timestamp); i < series.head.size()) {
    const HeadEntry entry = series.head.Entry(i, series.fields());
    StoredRecord stored{entry.record.version, entry.lsn, {}};
    for (size_t f = 0; f < entry.record.values.size(); ++f) {
      if (!std::holds_alternative<std::monostate>(entry.record.values[f]))
        stored.fields.push_back(Field{series.fields()[f].name, entry.record.values[f]});
    }
    return std::optional<StoredRecord>(std::move(stored));
  }
  const std::optional<StoredRecord> none;
  if (timestamp > series.sealed_max_timestamp) return none;
  // A late write into sealed time: look in the chunks that cover it. Each
  // seal and compaction may leave one record of the timestamp; the newest
  // by (version, LSN) is the stored one.
  const int64_t start = PeriodStart(table.info.options.period, timestamp);
  if (!table.period_starts.count(start)) return none;
  CAIRN_ASSIGN_OR_RETURN(
      auto handle, GetPeriodFile(table.info.name, table.info.options.period, start, PeriodAccess::kRead));
  MutexLock file_lock(&handle->mutex);
  CAIRN_ASSIGN_OR_RETURN(std::vector<ChunkRow> chunks,
                         handle->file->ReadChunks(series.id, timestamp, timestamp + 1, /*with_data=*/true));
  std::optional<StoredRecord> best;
  for (const ChunkRow& chunk : chunks) {
    CAIRN_ASSIGN_OR_RETURN(DecodedChunk decoded, DecodeChunk(chunk.data));
    auto it = std::lower_bound(decoded.timestamps.begin(), decoded.timestamps.end(), timestamp);
    if (it == decoded.timestamps.end() || *it != timestamp) continue;
    const size_t i = static_cast<size_t>(it - decoded.timestamps.begin());
    if (i >= chunk.lsns.size()) {
      return Status::Corruption("chunk of series " + std::to_string(series.id) + " at " +
                                std::to_string(chunk.start_ns) + " lacks the LSN of its record " + std::to_string(i));
    }
    const uint64_t version = decoded.versions[i], lsn = chunk.lsns[i];
    if (best && std::pair(version, lsn) <= std::pair(best->version, best->lsn)) continue;
    best = StoredRecord{version, lsn, {}};
    for (ChunkColumn& column : decoded.columns) {
      if (column.present[i]) best->fields.push_back(Field{column.field.name, std::move(column.values[i])});
    }
  }
  return best;
}

}  // namespace cairn
