#include "cairn/ingest/gateway_keys.h"

#include <vector>

#include "cairn/platform/text_lines.h"
#include "cairn/sync/sync_envelope.h"
#include "cairn/util/hex.h"

namespace cairn {
namespace {

using util::HexDigitValue;

std::vector<std::string_view> SplitWords(std::string_view line) {
  std::vector<std::string_view> words;
  size_t pos = 0;
  while (pos < line.size()) {
    while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
    const size_t start = pos;
    while (pos < line.size() && line[pos] != ' ' && line[pos] != '\t') ++pos;
    if (pos > start) words.push_back(line.substr(start, pos - start));
  }
  return words;
}

}  // namespace

Result<GatewayKeys> ParseGatewayKeys(std::string_view text, std::string_view source) {
  GatewayKeys keys;
  size_t line_number = 0;
  TextLines lines(text);
  std::string_view line;
  while (lines.Next(&line)) {
    ++line_number;
    const std::string where = std::string(source) + " line " + std::to_string(line_number) + ": ";
    const std::vector<std::string_view> words = SplitWords(line);
    if (words.empty() || words[0][0] == '#') continue;
    if (words.size() == 1) {
      return Status::InvalidArgument(where + "gateway '" + std::string(words[0]) +
                                     "' has no key (expected '<gateway_id> <key as hex>')");
    }
    if (words.size() > 2) {
      return Status::InvalidArgument(where + "expected '<gateway_id> <key as hex>', found " +
                                     std::to_string(words.size()) + " words");
    }
    const std::string gateway(words[0]);
    if (Status valid = ValidateGatewayId(gateway); !valid.ok()) {
      return Status::InvalidArgument(where + valid.message());
    }
    const std::string_view hex = words[1];
    if (hex.size() % 2 != 0) {
      return Status::InvalidArgument(where + "the key of gateway '" + gateway +
                                     "' has an odd number of hex digits");
    }
    if (hex.size() < 2 * kMinSyncKeyBytes) {
      return Status::InvalidArgument(where + "the key of gateway '" + gateway + "' has " +
                                     std::to_string(hex.size()) + " hex digits; at least " +
                                     std::to_string(2 * kMinSyncKeyBytes) + " are needed");
    }
    std::string key;
    key.reserve(hex.size() / 2);
    for (size_t i = 0; i < hex.size(); i += 2) {
      const int high = HexDigitValue(hex[i]);
      const int low = HexDigitValue(hex[i + 1]);
      if (high < 0 || low < 0) {
        return Status::InvalidArgument(where + "the key of gateway '" + gateway +
                                       "' is not hexadecimal (character " +
                                       std::to_string(i + (high < 0 ? 1 : 2)) + ")");
      }
      key.push_back(static_cast<char>(high * 16 + low));
    }
    if (!keys.emplace(gateway, std::move(key)).second) {
      return Status::InvalidArgument(where + "gateway '" + gateway + "' is listed twice");
    }
  }
  return keys;
}

Result<GatewayKeys> LoadGatewayKeys(Env* env, const std::string& path) {
  Result<std::string> text = env->ReadFileToString(path);
  if (!text.ok()) return text.status().WithContext("cannot read keys file " + path);
  CAIRN_ASSIGN_OR_RETURN(GatewayKeys keys, ParseGatewayKeys(*text, path));
  if (keys.empty()) return Status::InvalidArgument("keys file " + path + " lists no gateway");
  return keys;
}

}  // namespace cairn
