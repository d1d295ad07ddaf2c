// Temporary directories for tests that use the real filesystem.
#pragma once

#include <string>
#include <string_view>

namespace cairn {

// Creates a fresh, empty, private directory under $TMPDIR (or /tmp) and
// removes it with everything inside when destroyed. Aborts the test binary if
// the directory cannot be created: no test can run meaningfully without it.
// Not thread-safe; the directory's contents may be used from any thread.
class ScopedTempDir {
 public:
  // `prefix` starts the directory's name, to tell tests apart in /tmp.
  explicit ScopedTempDir(std::string_view prefix = "cairn-test");
  ~ScopedTempDir();

  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;

  // The directory's absolute path, without a trailing '/'.
  const std::string& path() const { return path_; }

  // path() + "/" + name.
  std::string PathOf(std::string_view name) const;

 private:
  std::string path_;
};

}  // namespace cairn
