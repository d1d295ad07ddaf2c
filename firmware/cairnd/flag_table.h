// The table of cairnd's flags and config-file keys: one row per flag says
// its name, the name of its value, its key in the config file (config_file.h),
// how a value applies to the options and how the options show it again.
// The command line and the config file both go through the row's apply
// function, so a flag and its key validate the same way and cannot disagree.
//
// Thread-safety: pure functions over a constant table.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "cairn/platform/status.h"

#include "cairnd/options.h"

namespace cairn::cairnd {

// Applies the text `value` of the flag `flag` (with its "--"). The messages
// name `flag`; the config file puts its key and position in front of them.
using ApplyFlag = Status (*)(std::string_view flag, std::string_view value, ParsedCommandLine* parsed);
// The options' value of a key as its flag would take it ("8086", "full",
// "true"), or nullopt while the key is unset (an empty path, a feature off).
using ShowFlag = std::optional<std::string> (*)(const DaemonOptions& options);

// The TOML type a key takes, derived from the row's value name so that it
// cannot differ from the flag: no value -> bool; N, MS, SECONDS -> integer;
// TB, X -> integer or float; SIZE -> integer (bytes) or string ("512M");
// anything else -> string.
enum class KeyKind { kBool, kInteger, kNumber, kSize, kText };

struct FlagSpec {
  std::string_view name;        // with the leading "--"
  std::string_view value_name;  // empty: takes no value
  // "section.name" in the config file; empty for the flags that are not
  // configuration (--config, --repair-log, --help, --version).
  std::string_view key;
  ApplyFlag apply;
  ShowFlag show;  // null exactly when key is empty

  KeyKind kind() const;
  std::string_view section() const { return key.substr(0, key.find('.')); }
  std::string_view key_name() const { return key.substr(key.find('.') + 1); }
};

// Every row, in the order `cairnd config show` prints them.
std::span<const FlagSpec> AllFlags();

// The row of a flag ("--baud") or of a key ("serial.baud"); nullopt if none.
std::optional<FlagSpec> FindFlag(std::string_view name);
std::optional<FlagSpec> FindFlagByKey(std::string_view key);

}  // namespace cairn::cairnd
