// LogLines: the lines a component writes through its `log` option
// (std::function<void(std::string_view)>), kept for the test to read back.
//
// Header-only. Thread-safety: the sink may be called from any thread,
// concurrently with Text().
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/platform/mutex.h"

namespace cairn {

class LogLines {
 public:
  // What to give the component's `log` option; it appends each line. Valid
  // while this object lives: the component must stop logging before.
  std::function<void(std::string_view)> Sink() {
    return [this](std::string_view line) {
      MutexLock lock(&mu_);
      lines_.emplace_back(line);
    };
  }

  // Every line so far, in order, each followed by '\n'.
  std::string Text() const {
    MutexLock lock(&mu_);
    std::string text;
    for (const std::string& line : lines_) text += line + "\n";
    return text;
  }

 private:
  mutable Mutex mu_;
  std::vector<std::string> lines_ GUARDED_BY(mu_);
};

}  // namespace cairn
