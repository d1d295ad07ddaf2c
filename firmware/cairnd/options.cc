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
    {"--data-dir", "DIR"}, {"--serial", "PATH"}, {"--baud", "N"}, {"--help", ""}, {"--version", ""},
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

}  // namespace

std::string UsageText() {
  return "usage: cairnd [--data-dir DIR] --serial PATH [--baud N]\n"
         "       cairnd --help | --version\n"
         "\n"
         "cairn's daemon: holds the data directory and serves the command shell on a\n"
         "serial line.\n"
         "\n"
         "  --data-dir DIR  data directory, created if missing (default /var/lib/cairn);\n"
         "                  only one cairnd may use it at a time\n"
         "  --serial PATH   tty of the command shell, e.g. /dev/ttyAMA0 or /dev/ttyUSB0\n"
         "  --baud N        serial line speed (default 115200)\n"
         "  --help          show this text\n"
         "  --version       show the version and exit\n"
         "\n"
         "Signals: SIGTERM or SIGINT stop cairnd; SIGHUP reopens the serial port.\n";
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
  return parsed;
}

}  // namespace cairn::cairnd
