// Daemon: cairnd's wiring, from start-up to a clean exit.
//
// Start() opens the storage engine on the data directory (the engine takes
// <data_dir>/LOCK, so no second cairnd can use it, and replays its log),
// creates or alters the tables the config file declares (config_tables.h),
// creates the table `sensors` when the directory still holds no table, opens
// the API tokens (creating the first admin token on a fresh gateway and
// showing it once, in the log and on the serial console), then brings up the
// command layer (builtin and engine commands), the serial shell and the
// HTTP(S) API.
//
// The tokens file. A fresh data directory (no catalog.db before this start)
// without one gets its first admin token. Anywhere else a missing or damaged
// tokens file never makes cairnd invent credentials nor accept requests
// without one: cairnd starts with no valid token (the HTTP API answers 401
// to everything that needs one, /healthz says degraded for a damaged file;
// the serial shell and the MQTT input go on storing readings), logs an error
// naming the file and the command that fixes it (`cairnd token repair` for
// a damaged file, which keeps every intact token; `cairnd token create` for
// a lost one), and takes the fixed file over within a second. A file
// readable by others is set to 0600, with a log line. Run() is the main thread's loop: it waits for the
// termination signals (process_signals.h) and keeps the serial shell alive. Stop() takes everything down in
// reverse order: the shell, then the engine (every head record sealed into its period file, the log synced,
// the lock released).
//
//   SIGTERM, SIGINT  Run() returns; the caller then Stop()s and exits 0:
//                    HTTP requests in progress are answered (HttpServer::Stop
//                    drains for --http-drain-ms), then everything is sealed
//   SIGHUP           the config file is read again (with a reloader, see
//                    SetConfigReloader): the tables it declares are
//                    created or changed live, and every other key whose
//                    value changed is logged by name as needing a restart;
//                    a file that no longer parses is logged and nothing
//                    changes. Then the serial port is closed and opened
//                    again (a USB adapter re-plugged, a console server
//                    restarted) and the token file is read again
//
// A serial session that ends by itself (the port failed) is logged and the
// port is reopened every kSerialRetrySeconds until that succeeds.
//
// Storage unavailable. When the data directory cannot be created or the
// engine cannot open it for any reason but another cairnd holding its lock
// (a read-only or full partition at boot, a damaged log, wrong ownership),
// Start() still succeeds: an operator on the serial console must learn why,
// and an exit would only make the init system restart cairnd in a loop.
// The outage and its remedy (storage_outage.h) are logged once per distinct
// failure and kept in the EngineHolder (engine_holder.h) through which the
// shell's commands and the HTTP API reach the engine: `help`, `version` and
// `health` answer, `health` and /healthz say `unavailable` with the reason,
// every other command answers "storage unavailable: ..." and every other
// endpoint 503 with Retry-After. Run() tries to open the engine again every
// --storage-retry-ms; once it opens, cairnd does what a normal start does
// after opening it (the config's tables, the default table, the first admin
// token of a fresh directory, sync, the MQTT input), then publishes the
// engine to the shell and the API and logs "storage is back". A failure of
// those later steps ends Run() with it, as it would have ended a start; so
// does finding the directory taken by another cairnd meanwhile (Busy).
// Why a holder rather than registering the engine commands late: the
// registry is shared without a lock once the shell runs, and a command that
// exists but answers the outage tells the operator more than "unknown
// command". The tokens file lives in the data directory: when the directory
// does not even exist the HTTP API starts once the storage does.
//
// Thread-safety: Start, Run and Stop are for the main thread. The caller
// must have called TerminationSignals::Block() before Start(), because Start
// starts threads that must not receive those signals.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "cairn/core/engine.h"
#include "cairn/platform/env.h"
#include "cairn/platform/status.h"
#include "cairn/platform/tls.h"
#include "cairn/http/api_metrics.h"
#include "cairn/http/auth_limiter.h"
#include "cairn/shell/command_registry.h"
#include "cairn/shell/engine_commands.h"
#include "cairn/shell/engine_holder.h"
#include "cairn/http/http_api.h"
#include "cairn/http/http_server.h"
#include "cairn/mqtt/mqtt_input.h"
#include "cairn/http/rate_limited_log.h"
#include "cairn/shell/serial_shell.h"
#include "cairn/sync/sync_agent.h"
#include "cairn/http/token_store.h"

#include "cairnd/log.h"
#include "cairnd/options.h"

namespace cairn::cairnd {

class Daemon {
 public:
  static constexpr int64_t kSerialRetrySeconds = 5;
  // Created on first start so that a fresh gateway accepts writes at once.
  static constexpr const char* kDefaultTable = "sensors";

  // `env` and `log` are not owned and must outlive the daemon.
  Daemon(Env* env, Logger* log, DaemonOptions options);

  // Stops whatever is running.
  ~Daemon();

  // Reads the configuration again for SIGHUP (main passes LoadConfiguration
  // over its command line). Without one SIGHUP leaves the configuration as
  // it is. Call before Run().
  using ConfigReloader = std::function<Result<DaemonOptions>()>;
  void SetConfigReloader(ConfigReloader reloader) { reloader_ = std::move(reloader); }

  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Opens the engine and starts the serial shell; call once. Busy, with the
  // message "data directory DIR is in use by another cairnd (lock DIR/LOCK
  // held)", when another process holds the lock. A data directory that
  // cannot be opened otherwise is no failure: cairnd starts without storage
  // (above). Any other failure names the step and the path. After a
  // failure, Stop() releases what was taken.
  Status Start();

  // Serves until SIGTERM or SIGINT arrives (returns OK), waiting for
  // signals fails, or a step after the storage came back fails (the error a
  // start would have ended with). Precondition: Start() succeeded.
  Status Run();

  // The HTTP port listened on (the chosen one for port 0); 0 without HTTP.
  uint16_t http_port() const { return http_server_ ? http_server_->port() : 0; }

  // Stops the HTTP server and the serial shell, seals every head record, closes the engine and
  // so releases the data directory. Idempotent. Returns the first failure of
  // sealing or closing (logged too); the log still holds every acknowledged
  // record then, and the next start replays it.
  Status Stop();

 private:
  // Creates the data directory, opens the engine and logs what recovery
  // found. Busy when another cairnd holds the directory.
  // Puts every shell command into `registry`, the engine's with `options`.
  Status RegisterCommands(CommandRegistry* registry, const EngineCommandOptions& options);
  Status OpenEngine();
  // After the engine opened: the config's tables, the default table, the
  // tokens file, sync, the MQTT input; then publishes the engine.
  Status StartOnStorage();
  // Records and logs (once per distinct failure) why the engine cannot be
  // opened, and when to try again.
  void EnterStorageOutage(const Status& failure);
  // Run()'s retry while the storage is unavailable; fails only when a step
  // of StartOnStorage fails after the engine opened.
  Status SuperviseStorage();
  // On a fresh data directory creates the first admin token; elsewhere a
  // missing tokens file is logged with the command that makes one.
  Status EnsureTokensFile();
  // SIGHUP: rereads the config file, applies its tables and logs the keys
  // that need a restart.
  void ReloadConfig();
  // Creates kDefaultTable when the engine holds no table at all.
  Status CreateDefaultTable();
  // Opens the token store (a damaged file is served as no token, logged).
  Status OpenTokens();
  // Starts the sync agent when --sync-broker is given.
  Status StartSync();
  // Subscribes to the gateway's broker for sensor readings when asked.
  Status StartMqttInput();
  // Starts the HTTP(S) server when the options ask for it.
  Status StartHttp();
  // Opens the serial port and starts a shell on it.
  Status StartSerialShell();
  void StopSerialShell();
  // Reacts to a session that ended by itself and retries a failed port.
  void SuperviseSerialShell();

  Env* const env_;
  Logger* const log_;
  const DaemonOptions options_;
  ConfigReloader reloader_;

  // Declared before the registry and the shell, whose commands use it.
  // engine_ is the main thread's alone; other threads reach the engine
  // through storage_ once it is published.
  std::unique_ptr<Engine> engine_;
  EngineHolder storage_;
  // The sync agent for the `sync` command's threads: set before the engine
  // is published, cleared before the agent stops.
  std::atomic<SyncAgent*> current_sync_agent_{nullptr};
  CommandRegistry commands_;       // the serial shell's
  CommandRegistry http_commands_;  // the HTTP API's: the same commands, longer range pages
  std::unique_ptr<SyncAgent> sync_agent_;
  std::unique_ptr<MqttInput> mqtt_input_;
  std::unique_ptr<SerialShell> serial_shell_;
  std::unique_ptr<TokenStore> tokens_;
  // An admin token created at this start, shown once on the serial
  // console too; cleared once shown.
  std::string first_admin_token_;
  AuthThrottle auth_throttle_;
  // Whether the data directory held no catalog before this start.
  bool fresh_data_dir_ = false;
  // Serial output stalls, a few lines a minute at most.
  std::unique_ptr<RateLimitedLog> serial_log_;
  ApiMetrics api_metrics_;
  std::unique_ptr<TlsServerContext> tls_;
  std::unique_ptr<HttpApi> http_api_;
  std::unique_ptr<HttpServer> http_server_;
  // Monotonic time of the next attempt to open the serial port while it is
  // down.
  int64_t next_serial_attempt_nanos_ = 0;
  // The last failure to open the port, logged once; empty while it is up.
  std::string last_serial_error_;
  // While the storage is unavailable: when to try again, and the failure
  // last logged.
  int64_t next_storage_attempt_nanos_ = 0;
  std::string last_storage_error_;
};

}  // namespace cairn::cairnd
