// Child processes for tests that run real peers (mosquitto, PostgreSQL's
// tools): started with fork/exec so that nothing of the test leaks into
// them, waited for with a bound, described for failure messages.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "cairn/platform/status.h"

namespace cairn {

struct ChildOptions {
  // Where the child starts; empty: the test's working directory.
  std::string working_directory;
  // The child's environment as NAME=value entries; empty: the test's own.
  std::vector<std::string> environment;
  // The child leads a process group of its own, so that everything it
  // starts can be killed with it (kill(-pid, ...)).
  bool own_process_group = false;
  // The output file is emptied first instead of appended to.
  bool truncate_output = false;
};

// Starts `argv` (argv[0] an absolute path) with stdin from /dev/null and
// stdout and stderr into `output_path`. The child gets no descriptor of the
// test's beyond those three (an inherited client socket would keep a TCP
// connection open after the test closed it), no blocked signals, default
// handlers for SIGPIPE, SIGTERM, SIGINT and SIGHUP, and SIGKILL when the
// thread that started it exits.
Result<pid_t> SpawnChild(const std::vector<std::string>& argv, const std::string& output_path,
                         const ChildOptions& options = {});

// Waits up to `timeout_ms` for child `pid`; returns its wait status, or
// nothing while it still runs. A child already reaped elsewhere reads as 0.
std::optional<int> WaitForChild(pid_t pid, int timeout_ms);

// "exit 1", "killed by signal 9".
std::string DescribeExit(int wait_status);

// A loopback port that was free a moment ago (bound to port 0 and closed):
// the caller retries if a peer takes it first.
Result<uint16_t> PickFreeLoopbackPort();

// The part of the file at `path` after its first `offset` bytes ("" when
// it is shorter or unreadable): the lines a server logged since then.
std::string ReadFileFrom(const std::string& path, uint64_t offset);

}  // namespace cairn
