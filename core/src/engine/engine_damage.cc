// Damaged period files: quarantine at open, and reading sealed chunks while
// stepping over damaged ones. Both leave the rest of the data served and
// raise a health problem naming the file and the command that tells or mends
// the loss.
#include <algorithm>

#include "engine/engine_impl.h"
#include "engine/query/series_columns.h"
#include "engine/health/quarantine.h"

namespace cairn {

namespace {

std::string FileName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::string EngineImpl::VerifyCommand(bool repair) const {
  return std::string("stop cairnd and run: cairnd verify ") + (repair ? "--repair " : "") + "--data-dir " +
         data_dir_;
}

void EngineImpl::RaiseQuarantined(const std::string& table, const std::string& original,
                                  const std::string& moved_to, const std::string& reason) {
  HealthProblem problem;
  problem.key = "period.quarantined:" + table + "/" + FileName(moved_to);
  problem.component = "period_file";
  problem.message = "period file " + original + " could not be read (" + reason + ") and was moved to " +
                    moved_to + "; the readings it held are not served";
  problem.remedy = "to restore them, stop cairnd and put an intact copy (a backup) back at " + original +
                   "; to accept the loss, delete " + moved_to + " (and its -wal); " + VerifyCommand(false) +
                   " to check every other file";
  health_.Raise(std::move(problem), env_->NowUnixNanos());
}

Status EngineImpl::QuarantineUnreadablePeriods(TableState& table, RecoveryReport* report) {
  const std::string quarantine = QuarantineDir(data_dir_, table.info.name);
  // Files an earlier start or a repair put there stay reported until an
  // operator restores or removes them.
  for (const std::string& kept : QuarantinedPeriodFiles(env_, quarantine)) {
    HealthProblem problem;
    problem.key = "period.quarantined:" + table.info.name + "/" + FileName(kept);
    problem.component = "period_file";
    problem.message = "the quarantine holds " + kept +
                      " (a damaged period file, or a copy taken before a repair removed damaged chunks); "
                      "readings only it holds are not served";
    problem.remedy = "to restore an intact copy, stop cairnd and put it back in " + TableDir(table.info.name) +
                     "; to accept the loss, delete " + kept + " (and its -wal); " + VerifyCommand(false) +
                     " tells what it holds";
    health_.Raise(std::move(problem), env_->NowUnixNanos());
  }
  std::vector<int64_t> unreadable;
  for (int64_t start : table.period_starts) {
    // Opening reads the header and the meta: what a damaged header or a
    // truncated file fails first. The handle stays cached for later reads.
    auto handle = GetPeriodFile(table.info.name, table.info.options.period, start, PeriodAccess::kRead);
    if (handle.ok() || !handle.status().Is(StatusCode::kCorruption)) {
      // Other errors (a newer format, I/O) are not damage to work around.
      if (!handle.ok() && !handle.status().Is(StatusCode::kNotFound)) return handle.status();
      continue;
    }
    const std::string path = PeriodPath(table.info.name, table.info.options.period, start);
    CAIRN_ASSIGN_OR_RETURN(std::string moved_to, MoveIntoQuarantine(env_, path, quarantine));
    // From now on the quarantine reports it; its seal mark would report it
    // again as missing after an operator accepted the loss by deleting it.
    CAIRN_RETURN_IF_ERROR(catalog_->ForgetSealMark(table.info.name, start));
    RaiseQuarantined(table.info.name, path, moved_to, handle.status().message());
    if (report) report->quarantined.push_back({path, moved_to, handle.status().message()});
    unreadable.push_back(start);
  }
  for (int64_t start : unreadable) table.period_starts.erase(start);
  return Status::Ok();
}

void EngineImpl::NoteReadDamage(const std::string& table, SkippedDamage damage,
                                std::vector<SkippedDamage>* skipped) {
  HealthProblem problem;
  problem.key = "period.damaged:" + table + "/" + FileName(damage.file) + ":" + damage.where;
  problem.component = "period_file";
  problem.message = "period file " + damage.file + ": " + damage.where + " is damaged (" + damage.reason +
                    "); queries skip it and say their answer is incomplete" +
                    (damage.readings > 0 ? " (" + std::to_string(damage.readings) + " readings)" : "");
  problem.remedy = VerifyCommand(true) +
                   " (moves the damaged part into the quarantine, keeping a copy of the file, and counts "
                   "the readings lost)";
  health_.Raise(std::move(problem), env_->NowUnixNanos());
  // A limited read visits a chunk once per window it overlaps: an answer
  // names each damaged part once.
  if (skipped && std::none_of(skipped->begin(), skipped->end(), [&](const SkippedDamage& seen) {
        return seen.file == damage.file && seen.where == damage.where;
      })) {
    skipped->push_back(std::move(damage));
  }
}

Result<std::vector<ChunkRecord>> EngineImpl::ReadSealed(const std::string& table, Period period,
                                                        int64_t period_start, int64_t series_id,
                                                        const std::vector<ChunkField>& fields, int64_t from,
                                                        int64_t to, std::vector<SkippedDamage>* skipped) {
  std::vector<ChunkRecord> out;
  const std::string path = PeriodPath(table, period, period_start);
  // A file SQLite calls malformed is skipped whole: its chunk rows cannot
  // be listed, so the readings it holds are unknown here.
  auto whole_file_damaged = [&](const Status& status) {
    NoteReadDamage(table, SkippedDamage{path, "the whole file", status.message(), 0}, skipped);
    return out;
  };
  auto handle = GetPeriodFile(table, period, period_start, PeriodAccess::kRead);
  if (!handle.ok()) {
    if (handle.status().Is(StatusCode::kNotFound)) return out;  // dropped by retention meanwhile
    if (handle.status().Is(StatusCode::kCorruption)) return whole_file_damaged(handle.status());
    return handle.status();
  }
  std::vector<ChunkRow> chunks;
  {
    MutexLock file_lock(&(*handle)->mutex);
    Result<std::vector<ChunkRow>> read = (*handle)->file->ReadChunks(series_id, from, to, /*with_data=*/true);
    if (!read.ok() && read.status().Is(StatusCode::kCorruption)) return whole_file_damaged(read.status());
    CAIRN_ASSIGN_OR_RETURN(chunks, std::move(read));
  }
  for (const ChunkRow& chunk : chunks) {
    chunks_decoded_.fetch_add(1, std::memory_order_relaxed);
    Result<DecodedChunk> decoded_or = DecodeChunk(chunk.data);
    if (decoded_or.ok() && decoded_or->size() != chunk.count) {
      decoded_or = Status::Corruption("the chunk decodes to " + std::to_string(decoded_or->size()) +
                                      " records, its row says " + std::to_string(chunk.count));
    }
    if (!decoded_or.ok()) {
      // The other chunks are intact: serve them, say what is missing.
      NoteReadDamage(table,
                     SkippedDamage{path,
                                   "chunk of series " + std::to_string(chunk.series_id) + " from " +
                                       std::to_string(chunk.start_ns) + " seq " + std::to_string(chunk.seq),
                                   decoded_or.status().message(), chunk.count},
                     skipped);
      continue;
    }
    AppendChunkRecords(std::move(*decoded_or), chunk.lsns, fields, from, to, &out);
  }
  return out;
}

}  // namespace cairn
