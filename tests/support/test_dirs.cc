#include "test_dirs.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

#include <stdlib.h>

#include "cairn/platform/env.h"

namespace cairn {

ScopedTempDir::ScopedTempDir(std::string_view prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = base != nullptr && base[0] != '\0' ? base : "/tmp";
  while (pattern.size() > 1 && pattern.back() == '/') pattern.pop_back();
  pattern += '/';
  pattern += prefix;
  pattern += "-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) {
    std::fprintf(stderr, "ScopedTempDir: mkdtemp(%s): %s\n", pattern.c_str(), std::strerror(errno));
    std::abort();
  }
  std::error_code error;
  std::filesystem::path absolute = std::filesystem::absolute(buffer.data(), error);
  path_ = error ? std::string(buffer.data()) : absolute.string();
}

ScopedTempDir::~ScopedTempDir() {
  std::error_code error;
  std::filesystem::remove_all(path_, error);
  if (error)
    std::fprintf(stderr, "ScopedTempDir: cannot remove %s: %s\n", path_.c_str(), error.message().c_str());
}

std::string ScopedTempDir::PathOf(std::string_view name) const { return JoinPath(path_, name); }

}  // namespace cairn
