#include "cairnd/options.h"

#include <charconv>
#include <optional>
#include <set>
#include <string_view>

namespace cairn::cairnd {

namespace {

struct FlagSpec {
  std::string_view name;        // with the leading "--"
  std::string_view value_name;  // empty: takes no value
};

constexpr FlagSpec kFlags[] = {
    {"--data-dir", "DIR"},   {"--serial", "PATH"}, {"--baud", "N"}, {"--durability", "MODE"},
    {"--seal-records", "N"}, {"--repair-log", ""}, {"--help", ""},  {"--version", ""},
};

const FlagSpec* FindFlag(std::string_view name) {
  for (const FlagSpec& flag : kFlags) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
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

}  // namespace

std::string UsageText() {
  return "usage: cairnd [--data-dir DIR] --serial PATH [--baud N]\n"
         "              [--durability full|interval=MS|off] [--seal-records N]\n"
         "       cairnd --repair-log [--data-dir DIR]\n"
         "       cairnd --help | --version\n"
         "\n"
         "cairn's daemon: keeps the storage engine's data directory and serves the\n"
         "command shell on a serial line.\n"
         "\n"
         "  --data-dir DIR      data directory, created if missing (default /var/lib/cairn);\n"
         "                      only one cairnd may use it at a time\n"
         "  --serial PATH       tty of the command shell, e.g. /dev/ttyAMA0 or /dev/ttyUSB0\n"
         "  --baud N            serial line speed (default 115200)\n"
         "  --durability MODE   when a write is acknowledged: full (default, after fdatasync),\n"
         "                      interval=MS (before the sync; a power cut may lose the last\n"
         "                      MS milliseconds of acknowledged writes) or off (the OS syncs)\n"
         "  --seal-records N    records per series before its head is sealed into a chunk\n"
         "                      (default 1024)\n"
         "  --repair-log        cut the write-ahead log after its last intact record so that\n"
         "                      cairnd can start again, print how many bytes were cut, exit;\n"
         "                      the records after the damage are lost\n"
         "  --help              show this text\n"
         "  --version           show the version and exit\n"
         "\n"
         "Signals: SIGTERM or SIGINT seal the data and stop cairnd; SIGHUP reopens the\n"
         "serial port.\n";
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
    const FlagSpec* flag = FindFlag(name);
    if (flag == nullptr) return Status::InvalidArgument("unknown flag '" + std::string(name) + "'");
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
    }
  }
  if (parsed.action == ParsedCommandLine::Action::kRun && parsed.options.serial_path.empty()) {
    return Status::InvalidArgument("missing --serial PATH (the tty of the command shell)");
  }
  if (parsed.action == ParsedCommandLine::Action::kRepairLog) {
    // Repair runs instead of the daemon: flags of a running daemon there are
    // most likely a mistaken command line, not something to ignore.
    for (std::string_view flag : {"--serial", "--baud", "--durability", "--seal-records"}) {
      if (seen.count(flag) != 0) {
        return Status::InvalidArgument("flag " + std::string(flag) + " does not go with --repair-log");
      }
    }
  }
  return parsed;
}

}  // namespace cairn::cairnd
