#include "cairn/platform/process_id.h"

#include <unistd.h>

namespace cairn {

int CurrentProcessId() { return static_cast<int>(::getpid()); }

}  // namespace cairn
