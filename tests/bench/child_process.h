// RunInChildProcess: runs a measurement in a forked child so that its memory
// (VmRSS) and I/O counters (/proc/self/io) belong to that measurement alone,
// and so that one store's page cache, threads and heap cannot disturb the
// next store's numbers.
//
// Thread-safety: call from a single-threaded process (fork copies only the
// calling thread; a lock held by another thread would stay locked forever in
// the child).
#pragma once

#include <functional>
#include <string>

#include "cairn/platform/status.h"

namespace cairn::bench {

// Forks; the child runs `body` and sends the string it returns to the parent
// through a pipe, then exits without running exit handlers (the parent owns
// the scratch directories). Returns that string once the child has exited
// successfully; an error if it exited non-zero or died from a signal.
// SIGINT and SIGTERM received by the parent meanwhile are forwarded to the
// child, and the call then fails, so the caller can clean up and exit.
Result<std::string> RunInChildProcess(const std::function<std::string()>& body);

// True once RunInChildProcess has seen SIGINT or SIGTERM.
bool InterruptRequested();

}  // namespace cairn::bench
