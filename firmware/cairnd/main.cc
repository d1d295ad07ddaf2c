// cairnd: the cairn daemon. See options.h for the command line and daemon.h
// for what runs.
//
// `cairnd token ...`, `cairnd verify ...` and `cairnd config ...` are subcommands with their own
// exit statuses (token_command.h, verify_command.h, config_command.h).
//
// Exit status: 0 after a clean stop (SIGTERM/SIGINT), for --help and
// --version, and after a log repair; 1 when start-up, the main loop, the
// final seal or a repair fails (the log says why); 2 for a malformed command
// line or config file (cairnd config check tells which).
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "cairn/core/engine.h"
#include "cairn/platform/env.h"
#include "cairn/platform/process_id.h"
#include "cairn/platform/process_memory.h"
#include "cairn/platform/process_signals.h"
#include "cairn/shell/builtin_commands.h"

#include "cairnd/config_command.h"
#include "cairnd/daemon.h"
#include "cairnd/log.h"
#include "cairnd/options.h"
#include "cairnd/token_command.h"
#include "cairnd/verify_command.h"

namespace {

// `cairnd --repair-log`: what Engine::RepairLog did, on stdout, or why it
// could not, on stderr. Losses are told in readings (one per LSN), with the
// ranges and how many of them the cloud already holds.
int RepairLog(const std::string& data_dir) {
  cairn::Result<cairn::LogRepairReport> repaired = cairn::Engine::RepairLog(cairn::Env::Default(), data_dir);
  if (!repaired.ok()) {
    if (repaired.status().Is(cairn::StatusCode::kBusy)) {
      std::fprintf(stderr,
                   "cairnd: cannot repair the log: data directory %s is in use by a running cairnd; "
                   "stop it first\n",
                   data_dir.c_str());
    } else {
      std::fprintf(stderr, "cairnd: cannot repair the log of %s: %s\n", data_dir.c_str(),
                   repaired.status().ToString().c_str());
    }
    return 1;
  }
  const cairn::LogRepairReport& report = *repaired;
  auto count = [](uint64_t n) { return static_cast<unsigned long long>(n); };
  for (const std::string& action : report.actions) std::printf("cairnd: %s\n", action.c_str());
  if (report.segments_trimmed > 0) {
    std::printf("cairnd: removed %llu log segment(s) whose readings are all sealed into period files\n",
                count(report.segments_trimmed));
  }
  if (report.torn_tail_bytes > 0) {
    std::printf("cairnd: dropped %llu bytes of a write cut short by a crash\n",
                count(report.torn_tail_bytes));
  }
  if (!report.note.empty()) std::printf("cairnd: note: %s\n", report.note.c_str());
  if (report.actions.empty()) {
    std::printf("cairnd: the log of %s needed no repair; no reading lost\n", data_dir.c_str());
    return 0;
  }
  std::string ranges;
  for (const cairn::LsnRange& range : report.lost_lsns) {
    if (!ranges.empty()) ranges += ", ";
    ranges += std::to_string(range.first);
    if (range.last != range.first) ranges += "-" + std::to_string(range.last);
  }
  std::printf("cairnd: repaired the log of %s: %llu reading(s) lost%s%s, %llu of them already synced to the "
              "cloud; %llu intact reading(s) after the damage kept\n",
              data_dir.c_str(), count(report.readings_lost), ranges.empty() ? "" : " (LSNs ",
              ranges.empty() ? "" : (ranges + ")").c_str(), count(report.readings_lost_already_synced),
              count(report.readings_kept_after_damage));
  return 0;
}

}  // namespace

// Allocator arenas of the daemon (LimitAllocatorArenas).
constexpr int kAllocatorArenas = 2;

int main(int argc, char** argv) {
  using cairn::cairnd::ParsedCommandLine;

  const std::span<const char* const> words(argv + 1, argc > 0 ? static_cast<size_t>(argc - 1) : 0);
  if (!words.empty() && std::string_view(words[0]) == "token") {
    std::string out, err;
    const int status = cairn::cairnd::RunTokenCommand(cairn::Env::Default(), words.subspan(1), &out, &err);
    std::fputs(out.c_str(), stdout);
    std::fputs(err.c_str(), stderr);
    return status;
  }
  if (!words.empty() && std::string_view(words[0]) == "config") {
    std::string out, err;
    const int status = cairn::cairnd::RunConfigCommand(cairn::Env::Default(), words.subspan(1), &out, &err);
    std::fputs(out.c_str(), stdout);
    std::fputs(err.c_str(), stderr);
    return status;
  }
  if (!words.empty() && std::string_view(words[0]) == "verify") {
    std::string out, err;
    const int status = cairn::cairnd::RunVerifyCommand(cairn::Env::Default(), words.subspan(1), &out, &err);
    std::fputs(out.c_str(), stdout);
    std::fputs(err.c_str(), stderr);
    return status;
  }
  cairn::Result<ParsedCommandLine> parsed = cairn::cairnd::LoadConfiguration(cairn::Env::Default(), words);
  if (!parsed.ok()) {
    std::fprintf(stderr, "cairnd: %s\nTry 'cairnd --help' for usage.\n", parsed.status().message().c_str());
    return 2;
  }
  switch (parsed->action) {
    case ParsedCommandLine::Action::kShowHelp:
      std::fputs(cairn::cairnd::UsageText().c_str(), stdout);
      return 0;
    case ParsedCommandLine::Action::kShowVersion: {
      const cairn::BuildInfo build = cairn::GetBuildInfo();
      std::printf("cairnd %s (%s, %s)\n", build.version.c_str(), build.target_arch.c_str(),
                  build.compiler.c_str());
      return 0;
    }
    case ParsedCommandLine::Action::kRepairLog:
      return RepairLog(parsed->options.data_dir);
    case ParsedCommandLine::Action::kRun:
      break;
  }

  // Two arenas: writers on two connections and the sealer each take one
  // without waiting on a lock, at a fraction of the resident slack of
  // glibc's eight per core (process_memory.h; measured in BENCHMARK.md).
  cairn::LimitAllocatorArenas(kAllocatorArenas);
  cairn::Env* env = cairn::Env::Default();
  cairn::cairnd::Logger log(env, "cairnd", cairn::CurrentProcessId(), stderr);

  // Before any thread exists, so that only the main thread's Wait receives
  // the termination signals.
  cairn::Status blocked = cairn::TerminationSignals::Block();
  if (!blocked.ok()) {
    log.Error("cannot block termination signals: " + blocked.ToString());
    return 1;
  }

  cairn::cairnd::Daemon daemon(env, &log, std::move(parsed->options));
  daemon.SetConfigReloader([env, words]() -> cairn::Result<cairn::cairnd::DaemonOptions> {
    CAIRN_ASSIGN_OR_RETURN(ParsedCommandLine reread, cairn::cairnd::LoadConfiguration(env, words));
    return std::move(reread.options);
  });
  cairn::Status started = daemon.Start();
  if (!started.ok()) {
    log.Error(started.message());
    (void)daemon.Stop();
    return 1;
  }
  cairn::Status ran = daemon.Run();
  const cairn::Status stopped = daemon.Stop();
  if (!ran.ok()) {
    log.Error("main loop failed: " + ran.ToString());
    return 1;
  }
  if (!stopped.ok()) return 1;  // Stop() logged why
  log.Info("stopped");
  return 0;
}
