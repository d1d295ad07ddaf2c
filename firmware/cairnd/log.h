// Logger: cairnd's log lines on stderr, where systemd's journal (or the
// image's init script) collects them.
//
//   2024-05-01T12:00:00.000Z cairnd[1234]: INFO serial shell on /dev/ttyAMA0 at 115200 baud
//
// The timestamp is wall-clock UTC from the Env (it may jump when NTP sets
// the clock on a gateway without RTC; it is for people, not for ordering).
// Each line is written with one call under a mutex, so lines from different
// threads never interleave.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "cairn/platform/env.h"
#include "cairn/platform/mutex.h"

namespace cairn::cairnd {

enum class LogLevel : uint8_t { kInfo, kWarn, kError };

// "INFO", "WARN" or "ERROR".
std::string_view LogLevelName(LogLevel level);

class Logger {
 public:
  // `env` (for the clock) and `sink` are not owned and must outlive the
  // logger. `program` and `pid` prefix every line.
  Logger(Env* env, std::string program, int pid, std::FILE* sink);

  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  void Log(LogLevel level, std::string_view message);
  void Info(std::string_view message) { Log(LogLevel::kInfo, message); }
  void Warn(std::string_view message) { Log(LogLevel::kWarn, message); }
  void Error(std::string_view message) { Log(LogLevel::kError, message); }

 private:
  Env* const env_;
  const std::string prefix_;  // "cairnd[1234]: "
  Mutex mutex_;
  std::FILE* const sink_ PT_GUARDED_BY(mutex_);
};

}  // namespace cairn::cairnd
