// The lines of a text file cairn reads whole (/proc and /sys files, key
// files): every layer that parses one walks it the same way.
//
// Thread-safety: a TextLines is a cursor; one thread at a time. The text it
// walks must outlive it and the lines it returns.
#pragma once

#include <cstddef>
#include <string_view>

namespace cairn {

class TextLines {
 public:
  explicit TextLines(std::string_view text) : text_(text) {}

  // Sets *line to the next line without its '\n' (and without a '\r' before
  // it, so CRLF files read like LF ones) and returns true; false when the
  // text is used up. A last line without a '\n' is a line; the empty rest
  // after a final '\n' is not.
  bool Next(std::string_view* line) {
    if (position_ >= text_.size()) return false;
    size_t end = text_.find('\n', position_);
    if (end == std::string_view::npos) end = text_.size();
    *line = text_.substr(position_, end - position_);
    position_ = end + 1;
    if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
    return true;
  }

 private:
  std::string_view text_;
  size_t position_ = 0;
};

}  // namespace cairn
