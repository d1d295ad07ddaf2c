#include "cairnd/flag_words.h"

#include <string>

namespace cairn::cairnd {

FlagWord SplitFlagWord(std::string_view word) {
  const size_t equals = word.find('=');
  if (equals == std::string_view::npos) return FlagWord{word, std::nullopt};
  return FlagWord{word.substr(0, equals), word.substr(equals + 1)};
}

Result<std::string_view> TakeFlagValue(std::span<const char* const> words, size_t* i, const FlagWord& flag,
                                       bool takes_value, std::string_view usage) {
  const std::string name(flag.name);
  std::optional<std::string_view> value = flag.value;
  if (!takes_value) {
    if (value) return Status::InvalidArgument("flag " + name + " takes no value");
    return std::string_view();
  }
  if (!value) {
    if (*i + 1 == words.size()) {
      return Status::InvalidArgument("flag " + name + " needs a value" +
                                     (usage.empty() ? "" : ": " + std::string(usage)));
    }
    value = words[++*i];
  }
  if (value->empty()) return Status::InvalidArgument("flag " + name + " needs a non-empty value");
  return *value;
}

}  // namespace cairn::cairnd
