// Daemon: cairnd's wiring, from start-up to a clean exit.
//
// Start() claims the data directory (creates it, takes <data_dir>/LOCK so no
// second cairnd can use it), then brings up the command layer and the serial
// shell. Run() is the main thread's loop: it waits for the termination
// signals (process_signals.h) and keeps the serial shell alive. Stop() takes
// everything down in reverse order and releases the lock.
//
//   SIGTERM, SIGINT  Run() returns; the caller then Stop()s and exits 0
//   SIGHUP           the serial port is closed and opened again (a USB
//                    adapter re-plugged, a console server restarted)
//
// A serial session that ends by itself (the port failed) is logged and the
// port is reopened every kSerialRetrySeconds until that succeeds.
//
// Thread-safety: Start, Run and Stop are for the main thread. The caller
// must have called TerminationSignals::Block() before Start(), because Start
// starts threads that must not receive those signals.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "cairn/platform/env.h"
#include "cairn/platform/status.h"
#include "cairn/transport/command_registry.h"
#include "cairn/transport/serial_shell.h"

#include "cairnd/log.h"
#include "cairnd/options.h"

namespace cairn::cairnd {

class Daemon {
 public:
  static constexpr int64_t kSerialRetrySeconds = 5;

  // `env` and `log` are not owned and must outlive the daemon.
  Daemon(Env* env, Logger* log, DaemonOptions options);

  // Stops whatever is running.
  ~Daemon();

  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Claims the data directory and starts the serial shell; call once. Busy, with the
  // message "data directory DIR is in use by another cairnd (lock DIR/LOCK
  // held)", when another process holds the lock; any other failure names
  // the step and the path. After a failure, Stop() releases what was taken.
  Status Start();

  // Serves until SIGTERM or SIGINT arrives (returns OK) or waiting for
  // signals fails. Precondition: Start() succeeded.
  Status Run();

  // Stops the serial shell and releases the data directory. Idempotent.
  void Stop();

 private:
  // Opens the serial port and starts a shell on it.
  Status StartSerialShell();
  void StopSerialShell();
  // Reacts to a session that ended by itself and retries a failed port.
  void SuperviseSerialShell();

  Env* const env_;
  Logger* const log_;
  const DaemonOptions options_;

  std::unique_ptr<FileLock> data_dir_lock_;
  CommandRegistry commands_;
  std::unique_ptr<SerialShell> serial_shell_;
  // Monotonic time of the next attempt to open the serial port while it is
  // down.
  int64_t next_serial_attempt_nanos_ = 0;
  // The last failure to open the port, logged once; empty while it is up.
  std::string last_serial_error_;
};

}  // namespace cairn::cairnd
