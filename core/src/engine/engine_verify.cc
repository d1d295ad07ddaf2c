// Engine::Verify: `cairnd verify [--repair]` on a stopped data directory.
// Every check reads; only the repair writes, and it never deletes what it
// takes out: unreadable period files and a copy of a file whose damaged
// chunks it removes go to the quarantine (quarantine.h), and the log is
// mended as RepairLog does.
#include <algorithm>

#include "engine/engine_impl.h"
#include "engine/health/quarantine.h"
#include "log/log_verify.h"
#include "storage/env_vfs.h"

namespace cairn {

namespace {

constexpr int kVerifyCacheKib = 512;
// integrity_check stops after this many problems: enough to tell the kind.
constexpr int kMaxIntegrityLines = 10;

// What SQLite's integrity_check says of the file at `path`: empty when "ok".
Result<std::vector<std::string>> IntegrityProblems(const std::string& vfs, const std::string& path) {
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db,
                         SqliteDb::Open(path, vfs, /*read_only=*/true, kVerifyCacheKib));
  CAIRN_ASSIGN_OR_RETURN(Statement * check,
                         db->Prepare("PRAGMA integrity_check(" + std::to_string(kMaxIntegrityLines) + ")"));
  std::vector<std::string> lines;
  {
    StatementResetter reset(check);
    for (;;) {
      CAIRN_ASSIGN_OR_RETURN(bool row, check->Step());
      if (!row) break;
      std::string line = check->ColumnText(0);
      if (line != "ok") lines.push_back("SQLite integrity check: " + line);
    }
  }
  CAIRN_RETURN_IF_ERROR(db->Close());
  return lines;
}

std::string ChunkName(const ChunkRow& chunk, const PeriodSeries& series) {
  return "chunk of series " + std::to_string(chunk.series_id) + " (" + series.device_id + "/" +
         series.measure_name + ") from " + std::to_string(chunk.start_ns) + " seq " + std::to_string(chunk.seq);
}

struct PeriodCheck {
  VerifiedFile file;
  std::vector<PeriodFile::ChunkKey> damaged_chunks;
  uint64_t damaged_readings = 0;
  bool unreadable = false;  // open, integrity or row listing failed: the file as a whole
  bool rows_listed = false;  // every chunk row was read
  uint64_t total_readings = 0;
  std::string table;
  Period period = Period::kDay;
  int64_t start = 0;
};

// Reads every chunk of the period file at `path`, adding the LSNs of its
// intact chunks to `sealed`.
PeriodCheck CheckPeriodFile(Env* env, const std::string& vfs, const std::string& path, LsnRangeSet* sealed) {
  PeriodCheck check;
  check.file.path = path;
  check.file.kind = "period";
  auto whole_file = [&](const std::string& problem) {
    check.file.problems.push_back(problem);
    check.file.readings_affected = std::nullopt;
    check.unreadable = true;
    return std::move(check);
  };
  Result<std::vector<std::string>> integrity = IntegrityProblems(vfs, path);
  if (!integrity.ok()) return whole_file("cannot be read: " + integrity.status().message());
  if (!integrity->empty()) {
    for (std::string& line : *integrity) check.file.problems.push_back(std::move(line));
    check.unreadable = true;
  }
  Result<std::unique_ptr<PeriodFile>> opened = PeriodFile::OpenReadOnly(env, vfs, path, kVerifyCacheKib);
  if (!opened.ok()) return whole_file("cannot be read: " + opened.status().message());
  PeriodFile& file = **opened;
  check.table = file.table();
  check.period = file.period();
  check.start = file.period_start_ns();
  Result<std::vector<PeriodSeries>> series = file.ListSeries();
  if (!series.ok()) return whole_file("its series cannot be listed: " + series.status().message());
  uint64_t chunks = 0, readings = 0;
  for (const PeriodSeries& one : *series) {
    // One series at a time keeps the memory to one series' period.
    Result<std::vector<ChunkRow>> rows = file.ReadChunks(one.series_id, INT64_MIN, INT64_MAX, true);
    if (!rows.ok()) {
      return whole_file("the chunks of series " + std::to_string(one.series_id) +
                        " cannot be read: " + rows.status().message());
    }
    for (const ChunkRow& chunk : *rows) {
      ++chunks;
      readings += chunk.count;
      Result<DecodedChunk> decoded = DecodeChunk(chunk.data);
      std::string why;
      if (!decoded.ok()) {
        why = decoded.status().message();
      } else if (decoded->size() != chunk.count || chunk.lsns.size() != chunk.count) {
        why = "decodes to " + std::to_string(decoded->size()) + " records, its row says " +
              std::to_string(chunk.count);
      }
      if (why.empty()) {
        for (uint64_t lsn : chunk.lsns) sealed->Add(lsn, lsn);
        continue;
      }
      check.file.problems.push_back(ChunkName(chunk, one) + ": " + why + " (" + std::to_string(chunk.count) +
                                    " readings)");
      check.damaged_chunks.push_back({chunk.series_id, chunk.start_ns, chunk.seq});
      check.damaged_readings += chunk.count;
    }
  }
  if (check.file.readings_affected) *check.file.readings_affected += check.damaged_readings;
  check.rows_listed = true;
  check.total_readings = readings;
  check.file.summary = std::to_string(chunks) + " chunk(s), " + std::to_string(readings) + " reading(s)";
  return check;
}

// Moves the damaged chunks of `check` out of its file, keeping a copy of the
// file as it was in the quarantine.
Status RemoveDamagedChunks(Env* env, const std::string& vfs, const std::string& quarantine, PeriodCheck* check) {
  CAIRN_ASSIGN_OR_RETURN(std::string copy, CopyIntoQuarantine(env, check->file.path, quarantine, "before-repair"));
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<PeriodFile> file,
                         PeriodFile::OpenWritable(env, vfs, check->file.path, check->table, check->period,
                                                  check->start, kVerifyCacheKib));
  std::vector<ChunkRow> none;
  CAIRN_RETURN_IF_ERROR(file->ReplaceChunks(check->damaged_chunks, {}, none));
  CAIRN_RETURN_IF_ERROR(file->Close());
  check->file.actions.push_back("took " + std::to_string(check->damaged_chunks.size()) + " damaged chunk(s) (" +
                                std::to_string(check->damaged_readings) +
                                " readings) out of the file; the file as it was is kept at " + copy);
  check->file.readings_lost = check->damaged_readings;
  return Status::Ok();
}

Status RepairPeriodFile(Env* env, const std::string& vfs, const std::string& quarantine, PeriodCheck* check) {
  if (check->unreadable) {
    CAIRN_ASSIGN_OR_RETURN(std::string moved_to, MoveIntoQuarantine(env, check->file.path, quarantine));
    check->file.actions.push_back("moved the file to " + moved_to);
    // What the file held is known only when every chunk row could be read.
    check->file.readings_lost =
        check->rows_listed ? std::optional<uint64_t>(check->total_readings) : std::nullopt;
    return Status::Ok();
  }
  if (check->damaged_chunks.empty()) return Status::Ok();
  return RemoveDamagedChunks(env, vfs, quarantine, check);
}

// The tables' names: from the catalog when it reads, else every directory
// that holds period files.
std::vector<std::string> TableDirs(Env* env, const std::string& data_dir, const std::vector<TableInfo>& tables) {
  std::vector<std::string> names;
  for (const TableInfo& table : tables) names.push_back(table.name);
  Result<std::vector<std::string>> entries = env->ListDir(data_dir);
  if (!entries.ok()) return names;
  for (const std::string& entry : *entries) {
    if (entry == "log" || entry == "quarantine" || entry.find('.') != std::string::npos) continue;
    if (std::find(names.begin(), names.end(), entry) != names.end()) continue;
    Result<std::vector<std::string>> inside = env->ListDir(JoinPath(data_dir, entry));
    if (inside.ok() && std::any_of(inside->begin(), inside->end(), [](const std::string& n) {
          return n.size() > 3 && n.compare(n.size() - 3, 3, ".db") == 0;
        })) {
      names.push_back(entry);
    }
  }
  return names;
}

// What a file in the quarantine holds, as far as it reads: it is out of
// service already, so it is told, not counted as damage.
VerifiedFile DescribeQuarantined(Env* env, const std::string& vfs, const std::string& path) {
  VerifiedFile file = VerifiedFile::Of(path, "quarantined");
  Status read = [&]() -> Status {
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<PeriodFile> period,
                           PeriodFile::OpenReadOnly(env, vfs, path, kVerifyCacheKib));
    CAIRN_ASSIGN_OR_RETURN(std::vector<PeriodSeries> series, period->ListSeries());
    uint64_t readings = 0;
    for (const PeriodSeries& one : series) {
      CAIRN_ASSIGN_OR_RETURN(std::vector<ChunkRow> rows,
                             period->ReadChunks(one.series_id, INT64_MIN, INT64_MAX, /*with_data=*/false));
      for (const ChunkRow& row : rows) readings += row.count;
    }
    file.summary = "holds " + std::to_string(readings) + " reading(s) by its chunk rows";
    return period->Close();
  }();
  if (!read.ok()) {
    file.summary = "cannot be read (" + read.message() +
                   "); what it held is among the LSNs below the checkpoint that no period file holds";
  }
  return file;
}

// The catalog: its integrity, its tables and the checkpoint (0 when it
// cannot be read). It holds no readings; cairnd's start rebuilds it.
VerifiedFile VerifyCatalog(Env* env, const std::string& vfs, const std::string& data_dir, bool repair,
                           std::vector<TableInfo>* tables, uint64_t* checkpoint_lsn) {
  VerifiedFile catalog_file = VerifiedFile::Of(JoinPath(data_dir, "catalog.db"), "catalog");
  if (!env->FileExists(catalog_file.path)) {
    catalog_file.problems.push_back("missing: the tables, the series dictionary and the checkpoint are gone");
  } else {
    Result<std::vector<std::string>> integrity = IntegrityProblems(vfs, catalog_file.path);
    if (!integrity.ok()) {
      catalog_file.problems.push_back("cannot be read: " + integrity.status().message());
    } else {
      catalog_file.problems = std::move(integrity).value();
      Status read = [&]() -> Status {
        CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<Catalog> catalog, Catalog::Open(vfs, catalog_file.path));
        CAIRN_ASSIGN_OR_RETURN(*tables, catalog->LoadTables());
        CAIRN_ASSIGN_OR_RETURN(*checkpoint_lsn, catalog->CheckpointLsn());
        catalog_file.summary = std::to_string(tables->size()) + " table(s), checkpoint at LSN " +
                               std::to_string(*checkpoint_lsn);
        return catalog->Close();
      }();
      if (!read.ok()) catalog_file.problems.push_back("cannot be read: " + read.message());
    }
  }
  if (catalog_file.damaged()) {
    catalog_file.readings_affected = 0;  // readings live in period files and the log
    if (repair) {
      catalog_file.actions.push_back(
          "left to cairnd: its next start moves a damaged catalog.db aside and rebuilds it from the period "
          "files and the log");
    }
  }
  return catalog_file;
}


// Every log segment against the checkpoint; with `repair`, a damaged log is
// mended as RepairLog does, its cost told by an entry for the log directory.
Status VerifyLog(Env* env, const std::string& data_dir, bool repair, VerifyReport* out) {
  VerifyReport& report = *out;
  const std::string log_dir = JoinPath(data_dir, "log");
  CAIRN_ASSIGN_OR_RETURN(std::vector<SegmentCheck> segments,
                         CheckLogSegments(env, log_dir, report.checkpoint_lsn));
  bool log_damaged = false;
  for (SegmentCheck& segment : segments) {
    VerifiedFile file = VerifiedFile::Of(segment.path, "log");
    file.problems = std::move(segment.problems);
    file.readings_affected = segment.readings_unknown ? std::nullopt
                                                      : std::optional<uint64_t>(segment.readings_affected);
    file.summary = std::to_string(segment.records) + " record(s), " + std::to_string(segment.readings) +
                   " reading(s)";
    for (const std::string& note : segment.notes) file.summary += "; " + note;
    log_damaged = log_damaged || file.damaged();
    report.files.push_back(std::move(file));
  }
  if (repair && log_damaged) {
    VerifiedFile mended = VerifiedFile::Of(log_dir, "log");
    Result<LogRepairReport> repaired = RepairLogLocked(env, data_dir);
    if (!repaired.ok()) {
      mended.actions.push_back("log repair failed: " + repaired.status().message());
    } else {
      mended.actions = repaired->actions;
      if (!repaired->note.empty()) mended.actions.push_back("note: " + repaired->note);
      mended.readings_lost = repaired->readings_lost;
    }
    report.files.push_back(std::move(mended));
  }

  return Status::Ok();
}

// After a repair, the catalog's seal marks of the files it changed and of
// files that are gone no longer hold: the start-up coverage check would
// refuse or degrade on them forever. Their loss is stated in the report (the
// LSNs below the checkpoint in no period file), so the marks are forgotten.
Status ForgetRepairedSealMarks(Env* env, const std::string& vfs, const std::string& data_dir,
                               const std::vector<TableInfo>& tables,
                               const std::vector<std::pair<std::string, int64_t>>& repaired, VerifyReport* report) {
  const std::string path = JoinPath(data_dir, "catalog.db");
  if (!env->FileExists(path)) return Status::Ok();
  Result<std::unique_ptr<Catalog>> catalog = Catalog::Open(vfs, path);
  if (!catalog.ok()) return Status::Ok();  // a damaged catalog is rebuilt by the next start
  for (const auto& [table, start] : repaired) CAIRN_RETURN_IF_ERROR((*catalog)->ForgetSealMark(table, start));
  CAIRN_ASSIGN_OR_RETURN(std::vector<PeriodSealMark> marks, (*catalog)->LoadSealMarks());
  for (const PeriodSealMark& mark : marks) {
    auto info = std::find_if(tables.begin(), tables.end(), [&](const TableInfo& t) { return t.name == mark.table; });
    if (info == tables.end()) continue;
    const std::string file =
        JoinPath(JoinPath(data_dir, mark.table), PeriodFileStem(info->options.period, mark.period_start) + ".db");
    if (env->FileExists(file)) continue;
    CAIRN_RETURN_IF_ERROR((*catalog)->ForgetSealMark(mark.table, mark.period_start));
    if (!report->files.empty()) {
      report->files.front().actions.push_back("forgot the seal mark of the missing period file " + file +
                                              " (its readings are counted below as in no period file)");
    }
  }
  return (*catalog)->Close();
}

}  // namespace

Result<VerifyReport> Engine::Verify(Env* env, const std::string& data_dir, bool repair) {
  if (!env->FileExists(data_dir)) return Status::NotFound("data directory " + data_dir + " does not exist");
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<FileLock> lock, LockStoppedDataDir(env, data_dir));
  const std::string vfs = VfsNameFor(env);
  CAIRN_RETURN_IF_ERROR(RegisterEnvVfs(env, vfs));
  VerifyReport report;
  report.repaired = repair;

  std::vector<TableInfo> tables;
  report.files.push_back(VerifyCatalog(env, vfs, data_dir, repair, &tables, &report.checkpoint_lsn));

  // Period files, table by table.
  LsnRangeSet sealed;
  // Files a repair changed: the catalog's seal marks of them no longer hold
  // (the start-up coverage check would refuse a file holding less than its
  // mark), and the loss is stated in this report instead.
  std::vector<std::pair<std::string, int64_t>> repaired_periods;
  for (const std::string& table : TableDirs(env, data_dir, tables)) {
    const std::string dir = JoinPath(data_dir, table);
    Result<std::vector<std::string>> names = env->ListDir(dir);
    if (!names.ok()) continue;
    std::sort(names->begin(), names->end());
    for (const std::string& name : *names) {
      if (name.size() <= 3 || name.compare(name.size() - 3, 3, ".db") != 0) continue;
      PeriodCheck check = CheckPeriodFile(env, vfs, JoinPath(dir, name), &sealed);
      if (repair && check.file.damaged()) {
        Status repaired = RepairPeriodFile(env, vfs, QuarantineDir(data_dir, table), &check);
        if (!repaired.ok()) check.file.actions.push_back("repair failed: " + repaired.message());
        if (!check.table.empty()) repaired_periods.emplace_back(check.table, check.start);
      }
      report.files.push_back(std::move(check.file));
    }
    const std::vector<std::string> quarantined = QuarantinedPeriodFiles(env, QuarantineDir(data_dir, table));
    for (const std::string& path : quarantined) report.files.push_back(DescribeQuarantined(env, vfs, path));
  }

  if (repair) CAIRN_RETURN_IF_ERROR(ForgetRepairedSealMarks(env, vfs, data_dir, tables, repaired_periods, &report));

  CAIRN_RETURN_IF_ERROR(VerifyLog(env, data_dir, repair, &report));

  // Coverage: every LSN below the checkpoint left the log because a seal
  // put it in a period file.
  const uint64_t below = report.checkpoint_lsn > 1 ? report.checkpoint_lsn - 1 : 0;
  uint64_t covered = 0;
  for (const LsnRange& range : sealed.ranges()) {
    if (range.first > below) break;
    covered += std::min(range.last, below) - range.first + 1;
  }
  report.lsns_below_checkpoint_not_in_period_files = below - covered;
  return report;
}

}  // namespace cairn
