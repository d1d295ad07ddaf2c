// The identity of the running process, for log lines ("cairnd[1234]: ...")
// and for operators who signal it with kill(1).
//
// Thread-safety: may be called from any thread.
#pragma once

namespace cairn {

// The calling process's id (getpid). Changes only across fork.
int CurrentProcessId();

}  // namespace cairn
