// A cairnd child process for the integration tests: started through the
// emulator in a cross build (cairnd_location.h), stdin /dev/null, stdout and
// stderr in files the test reads afterwards.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

namespace cairn {

// A cairnd child process with stdin /dev/null and stdout/stderr in files.
// The destructor kills (SIGKILL) and reaps it if it is still running.
class CairndProcess {
 public:
  CairndProcess(const std::vector<std::string>& flags, std::string stderr_path,
                std::string stdout_path = "/dev/null");
  ~CairndProcess();
  CairndProcess(const CairndProcess&) = delete;
  CairndProcess& operator=(const CairndProcess&) = delete;
  bool started() const { return pid_ > 0 || exit_status_.has_value(); }
  int spawn_error() const { return spawn_error_; }
  pid_t pid() const { return pid_; }
  const std::optional<int>& exit_status() const { return exit_status_; }
  bool Signal(int signal_number);
  // Waits up to `timeout_ms` for the child to exit; returns its wait status,
  // or nullopt if it is still running.
  std::optional<int> WaitForExit(int timeout_ms);
  std::string Stderr() const;
  std::string Stdout() const;
  // Waits up to `timeout_ms` for `text` to appear in the child's stderr (a
  // log line written by another thread of cairnd may trail what the test saw
  // on a socket or tty); true when it did. Returns early, false, if the child
  // exits without writing it.
  bool AwaitStderr(std::string_view text, int timeout_ms);

 private:
  std::string stderr_path_;
  std::string stdout_path_;
  pid_t pid_ = -1;
  int spawn_error_ = 0;
  std::optional<int> exit_status_;
};

// "exit 0", "killed by signal 9", "still running".
std::string DescribeWaitStatus(const std::optional<int>& status);

inline bool Contains(const std::string& text, std::string_view needle) {
  return text.find(needle) != std::string::npos;
}

}  // namespace cairn
