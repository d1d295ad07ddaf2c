// cairnd's command line and config file.
//
//   cairnd [--config FILE|none] [--data-dir DIR] [--storage-retry-ms MS]
//          [--serial PATH [--baud N]]
//          [--http-listen ADDR:PORT|off] [--tls-cert FILE --tls-key FILE
//          [--tls-client-ca FILE [--tls-client-identity off|cn|san]] | --http-plain]
//          [--http-max-connections N] [--http-max-connections-per-address N]
//          [--http-first-byte-timeout-ms MS] [--http-drain-ms MS]
//          [--http-max-body-bytes N] [--device-tag TAG] [--auto-create-tables]
//          [--serial-output-timeout-ms MS] [--max-series N]
//          [--durability full|interval=MS|off] [--seal-records N]
//          [--sync-broker URI --gateway-id ID --sync-key-file FILE [sync flags]]
//          [--mqtt-input-broker URI --mqtt-input FILTER=TABLE[,...]]
//   cairnd --repair-log [--data-dir DIR]
//   cairnd config check|show [--config FILE] [flags]   (config_command.h)
//   cairnd token create|list|revoke ...      (token_command.h)
//   cairnd --help | --version
//
// Flags take their value as the next word or after '=' (--baud=9600). A
// flag given twice, an unknown flag, a missing or empty value, a malformed
// number or a stray argument is an error naming the word at fault; cairnd
// then exits with status 2.
//
// Every flag that configures the daemon has a key in the TOML config file
// (config_file.h; the rows of flag_table.h pair them): /etc/cairn/cairn.toml
// unless --config names another, or --config none for flags only. A missing
// default file means flags only; a missing named file is an error. The file
// applies first and the flags override it; a key and its flag validate the
// same way, and an error in the file names file:line:column and the key.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/core/engine.h"
#include "cairn/platform/env.h"
#include "cairn/platform/status.h"

namespace cairn::cairnd {

// A table declared in the config file ([tables.NAME], config_file.h).
struct TableDeclaration {
  std::string name;
  TableOptions options;             // the engine's defaults under the keys given
  std::set<std::string> keys;       // the keys given ("period", "retention", ...)
  std::string where;                // "FILE:LINE:COLUMN" of [tables.NAME], for messages
};

// Where cairnd keeps its data, how it stores it and how it reaches its
// operator.
// The daemon's memory budget unless --memory-budget says otherwise: sized
// for a gateway with 1 GB of RAM shared with everything else on it.
inline constexpr uint64_t kDefaultMemoryBudgetBytes = 32ull << 20;

// The engine's options as cairnd starts from them.
inline EngineOptions DefaultEngineOptions() {
  EngineOptions options;
  options.memory_budget_bytes = kDefaultMemoryBudgetBytes;
  return options;
}

struct DaemonOptions {
  std::string data_dir = "/var/lib/cairn";
  std::string serial_path;  // the tty of the command shell, e.g. /dev/ttyAMA0; empty: none
  int baud = 115200;

  // The HTTP API (http_api.h). Served over TLS when a certificate and key
  // are given, as plain HTTP only with http_plain, else not at all.
  bool http_enabled = true;  // false: --http-listen off
  std::string http_address = "0.0.0.0";
  uint16_t http_port = 8086;
  std::string tls_certificate_path, tls_private_key_path, tls_client_ca_path;
  bool http_plain = false;
  // With a client CA: which names of a client certificate name the token
  // it acts as ("off", "cn", "san"; ClientCertificateIdentity).
  std::string tls_client_identity = "off";
  size_t http_max_connections = 32;
  size_t http_max_connections_per_address = 16;
  int http_first_byte_timeout_ms = 5'000;
  int http_drain_ms = 5'000;
  size_t http_max_body_bytes = 8 << 20;
  // A serial write making no progress this long is dropped (SerialShell).
  int serial_output_timeout_ms = 2'000;
  // While the data directory cannot be opened, how often cairnd tries
  // again (its shell and API answer meanwhile; daemon.h).
  int storage_retry_ms = 10'000;
  std::string device_tag = "device";
  bool auto_create_tables = false;
  // --durability, --seal-records, --max-series, --memory-budget and the
  // --sync-quota flags; the rest are the engine's defaults.
  EngineOptions engine = DefaultEngineOptions();

  // Sync to the cloud (sync_agent.h); off while sync_broker is empty.
  std::string sync_broker;
  std::string gateway_id;
  std::string sync_key_file;  // the HMAC key as hex, >= 32 hex digits
  std::string sync_topic_prefix = "cairn/v1";
  std::string sync_confirmation = "receipt";  // receipt | broker
  std::string sync_encoding = "binary";       // binary | json
  std::string sync_tls_ca, sync_tls_cert, sync_tls_key;
  std::string sync_username, sync_password_file;
  size_t sync_max_inflight = 32;
  uint64_t sync_backfill_rate = 500'000;  // records per second
  int64_t sync_live_interval_ms = 1000;
  int64_t sync_receipt_timeout_ms = 30'000;

  // The local sensor input (mqtt_input.h); off while empty.
  std::string mqtt_input_broker;
  std::string mqtt_input_routes;  // FILTER=TABLE[,FILTER=TABLE...]

  // Tables the config file declares; the daemon creates or alters them at
  // start and on SIGHUP (daemon.h). Flags declare none.
  std::vector<TableDeclaration> tables;
};

// Whether the HTTP API will be served with these options.
inline bool ServesHttp(const DaemonOptions& options) {
  return options.http_enabled && (options.http_plain || !options.tls_certificate_path.empty());
}

// The config file read when --config does not name one.
inline constexpr std::string_view kDefaultConfigPath = "/etc/cairn/cairn.toml";

// A config file's name (for messages) and its whole text.
struct ConfigText {
  std::string path;
  std::string text;
};

struct ParsedCommandLine {
  enum class Action { kRun, kRepairLog, kShowHelp, kShowVersion };
  Action action = Action::kRun;
  // The config file: the default until --config names another; empty for
  // none. After LoadConfiguration: the file actually read, or empty.
  std::string config_path = std::string(kDefaultConfigPath);
  bool config_named = false;  // --config was given
  // Complete and checked when action is kRun; only data_dir matters for
  // kRepairLog.
  DaemonOptions options;
};

// Parses the words after the program name over the keys of `config` (none
// when null; the file named by --config is not read here). InvalidArgument
// with a message meant to follow "cairnd: " on a terminal.
Result<ParsedCommandLine> ParseCommandLine(std::span<const char* const> words,
                                           const ConfigText* config = nullptr);

// Reads the config file the words name (or the default one, when it exists)
// through `env` and parses the words over it. NotFound for a named file that
// is missing; InvalidArgument for a bad file or command line.
Result<ParsedCommandLine> LoadConfiguration(Env* env, std::span<const char* const> words);

// The data directory of a subcommand that works on a stopped cairnd's files
// (token, verify): `data_dir_flag` when --data-dir was given, else the
// config file's storage.data_dir, else the default. `config_path` and
// `config_named` are as in ParsedCommandLine (--config FILE|none, default
// /etc/cairn/cairn.toml when it exists), so that on an installed gateway
// `cairnd token list` finds the directory cairnd serves. NotFound for a
// named config file that is missing; InvalidArgument for a bad one.
Result<std::string> ResolveDataDir(Env* env, const std::optional<std::string>& data_dir_flag,
                                   const std::string& config_path, bool config_named);

// The text of `cairnd --help`.
std::string UsageText();

}  // namespace cairn::cairnd
