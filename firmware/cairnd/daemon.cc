#include "cairnd/daemon.h"

#include <cstdio>
#include <utility>
#include <vector>

#include "cairn/platform/process_signals.h"
#include "cairn/shell/builtin_commands.h"
#include "cairn/shell/engine_commands.h"
#include "cairn/text/time_argument.h"
#include "cairn/mqtt/mqtt_input.h"
#include "cairn/sync/sync_commands.h"
#include "cairn/http/web_assets.h"

#include "cairn/platform/process_id.h"

#include "cairnd/config_tables.h"
#include "cairnd/storage_outage.h"

namespace cairn::cairnd {

namespace {

constexpr int64_t kNanosPerSecond = 1000000000;
constexpr int64_t kNanosPerMilli = 1000000;

// How long the main loop sleeps in one wait for signals: also how soon a
// dead serial session is noticed.
constexpr int kSignalWaitMillis = 1000;

std::string SerialBanner() {
  const BuildInfo build = GetBuildInfo();
  return "cairn " + build.version + " (" + build.target_arch + ") serial shell; type help for commands";
}

// Rows of one `range` page over HTTP at most (the serial console keeps
// EngineCommandOptions' default).
constexpr size_t kHttpMaxRangeRows = 10'000;

}  // namespace

Daemon::Daemon(Env* env, Logger* log, DaemonOptions options)
    : env_(env), log_(log), options_(std::move(options)) {}

Daemon::~Daemon() { (void)Stop(); }

Status Daemon::RegisterCommands(CommandRegistry* registry, const EngineCommandOptions& options) {
  CAIRN_RETURN_IF_ERROR(RegisterBuiltinCommands(registry));
  CAIRN_RETURN_IF_ERROR(RegisterEngineCommands(registry, &storage_, env_, options));
  return RegisterSyncCommands(registry, &storage_,
                              [this] { return current_sync_agent_.load(std::memory_order_acquire); });
}

Status Daemon::Start() {
  const std::string& dir = options_.data_dir;
  // Every command goes in before the registry is shared; those that need
  // the engine find it through storage_ once it is open.
  // The serial console's `range` pages stay within its renderer's row cap
  // (EngineCommandOptions); the HTTP API renders every row, so its pages
  // may be ten times longer: an hour of 1 Hz readings in one request.
  EngineCommandOptions command_options;
  command_options.data_dir = dir;
  command_options.device_tag = options_.device_tag;
  CAIRN_RETURN_IF_ERROR(RegisterCommands(&commands_, command_options));
  command_options.max_limit = kHttpMaxRangeRows;
  CAIRN_RETURN_IF_ERROR(RegisterCommands(&http_commands_, command_options));

  // Judged before the first attempt: one that fails may leave a catalog
  // file behind.
  fresh_data_dir_ = !env_->FileExists(JoinPath(dir, "catalog.db"));
  const Status opened = OpenEngine();
  if (opened.Is(StatusCode::kBusy)) return opened;
  if (!opened.ok()) EnterStorageOutage(opened);
  // The tokens file lives in the data directory too: without the directory
  // there is nothing to read, and the HTTP API waits for the storage.
  if (env_->FileExists(dir)) CAIRN_RETURN_IF_ERROR(OpenTokens());
  if (engine_ != nullptr) CAIRN_RETURN_IF_ERROR(StartOnStorage());

  std::string serving;
  if (!options_.serial_path.empty()) {
    // A missing tty is no reason to stop: a USB adapter may be plugged in
    // later, and on a gateway whose init restarts cairnd a fatal error here
    // would also take the HTTP API down in a restart loop. The port is
    // retried like one whose session ended.
    const Status serial = StartSerialShell();
    serving = ", serial shell on " + options_.serial_path + " at " + std::to_string(options_.baud) + " baud";
    if (!serial.ok()) {
      log_->Warn(serial.message() + "; retrying every " + std::to_string(kSerialRetrySeconds) + " s");
      last_serial_error_ = serial.message();
      next_serial_attempt_nanos_ = env_->MonotonicNanos() + kSerialRetrySeconds * kNanosPerSecond;
      serving += " (waiting for the device)";
    }
  }
  if (tokens_ != nullptr) CAIRN_RETURN_IF_ERROR(StartHttp());
  if (http_server_ != nullptr) {
    const bool ipv6 = options_.http_address.find(':') != std::string::npos;
    serving += std::string(", listening on ") + (http_server_->tls() ? "https" : "http") + "://" +
               (ipv6 ? "[" + options_.http_address + "]" : options_.http_address) + ":" +
               std::to_string(http_server_->port());
  }
  if (mqtt_input_ != nullptr) serving += ", reading sensors from " + options_.mqtt_input_broker;
  if (sync_agent_ != nullptr) {
    serving += ", syncing to " + options_.sync_broker + " as gateway " + options_.gateway_id;
  }
  log_->Info("cairnd " + GetBuildInfo().version + " started: data directory " + dir +
             (engine_ == nullptr ? " (storage unavailable)" : "") + serving);
  if (options_.http_enabled && http_server_ == nullptr && tokens_ != nullptr) {
    log_->Warn(
        "the HTTP API is off: give --tls-cert and --tls-key for HTTPS, or --http-plain for plain HTTP");
  }
  return Status::Ok();
}

Status Daemon::OpenTokens() {
  const std::string& dir = options_.data_dir;
  Result<std::unique_ptr<TokenStore>> tokens = TokenStore::Open(env_, dir, /*serve_damaged=*/true);
  if (!tokens.ok()) return tokens.status().WithContext("cannot open the API tokens");
  tokens_ = std::move(tokens).value();
  if (Status damage = tokens_->damage(); !damage.ok()) {
    log_->Error(
        "the API tokens cannot be used: " + damage.message() +
        ". Until then no token works: HTTP requests that need one are refused (readings from the serial "
        "shell and MQTT are still stored); cairnd takes the repaired file over within a second");
    return Status::Ok();
  }
  Result<std::optional<uint32_t>> loosened = tokens_->RestrictFileMode();
  if (!loosened.ok()) {
    log_->Warn("cannot restrict the permissions of " + tokens_->file_path() + ": " +
               loosened.status().message());
  } else if (loosened->has_value()) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(**loosened));
    log_->Warn(tokens_->file_path() + " was readable by others (mode " + mode + "); its mode is now 0600");
  }
  return Status::Ok();
}

Status Daemon::EnsureTokensFile() {
  const std::string& dir = options_.data_dir;
  if (!tokens_->damage().ok() || env_->FileExists(tokens_->file_path())) return Status::Ok();
  if (!fresh_data_dir_) {
    log_->Error(
        "the API tokens file " + tokens_->file_path() + " is missing although " + dir +
        " holds data: the tokens in it are lost, and no admin token is made behind the operator's back. "
        "HTTP requests that need a token are refused until one is created: cairnd token create --data-dir " +
        dir + " --name admin --scope admin (cairnd takes it up within a second; re-create the others too)");
    return Status::Ok();
  }
  Result<std::optional<CreatedToken>> first = tokens_->EnsureAdminToken();
  if (!first.ok()) return first.status().WithContext("cannot create the first admin token");
  if (first->has_value()) {
    first_admin_token_ = (*first)->token;
    // The one time this secret exists outside the operator's hands: the
    // store keeps only its hash.
    log_->Warn("first start: created the admin token (shown once; store it now): " + first_admin_token_);
  }
  return Status::Ok();
}

Status Daemon::StartSync() {
  if (options_.sync_broker.empty()) return Status::Ok();
  SyncAgentOptions sync;
  sync.gateway_id = options_.gateway_id;
  Result<std::string> key_text = env_->ReadFileToString(options_.sync_key_file);
  if (!key_text.ok())
    return key_text.status().WithContext("cannot read the sync key " + options_.sync_key_file);
  Result<std::string> key = ParseSyncKeyHex(*key_text);
  if (!key.ok()) return key.status().WithContext("sync key " + options_.sync_key_file);
  sync.key = std::move(key).value();
  sync.topic_prefix = options_.sync_topic_prefix;
  CAIRN_ASSIGN_OR_RETURN(sync.confirmation, ParseSyncConfirmation(options_.sync_confirmation));
  sync.encoding = options_.sync_encoding == "json" ? EnvelopeEncoding::kJson : EnvelopeEncoding::kBinary;
  sync.link.server_uri = options_.sync_broker;
  sync.link.username = options_.sync_username;
  if (!options_.sync_password_file.empty()) {
    Result<std::string> password = env_->ReadFileToString(options_.sync_password_file);
    if (!password.ok()) {
      return password.status().WithContext("cannot read the broker password " + options_.sync_password_file);
    }
    std::string text = std::move(password).value();
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    sync.link.password = std::move(text);
  }
  if (!options_.sync_tls_ca.empty() || !options_.sync_tls_cert.empty()) {
    MqttTlsOptions tls;
    tls.ca_file = options_.sync_tls_ca;
    tls.cert_file = options_.sync_tls_cert;
    tls.key_file = options_.sync_tls_key;
    sync.link.tls = tls;
  }
  sync.link.max_inflight = options_.sync_max_inflight;
  sync.backfill_records_per_second = options_.sync_backfill_rate;
  sync.live_interval_ms = options_.sync_live_interval_ms;
  sync.receipt_timeout_ms = options_.sync_receipt_timeout_ms;
  Logger* log = log_;
  sync.log = [log](std::string_view line) { log->Warn(std::string(line)); };
  Result<std::unique_ptr<SyncAgent>> agent = SyncAgent::Create(env_, engine_.get(), std::move(sync));
  if (!agent.ok()) return agent.status().WithContext("cannot set up sync to " + options_.sync_broker);
  sync_agent_ = std::move(agent).value();
  CAIRN_RETURN_IF_ERROR(sync_agent_->Start().WithContext("cannot start sync"));
  return Status::Ok();
}

Status Daemon::StartMqttInput() {
  if (options_.mqtt_input_broker.empty()) return Status::Ok();
  MqttInputOptions input;
  input.link.server_uri = options_.mqtt_input_broker;
  input.link.client_id =
      "cairnd-input-" + (options_.gateway_id.empty() ? std::string("local") : options_.gateway_id);
  std::string_view routes = options_.mqtt_input_routes;
  while (!routes.empty()) {
    const size_t comma = routes.find(',');
    CAIRN_ASSIGN_OR_RETURN(MqttInputRoute route, ParseMqttInputRoute(routes.substr(0, comma)));
    input.routes.push_back(std::move(route));
    routes = comma == std::string_view::npos ? std::string_view() : routes.substr(comma + 1);
  }
  input.device_tag = options_.device_tag;
  Logger* log = log_;
  input.log = [log](std::string_view line) { log->Warn(std::string(line)); };
  Result<std::unique_ptr<MqttInput>> created = MqttInput::Create(env_, engine_.get(), std::move(input));
  if (!created.ok()) return created.status().WithContext("cannot set up the MQTT input");
  mqtt_input_ = std::move(created).value();
  return mqtt_input_->Start().WithContext("cannot start the MQTT input");
}

Status Daemon::StartHttp() {
  if (!ServesHttp(options_)) return Status::Ok();
  ConnectionWrapper wrapper;
  if (!options_.tls_certificate_path.empty()) {
    TlsServerOptions tls_options;
    tls_options.certificate_path = options_.tls_certificate_path;
    tls_options.private_key_path = options_.tls_private_key_path;
    tls_options.client_ca_path = options_.tls_client_ca_path;
    // A handshake is the first thing a TLS client sends: as silent as a
    // plain connection without its first byte, it gets as long.
    tls_options.handshake_timeout_ms = options_.http_first_byte_timeout_ms;
    Result<std::unique_ptr<TlsServerContext>> tls = TlsServerContext::Create(env_, tls_options);
    if (!tls.ok()) return tls.status().WithContext("cannot set up TLS for the HTTP API");
    tls_ = std::move(tls).value();
    wrapper = [tls = tls_.get()](std::unique_ptr<TcpConnection> connection) {
      return tls->Accept(std::move(connection));
    };
  }
  HttpApiOptions api_options;
  api_options.data_dir = options_.data_dir;
  api_options.device_tag = options_.device_tag;
  api_options.auto_create_tables = options_.auto_create_tables;
  api_options.index_html = kWebIndexHtml;
  api_options.client_certificate_identity =
      options_.tls_client_identity == "cn"    ? ClientCertificateIdentity::kCommonName
      : options_.tls_client_identity == "san" ? ClientCertificateIdentity::kAlternativeName
                                              : ClientCertificateIdentity::kOff;
  Logger* log = log_;
  api_options.log = [log](const std::string& line) { log->Warn(line); };
  api_options.storage_retry_after_seconds = (options_.storage_retry_ms + 999) / 1000;
  // A streamed range reads in pages as long as the HTTP registry allows.
  api_options.range_page_rows = kHttpMaxRangeRows;
  // Called for /metrics, which answers only once the engine is published.
  api_options.extra_metrics = [storage = &storage_, current_agent = &current_sync_agent_]() -> std::string {
    Engine* engine = storage->engine();
    if (engine == nullptr) return "";
    std::string out = RenderQuotaMetrics(engine->QuotaStatus());
    SyncAgent* agent = current_agent->load(std::memory_order_acquire);
    if (agent == nullptr) return out;
    Result<SyncStatus> status = agent->GetStatus();
    return status.ok() ? RenderSyncMetrics(*status) + out : out;
  };
  http_api_ = std::make_unique<HttpApi>(
      &storage_, env_, &http_commands_, tokens_.get(), &auth_throttle_, &api_metrics_, api_options,
      [this] { return http_server_ ? http_server_->stats() : HttpServerStats(); });
  HttpServerOptions server_options;
  server_options.listen_address = options_.http_address;
  server_options.port = options_.http_port;
  server_options.max_connections = options_.http_max_connections;
  server_options.max_connections_per_address = options_.http_max_connections_per_address;
  server_options.first_byte_timeout_ms = options_.http_first_byte_timeout_ms;
  server_options.drain_timeout_ms = options_.http_drain_ms;
  server_options.max_body_bytes = options_.http_max_body_bytes;
  server_options.head_check = [api = http_api_.get()](const HttpRequest& head) {
    return api->CheckHead(head);
  };
  Result<std::unique_ptr<HttpServer>> server = HttpServer::Start(
      env_, server_options,
      [api = http_api_.get()](const HttpRequest& request) { return api->Handle(request); },
      std::move(wrapper), [log](const std::string& line) { log->Warn(line); });
  if (!server.ok()) {
    return server.status().WithContext("cannot listen for HTTP on " + options_.http_address + " port " +
                                       std::to_string(options_.http_port));
  }
  http_server_ = std::move(server).value();
  return Status::Ok();
}

Status Daemon::StartOnStorage() {
  CAIRN_RETURN_IF_ERROR(ApplyTableDeclarations(engine_.get(), options_.tables, log_));
  CAIRN_RETURN_IF_ERROR(CreateDefaultTable());
  if (tokens_ == nullptr) {
    // The directory did not exist at start: the HTTP API comes up now.
    CAIRN_RETURN_IF_ERROR(OpenTokens());
    CAIRN_RETURN_IF_ERROR(EnsureTokensFile());
    CAIRN_RETURN_IF_ERROR(StartHttp());
  } else {
    CAIRN_RETURN_IF_ERROR(EnsureTokensFile());
  }
  CAIRN_RETURN_IF_ERROR(StartSync());
  current_sync_agent_.store(sync_agent_.get(), std::memory_order_release);
  CAIRN_RETURN_IF_ERROR(StartMqttInput());
  // Last: a shell or HTTP thread that sees the engine sees all of the above.
  storage_.Publish(engine_.get());
  return Status::Ok();
}

void Daemon::EnterStorageOutage(const Status& failure) {
  EngineHolder::Outage outage = DescribeStorageOutage(failure, options_.data_dir, CurrentUserDescription());
  // The same failure again is not news: logged once per distinct message.
  if (outage.problem != last_storage_error_) {
    log_->Error(outage.problem + "; " + outage.remedy + " (meanwhile the shell and the HTTP API answer and " +
                "`health` says why; retrying every " + std::to_string(options_.storage_retry_ms) + " ms)");
    last_storage_error_ = outage.problem;
  }
  storage_.SetUnavailable(std::move(outage));
  next_storage_attempt_nanos_ =
      env_->MonotonicNanos() + static_cast<int64_t>(options_.storage_retry_ms) * kNanosPerMilli;
}

Status Daemon::SuperviseStorage() {
  if (engine_ != nullptr || env_->MonotonicNanos() < next_storage_attempt_nanos_) return Status::Ok();
  const Status opened = OpenEngine();
  // Another cairnd took the directory meanwhile: two must never share it,
  // so this one ends as it would have at start.
  if (opened.Is(StatusCode::kBusy)) return opened;
  if (!opened.ok()) {
    EnterStorageOutage(opened);
    return Status::Ok();
  }
  // What a normal start would have done after opening the engine; a
  // failure here is one a normal start exits with.
  CAIRN_RETURN_IF_ERROR(StartOnStorage().WithContext("the data directory " + options_.data_dir +
                                                     " opened, but cairnd cannot go on"));
  log_->Info("storage is back: data directory " + options_.data_dir + " opened after " + last_storage_error_ +
             "; every command and endpoint serves again");
  last_storage_error_.clear();
  return Status::Ok();
}

Status Daemon::OpenEngine() {
  const std::string& dir = options_.data_dir;
  CAIRN_RETURN_IF_ERROR(env_->CreateDirs(dir).WithContext("cannot create data directory " + dir));
  RecoveryReport recovery;
  EngineOptions engine_options = options_.engine;
  // With sync on, a period file past retention waits for its archive lane.
  engine_options.retention_waits_for_sync = !options_.sync_broker.empty();
  Result<std::unique_ptr<Engine>> engine = Engine::Open(env_, dir, engine_options, &recovery);
  if (!engine.ok()) {
    const Status& status = engine.status();
    if (status.Is(StatusCode::kBusy)) {
      return Status::Busy("data directory " + dir + " is in use by another cairnd (lock " +
                          JoinPath(dir, "LOCK") + " held)");
    }
    // Described with its remedy by DescribeStorageOutage.
    return status;
  }
  engine_ = std::move(engine).value();
  for (const RecoveryReport::QuarantinedFile& file : recovery.quarantined) {
    log_->Warn("period file " + file.path + " could not be read (" + file.reason + "); it was moved to " +
               file.moved_to + " and cairnd serves everything else (health is degraded). To restore its "
               "readings, stop cairnd and put an intact copy back at " + file.path +
               "; `cairnd verify --data-dir " + dir + "` (cairnd stopped) checks every other file");
  }
  if (recovery.torn_tail_bytes_truncated > 0) {
    log_->Warn("the write-ahead log ended in a write cut short by a crash or power cut; its " +
               std::to_string(recovery.torn_tail_bytes_truncated) + " bytes were dropped");
  }
  if (recovery.sealed_damage_bytes_skipped > 0) {
    log_->Warn("the write-ahead log holds " + std::to_string(recovery.sealed_damage_bytes_skipped) +
               " damaged bytes among records already sealed into period files; they were skipped (nothing "
               "lost) and leave with the next checkpoint");
  }
  for (const std::string& notice : recovery.notices) log_->Warn(notice);
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

void Daemon::ReloadConfig() {
  if (!reloader_) return;
  Result<DaemonOptions> reread = reloader_();
  if (!reread.ok()) {
    log_->Error("SIGHUP: the configuration was not reread, nothing changed: " + reread.status().message());
    return;
  }
  if (engine_ != nullptr) {
    const Status tables = ApplyTableDeclarations(engine_.get(), reread->tables, log_);
    if (!tables.ok()) log_->Error("SIGHUP: " + tables.message());
  }
  for (const std::string& key : KeysNeedingRestart(options_, *reread)) {
    log_->Warn("SIGHUP: " + key + " changed; it needs a restart to take effect");
  }
}

Status Daemon::Run() {
  for (;;) {
    CAIRN_ASSIGN_OR_RETURN(const ProcessSignal signal, TerminationSignals::Wait(kSignalWaitMillis));
    switch (signal) {
      case ProcessSignal::kTerminate:
        log_->Info("termination requested; stopping");
        return Status::Ok();
      case ProcessSignal::kReload: {
        ReloadConfig();
        Status reloaded = tokens_ != nullptr ? tokens_->ReloadIfChanged() : Status::Ok();
        if (!reloaded.ok()) log_->Error("SIGHUP: the tokens were not reread: " + reloaded.message());
        if (options_.serial_path.empty()) {
          log_->Info("SIGHUP: tokens reread");
          break;
        }
        log_->Info("SIGHUP: tokens reread; reopening serial port " + options_.serial_path);
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
    CAIRN_RETURN_IF_ERROR(SuperviseStorage());
  }
}

void Daemon::SuperviseSerialShell() {
  if (options_.serial_path.empty()) return;
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
  shell_options.output_stall_timeout_ms = options_.serial_output_timeout_ms;
  if (serial_log_ == nullptr) {
    Logger* log = log_;
    serial_log_ = std::make_unique<RateLimitedLog>(env_, [log](const std::string& line) { log->Warn(line); });
  }
  shell_options.log = [serial_log = serial_log_.get()](const std::string& line) {
    serial_log->Log("stall", line);
  };
  if (!first_admin_token_.empty()) {
    shell_options.banner +=
        "\nfirst start: the admin token of the HTTP API is (shown once; store it now):\n" +
        first_admin_token_;
    first_admin_token_.clear();
  }
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
  if (http_server_ != nullptr) {
    // Before anything else: the requests in progress still reach the engine.
    http_server_->Stop();
    http_server_.reset();
  }
  http_api_.reset();
  StopSerialShell();
  if (mqtt_input_ != nullptr) {
    mqtt_input_->Stop();
    mqtt_input_.reset();
  }
  // Before the engine closes: the agent saves its ledger through it.
  if (sync_agent_ != nullptr) {
    current_sync_agent_.store(nullptr, std::memory_order_release);
    sync_agent_->Stop();
    sync_agent_.reset();
  }
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
