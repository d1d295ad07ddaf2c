#include "cairnd/options.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string_view>

#include "cairnd/config_file.h"
#include "cairnd/flag_table.h"
#include "cairnd/flag_words.h"
#include "cairnd/wear_options.h"

namespace cairn::cairnd {

namespace {

// ---- checks across flags -------------------------------------------------------

Status CheckHttpFlags(const std::set<std::string_view>& seen, DaemonOptions* options) {
  if (options->tls_certificate_path.empty() != options->tls_private_key_path.empty()) {
    return Status::InvalidArgument("--tls-cert and --tls-key go together");
  }
  if (!options->tls_client_ca_path.empty() && options->tls_certificate_path.empty()) {
    return Status::InvalidArgument("--tls-client-ca needs --tls-cert and --tls-key");
  }
  if (seen.count("--tls-client-identity") != 0 && options->tls_client_ca_path.empty()) {
    return Status::InvalidArgument(
        "--tls-client-identity needs --tls-client-ca (only verified certificates name tokens)");
  }
  if (seen.count("--http-max-connections-per-address") == 0) {
    options->http_max_connections_per_address =
        std::min(options->http_max_connections_per_address, options->http_max_connections);
  } else if (options->http_max_connections_per_address > options->http_max_connections) {
    return Status::InvalidArgument(
        "--http-max-connections-per-address must not exceed --http-max-connections");
  }
  if (options->http_plain && !options->tls_certificate_path.empty()) {
    return Status::InvalidArgument(
        "--http-plain and --tls-cert exclude each other: one listener is either "
        "HTTPS or plain HTTP");
  }
  return Status::Ok();
}

Status CheckSyncFlags(const std::set<std::string_view>& seen, const DaemonOptions& options) {
  const bool sync_flag_given = std::any_of(seen.begin(), seen.end(), [](std::string_view flag) {
    return flag.substr(0, 7) == "--sync-" || flag == "--gateway-id";
  });
  if (options.sync_broker.empty() && sync_flag_given) {
    return Status::InvalidArgument("the --sync-* flags and --gateway-id need --sync-broker URI");
  }
  if (!options.sync_broker.empty() && (options.gateway_id.empty() || options.sync_key_file.empty())) {
    return Status::InvalidArgument("--sync-broker needs --gateway-id ID and --sync-key-file FILE");
  }
  if (options.sync_tls_cert.empty() != options.sync_tls_key.empty()) {
    return Status::InvalidArgument("--sync-tls-cert and --sync-tls-key go together");
  }
  if (options.mqtt_input_broker.empty() != options.mqtt_input_routes.empty()) {
    return Status::InvalidArgument("--mqtt-input-broker and --mqtt-input go together");
  }
  return Status::Ok();
}

// `seen`: the flags given on the command line or as keys of the config
// file; `given`: those of the command line alone.
Status CheckFlagCombinations(const std::set<std::string_view>& seen, const std::set<std::string_view>& given,
                             ParsedCommandLine* parsed) {
  CAIRN_RETURN_IF_ERROR(CheckFlashWearFlags(seen));
  CAIRN_RETURN_IF_ERROR(CheckHttpFlags(seen, &parsed->options));
  const DaemonOptions& options = parsed->options;
  CAIRN_RETURN_IF_ERROR(CheckSyncFlags(seen, options));
  if (parsed->action == ParsedCommandLine::Action::kRun && options.serial_path.empty() &&
      !ServesHttp(options) && options.mqtt_input_broker.empty()) {
    return Status::InvalidArgument(
        "nothing to serve: give --serial PATH for the shell and/or --tls-cert FILE --tls-key FILE (HTTPS) or "
        "--http-plain (HTTP)");
  }
  if (parsed->action == ParsedCommandLine::Action::kRepairLog) {
    // Repair runs instead of the daemon: flags of a running daemon there are
    // most likely a mistaken command line, not something to ignore.
    for (std::string_view flag :
         {"--serial", "--baud", "--durability", "--seal-records", "--memory-budget", "--http-listen", "--tls-cert", "--tls-key",
          "--tls-client-ca", "--tls-client-identity", "--http-plain", "--http-max-connections",
          "--http-max-connections-per-address", "--http-first-byte-timeout-ms", "--http-drain-ms",
          "--http-max-body-bytes", "--serial-output-timeout-ms", "--max-series", "--device-tag",
          "--auto-create-tables"}) {
      if (given.count(flag) != 0) {
        return Status::InvalidArgument("flag " + std::string(flag) + " does not go with --repair-log");
      }
    }
  }
  return Status::Ok();
}

// Applies the command line's flags over `parsed`, adding each to `given`.
Status ApplyFlagWords(std::span<const char* const> words, ParsedCommandLine* parsed,
                      std::set<std::string_view>* given) {
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string_view word = words[i];
    if (word.substr(0, 2) != "--") {
      return Status::InvalidArgument("unexpected argument '" + std::string(word) +
                                     "' (cairnd takes flags only)");
    }
    const FlagWord flag_word = SplitFlagWord(word);
    const std::optional<FlagSpec> flag = FindFlag(flag_word.name);
    if (!flag) return Status::InvalidArgument("unknown flag '" + std::string(flag_word.name) + "'");
    if (!given->insert(flag->name).second) {
      return Status::InvalidArgument("flag " + std::string(flag->name) + " is given more than once");
    }
    const std::string usage = std::string(flag->name) + " " + std::string(flag->value_name);
    CAIRN_ASSIGN_OR_RETURN(const std::string_view value,
                           TakeFlagValue(words, &i, flag_word, !flag->value_name.empty(), usage));
    CAIRN_RETURN_IF_ERROR(flag->apply(flag->name, value, parsed));
  }
  return Status::Ok();
}

}  // namespace

// One literal, long by nature: the help text reads here as the user sees it.
std::string UsageText() {
  return std::string(
             "usage: cairnd [--config FILE|none] [--data-dir DIR] [--storage-retry-ms MS]\n"
             "              [--serial PATH [--baud N] [--serial-output-timeout-ms MS]]\n"
             "              [--http-listen ADDR:PORT|off] [--tls-cert FILE --tls-key FILE\n"
             "              [--tls-client-ca FILE [--tls-client-identity off|cn|san]] | --http-plain]\n"
             "              [--http-max-connections N] [--http-max-connections-per-address N]\n"
             "              [--http-first-byte-timeout-ms MS] [--http-drain-ms MS]\n"
             "              [--http-max-body-bytes N] [--device-tag TAG] [--auto-create-tables]\n"
             "              [--durability full|interval=MS|off] [--seal-records N] [--max-series N]\n"
             "              [--memory-budget SIZE]\n"
             "              [--sync-broker URI --gateway-id ID --sync-key-file FILE [sync flags]]\n"
             "              [--mqtt-input-broker URI --mqtt-input FILTER=TABLE[,...]]\n"
             "              [--card-endurance-tbw TB | --card-pe-cycles N [--card-size SIZE]]\n"
             "              [--wear-warn-days N] [--wear-warn-amplification X]\n"
             "       cairnd --repair-log [--data-dir DIR]\n"
             "       cairnd verify [--repair] [--data-dir DIR]   (cairnd verify --help)\n"
             "       cairnd config check|show [--config FILE] [flags]   (cairnd config --help)\n"
             "       cairnd token create|list|revoke ...   (cairnd token --help)\n"
             "       cairnd --help | --version\n"
             "\n"
             "cairn's daemon: keeps the storage engine's data directory and serves the\n"
             "command shell on a serial line and the HTTP(S) API.\n"
             "\n"
             "  --config FILE       TOML config file (default /etc/cairn/cairn.toml, read when it\n"
             "                      exists; none: flags only); every flag below has a key there\n"
             "                      (cairnd config show lists them) and the flags override it\n"
             "  --data-dir DIR      data directory, created if missing (default /var/lib/cairn);\n"
             "                      only one cairnd may use it at a time\n"
             "  --storage-retry-ms MS  while DIR cannot be opened (read-only, damaged, ...) the\n"
             "                      shell and the API answer, `health` says why, and cairnd\n"
             "                      tries again every MS (default 10000)\n"
             "  --serial PATH       tty of the command shell, e.g. /dev/ttyAMA0 or /dev/ttyUSB0\n"
             "  --baud N            serial line speed (default 115200)\n"
             "  --serial-output-timeout-ms MS  output the serial line takes no byte of for MS is\n"
             "                      dropped, and the console goes on (default 2000)\n"
             "  --http-listen A:P   address and port of the HTTP API (default 0.0.0.0:8086, the\n"
             "                      port InfluxDB clients expect; [::]:8086 for IPv6; 127.0.0.1:0\n"
             "                      picks a free port; off: no HTTP)\n"
             "  --tls-cert FILE     PEM certificate (chain) of the HTTPS server\n"
             "  --tls-key FILE      PEM private key of --tls-cert\n"
             "  --tls-client-ca FILE  require client certificates signed by this PEM CA\n"
             "  --tls-client-identity MODE  with --tls-client-ca, a request without a token acts\n"
             "                      as the token named by its client certificate: cn (the subject's\n"
             "                      common name), san (its first DNS, email or URI alternative name\n"
             "                      that names a token) or off (default: a token is still needed)\n"
             "  --http-plain        serve plain HTTP without TLS (only on a trusted network)\n"
             "  --http-max-connections N  connections served at once (default 32); a newcomer\n"
             "                      closes the longest-waiting idle one, or gets 503 when every\n"
             "                      one is busy with a request\n"
             "  --http-max-connections-per-address N  of which from one address (default 16;\n"
             "                      raise it behind a reverse proxy on the gateway)\n"
             "  --http-first-byte-timeout-ms MS  a new connection silent this long is closed\n"
             "                      (default 5000)\n"
             "  --http-drain-ms MS  on SIGTERM, requests in progress get this long to finish and\n"
             "                      later ones are answered 503 with Retry-After; a stop takes\n"
             "                      this long while clients keep connections open (default 5000)\n"
             "  --http-max-body-bytes N   largest request body; larger ones get 413 (default 8 MiB)\n"
             "  --device-tag TAG    line-protocol tag that names the device (default device)\n"
             "  --auto-create-tables  a write to an unknown table creates it (default: 404)\n"
             "  --durability MODE   when a write is acknowledged: full (default, after fdatasync),\n"
             "                      interval=MS (before the sync; a power cut may lose the last\n"
             "                      MS milliseconds of acknowledged writes) or off (the OS syncs)\n"
             "  --seal-records N    records per series before its head is sealed into a chunk\n"
             "                      (default 1024)\n"
             "  --memory-budget SIZE  memory the storage engine keeps, e.g. 16M on a Pi Zero 2\n"
             "                      (default 32M, at least 4M): half holds unsealed readings,\n"
             "                      the rest the page caches of the files being written and\n"
             "                      read; a smaller budget seals smaller chunks\n"
             "  --max-series N      series (device x measure x tags) a table may hold unless it\n"
             "                      sets its own max_series; records that would start more are\n"
             "                      refused (default 100000)\n"
             "  --clock SPEC        clock trust, comma-separated: trust=auto (default: the kernel's\n"
             "                      NTP state, or a clock past 2024 and not behind the last trusted\n"
             "                      time), trust=ntp (the kernel's NTP state only) or trust=always;\n"
             "                      future_tolerance=S (client timestamps more than S s ahead of a\n"
             "                      trusted clock are refused; default 86400), horizon=UNIX_SECONDS\n"
             "                      (earlier ones are refused), max_held=N (readings without a\n"
             "                      timestamp that wait for a trusted clock; default 100000)\n"
             "\n"
             "Sync to the cloud over MQTT (every acknowledged reading, nothing lost, nothing\n"
             "sent twice into the cloud store; see `sync` in the shell and GET /v1/sync):\n"
             "  --sync-broker URI   the cloud broker: tcp://HOST:PORT or ssl://HOST:PORT\n"
             "  --gateway-id ID     this gateway's name in topics and envelopes\n"
             "  --sync-key-file FILE  the gateway's HMAC key, as hex (at least 32 hex digits)\n"
             "  --sync-topic-prefix P  topics are P/ID/TABLE/LANE (default cairn/v1)\n"
             "  --sync-confirm MODE receipt (default: the ingest service's receipt after its\n"
             "                      commit) or broker (the broker's PUBACK)\n"
             "  --sync-encoding E   binary (default, zstd) or json\n"
             "  --sync-tls-ca FILE  PEM CA of the broker (with ssl://)\n"
             "  --sync-tls-cert FILE --sync-tls-key FILE  client certificate for mutual TLS\n"
             "  --sync-username U --sync-password-file FILE  broker credentials\n"
             "  --sync-max-inflight N  QoS 1 messages awaiting PUBACK (default 32)\n"
             "  --sync-backfill-rate N  backlog records sent per second at most (default 500000)\n"
             "  --sync-live-interval-ms MS  a live batch at least this often (default 1000)\n"
             "  --sync-receipt-timeout-ms MS  resend a batch without receipt after (default 30000)\n"
             "  --sync-quota-bytes SIZE  budget for data not yet confirmed by the cloud, e.g. 2G\n"
             "                      (default: none)\n"
             "  --sync-free-floor SIZE  free disk space that must remain, e.g. 200M (default: none;\n"
             "                      below it every write is refused)\n"
             "  --sync-quota-policy P  over the budget: backpressure (default: writes refused,\n"
             "                      nothing lost), drop_oldest (the oldest unsynced records go) or\n"
             "                      downsample (they become per-step min/max/avg/count)\n"
             "  --sync-downsample-step S  width of a downsampling step in seconds (default 60)\n"
             "Local sensor input over MQTT (line protocol or JSON payloads):\n"
             "  --mqtt-input-broker URI  the gateway's own broker, e.g. tcp://127.0.0.1:1883\n"
             "  --mqtt-input ROUTES  FILTER=TABLE[,FILTER=TABLE...], e.g. sensors/+/data=sensors\n") +
         std::string(FlashWearUsage()) +
         "\n"
         "  --repair-log        mend a damaged write-ahead log so that cairnd can start again:\n"
         "                      cut out the damaged records, keep every intact one, print the\n"
         "                      readings lost (and how many the cloud already has), exit\n"
         "  verify [--repair]   with cairnd stopped: check every file of the data directory\n"
         "                      (catalog, period files chunk by chunk, log records, tokens),\n"
         "                      print ok or damaged per file and the readings affected, exit 1\n"
         "                      on damage; --repair moves unreadable files and damaged chunks\n"
         "                      into DIR/quarantine (nothing is deleted), mends the log and\n"
         "                      prints the readings lost\n"
         "  --help              show this text\n"
         "  --version           show the version and exit\n"
         "\n"
         "Without --tls-cert/--tls-key or --http-plain the HTTP API is off. At the first\n"
         "start cairnd creates an admin token and shows it once, in its log and on the\n"
         "serial console; manage tokens with `cairnd token`.\n"
         "\n"
         "Signals: SIGTERM or SIGINT answer the HTTP requests in progress, seal the data\n"
         "and stop cairnd; SIGHUP rereads the config file (its tables change live; other\n"
         "changed keys are logged as needing a restart), reopens the serial port and\n"
         "rereads the tokens.\n";
}

Result<ParsedCommandLine> ParseCommandLine(std::span<const char* const> words, const ConfigText* config) {
  ParsedCommandLine parsed;
  // The file's keys first, so that the flags override them; `seen` then
  // holds the flags given either way, for the checks across flags.
  std::set<std::string_view> seen, given;
  if (config != nullptr) CAIRN_RETURN_IF_ERROR(ApplyConfigText(*config, &parsed, &seen));
  CAIRN_RETURN_IF_ERROR(ApplyFlagWords(words, &parsed, &given));
  seen.insert(given.begin(), given.end());
  CAIRN_RETURN_IF_ERROR(CheckFlagCombinations(seen, given, &parsed));
  return parsed;
}

Result<ParsedCommandLine> LoadConfiguration(Env* env, std::span<const char* const> words) {
  // A first pass finds --config (and reports a malformed command line
  // before any file is read); the second applies the file under the flags.
  ParsedCommandLine flags_only;
  std::set<std::string_view> given;
  CAIRN_RETURN_IF_ERROR(ApplyFlagWords(words, &flags_only, &given));
  CAIRN_ASSIGN_OR_RETURN(const std::optional<ConfigText> config,
                         ReadConfigFile(env, flags_only.config_path, flags_only.config_named));
  CAIRN_ASSIGN_OR_RETURN(ParsedCommandLine parsed, ParseCommandLine(words, config ? &*config : nullptr));
  parsed.config_path = config ? config->path : "";
  return parsed;
}

Result<std::string> ResolveDataDir(Env* env, const std::optional<std::string>& data_dir_flag,
                                   const std::string& config_path, bool config_named) {
  if (data_dir_flag) return *data_dir_flag;
  CAIRN_ASSIGN_OR_RETURN(const std::optional<ConfigText> config,
                         ReadConfigFile(env, config_path, config_named));
  if (!config) return DaemonOptions{}.data_dir;
  // Only the keys: whether the file would start a daemon (something to
  // serve, flags that go together) is no business of a file subcommand.
  ParsedCommandLine parsed;
  std::set<std::string_view> seen;
  CAIRN_RETURN_IF_ERROR(ApplyConfigText(*config, &parsed, &seen));
  return parsed.options.data_dir;
}

}  // namespace cairn::cairnd
