// JsonWriter: builds one JSON text (RFC 8259) in memory, compactly.
//
// Strings are written as UTF-8: well-formed non-ASCII text passes through
// unchanged; quotes, backslashes and control characters are escaped; each
// ill-formed UTF-8 sequence becomes the escape \ufffd, so the output is always
// valid JSON whatever bytes a caller hands in. Non-finite doubles (which JSON
// cannot represent) are written as null.
//
// The writer places commas and colons itself. Calls must form a well-nested
// document: a Key before each value inside an object, none inside an array,
// one top-level value. Breaking that is a programming error (asserted in
// debug builds).
//
// Thread-safety: not thread-safe; one writer per document.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cairn {

class JsonWriter {
 public:
  JsonWriter() = default;

  void BeginObject();
  void EndObject();
  void BeginArray();
  void EndArray();

  // The name of the next member of the enclosing object.
  void Key(std::string_view name);

  void String(std::string_view value);
  void Int(int64_t value);
  void Uint(uint64_t value);
  // Shortest text that reads back as the same double; null if not finite.
  void Double(double value);
  void Bool(bool value);
  void Null();

  // The document written so far (complete once the top-level value is).
  const std::string& text() const { return text_; }
  // Hands the document over; the writer is spent.
  std::string TakeText() && { return std::move(text_); }
  // Room for `bytes` of text ahead: a large answer then grows without being
  // moved again and again.
  void Reserve(size_t bytes) { text_.reserve(bytes); }

 private:
  enum class Scope : uint8_t { kObject, kArray };

  // Writes the separator that must precede a value at the current position.
  void BeforeValue();

  std::string text_;
  std::vector<Scope> scopes_;
  // Whether the innermost scope already holds a member/element, i.e. the
  // next one needs a comma.
  std::vector<bool> scope_has_items_;
  bool after_key_ = false;
};

// Appends `value` as a quoted, escaped JSON string to `out`, valid UTF-8
// and inert on a terminal whatever `value` holds (util::AppendJsonStringForDisplay).
void AppendJsonString(std::string* out, std::string_view value);

}  // namespace cairn
