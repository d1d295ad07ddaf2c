#include "cairn/platform/process_signals.h"

#include <algorithm>
#include <cerrno>
#include <string>

#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "posix_error.h"

namespace cairn {
namespace {

using platform_internal::ErrorSource;
using platform_internal::PosixError;

sigset_t TerminationSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  return set;
}

int64_t MonotonicMillis() {
  struct timespec now = {};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
}

}  // namespace

std::string_view ProcessSignalName(ProcessSignal signal) {
  switch (signal) {
    case ProcessSignal::kNone:
      return "none";
    case ProcessSignal::kTerminate:
      return "terminate";
    case ProcessSignal::kReload:
      return "reload";
  }
  return "unknown";
}

Status TerminationSignals::Block() {
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  if (sigaction(SIGPIPE, &ignore, nullptr) != 0)
    return PosixError("sigaction", "SIGPIPE", errno, ErrorSource::kProcess);
  sigset_t set = TerminationSet();
  int result = pthread_sigmask(SIG_BLOCK, &set, nullptr);
  if (result != 0) return PosixError("pthread_sigmask", "", result, ErrorSource::kProcess);
  return Status::Ok();
}

Result<ProcessSignal> TerminationSignals::Wait(int timeout_ms) {
  const sigset_t set = TerminationSet();
  const int64_t deadline = MonotonicMillis() + std::max(timeout_ms, 0);
  for (;;) {
    const int64_t remaining = std::max<int64_t>(deadline - MonotonicMillis(), 0);
    struct timespec timeout = {};
    timeout.tv_sec = static_cast<time_t>(remaining / 1000);
    timeout.tv_nsec = static_cast<long>((remaining % 1000) * 1000000);
    int caught = sigtimedwait(&set, nullptr, &timeout);
    if (caught == SIGTERM || caught == SIGINT) return ProcessSignal::kTerminate;
    if (caught == SIGHUP) return ProcessSignal::kReload;
    if (caught >= 0) continue;  // not in the set; cannot happen, but harmless
    if (errno == EAGAIN) return ProcessSignal::kNone;
    // EINTR: another (unblocked) signal's handler ran; wait out the rest.
    if (errno != EINTR) return PosixError("sigtimedwait", "", errno, ErrorSource::kProcess);
    if (remaining == 0) return ProcessSignal::kNone;
  }
}

Status TerminationSignals::SendToSelf(ProcessSignal signal) {
  int number = 0;
  switch (signal) {
    case ProcessSignal::kTerminate:
      number = SIGTERM;
      break;
    case ProcessSignal::kReload:
      number = SIGHUP;
      break;
    case ProcessSignal::kNone:
      return Status::InvalidArgument("SendToSelf: kNone is not a signal");
  }
  if (kill(getpid(), number) != 0) return PosixError("kill", "self", errno, ErrorSource::kProcess);
  return Status::Ok();
}

}  // namespace cairn
