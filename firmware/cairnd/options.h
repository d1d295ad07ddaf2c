// cairnd's command line.
//
//   cairnd [--data-dir DIR] --serial PATH [--baud N]
//          [--durability full|interval=MS|off] [--seal-records N]
//   cairnd --repair-log [--data-dir DIR]
//   cairnd --help | --version
//
// Flags take their value as the next word or after '=' (--baud=9600). A
// flag given twice, an unknown flag, a missing or empty value, a malformed
// number or a stray argument is an error naming the word at fault; cairnd
// then exits with status 2.
//
// Thread-safety: pure functions.
#pragma once

#include <span>
#include <string>

#include "cairn/core/engine.h"
#include "cairn/platform/status.h"

namespace cairn::cairnd {

// Where cairnd keeps its data, how it stores it and how it reaches its
// operator.
struct DaemonOptions {
  std::string data_dir = "/var/lib/cairn";
  std::string serial_path;  // the tty of the command shell, e.g. /dev/ttyAMA0
  int baud = 115200;
  // --durability and --seal-records; the rest are the engine's defaults.
  EngineOptions engine;
};

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
