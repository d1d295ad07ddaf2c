#include "cairn/platform/process_id.h"

#include <pwd.h>
#include <unistd.h>

#include <vector>

namespace cairn {

int CurrentProcessId() { return static_cast<int>(::getpid()); }

std::string CurrentUserDescription() {
  const uid_t uid = ::geteuid();
  const std::string number = "uid " + std::to_string(uid);
  // getpwuid_r: getpwuid's buffer is shared between threads.
  std::vector<char> buffer(4096);
  struct passwd entry;
  struct passwd* found = nullptr;
  if (::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) != 0 || found == nullptr) return number;
  return std::string(found->pw_name) + " (" + number + ")";
}

}  // namespace cairn
