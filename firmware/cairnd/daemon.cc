#include "cairnd/daemon.h"

#include <utility>

#include "cairn/platform/process_signals.h"
#include "cairn/transport/builtin_commands.h"

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

Daemon::~Daemon() { Stop(); }

Status Daemon::Start() {
  const std::string& dir = options_.data_dir;
  CAIRN_RETURN_IF_ERROR(env_->CreateDirs(dir).WithContext("cannot create data directory " + dir));

  const std::string lock_path = JoinPath(dir, "LOCK");
  Result<std::unique_ptr<FileLock>> lock = env_->LockFile(lock_path);
  if (!lock.ok()) {
    if (lock.status().Is(StatusCode::kBusy)) {
      return Status::Busy("data directory " + dir + " is in use by another cairnd (lock " + lock_path +
                          " held)");
    }
    return lock.status().WithContext("cannot lock data directory " + dir);
  }
  data_dir_lock_ = std::move(lock).value();

  CAIRN_RETURN_IF_ERROR(RegisterBuiltinCommands(&commands_));
  CAIRN_RETURN_IF_ERROR(StartSerialShell());
  log_->Info("cairnd " + GetBuildInfo().version + " started: data directory " + dir + ", serial shell on " +
             options_.serial_path + " at " + std::to_string(options_.baud) + " baud");
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

void Daemon::Stop() {
  StopSerialShell();
  data_dir_lock_.reset();
}

}  // namespace cairn::cairnd
