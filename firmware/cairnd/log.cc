#include "cairnd/log.h"

#include "cairn/text/timestamp_format.h"

namespace cairn::cairnd {

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kInfo:
      return "INFO";
    case LogLevel::kWarn:
      return "WARN";
    case LogLevel::kError:
      return "ERROR";
  }
  return "?";
}

Logger::Logger(Env* env, std::string program, int pid, std::FILE* sink)
    : env_(env), prefix_(std::move(program) + "[" + std::to_string(pid) + "]: "), sink_(sink) {}

void Logger::Log(LogLevel level, std::string_view message) {
  std::string line = FormatTimestampUtcMillis(env_->NowUnixNanos());
  line += ' ';
  line += prefix_;
  line += LogLevelName(level);
  line += ' ';
  // One event, one line: an embedded newline (from a path or a peer's
  // message) must not forge a second log entry.
  for (char c : message) line.push_back(c == '\n' || c == '\r' ? ' ' : c);
  line += '\n';
  MutexLock lock(&mutex_);
  std::fwrite(line.data(), 1, line.size(), sink_);
  std::fflush(sink_);
}

}  // namespace cairn::cairnd
