#include "cairnd/options.h"
#include "cairnd/wear_options.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <set>
#include <string_view>

#include "cairnd/clock_option.h"

namespace cairn::cairnd {

namespace {

struct FlagSpec {
  std::string_view name;        // with the leading "--"
  std::string_view value_name;  // empty: takes no value
};

constexpr FlagSpec kFlags[] = {
    {"--data-dir", "DIR"},
    {"--serial", "PATH"},
    {"--baud", "N"},
    {"--http-listen", "ADDR:PORT"},
    {"--tls-cert", "FILE"},
    {"--tls-key", "FILE"},
    {"--tls-client-ca", "FILE"},
    {"--tls-client-identity", "MODE"},
    {"--http-plain", ""},
    {"--http-max-connections", "N"},
    {"--http-max-connections-per-address", "N"},
    {"--http-first-byte-timeout-ms", "MS"},
    {"--http-drain-ms", "MS"},
    {"--http-max-body-bytes", "N"},
    {"--serial-output-timeout-ms", "MS"},
    {"--max-series", "N"},
    {"--device-tag", "TAG"},
    {"--auto-create-tables", ""},
    {"--durability", "MODE"},
    {"--seal-records", "N"},
    {"--sync-broker", "URI"},
    {"--gateway-id", "ID"},
    {"--sync-key-file", "FILE"},
    {"--sync-topic-prefix", "PREFIX"},
    {"--sync-confirm", "MODE"},
    {"--sync-encoding", "ENCODING"},
    {"--sync-tls-ca", "FILE"},
    {"--sync-tls-cert", "FILE"},
    {"--sync-tls-key", "FILE"},
    {"--sync-username", "USER"},
    {"--sync-password-file", "FILE"},
    {"--sync-max-inflight", "N"},
    {"--sync-backfill-rate", "N"},
    {"--sync-live-interval-ms", "MS"},
    {"--sync-receipt-timeout-ms", "MS"},
    {"--sync-quota-bytes", "SIZE"},
    {"--sync-free-floor", "SIZE"},
    {"--sync-quota-policy", "POLICY"},
    {"--sync-downsample-step", "SECONDS"},
    {"--mqtt-input-broker", "URI"},
    {"--mqtt-input", "ROUTES"},
    {"--clock", "SPEC"},
    {"--repair-log", ""},
    {"--help", ""},
    {"--version", ""},
};

std::optional<FlagSpec> FindFlag(std::string_view name) {
  for (const FlagSpec& flag : kFlags) {
    if (flag.name == name) return flag;
  }
  // The flash-wear flags live in wear_options.cc.
  if (const std::string_view value_name = FlashWearFlagValueName(name); !value_name.empty()) {
    return FlagSpec{name, value_name};
  }
  return std::nullopt;
}

Result<int> ParsePositiveInt(std::string_view flag, std::string_view text) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error == std::errc::result_out_of_range) {
    return Status::InvalidArgument("flag " + std::string(flag) + ": " + std::string(text) +
                                   " is out of range");
  }
  if (error != std::errc() || end != text.data() + text.size()) {
    return Status::InvalidArgument("flag " + std::string(flag) + ": '" + std::string(text) +
                                   "' is not a number");
  }
  if (value <= 0) {
    return Status::InvalidArgument("flag " + std::string(flag) + ": " + std::string(text) +
                                   " is not a positive number");
  }
  return value;
}

// A byte count: digits with an optional K, M or G suffix (powers of 1024),
// e.g. 512M. Zero is allowed (the limit is off).
Result<uint64_t> ParseByteSize(std::string_view flag, std::string_view text) {
  const auto bad = [&] {
    return Status::InvalidArgument("flag " + std::string(flag) + ": '" + std::string(text) +
                                   "' is not a size (digits with an optional K, M or G suffix)");
  };
  uint64_t multiplier = 1;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K':
      case 'k':
        multiplier = uint64_t{1} << 10;
        break;
      case 'M':
      case 'm':
        multiplier = uint64_t{1} << 20;
        break;
      case 'G':
      case 'g':
        multiplier = uint64_t{1} << 30;
        break;
      default:
        break;
    }
    if (multiplier != 1) text.remove_suffix(1);
  }
  if (text.empty() || text.size() > 15) return bad();
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return bad();
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  return value * multiplier;
}

// full | interval=MS | off (DESIGN §4).
Status ParseDurability(std::string_view text, EngineOptions* engine) {
  if (text == "full") {
    engine->durability = Durability::kFull;
    return Status::Ok();
  }
  if (text == "off") {
    engine->durability = Durability::kOff;
    return Status::Ok();
  }
  constexpr std::string_view kInterval = "interval=";
  if (text.substr(0, kInterval.size()) == kInterval) {
    CAIRN_ASSIGN_OR_RETURN(const int millis,
                           ParsePositiveInt("--durability interval", text.substr(kInterval.size())));
    engine->durability = Durability::kInterval;
    engine->sync_interval_ms = millis;
    return Status::Ok();
  }
  return Status::InvalidArgument("flag --durability: '" + std::string(text) +
                                 "' is not full, interval=MS or off");
}

// "0.0.0.0:8086", "127.0.0.1:0", "[::]:8086", "[::1]:8443", ":8086" (all
// IPv4 addresses), or "off".
Status ParseListen(std::string_view text, DaemonOptions* options) {
  if (text == "off") {
    options->http_enabled = false;
    return Status::Ok();
  }
  const auto bad = [&] {
    return Status::InvalidArgument("flag --http-listen: '" + std::string(text) +
                                   "' is not ADDR:PORT (0.0.0.0:8086, [::]:8086, 127.0.0.1:0) or off");
  };
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return bad();
  std::string_view address = text.substr(0, colon);
  const std::string_view port_text = text.substr(colon + 1);
  if (address.size() >= 2 && address.front() == '[' && address.back() == ']') {
    address = address.substr(1, address.size() - 2);
  } else if (address.find(':') != std::string_view::npos) {
    return bad();  // an IPv6 address needs its brackets
  }
  unsigned port = 0;
  const auto [end, error] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || error != std::errc() || end != port_text.data() + port_text.size() ||
      port > 65535) {
    return bad();
  }
  options->http_enabled = true;
  options->http_address = address.empty() ? "0.0.0.0" : std::string(address);
  options->http_port = static_cast<uint16_t>(port);
  return Status::Ok();
}

}  // namespace

std::string UsageText() {
  return std::string("usage: cairnd [--data-dir DIR] [--serial PATH [--baud N] [--serial-output-timeout-ms MS]]\n"
         "              [--http-listen ADDR:PORT|off] [--tls-cert FILE --tls-key FILE\n"
         "              [--tls-client-ca FILE [--tls-client-identity off|cn|san]] | --http-plain]\n"
         "              [--http-max-connections N] [--http-max-connections-per-address N]\n"
         "              [--http-first-byte-timeout-ms MS] [--http-drain-ms MS]\n"
         "              [--http-max-body-bytes N] [--device-tag TAG] [--auto-create-tables]\n"
         "              [--durability full|interval=MS|off] [--seal-records N] [--max-series N]\n"
         "              [--sync-broker URI --gateway-id ID --sync-key-file FILE [sync flags]]\n"
         "              [--mqtt-input-broker URI --mqtt-input FILTER=TABLE[,...]]\n"
         "              [--card-endurance-tbw TB | --card-pe-cycles N [--card-size SIZE]]\n"
         "              [--wear-warn-days N] [--wear-warn-amplification X]\n"
         "       cairnd --repair-log [--data-dir DIR]\n"
         "       cairnd verify [--repair] [--data-dir DIR]   (cairnd verify --help)\n"
         "       cairnd token create|list|revoke ...   (cairnd token --help)\n"
         "       cairnd --help | --version\n"
         "\n"
         "cairn's daemon: keeps the storage engine's data directory and serves the\n"
         "command shell on a serial line and the HTTP(S) API.\n"
         "\n"
         "  --data-dir DIR      data directory, created if missing (default /var/lib/cairn);\n"
         "                      only one cairnd may use it at a time\n"
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
         "and stop cairnd; SIGHUP reopens the serial port and rereads the tokens.\n";
}

Result<ParsedCommandLine> ParseCommandLine(std::span<const char* const> words) {
  ParsedCommandLine parsed;
  std::set<std::string_view> seen;
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string_view word = words[i];
    if (word.substr(0, 2) != "--") {
      return Status::InvalidArgument("unexpected argument '" + std::string(word) +
                                     "' (cairnd takes flags only)");
    }
    std::string_view name = word;
    std::optional<std::string_view> value;
    if (const size_t equals = word.find('='); equals != std::string_view::npos) {
      name = word.substr(0, equals);
      value = word.substr(equals + 1);
    }
    const std::optional<FlagSpec> flag = FindFlag(name);
    if (!flag) return Status::InvalidArgument("unknown flag '" + std::string(name) + "'");
    if (!seen.insert(flag->name).second) {
      return Status::InvalidArgument("flag " + std::string(flag->name) + " is given more than once");
    }
    if (flag->value_name.empty()) {
      if (value) return Status::InvalidArgument("flag " + std::string(flag->name) + " takes no value");
    } else if (!value) {
      if (i + 1 == words.size()) {
        return Status::InvalidArgument("flag " + std::string(flag->name) + " needs a value: " +
                                       std::string(flag->name) + " " + std::string(flag->value_name));
      }
      value = words[++i];
    }
    if (value && value->empty()) {
      return Status::InvalidArgument("flag " + std::string(flag->name) + " needs a non-empty value");
    }

    if (flag->name == "--help") {
      parsed.action = ParsedCommandLine::Action::kShowHelp;
    } else if (flag->name == "--version") {
      if (parsed.action != ParsedCommandLine::Action::kShowHelp) {
        parsed.action = ParsedCommandLine::Action::kShowVersion;
      }
    } else if (flag->name == "--repair-log") {
      if (parsed.action == ParsedCommandLine::Action::kRun)
        parsed.action = ParsedCommandLine::Action::kRepairLog;
    } else if (flag->name == "--durability") {
      CAIRN_RETURN_IF_ERROR(ParseDurability(*value, &parsed.options.engine));
    } else if (flag->name == "--seal-records") {
      CAIRN_ASSIGN_OR_RETURN(const int records, ParsePositiveInt(flag->name, *value));
      parsed.options.engine.seal_records = static_cast<size_t>(records);
    } else if (flag->name == "--data-dir") {
      parsed.options.data_dir = std::string(*value);
    } else if (flag->name == "--serial") {
      parsed.options.serial_path = std::string(*value);
    } else if (flag->name == "--baud") {
      CAIRN_ASSIGN_OR_RETURN(parsed.options.baud, ParsePositiveInt(flag->name, *value));
    } else if (flag->name == "--http-listen") {
      CAIRN_RETURN_IF_ERROR(ParseListen(*value, &parsed.options));
    } else if (flag->name == "--tls-cert") {
      parsed.options.tls_certificate_path = std::string(*value);
    } else if (flag->name == "--tls-key") {
      parsed.options.tls_private_key_path = std::string(*value);
    } else if (flag->name == "--tls-client-ca") {
      parsed.options.tls_client_ca_path = std::string(*value);
    } else if (flag->name == "--http-plain") {
      parsed.options.http_plain = true;
    } else if (flag->name == "--http-max-connections") {
      CAIRN_ASSIGN_OR_RETURN(const int connections, ParsePositiveInt(flag->name, *value));
      parsed.options.http_max_connections = static_cast<size_t>(connections);
    } else if (flag->name == "--http-max-connections-per-address") {
      CAIRN_ASSIGN_OR_RETURN(const int connections, ParsePositiveInt(flag->name, *value));
      parsed.options.http_max_connections_per_address = static_cast<size_t>(connections);
    } else if (flag->name == "--http-first-byte-timeout-ms") {
      CAIRN_ASSIGN_OR_RETURN(parsed.options.http_first_byte_timeout_ms, ParsePositiveInt(flag->name, *value));
    } else if (flag->name == "--http-drain-ms") {
      CAIRN_ASSIGN_OR_RETURN(parsed.options.http_drain_ms, ParsePositiveInt(flag->name, *value));
    } else if (flag->name == "--serial-output-timeout-ms") {
      CAIRN_ASSIGN_OR_RETURN(parsed.options.serial_output_timeout_ms, ParsePositiveInt(flag->name, *value));
    } else if (flag->name == "--max-series") {
      CAIRN_ASSIGN_OR_RETURN(const int series, ParsePositiveInt(flag->name, *value));
      parsed.options.engine.default_max_series = static_cast<uint64_t>(series);
    } else if (flag->name == "--tls-client-identity") {
      if (*value != "off" && *value != "cn" && *value != "san") {
        return Status::InvalidArgument("flag --tls-client-identity: '" + std::string(*value) +
                                       "' is not off, cn or san");
      }
      parsed.options.tls_client_identity = std::string(*value);
    } else if (flag->name == "--http-max-body-bytes") {
      CAIRN_ASSIGN_OR_RETURN(const int bytes, ParsePositiveInt(flag->name, *value));
      parsed.options.http_max_body_bytes = static_cast<size_t>(bytes);
    } else if (flag->name == "--device-tag") {
      parsed.options.device_tag = std::string(*value);
    } else if (flag->name == "--auto-create-tables") {
      parsed.options.auto_create_tables = true;
    } else if (flag->name == "--sync-broker") {
      parsed.options.sync_broker = std::string(*value);
    } else if (flag->name == "--gateway-id") {
      parsed.options.gateway_id = std::string(*value);
    } else if (flag->name == "--sync-key-file") {
      parsed.options.sync_key_file = std::string(*value);
    } else if (flag->name == "--sync-topic-prefix") {
      parsed.options.sync_topic_prefix = std::string(*value);
    } else if (flag->name == "--sync-confirm") {
      if (*value != "receipt" && *value != "broker") {
        return Status::InvalidArgument("flag --sync-confirm: '" + std::string(*value) +
                                       "' is not receipt or broker");
      }
      parsed.options.sync_confirmation = std::string(*value);
    } else if (flag->name == "--sync-encoding") {
      if (*value != "binary" && *value != "json") {
        return Status::InvalidArgument("flag --sync-encoding: '" + std::string(*value) +
                                       "' is not binary or json");
      }
      parsed.options.sync_encoding = std::string(*value);
    } else if (flag->name == "--sync-tls-ca") {
      parsed.options.sync_tls_ca = std::string(*value);
    } else if (flag->name == "--sync-tls-cert") {
      parsed.options.sync_tls_cert = std::string(*value);
    } else if (flag->name == "--sync-tls-key") {
      parsed.options.sync_tls_key = std::string(*value);
    } else if (flag->name == "--sync-username") {
      parsed.options.sync_username = std::string(*value);
    } else if (flag->name == "--sync-password-file") {
      parsed.options.sync_password_file = std::string(*value);
    } else if (flag->name == "--sync-max-inflight") {
      CAIRN_ASSIGN_OR_RETURN(const int n, ParsePositiveInt(flag->name, *value));
      parsed.options.sync_max_inflight = static_cast<size_t>(n);
    } else if (flag->name == "--sync-backfill-rate") {
      CAIRN_ASSIGN_OR_RETURN(const int n, ParsePositiveInt(flag->name, *value));
      parsed.options.sync_backfill_rate = static_cast<uint64_t>(n);
    } else if (flag->name == "--sync-live-interval-ms") {
      CAIRN_ASSIGN_OR_RETURN(const int n, ParsePositiveInt(flag->name, *value));
      parsed.options.sync_live_interval_ms = n;
    } else if (flag->name == "--sync-receipt-timeout-ms") {
      CAIRN_ASSIGN_OR_RETURN(const int n, ParsePositiveInt(flag->name, *value));
      parsed.options.sync_receipt_timeout_ms = n;
    } else if (flag->name == "--sync-quota-bytes") {
      CAIRN_ASSIGN_OR_RETURN(parsed.options.engine.sync_quota.max_unsynced_bytes,
                             ParseByteSize(flag->name, *value));
    } else if (flag->name == "--sync-free-floor") {
      CAIRN_ASSIGN_OR_RETURN(parsed.options.engine.sync_quota.min_free_bytes,
                             ParseByteSize(flag->name, *value));
    } else if (flag->name == "--sync-quota-policy") {
      Result<QuotaPolicy> policy = ParseQuotaPolicy(*value);
      if (!policy.ok()) return policy.status().WithContext("flag --sync-quota-policy");
      parsed.options.engine.sync_quota.policy = *policy;
    } else if (flag->name == "--sync-downsample-step") {
      CAIRN_ASSIGN_OR_RETURN(const int seconds, ParsePositiveInt(flag->name, *value));
      if (seconds > 3600 || 3600 % seconds != 0) {
        return Status::InvalidArgument("flag --sync-downsample-step: " + std::string(*value) +
                                       " s does not divide an hour (e.g. 10, 60, 300, 900)");
      }
      parsed.options.engine.sync_quota.downsample_step_seconds = seconds;
    } else if (flag->name == "--clock") {
      CAIRN_RETURN_IF_ERROR(ParseClockOption(*value, &parsed.options.engine.clock));
    } else if (flag->name == "--mqtt-input-broker") {
      parsed.options.mqtt_input_broker = std::string(*value);
    } else if (flag->name == "--mqtt-input") {
      parsed.options.mqtt_input_routes = std::string(*value);
    } else if (!FlashWearFlagValueName(flag->name).empty()) {
      CAIRN_RETURN_IF_ERROR(ApplyFlashWearFlag(flag->name, *value, &parsed.options.engine.flash_wear));
    }
  }
  CAIRN_RETURN_IF_ERROR(CheckFlashWearFlags(seen));
  const DaemonOptions& options = parsed.options;
  if (options.tls_certificate_path.empty() != options.tls_private_key_path.empty()) {
    return Status::InvalidArgument("--tls-cert and --tls-key go together");
  }
  if (!options.tls_client_ca_path.empty() && options.tls_certificate_path.empty()) {
    return Status::InvalidArgument("--tls-client-ca needs --tls-cert and --tls-key");
  }
  if (seen.count("--tls-client-identity") != 0 && options.tls_client_ca_path.empty()) {
    return Status::InvalidArgument(
        "--tls-client-identity needs --tls-client-ca (only verified certificates name tokens)");
  }
  if (seen.count("--http-max-connections-per-address") == 0) {
    parsed.options.http_max_connections_per_address =
        std::min(options.http_max_connections_per_address, options.http_max_connections);
  } else if (options.http_max_connections_per_address > options.http_max_connections) {
    return Status::InvalidArgument(
        "--http-max-connections-per-address must not exceed --http-max-connections");
  }
  if (options.http_plain && !options.tls_certificate_path.empty()) {
    return Status::InvalidArgument(
        "--http-plain and --tls-cert exclude each other: one listener is either "
        "HTTPS or plain HTTP");
  }
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
  if (parsed.action == ParsedCommandLine::Action::kRun && options.serial_path.empty() &&
      !ServesHttp(options) && options.mqtt_input_broker.empty()) {
    return Status::InvalidArgument(
        "nothing to serve: give --serial PATH for the shell and/or --tls-cert FILE --tls-key FILE (HTTPS) or "
        "--http-plain (HTTP)");
  }
  if (parsed.action == ParsedCommandLine::Action::kRepairLog) {
    // Repair runs instead of the daemon: flags of a running daemon there are
    // most likely a mistaken command line, not something to ignore.
    for (std::string_view flag :
         {"--serial", "--baud", "--durability", "--seal-records", "--http-listen", "--tls-cert", "--tls-key",
          "--tls-client-ca", "--tls-client-identity", "--http-plain", "--http-max-connections",
          "--http-max-connections-per-address", "--http-first-byte-timeout-ms", "--http-drain-ms",
          "--http-max-body-bytes", "--serial-output-timeout-ms", "--max-series", "--device-tag",
          "--auto-create-tables"}) {
      if (seen.count(flag) != 0) {
        return Status::InvalidArgument("flag " + std::string(flag) + " does not go with --repair-log");
      }
    }
  }
  return parsed;
}

}  // namespace cairn::cairnd
