#include "token_file.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <span>

namespace cairn::token_file {

namespace {

constexpr std::string_view kFileMagic = "cairn-tokens";
// Written; version 1 (no line checks, no end line) is still read.
constexpr int kFileVersion = 2;
constexpr std::string_view kEndKeyword = "end";
constexpr size_t kIdChars = 16;
// A line check: 4 bytes of the line's SHA-256 as 8 hex digits.
constexpr size_t kCheckBytes = 4;
constexpr size_t kCheckChars = 2 * kCheckBytes;

// Precondition: IsLowerHex(text) and text.size() == 64.
Sha256Digest HexDecodeDigest(std::string_view text) {
  Sha256Digest digest{};
  for (size_t i = 0; i < digest.size(); ++i) {
    digest[i] =
        static_cast<uint8_t>(util::HexDigitValue(text[2 * i]) << 4 | util::HexDigitValue(text[2 * i + 1]));
  }
  return digest;
}

// The check of a version 2 line: it covers everything before " <check>".
std::string LineCheck(std::string_view text) {
  const Sha256Digest digest = Sha256(text);
  return util::HexEncode(std::span<const uint8_t>(digest.data(), kCheckBytes));
}

// "id hash created name scopes" as a token; InvalidArgument saying what is
// wrong (without file or line).
Result<StoredToken> ParseTokenFields(std::span<const std::string_view> fields) {
  StoredToken token;
  const std::string_view id = fields[0];
  if (id.size() != kIdChars || !IsLowerHex(id)) {
    return Status::InvalidArgument("id '" + Shown(id) + "' is not 16 hex digits");
  }
  const std::string_view hash = fields[1];
  if (hash.size() != 2 * token.hash.size() || !IsLowerHex(hash)) {
    return Status::InvalidArgument("hash of token " + std::string(id) + " is not 64 hex digits");
  }
  const std::string_view created = fields[2];
  const auto [end, error] =
      std::from_chars(created.data(), created.data() + created.size(), token.info.created_unix_nanos);
  if (created.empty() || error != std::errc() || end != created.data() + created.size()) {
    return Status::InvalidArgument("creation time '" + Shown(created) + "' of token " + std::string(id) +
                                   " is not a decimal int64");
  }
  const std::string_view name = fields[3];
  CAIRN_RETURN_IF_ERROR(ValidateTokenName(name));
  const std::vector<std::string_view> scope_texts = Split(fields[4], ',');
  Result<std::vector<TokenScope>> scopes = ParseScopeList(scope_texts);
  if (!scopes.ok()) {
    return Status::InvalidArgument(scopes.status().message() + " (token " + std::string(id) + ")");
  }
  if (scopes->size() != scope_texts.size()) {
    return Status::InvalidArgument("token " + std::string(id) + " lists a scope twice");
  }
  token.info.id = std::string(id);
  token.info.name = std::string(name);
  token.info.scopes = std::move(scopes).value();
  token.hash = HexDecodeDigest(hash);
  return token;
}

// One token line of a file of `version`; InvalidArgument saying what is
// wrong.
Result<StoredToken> ParseTokenLine(std::string_view line, int version) {
  const std::vector<std::string_view> fields = Split(line, ' ');
  if (version == 1) {
    if (fields.size() != 5) {
      return Status::InvalidArgument(
          "expected 5 fields separated by single spaces (id hash created name scopes), found " +
          std::to_string(fields.size()));
    }
    return ParseTokenFields(fields);
  }
  if (fields.size() != 6) {
    return Status::InvalidArgument(
        "expected 6 fields separated by single spaces (id hash created name scopes check), found " +
        std::to_string(fields.size()));
  }
  const std::string_view check = fields[5];
  if (check.size() != kCheckChars || LineCheck(line.substr(0, line.size() - kCheckChars - 1)) != check) {
    return Status::InvalidArgument("the line does not match its check '" + Shown(check) +
                                   "': it was changed or damaged");
  }
  return ParseTokenFields(std::span<const std::string_view>(fields).first(5));
}

// The version a header line names: 1 or 2; 0 when it is not a header,
// -1 for a header of an unknown version.
int HeaderVersion(std::string_view header) {
  const std::string prefix = std::string(kFileMagic) + " ";
  if (header.substr(0, prefix.size()) != prefix) return 0;
  const std::string_view version = header.substr(prefix.size());
  if (version == "1") return 1;
  if (version == "2") return 2;
  return -1;
}

}  // namespace

std::string Shown(std::string_view text) {
  constexpr size_t kMaxShown = 64;
  std::string shown;
  for (char c : text.substr(0, kMaxShown)) shown += c >= 0x20 && c < 0x7f ? c : '?';
  if (text.size() > kMaxShown) shown += "...";
  return shown;
}

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (;;) {
    const size_t end = text.find(separator);
    parts.push_back(text.substr(0, end));
    if (end == std::string_view::npos) return parts;
    text.remove_prefix(end + 1);
  }
}

Result<std::vector<TokenScope>> ParseScopeList(const std::vector<std::string_view>& texts) {
  if (texts.empty()) return Status::InvalidArgument("a token needs at least one scope");
  std::vector<TokenScope> scopes;
  for (std::string_view text : texts) {
    CAIRN_ASSIGN_OR_RETURN(TokenScope scope, ParseTokenScope(text));
    if (std::find(scopes.begin(), scopes.end(), scope) == scopes.end()) scopes.push_back(std::move(scope));
  }
  return scopes;
}

Result<std::vector<StoredToken>> Parse(const std::string& path, std::string_view bytes) {
  size_t line_number = 1;
  auto corrupt = [&](const std::string& problem) {
    return Status::Corruption(path + ": line " + std::to_string(line_number) + ": " + problem);
  };
  const std::string expected_header = std::string(kFileMagic) + " " + std::to_string(kFileVersion);
  if (bytes.empty()) return corrupt("empty file: the header line '" + expected_header + "' is missing");
  if (bytes.back() != '\n') {
    line_number = static_cast<size_t>(std::count(bytes.begin(), bytes.end(), '\n')) + 1;
    return corrupt("not terminated by a newline (the file was cut short)");
  }
  bytes.remove_suffix(1);
  const std::vector<std::string_view> lines = Split(bytes, '\n');

  const int version = HeaderVersion(lines[0]);
  if (version == 0) return corrupt("not a cairn tokens file: expected the header '" + expected_header + "'");
  if (version < 0) {
    return Status::FailedPrecondition(path + ": line 1: format version '" +
                                      Shown(lines[0].substr(kFileMagic.size() + 1)) +
                                      "' is not supported (this cairn reads versions 1 and 2)");
  }
  size_t token_lines = lines.size() - 1;
  if (version == 2) {
    // The end line catches a file cut short at a line boundary.
    const std::string_view last = lines.back();
    line_number = lines.size();
    if (lines.size() < 2 || last.substr(0, kEndKeyword.size() + 1) != std::string(kEndKeyword) + " ") {
      return corrupt("the file does not end with its 'end N' line: it was cut short or damaged");
    }
    --token_lines;
  }

  std::vector<StoredToken> tokens;
  std::set<std::string, std::less<>> ids, names;
  for (line_number = 2; line_number <= token_lines + 1; ++line_number) {
    Result<StoredToken> token = ParseTokenLine(lines[line_number - 1], version);
    if (!token.ok()) return corrupt(token.status().message());
    if (!ids.insert(token->info.id).second) return corrupt("id " + token->info.id + " appears twice");
    if (!names.insert(token->info.name).second)
      return corrupt("name '" + token->info.name + "' appears twice");
    tokens.push_back(std::move(token).value());
  }
  if (version == 2) {
    const std::string_view count = lines.back().substr(kEndKeyword.size() + 1);
    if (count != std::to_string(tokens.size())) {
      return corrupt("the end line counts '" + Shown(count) + "' tokens, the file holds " +
                     std::to_string(tokens.size()) + ": lines were lost or damaged");
    }
  }
  return tokens;
}

std::string Serialize(const std::vector<StoredToken>& tokens) {
  std::string text = std::string(kFileMagic) + " " + std::to_string(kFileVersion) + "\n";
  for (const StoredToken& token : tokens) {
    std::string line = token.info.id + ' ' + util::HexEncode(token.hash) + ' ' +
                       std::to_string(token.info.created_unix_nanos) + ' ' + token.info.name + ' ' +
                       token.info.ScopesText();
    text += line + ' ' + LineCheck(line) + '\n';
  }
  text += std::string(kEndKeyword) + ' ' + std::to_string(tokens.size()) + '\n';
  return text;
}

Salvaged Salvage(std::string_view bytes) {
  Salvaged salvaged;
  std::vector<std::string_view> lines = Split(bytes, '\n');
  // The piece after the last newline: empty, or a line cut short.
  const std::string_view unterminated = lines.back();
  lines.pop_back();
  const int version = lines.empty() ? 0 : HeaderVersion(lines[0]);
  std::set<std::string, std::less<>> ids, names;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    const std::string where = "line " + std::to_string(i + 1) + ": ";
    if (i == 0 && version != 0) continue;
    if (line.substr(0, kEndKeyword.size() + 1) == std::string(kEndKeyword) + " ") continue;
    // A version 2 line proves itself by its check; a version 1 line (or
    // any line under a damaged header) can only be parsed.
    Result<StoredToken> token = ParseTokenLine(line, 2);
    if (!token.ok() && version != 2 && Split(line, ' ').size() == 5) token = ParseTokenLine(line, 1);
    if (!token.ok()) {
      salvaged.dropped.push_back(where + token.status().message() + " ('" + Shown(line) + "')");
      continue;
    }
    if (ids.count(token->info.id) > 0 || names.count(token->info.name) > 0) {
      salvaged.dropped.push_back(where + "token " + token->info.id + " ('" + token->info.name +
                                 "') repeats an id or name of an earlier line");
      continue;
    }
    ids.insert(token->info.id);
    names.insert(token->info.name);
    salvaged.kept.push_back(std::move(token).value());
  }
  if (!unterminated.empty()) {
    salvaged.dropped.push_back("line " + std::to_string(lines.size() + 1) + ": cut short ('" +
                               Shown(unterminated) + "')");
  }
  return salvaged;
}

}  // namespace cairn::token_file
