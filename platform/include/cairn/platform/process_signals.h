// Termination and reload requests from outside the process (SIGTERM, SIGINT,
// SIGHUP), received synchronously.
//
// cairnd must flush and seal on SIGTERM and reload tokens on SIGHUP. Doing
// that inside an asynchronous signal handler would allow almost nothing, so
// the signals are blocked in every thread and one thread waits for them and
// acts in ordinary code.
#pragma once

#include <string_view>

#include "cairn/platform/status.h"

namespace cairn {

// What a caught signal asks the process to do.
enum class ProcessSignal : uint8_t {
  kNone,       // no signal arrived before the timeout
  kTerminate,  // SIGTERM or SIGINT: flush, seal and exit
  kReload,     // SIGHUP: reload configuration that can change at run time
};

// "none", "terminate" or "reload".
std::string_view ProcessSignalName(ProcessSignal signal);

// Static functions only: the signal mask and dispositions are per process.
class TerminationSignals {
 public:
  TerminationSignals() = delete;

  // Blocks SIGTERM, SIGINT and SIGHUP in the calling thread, and ignores
  // SIGPIPE for the process (a peer closing a socket or pipe must surface as
  // an EPIPE error, not kill the daemon). Threads inherit the mask of the
  // thread that creates them, so call this in main() before any thread
  // starts; a thread started earlier would still receive these signals and
  // die of them. Idempotent.
  static Status Block();

  // Waits up to `timeout_ms` (0: just poll; negative counts as 0) for one of
  // the blocked signals and consumes it. Returns kNone on timeout. Call from
  // one thread only; signals arriving while nobody waits stay pending and are
  // returned by the next Wait. Precondition: Block() was called by this
  // thread or an ancestor thread.
  static Result<ProcessSignal> Wait(int timeout_ms);

  // Sends `signal` (kTerminate as SIGTERM, kReload as SIGHUP) to this process,
  // as an administrator would with kill(1). Lets a shell command or a test
  // request shutdown through the same path as the operating system.
  // InvalidArgument for kNone.
  static Status SendToSelf(ProcessSignal signal);
};

}  // namespace cairn
