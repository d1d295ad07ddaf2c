// The identity of the running process, for log lines ("cairnd[1234]: ...")
// and for operators who signal it with kill(1) or fix a file's owner.
//
// Thread-safety: may be called from any thread.
#pragma once

#include <string>

namespace cairn {

// The calling process's id (getpid). Changes only across fork.
int CurrentProcessId();

// The user the process runs as: "name (uid N)", or "uid N" when the user
// database has no name for it.
std::string CurrentUserDescription();

}  // namespace cairn
