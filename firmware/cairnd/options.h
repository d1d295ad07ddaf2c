// cairnd's command line.
//
//   cairnd [--data-dir DIR] [--serial PATH [--baud N]]
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
//   cairnd token create|list|revoke ...      (token_command.h)
//   cairnd --help | --version
//
// Flags take their value as the next word or after '=' (--baud=9600). A
// flag given twice, an unknown flag, a missing or empty value, a malformed
// number or a stray argument is an error naming the word at fault; cairnd
// then exits with status 2.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "cairn/core/engine.h"
#include "cairn/platform/status.h"

namespace cairn::cairnd {

// Where cairnd keeps its data, how it stores it and how it reaches its
// operator.
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
  std::string device_tag = "device";
  bool auto_create_tables = false;
  // --durability, --seal-records, --max-series and the --sync-quota flags;
  // the rest are the engine's defaults.
  EngineOptions engine;

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
};

// Whether the HTTP API will be served with these options.
inline bool ServesHttp(const DaemonOptions& options) {
  return options.http_enabled && (options.http_plain || !options.tls_certificate_path.empty());
}

struct ParsedCommandLine {
  enum class Action { kRun, kRepairLog, kShowHelp, kShowVersion };
  Action action = Action::kRun;
  // Complete and checked when action is kRun; only data_dir matters for
  // kRepairLog.
  DaemonOptions options;
};

// Parses the words after the program name. InvalidArgument with a message
// meant to follow "cairnd: " on a terminal.
Result<ParsedCommandLine> ParseCommandLine(std::span<const char* const> words);

// The text of `cairnd --help`.
std::string UsageText();

}  // namespace cairn::cairnd
