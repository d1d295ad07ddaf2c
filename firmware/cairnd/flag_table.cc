#include "cairnd/flag_table.h"

#include <algorithm>
#include <charconv>
#include <type_traits>

#include "cairnd/clock_option.h"
#include "cairnd/wear_options.h"

namespace cairn::cairnd {

namespace {

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

// ---- applying a value -----------------------------------------------------------
// Checks that involve several flags run after all are applied
// (CheckFlagCombinations in options.cc).

template <std::string DaemonOptions::*Member>
Status SetText(std::string_view, std::string_view value, ParsedCommandLine* parsed) {
  parsed->options.*Member = std::string(value);
  return Status::Ok();
}

template <bool DaemonOptions::*Member>
Status SetTrue(std::string_view, std::string_view, ParsedCommandLine* parsed) {
  parsed->options.*Member = true;
  return Status::Ok();
}

// A positive number into a member of any integer type.
template <auto Member>
Status SetPositive(std::string_view flag, std::string_view value, ParsedCommandLine* parsed) {
  CAIRN_ASSIGN_OR_RETURN(const int number, ParsePositiveInt(flag, value));
  using Target = std::remove_reference_t<decltype(parsed->options.*Member)>;
  parsed->options.*Member = static_cast<Target>(number);
  return Status::Ok();
}

// One of `choices` (space-separated in the message) into a text member.
Status SetChoice(std::string_view flag, std::string_view value,
                 std::initializer_list<std::string_view> choices, std::string* member) {
  if (std::find(choices.begin(), choices.end(), value) == choices.end()) {
    std::string names;
    for (size_t i = 0; i < choices.size(); ++i) {
      names += i == 0 ? "" : (i + 1 == choices.size() ? " or " : ", ");
      names += choices.begin()[i];
    }
    return Status::InvalidArgument("flag " + std::string(flag) + ": '" + std::string(value) + "' is not " +
                                   names);
  }
  *member = std::string(value);
  return Status::Ok();
}

Status SetAction(ParsedCommandLine* parsed, ParsedCommandLine::Action action) {
  // --help wins over --version, and both over --repair-log.
  using Action = ParsedCommandLine::Action;
  const auto rank = [](Action a) {
    return a == Action::kShowHelp ? 3 : a == Action::kShowVersion ? 2 : a == Action::kRepairLog ? 1 : 0;
  };
  if (rank(action) > rank(parsed->action)) parsed->action = action;
  return Status::Ok();
}

Status SetDownsampleStep(std::string_view flag, std::string_view value, ParsedCommandLine* parsed) {
  CAIRN_ASSIGN_OR_RETURN(const int seconds, ParsePositiveInt(flag, value));
  if (seconds > 3600 || 3600 % seconds != 0) {
    return Status::InvalidArgument("flag --sync-downsample-step: " + std::string(value) +
                                   " s does not divide an hour (e.g. 10, 60, 300, 900)");
  }
  parsed->options.engine.sync_quota.downsample_step_seconds = seconds;
  return Status::Ok();
}

Status ApplyWearFlag(std::string_view flag, std::string_view value, ParsedCommandLine* parsed) {
  return ApplyFlashWearFlag(flag, value, &parsed->options.engine.flash_wear);
}

// ---- showing a value -----------------------------------------------------------

template <std::string DaemonOptions::*Member>
std::optional<std::string> ShowText(const DaemonOptions& options) {
  if ((options.*Member).empty()) return std::nullopt;
  return options.*Member;
}

template <bool DaemonOptions::*Member>
std::optional<std::string> ShowBool(const DaemonOptions& options) {
  return std::string(options.*Member ? "true" : "false");
}

template <auto Member>
std::optional<std::string> ShowNumber(const DaemonOptions& options) {
  return std::to_string(options.*Member);
}

// A count whose 0 means "not set" (the flag refuses 0).
std::optional<std::string> ShowUnlessZero(uint64_t value) {
  if (value == 0) return std::nullopt;
  return std::to_string(value);
}

// The shortest text that reads back as the same double ("40", "0.5").
std::optional<std::string> ShowDecimal(double value) {
  char buffer[64];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
  if (error != std::errc()) return std::nullopt;
  return std::string(buffer, end);
}

std::optional<std::string> ShowListen(const DaemonOptions& options) {
  if (!options.http_enabled) return std::string("off");
  const bool ipv6 = options.http_address.find(':') != std::string::npos;
  return (ipv6 ? "[" + options.http_address + "]" : options.http_address) + ":" +
         std::to_string(options.http_port);
}

std::optional<std::string> ShowDurability(const DaemonOptions& options) {
  switch (options.engine.durability) {
    case Durability::kFull:
      return std::string("full");
    case Durability::kOff:
      return std::string("off");
    case Durability::kInterval:
      break;
  }
  return "interval=" + std::to_string(options.engine.sync_interval_ms);
}

std::optional<std::string> ShowClock(const DaemonOptions& options) {
  const ClockOptions& clock = options.engine.clock;
  std::string spec = "trust=" + std::string(ClockTrustPolicyName(clock.policy)) +
                     ",future_tolerance=" + std::to_string(clock.future_tolerance_seconds) +
                     ",max_held=" + std::to_string(clock.max_held_readings);
  if (clock.horizon_unix_seconds != 0) spec += ",horizon=" + std::to_string(clock.horizon_unix_seconds);
  return spec;
}

// ---- the table -------------------------------------------------------------------

using P = ParsedCommandLine;
using D = DaemonOptions;
using Shown = std::optional<std::string>;

Status SetConfigPath(std::string_view, std::string_view value, P* parsed) {
  parsed->config_path = value == "none" ? "" : std::string(value);
  parsed->config_named = true;
  return Status::Ok();
}

// One long table by nature: a row per flag, read as a list.
constexpr FlagSpec kFlags[] = {
    {"--config", "FILE", "", SetConfigPath, nullptr},
    {"--data-dir", "DIR", "storage.data_dir", SetText<&D::data_dir>, ShowText<&D::data_dir>},
    {"--durability", "MODE", "storage.durability",
     [](std::string_view, std::string_view v, P* p) { return ParseDurability(v, &p->options.engine); },
     ShowDurability},
    {"--seal-records", "N", "storage.seal_records",
     [](std::string_view f, std::string_view v, P* p) -> Status {
       CAIRN_ASSIGN_OR_RETURN(const int records, ParsePositiveInt(f, v));
       p->options.engine.seal_records = static_cast<size_t>(records);
       return Status::Ok();
     },
     [](const D& o) -> Shown { return std::to_string(o.engine.seal_records); }},
    {"--memory-budget", "SIZE", "storage.memory_budget",
     [](std::string_view f, std::string_view v, P* p) -> Status {
       CAIRN_ASSIGN_OR_RETURN(const uint64_t bytes, ParseByteSize(f, v));
       if (bytes < (4u << 20)) {
         return Status::InvalidArgument("flag " + std::string(f) + ": '" + std::string(v) +
                                        "' is below the smallest memory budget, 4M");
       }
       p->options.engine.memory_budget_bytes = bytes;
       return Status::Ok();
     },
     [](const D& o) -> Shown { return std::to_string(o.engine.memory_budget_bytes); }},
    {"--max-series", "N", "storage.max_series",
     [](std::string_view f, std::string_view v, P* p) -> Status {
       CAIRN_ASSIGN_OR_RETURN(const int series, ParsePositiveInt(f, v));
       p->options.engine.default_max_series = static_cast<uint64_t>(series);
       return Status::Ok();
     },
     [](const D& o) -> Shown { return std::to_string(o.engine.default_max_series); }},
    {"--clock", "SPEC", "storage.clock",
     [](std::string_view, std::string_view v, P* p) { return ParseClockOption(v, &p->options.engine.clock); },
     ShowClock},
    {"--storage-retry-ms", "MS", "storage.retry_ms", SetPositive<&D::storage_retry_ms>,
     ShowNumber<&D::storage_retry_ms>},
    {"--device-tag", "TAG", "ingest.device_tag", SetText<&D::device_tag>, ShowText<&D::device_tag>},
    {"--auto-create-tables", "", "ingest.auto_create_tables", SetTrue<&D::auto_create_tables>,
     ShowBool<&D::auto_create_tables>},
    {"--serial", "PATH", "serial.path", SetText<&D::serial_path>, ShowText<&D::serial_path>},
    {"--baud", "N", "serial.baud", SetPositive<&D::baud>, ShowNumber<&D::baud>},
    {"--serial-output-timeout-ms", "MS", "serial.output_timeout_ms",
     SetPositive<&D::serial_output_timeout_ms>, ShowNumber<&D::serial_output_timeout_ms>},
    {"--http-listen", "ADDR:PORT", "http.listen",
     [](std::string_view, std::string_view v, P* p) { return ParseListen(v, &p->options); }, ShowListen},
    {"--http-plain", "", "http.plain", SetTrue<&D::http_plain>, ShowBool<&D::http_plain>},
    {"--http-max-connections", "N", "http.max_connections", SetPositive<&D::http_max_connections>,
     ShowNumber<&D::http_max_connections>},
    {"--http-max-connections-per-address", "N", "http.max_connections_per_address",
     SetPositive<&D::http_max_connections_per_address>, ShowNumber<&D::http_max_connections_per_address>},
    {"--http-first-byte-timeout-ms", "MS", "http.first_byte_timeout_ms",
     SetPositive<&D::http_first_byte_timeout_ms>, ShowNumber<&D::http_first_byte_timeout_ms>},
    {"--http-drain-ms", "MS", "http.drain_ms", SetPositive<&D::http_drain_ms>, ShowNumber<&D::http_drain_ms>},
    {"--http-max-body-bytes", "N", "http.max_body_bytes", SetPositive<&D::http_max_body_bytes>,
     ShowNumber<&D::http_max_body_bytes>},
    {"--tls-cert", "FILE", "tls.cert", SetText<&D::tls_certificate_path>, ShowText<&D::tls_certificate_path>},
    {"--tls-key", "FILE", "tls.key", SetText<&D::tls_private_key_path>, ShowText<&D::tls_private_key_path>},
    {"--tls-client-ca", "FILE", "tls.client_ca", SetText<&D::tls_client_ca_path>,
     ShowText<&D::tls_client_ca_path>},
    {"--tls-client-identity", "MODE", "tls.client_identity",
     [](std::string_view f, std::string_view v, P* p) {
       return SetChoice(f, v, {"off", "cn", "san"}, &p->options.tls_client_identity);
     },
     // "off" is the absence of the setting, which needs no client CA.
     [](const D& o) -> Shown {
       if (o.tls_client_identity == "off") return std::nullopt;
       return o.tls_client_identity;
     }},
    {"--sync-broker", "URI", "sync.broker", SetText<&D::sync_broker>, ShowText<&D::sync_broker>},
    {"--gateway-id", "ID", "sync.gateway_id", SetText<&D::gateway_id>, ShowText<&D::gateway_id>},
    {"--sync-key-file", "FILE", "sync.key_file", SetText<&D::sync_key_file>, ShowText<&D::sync_key_file>},
    {"--sync-topic-prefix", "PREFIX", "sync.topic_prefix", SetText<&D::sync_topic_prefix>,
     ShowText<&D::sync_topic_prefix>},
    {"--sync-confirm", "MODE", "sync.confirm",
     [](std::string_view f, std::string_view v, P* p) {
       return SetChoice(f, v, {"receipt", "broker"}, &p->options.sync_confirmation);
     },
     ShowText<&D::sync_confirmation>},
    {"--sync-encoding", "ENCODING", "sync.encoding",
     [](std::string_view f, std::string_view v, P* p) {
       return SetChoice(f, v, {"binary", "json"}, &p->options.sync_encoding);
     },
     ShowText<&D::sync_encoding>},
    {"--sync-tls-ca", "FILE", "sync.tls_ca", SetText<&D::sync_tls_ca>, ShowText<&D::sync_tls_ca>},
    {"--sync-tls-cert", "FILE", "sync.tls_cert", SetText<&D::sync_tls_cert>, ShowText<&D::sync_tls_cert>},
    {"--sync-tls-key", "FILE", "sync.tls_key", SetText<&D::sync_tls_key>, ShowText<&D::sync_tls_key>},
    {"--sync-username", "USER", "sync.username", SetText<&D::sync_username>, ShowText<&D::sync_username>},
    {"--sync-password-file", "FILE", "sync.password_file", SetText<&D::sync_password_file>,
     ShowText<&D::sync_password_file>},
    {"--sync-max-inflight", "N", "sync.max_inflight", SetPositive<&D::sync_max_inflight>,
     ShowNumber<&D::sync_max_inflight>},
    {"--sync-backfill-rate", "N", "sync.backfill_rate", SetPositive<&D::sync_backfill_rate>,
     ShowNumber<&D::sync_backfill_rate>},
    {"--sync-live-interval-ms", "MS", "sync.live_interval_ms", SetPositive<&D::sync_live_interval_ms>,
     ShowNumber<&D::sync_live_interval_ms>},
    {"--sync-receipt-timeout-ms", "MS", "sync.receipt_timeout_ms", SetPositive<&D::sync_receipt_timeout_ms>,
     ShowNumber<&D::sync_receipt_timeout_ms>},
    {"--sync-quota-bytes", "SIZE", "sync.quota_bytes",
     [](std::string_view f, std::string_view v, P* p) -> Status {
       CAIRN_ASSIGN_OR_RETURN(p->options.engine.sync_quota.max_unsynced_bytes, ParseByteSize(f, v));
       return Status::Ok();
     },
     [](const D& o) -> Shown { return std::to_string(o.engine.sync_quota.max_unsynced_bytes); }},
    {"--sync-free-floor", "SIZE", "sync.free_floor",
     [](std::string_view f, std::string_view v, P* p) -> Status {
       CAIRN_ASSIGN_OR_RETURN(p->options.engine.sync_quota.min_free_bytes, ParseByteSize(f, v));
       return Status::Ok();
     },
     [](const D& o) -> Shown { return std::to_string(o.engine.sync_quota.min_free_bytes); }},
    {"--sync-quota-policy", "POLICY", "sync.quota_policy",
     [](std::string_view, std::string_view v, P* p) -> Status {
       Result<QuotaPolicy> policy = ParseQuotaPolicy(v);
       if (!policy.ok()) return policy.status().WithContext("flag --sync-quota-policy");
       p->options.engine.sync_quota.policy = *policy;
       return Status::Ok();
     },
     [](const D& o) -> Shown { return std::string(QuotaPolicyName(o.engine.sync_quota.policy)); }},
    {"--sync-downsample-step", "SECONDS", "sync.downsample_step", SetDownsampleStep,
     [](const D& o) -> Shown { return std::to_string(o.engine.sync_quota.downsample_step_seconds); }},
    {"--mqtt-input-broker", "URI", "mqtt_input.broker", SetText<&D::mqtt_input_broker>,
     ShowText<&D::mqtt_input_broker>},
    {"--mqtt-input", "ROUTES", "mqtt_input.routes", SetText<&D::mqtt_input_routes>,
     ShowText<&D::mqtt_input_routes>},
    {"--card-endurance-tbw", "TB", "flash_wear.card_endurance_tbw", ApplyWearFlag,
     [](const D& o) -> Shown {
       if (o.engine.flash_wear.endurance_tbw == 0) return std::nullopt;
       return ShowDecimal(o.engine.flash_wear.endurance_tbw);
     }},
    {"--card-pe-cycles", "N", "flash_wear.card_pe_cycles", ApplyWearFlag,
     [](const D& o) { return ShowUnlessZero(o.engine.flash_wear.pe_cycles); }},
    {"--card-size", "SIZE", "flash_wear.card_size", ApplyWearFlag,
     [](const D& o) { return ShowUnlessZero(o.engine.flash_wear.card_size_bytes); }},
    {"--wear-warn-days", "N", "flash_wear.warn_days", ApplyWearFlag,
     [](const D& o) -> Shown { return std::to_string(o.engine.flash_wear.warn_remaining_days); }},
    {"--wear-warn-amplification", "X", "flash_wear.warn_amplification", ApplyWearFlag,
     [](const D& o) { return ShowDecimal(o.engine.flash_wear.warn_amplification); }},
    {"--wear-sample-interval-ms", "MS", "flash_wear.sample_interval_ms", ApplyWearFlag,
     [](const D& o) -> Shown { return std::to_string(o.engine.flash_wear.sample_interval_ms); }},
    {"--repair-log", "", "",
     [](std::string_view, std::string_view, P* p) { return SetAction(p, P::Action::kRepairLog); }, nullptr},
    {"--help", "", "",
     [](std::string_view, std::string_view, P* p) { return SetAction(p, P::Action::kShowHelp); }, nullptr},
    {"--version", "", "",
     [](std::string_view, std::string_view, P* p) { return SetAction(p, P::Action::kShowVersion); }, nullptr},
};

}  // namespace

KeyKind FlagSpec::kind() const {
  if (value_name.empty()) return KeyKind::kBool;
  if (value_name == "N" || value_name == "MS" || value_name == "SECONDS") return KeyKind::kInteger;
  if (value_name == "TB" || value_name == "X") return KeyKind::kNumber;
  if (value_name == "SIZE") return KeyKind::kSize;
  return KeyKind::kText;
}

std::span<const FlagSpec> AllFlags() { return kFlags; }

std::optional<FlagSpec> FindFlag(std::string_view name) {
  for (const FlagSpec& flag : kFlags) {
    if (flag.name == name) return flag;
  }
  return std::nullopt;
}

std::optional<FlagSpec> FindFlagByKey(std::string_view key) {
  if (key.empty()) return std::nullopt;
  for (const FlagSpec& flag : kFlags) {
    if (flag.key == key) return flag;
  }
  return std::nullopt;
}

}  // namespace cairn::cairnd
