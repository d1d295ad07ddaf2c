#include "cairn/platform/process_memory.h"

#include <algorithm>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace cairn {

bool LimitAllocatorArenas(int arenas) {
#if defined(__GLIBC__) && defined(M_ARENA_MAX)
  return mallopt(M_ARENA_MAX, std::max(arenas, 1)) == 1;
#else
  (void)arenas;
  return false;
#endif
}

}  // namespace cairn
