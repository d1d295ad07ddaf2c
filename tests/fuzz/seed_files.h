// Writing seed files, for the seed corpus generators (not the fuzzers).
#pragma once

#include <cstdio>
#include <fstream>
#include <string>

namespace cairn::fuzz {

// Writes `bytes` to `path`, replacing it; false (and a line on stderr) when
// the file could not be written whole.
inline bool WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

}  // namespace cairn::fuzz
