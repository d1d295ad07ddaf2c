#include "cairnd/daemon.h"

#include <utility>
#include <vector>

#include "cairn/platform/process_signals.h"
#include "cairn/transport/builtin_commands.h"
#include "cairn/transport/engine_commands.h"

namespace cairn::cairnd {

namespace {

constexpr int64_t kNanosPerSecond = 1000000000;

// How long the main loop sleeps in one wait for signals: also how soon a
// dead serial session is noticed.
constexpr int kSignalWaitMillis = 1000;

std::string SerialBanner() {
  const BuildInfo build = GetBuildInfo();
  return "cairn " + build.version + " (" + build.target_arch + ") serial shell; type help for commands";
}

}  // namespace

Daemon::Daemon(Env* env, Logger* log, DaemonOptions options)
    : env_(env), log_(log), options_(std::move(options)) {}

Daemon::~Daemon() { (void)Stop(); }

Status Daemon::Start() {
  const std::string& dir = options_.data_dir;
  CAIRN_RETURN_IF_ERROR(env_->CreateDirs(dir).WithContext("cannot create data directory " + dir));
  CAIRN_RETURN_IF_ERROR(OpenEngine());
  CAIRN_RETURN_IF_ERROR(CreateDefaultTable());

  CAIRN_RETURN_IF_ERROR(RegisterBuiltinCommands(&commands_));
  EngineCommandOptions command_options;
  command_options.data_dir = dir;
  CAIRN_RETURN_IF_ERROR(RegisterEngineCommands(&commands_, engine_.get(), env_, command_options));
  CAIRN_RETURN_IF_ERROR(StartSerialShell());
  log_->Info("cairnd " + GetBuildInfo().version + " started: data directory " + dir + ", serial shell on " +
             options_.serial_path + " at " + std::to_string(options_.baud) + " baud");
  return Status::Ok();
}

Status Daemon::OpenEngine() {
  const std::string& dir = options_.data_dir;
  RecoveryReport recovery;
  Result<std::unique_ptr<Engine>> engine = Engine::Open(env_, dir, options_.engine, &recovery);
  if (!engine.ok()) {
    const Status& status = engine.status();
    if (status.Is(StatusCode::kBusy)) {
      return Status::Busy("data directory " + dir + " is in use by another cairnd (lock " +
                          JoinPath(dir, "LOCK") + " held)");
    }
    if (status.Is(StatusCode::kCorruption)) {
      return Status::Corruption("cannot open data directory " + dir + ": " + status.message() +
                                "; to cut the log after its last intact record (the records after the damage "
                                "are lost), stop cairnd and run: cairnd --repair-log --data-dir " +
                                dir);
    }
    return status.WithContext("cannot open data directory " + dir);
  }
  engine_ = std::move(engine).value();
  if (recovery.torn_tail_bytes_truncated > 0) {
    log_->Warn("the write-ahead log ended in a write cut short by a crash or power cut; its " +
               std::to_string(recovery.torn_tail_bytes_truncated) + " bytes were dropped");
  }
  if (recovery.records_replayed > 0) {
    log_->Info("recovered " + std::to_string(recovery.records_replayed) +
               " records from the write-ahead log into memory");
  }
  return Status::Ok();
}

Status Daemon::CreateDefaultTable() {
  CAIRN_ASSIGN_OR_RETURN(const std::vector<TableInfo> tables, engine_->ListTables());
  if (!tables.empty()) return Status::Ok();
  const TableOptions defaults;
  CAIRN_RETURN_IF_ERROR(engine_->CreateTable(kDefaultTable, defaults)
                            .WithContext("cannot create the default table " + std::string(kDefaultTable)));
  log_->Info("created the default table '" + std::string(kDefaultTable) + "' (period " +
             std::string(PeriodName(defaults.period)) + ", retention " +
             FormatDurationSeconds(defaults.retention_seconds) + "): the data directory held no table");
  return Status::Ok();
}

Status Daemon::Run() {
  for (;;) {
    CAIRN_ASSIGN_OR_RETURN(const ProcessSignal signal, TerminationSignals::Wait(kSignalWaitMillis));
    switch (signal) {
      case ProcessSignal::kTerminate:
        log_->Info("termination requested; stopping");
        return Status::Ok();
      case ProcessSignal::kReload: {
        log_->Info("SIGHUP: reopening serial port " + options_.serial_path);
        StopSerialShell();
        Status status = StartSerialShell();
        if (!status.ok()) {
          log_->Error(status.message() + "; retrying every " + std::to_string(kSerialRetrySeconds) + " s");
          last_serial_error_ = status.message();
          next_serial_attempt_nanos_ = env_->MonotonicNanos() + kSerialRetrySeconds * kNanosPerSecond;
        }
        break;
      }
      case ProcessSignal::kNone:
        break;
    }
    SuperviseSerialShell();
  }
}

void Daemon::SuperviseSerialShell() {
  if (serial_shell_ != nullptr) {
    if (!serial_shell_->ended()) return;
    log_->Error("serial session on " + options_.serial_path +
                " ended: " + serial_shell_->session_status().ToString() + "; reopening in " +
                std::to_string(kSerialRetrySeconds) + " s");
    StopSerialShell();
    next_serial_attempt_nanos_ = env_->MonotonicNanos() + kSerialRetrySeconds * kNanosPerSecond;
    return;
  }
  if (env_->MonotonicNanos() < next_serial_attempt_nanos_) return;
  Status status = StartSerialShell();
  if (status.ok()) {
    log_->Info("serial shell on " + options_.serial_path + " is back");
    last_serial_error_.clear();
    return;
  }
  // A device unplugged for days must not fill the journal: each distinct
  // failure is logged once per outage.
  if (status.message() != last_serial_error_) {
    log_->Warn(status.message() + "; retrying every " + std::to_string(kSerialRetrySeconds) + " s");
    last_serial_error_ = status.message();
  }
  next_serial_attempt_nanos_ = env_->MonotonicNanos() + kSerialRetrySeconds * kNanosPerSecond;
}

Status Daemon::StartSerialShell() {
  Result<std::unique_ptr<SerialPort>> port = env_->OpenSerialPort(options_.serial_path, options_.baud);
  if (!port.ok()) return port.status().WithContext("cannot open serial port " + options_.serial_path);
  SerialShellOptions shell_options;
  shell_options.banner = SerialBanner();
  serial_shell_ = std::make_unique<SerialShell>(env_, std::move(port).value(), &commands_, shell_options);
  serial_shell_->Start();
  return Status::Ok();
}

void Daemon::StopSerialShell() {
  if (serial_shell_ == nullptr) return;
  serial_shell_->Stop();
  serial_shell_.reset();
}

Status Daemon::Stop() {
  StopSerialShell();
  if (engine_ == nullptr) return Status::Ok();
  Status result = engine_->SealAll();
  if (!result.ok()) {
    log_->Error("sealing the head on stop failed: " + result.ToString() +
                "; the write-ahead log keeps every acknowledged record for the next start");
  }
  Status closed = engine_->Close();
  if (!closed.ok()) {
    log_->Error("closing the engine failed: " + closed.ToString());
    if (result.ok()) result = closed;
  }
  engine_.reset();
  return result;
}

}  // namespace cairn::cairnd
