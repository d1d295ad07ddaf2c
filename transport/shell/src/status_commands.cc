#include "status_commands.h"

#include <cstdio>
#include <iterator>
#include <utility>
#include <vector>

#include "cairn/shell/engine_commands.h"
#include "cairn/shell/record_table.h"

#include "flash_wear_entries.h"

namespace cairn {

namespace {

std::string FormatBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, unit == 0 ? "%.0f %s" : "%.1f %s", value, kUnits[unit]);
  return buffer;
}

class StatusCommands {
 public:
  StatusCommands(std::shared_ptr<const EngineHolder> storage, Env* env, std::string data_dir)
      : storage_(std::move(storage)), env_(env), data_dir_(std::move(data_dir)) {}

  CommandResult Stats(const CommandInvocation&) {
    if (Status available = storage_->Check(); !available.ok()) return CommandResult::Error(available);
    const EngineStats stats = engine()->Stats();
    const ClockStatus clock = engine()->Clock();
    std::vector<CommandResult::Entry> entries = {
        {"records_written", Count(stats.records_written)},
        {"records_duplicate", Count(stats.records_duplicate)},
        {"records_rejected", Count(stats.records_rejected)},
        {"records_invalid", Count(stats.records_invalid)},
        {"records_conflict", Count(stats.records_conflict)},
        {"records_overwritten", Count(stats.records_overwritten)},
        {"last_lsn", Count(stats.last_lsn)},
        {"checkpoint_lsn", Count(stats.checkpoint_lsn)},
        {"series", Count(stats.series)},
        {"series_bytes", Count(stats.series_bytes)},
        {"records_over_series_limit", Count(stats.records_over_series_limit)},
        {"head_records", Count(stats.head_records)},
        {"head_bytes", Count(stats.head_bytes)},
        {"chunks_sealed", Count(stats.chunks_sealed)},
        {"chunks_decoded", Count(stats.chunks_decoded)},
        {"period_file_opens", Count(stats.period_file_opens)},
        {"memory_budget_bytes", Count(stats.memory_budget_bytes)},
        {"head_budget_bytes", Count(stats.head_budget_bytes)},
        {"page_cache_budget_bytes", Count(stats.page_cache_budget_bytes)},
        {"sqlite_memory_bytes", Count(stats.sqlite_memory_bytes)},
        {"log_bytes", Count(stats.log_bytes)},
        {"period_file_bytes", Count(stats.period_file_bytes)},
        // Clock trust (cairn/core/clock.h): readings without a timestamp
        // waiting for a trusted clock, and what became of those that waited.
        {"clock_trusted", clock.trusted ? "yes" : "no"},
        {"clock_held_readings", Count(clock.held_readings)},
        {"clock_readings_restamped", Count(clock.readings_restamped)},
        {"clock_readings_estimated", Count(clock.readings_estimated)},
        {"clock_restamps_refused", Count(clock.restamps_refused)},
        {"clock_timestamps_refused", Count(clock.timestamps_refused)},
    };
    AppendFlashWearEntries(engine()->FlashWear(), /*full=*/true, &entries);
    return CommandResult::KeyValues(std::move(entries));
  }

  CommandResult Health(const CommandInvocation&) {
    if (engine() == nullptr) return HealthWithoutStorage();
    Result<std::vector<TableInfo>> tables = engine()->ListTables();
    if (!tables.ok()) return CommandResult::Error(tables.status().WithContext("health: engine"));
    Result<uint64_t> free = env_->FreeSpace(data_dir_);
    if (!free.ok()) {
      return CommandResult::Error(
          free.status().WithContext("health: cannot read the free space of " + data_dir_));
    }
    const EngineHealth health = engine()->Health();
    std::vector<CommandResult::Entry> entries = {
        {"status", std::string(HealthLevelName(health.level))},
        {"data_dir", data_dir_},
        {"free_bytes", Count(*free)},
        {"free", FormatBytes(*free)},
        {"tables", Count(tables->size())},
        {"problems", Count(health.problems.size())},
    };
    AppendFlashWearEntries(engine()->FlashWear(), /*full=*/false, &entries);
    // One entry per open problem, named by its key, so that a script can
    // test for a condition and a person reads what to do.
    for (const HealthProblem& problem : health.problems) {
      std::string text = std::string(HealthLevelName(problem.level)) + ": " + problem.message;
      if (!problem.remedy.empty()) text += " (fix: " + problem.remedy + ")";
      entries.emplace_back("problem." + problem.key, std::move(text));
    }
    return CommandResult::KeyValues(std::move(entries));
  }

 private:
  // `health` while the engine cannot be opened: the status `unavailable`,
  // the outage with its remedy as the one problem, and the free space when
  // the file system answers (a full disk is one of the causes).
  CommandResult HealthWithoutStorage() {
    const EngineHolder::Outage outage = storage_->outage();
    std::vector<CommandResult::Entry> entries = {
        {"status", std::string(kStorageUnavailableStatus)},
        {"data_dir", data_dir_},
    };
    if (Result<uint64_t> free = env_->FreeSpace(data_dir_); free.ok()) {
      entries.emplace_back("free_bytes", Count(*free));
      entries.emplace_back("free", FormatBytes(*free));
    }
    entries.emplace_back("problems", Count(1));
    std::string text = std::string(kStorageUnavailableStatus) + ": " + outage.problem;
    if (!outage.remedy.empty()) text += " (fix: " + outage.remedy + ")";
    entries.emplace_back("problem.storage", std::move(text));
    return CommandResult::KeyValues(std::move(entries));
  }

  // Not null once storage_->Check() said OK: a published engine stays.
  Engine* engine() const { return storage_->engine(); }

  const std::shared_ptr<const EngineHolder> storage_;
  Env* const env_;
  const std::string data_dir_;
};

using Handler = CommandResult (StatusCommands::*)(const CommandInvocation&);

}  // namespace

Status RegisterStatusCommands(CommandRegistry* registry, std::shared_ptr<const EngineHolder> storage,
                              Env* env, std::string data_dir) {
  auto commands = std::make_shared<StatusCommands>(std::move(storage), env, std::move(data_dir));
  const auto add = [&](CommandSpec spec, Handler handler) {
    return registry->Register(std::move(spec), [commands, handler](const CommandInvocation& invocation) {
      return ((*commands).*handler)(invocation);
    });
  };
  CAIRN_RETURN_IF_ERROR(add({.name = "stats",
                             .arguments = "",
                             .summary = "engine counters: records, LSNs, head, chunks, bytes on disk",
                             .options = {},
                             .min_arguments = 0,
                             .max_arguments = 0},
                            &StatusCommands::Stats));
  return add({.name = "health",
              .arguments = "",
              .summary = "ok when the engine answers, and the data directory's free space",
              .options = {},
              .min_arguments = 0,
              .max_arguments = 0},
             &StatusCommands::Health);
}

}  // namespace cairn
