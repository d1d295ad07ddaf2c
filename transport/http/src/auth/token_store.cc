#include "cairn/http/token_store.h"

#include <algorithm>
#include <charconv>
#include <span>
#include <utility>

#include "cairn/core/table.h"
#include "cairn/platform/crypto.h"
#include "cairn/util/hex.h"

#include "auth/token_file.h"

namespace cairn {

namespace {

using token_file::IsLowerHex;
using token_file::ParseScopeList;
using token_file::Shown;

constexpr std::string_view kTokenPrefix = "cairn_";
constexpr size_t kIdBytes = 8;
constexpr size_t kIdChars = 2 * kIdBytes;
constexpr size_t kSecretBytes = 32;
// Unpadded base64 of 32 bytes: 32 * 8 / 6 rounded up.
constexpr size_t kSecretChars = 43;
constexpr size_t kTokenChars = kTokenPrefix.size() + kIdChars + 1 + kSecretChars;
constexpr size_t kMaxTokenNameBytes = 64;

constexpr char kBase64UrlAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

Status InvalidToken() { return Status::PermissionDenied("invalid token"); }

std::string Base64UrlEncodeUnpadded(std::span<const uint8_t> bytes) {
  std::string text;
  uint32_t bits = 0;
  int bit_count = 0;
  for (uint8_t byte : bytes) {
    bits = (bits << 8) | byte;
    bit_count += 8;
    while (bit_count >= 6) {
      bit_count -= 6;
      text += kBase64UrlAlphabet[(bits >> bit_count) & 0x3f];
    }
  }
  if (bit_count > 0) text += kBase64UrlAlphabet[(bits << (6 - bit_count)) & 0x3f];
  return text;
}

bool IsBase64UrlCharacter(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

// The value of a character of standard base64 (RFC 4648 §4); -1 otherwise.
int Base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Standard base64, padded or not (clients differ); nullopt for any other
// character, misplaced or excess padding, or a length no encoding produces.
std::optional<std::string> Base64Decode(std::string_view text) {
  size_t padding = 0;
  while (padding < text.size() && text[text.size() - 1 - padding] == '=') ++padding;
  if (padding > 2 || (padding > 0 && text.size() % 4 != 0)) return std::nullopt;
  const std::string_view data = text.substr(0, text.size() - padding);
  if (data.size() % 4 == 1) return std::nullopt;
  std::string decoded;
  uint32_t bits = 0;
  int bit_count = 0;
  for (char c : data) {
    const int value = Base64Value(c);
    if (value < 0) return std::nullopt;
    bits = (bits << 6) | static_cast<uint32_t>(value);
    bit_count += 6;
    if (bit_count >= 8) {
      bit_count -= 8;
      decoded += static_cast<char>((bits >> bit_count) & 0xff);
    }
  }
  return decoded;
}

bool IsTokenNameCharacter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
         c == '.';
}

bool IsAsciiSpace(char c) { return c == ' ' || c == '\t'; }

std::string_view TrimSpaces(std::string_view text) {
  while (!text.empty() && IsAsciiSpace(text.front())) text.remove_prefix(1);
  while (!text.empty() && IsAsciiSpace(text.back())) text.remove_suffix(1);
  return text;
}

bool EqualsIgnoringAsciiCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
           return lower(x) == lower(y);
         });
}

}  // namespace

// ---- scopes and names -------------------------------------------------------

std::string TokenScope::ToString() const {
  switch (access) {
    case Access::kAdmin:
      return "admin";
    case Access::kRead:
      return "read:" + table;
    case Access::kWrite:
      return "write:" + table;
  }
  return "admin";
}

Result<TokenScope> ParseTokenScope(std::string_view text) {
  if (text == "admin") return TokenScope{Access::kAdmin, ""};
  const size_t colon = text.find(':');
  const std::string_view kind = text.substr(0, colon);
  Access access;
  if (colon != std::string_view::npos && kind == "read") {
    access = Access::kRead;
  } else if (colon != std::string_view::npos && kind == "write") {
    access = Access::kWrite;
  } else {
    return Status::InvalidArgument("scope '" + Shown(text) +
                                   "' is not admin, read:TABLE or write:TABLE (TABLE may be *)");
  }
  const std::string_view table = text.substr(colon + 1);
  if (table != "*") {
    Status valid = ValidateTableName(table);
    if (!valid.ok()) return valid.WithContext("scope '" + Shown(text) + "'");
  }
  return TokenScope{access, std::string(table)};
}

Status ValidateTokenName(std::string_view name) {
  if (name.empty() || name.size() > kMaxTokenNameBytes) {
    return Status::InvalidArgument("token name must be 1-64 bytes");
  }
  if (!std::all_of(name.begin(), name.end(), IsTokenNameCharacter)) {
    return Status::InvalidArgument("token name '" + Shown(name) +
                                   "' may contain only letters, digits, '-', '_' and '.'");
  }
  if (name.front() == '-') return Status::InvalidArgument("token name must not start with '-'");
  if (name.size() == kIdChars && IsLowerHex(name)) {
    return Status::InvalidArgument("token name '" + std::string(name) +
                                   "' looks like a token id (16 hex digits); choose another");
  }
  return Status::Ok();
}

bool TokenInfo::Allows(Access access, std::string_view table) const {
  for (const TokenScope& scope : scopes) {
    if (scope.access == Access::kAdmin) return true;
    if (access == Access::kAdmin || scope.access != access) continue;
    if (scope.table == "*" || scope.table == table) return true;
  }
  return false;
}

std::string TokenInfo::ScopesText() const {
  std::string text;
  for (const TokenScope& scope : scopes) {
    if (!text.empty()) text += ',';
    text += scope.ToString();
  }
  return text;
}

// ---- the store --------------------------------------------------------------

TokenStore::TokenStore(Env* env, std::string data_dir)
    : env_(env),
      data_dir_(std::move(data_dir)),
      file_path_(JoinPath(data_dir_, kFileName)),
      lock_path_(JoinPath(data_dir_, kLockFileName)) {}

Result<std::unique_ptr<TokenStore>> TokenStore::Open(Env* env, std::string data_dir, bool serve_damaged) {
  if (!env->FileExists(data_dir)) {
    return Status::NotFound("data directory " + data_dir + " does not exist");
  }
  std::unique_ptr<TokenStore> store(new TokenStore(env, std::move(data_dir)));
  Result<std::optional<std::string>> bytes = store->ReadFile();
  if (!bytes.ok()) {
    if (!serve_damaged) return bytes.status();
    store->InstallDamaged(std::nullopt, bytes.status());
    return store;
  }
  Contents contents;
  if (bytes->has_value()) {
    Result<Contents> parsed = store->Parse(**bytes);
    if (!parsed.ok()) {
      if (!serve_damaged) return parsed.status();
      store->InstallDamaged(std::move(*bytes), parsed.status());
      return store;
    }
    contents = std::move(parsed).value();
  }
  store->Install(std::move(*bytes), std::move(contents));
  return store;
}

Result<TokenRepairReport> TokenStore::Repair(Env* env, std::string data_dir) {
  if (!env->FileExists(data_dir)) {
    return Status::NotFound("data directory " + data_dir + " does not exist");
  }
  TokenStore store(env, std::move(data_dir));
  MutexLock change_guard(&store.change_mutex_);
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<FileLock> lock, store.LockForChange());
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> bytes, store.ReadFile());
  if (!bytes.has_value()) {
    return Status::NotFound(store.file_path_ +
                            " does not exist: there is nothing to repair; create a token with `cairnd token "
                            "create --data-dir " +
                            store.data_dir_ + " --name admin --scope admin`");
  }
  TokenRepairReport report;
  Result<Contents> intact = store.Parse(*bytes);
  if (intact.ok()) {
    for (const Entry& entry : intact->entries) report.kept.push_back(entry.info);
    return report;
  }
  token_file::Salvaged salvaged = token_file::Salvage(*bytes);
  report.damaged_copy_path = JoinPath(store.data_dir_, kDamagedCopyName);
  CAIRN_RETURN_IF_ERROR(env->WriteFileAtomically(report.damaged_copy_path, *bytes, kFileMode));
  CAIRN_RETURN_IF_ERROR(
      env->WriteFileAtomically(store.file_path_, token_file::Serialize(salvaged.kept), kFileMode));
  report.rewritten = true;
  for (token_file::StoredToken& token : salvaged.kept) report.kept.push_back(std::move(token.info));
  report.dropped = std::move(salvaged.dropped);
  return report;
}

Status TokenStore::damage() const {
  ReaderLock guard(&state_mutex_);
  return damage_;
}

Result<std::optional<uint32_t>> TokenStore::RestrictFileMode() {
  if (!env_->FileExists(file_path_)) return std::optional<uint32_t>();
  CAIRN_ASSIGN_OR_RETURN(const uint32_t mode, env_->FileMode(file_path_));
  if ((mode & ~kFileMode & 0777) == 0) return std::optional<uint32_t>();
  CAIRN_RETURN_IF_ERROR(env_->SetFileMode(file_path_, kFileMode));
  return std::optional<uint32_t>(mode);
}

Result<std::optional<std::string>> TokenStore::ReadFile() const {
  Result<std::string> bytes = env_->ReadFileToString(file_path_);
  if (bytes.ok()) return std::optional<std::string>(std::move(bytes).value());
  if (bytes.status().Is(StatusCode::kNotFound)) return std::optional<std::string>();
  return bytes.status();
}

Result<TokenStore::Contents> TokenStore::Parse(std::string_view bytes) const {
  Result<std::vector<token_file::StoredToken>> tokens = token_file::Parse(file_path_, bytes);
  if (!tokens.ok()) {
    if (!tokens.status().Is(StatusCode::kCorruption)) return tokens.status();
    return Status::Corruption(tokens.status().message() +
                              "; to keep its intact tokens run `cairnd token repair --data-dir " + data_dir_ +
                              "` (or restore the file from a backup)");
  }
  Contents contents;
  for (token_file::StoredToken& token : *tokens) {
    contents.by_id.emplace(token.info.id, contents.entries.size());
    contents.entries.push_back(Entry{std::move(token.info), token.hash});
  }
  return contents;
}

std::string TokenStore::Serialize(const Contents& contents) {
  std::vector<token_file::StoredToken> tokens;
  tokens.reserve(contents.entries.size());
  for (const Entry& entry : contents.entries) tokens.push_back({entry.info, entry.hash});
  return token_file::Serialize(tokens);
}

void TokenStore::Install(std::optional<std::string> bytes, Contents contents) {
  WriterLock guard(&state_mutex_);
  loaded_bytes_ = std::move(bytes);
  contents_ = std::move(contents);
  damage_ = Status::Ok();
}

void TokenStore::InstallDamaged(std::optional<std::string> bytes, Status why) {
  WriterLock guard(&state_mutex_);
  loaded_bytes_ = std::move(bytes);
  contents_ = Contents();
  damage_ = std::move(why);
}

Result<std::unique_ptr<FileLock>> TokenStore::LockForChange() {
  for (int attempt = 1;; ++attempt) {
    Result<std::unique_ptr<FileLock>> lock = env_->LockFile(lock_path_);
    if (lock.ok() || !lock.status().Is(StatusCode::kBusy)) return lock;
    if (attempt >= kLockAttempts) {
      return Status::Busy(lock_path_ + " stayed locked by another token change (a `cairnd token` command " +
                          "or cairnd's first start); try again");
    }
    env_->SleepForMicros(kLockRetryMicros);
  }
}

Status TokenStore::ModifyFile(const std::function<Result<bool>(Contents* contents, bool file_exists)>& edit) {
  MutexLock change_guard(&change_mutex_);
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<FileLock> lock, LockForChange());
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> bytes, ReadFile());
  Contents contents;
  if (bytes.has_value()) {
    CAIRN_ASSIGN_OR_RETURN(contents, Parse(*bytes));
  }
  Contents edited = contents;
  Result<bool> write = edit(&edited, bytes.has_value());
  if (!write.ok()) {
    // The change was refused, but what was just read is the newest state:
    // serving it costs nothing and spares a caller a stale view.
    Install(std::move(bytes), std::move(contents));
    return write.status();
  }
  if (*write) {
    bytes = Serialize(edited);
    // A failure leaves the old file (or, when only the directory sync
    // failed, the new one): either way ReloadIfChanged catches up with it.
    CAIRN_RETURN_IF_ERROR(env_->WriteFileAtomically(file_path_, *bytes, kFileMode));
  }
  Install(std::move(bytes), std::move(edited));
  return Status::Ok();
}

Result<CreatedToken> TokenStore::NewToken(const Contents& contents, std::string name,
                                          std::vector<TokenScope> scopes) {
  std::array<uint8_t, kIdBytes> id_bytes{};
  std::string id;
  do {
    CAIRN_RETURN_IF_ERROR(env_->RandomBytes(id_bytes));
    id = util::HexEncode(id_bytes);
  } while (contents.by_id.count(id) > 0);
  std::array<uint8_t, kSecretBytes> secret{};
  CAIRN_RETURN_IF_ERROR(env_->RandomBytes(secret));

  CreatedToken created;
  created.token = std::string(kTokenPrefix) + id + "_" + Base64UrlEncodeUnpadded(secret);
  created.info.id = std::move(id);
  created.info.name = std::move(name);
  created.info.scopes = std::move(scopes);
  created.info.created_unix_nanos = env_->NowUnixNanos();
  return created;
}

Result<CreatedToken> TokenStore::Create(std::string name, std::vector<std::string> scopes) {
  CAIRN_RETURN_IF_ERROR(ValidateTokenName(name));
  CAIRN_ASSIGN_OR_RETURN(std::vector<TokenScope> parsed_scopes,
                         ParseScopeList(std::vector<std::string_view>(scopes.begin(), scopes.end())));
  std::optional<CreatedToken> created;
  CAIRN_RETURN_IF_ERROR(ModifyFile([&](Contents* contents, bool) -> Result<bool> {
    for (const Entry& entry : contents->entries) {
      if (entry.info.name == name)
        return Status::AlreadyExists("a token named '" + name + "' exists already");
    }
    CAIRN_ASSIGN_OR_RETURN(CreatedToken token, NewToken(*contents, name, parsed_scopes));
    Entry entry{token.info, Sha256(token.token)};
    contents->by_id.emplace(entry.info.id, contents->entries.size());
    contents->entries.push_back(std::move(entry));
    created = std::move(token);
    return true;
  }));
  return std::move(created).value();
}

Result<std::optional<CreatedToken>> TokenStore::EnsureAdminToken() {
  std::optional<CreatedToken> created;
  CAIRN_RETURN_IF_ERROR(ModifyFile([&](Contents* contents, bool file_exists) -> Result<bool> {
    if (file_exists) return false;
    CAIRN_ASSIGN_OR_RETURN(CreatedToken token, NewToken(*contents, std::string(kAdminTokenName),
                                                        {TokenScope{Access::kAdmin, ""}}));
    Entry entry{token.info, Sha256(token.token)};
    contents->by_id.emplace(entry.info.id, contents->entries.size());
    contents->entries.push_back(std::move(entry));
    created = std::move(token);
    return true;
  }));
  return created;
}

Status TokenStore::Revoke(std::string_view id_or_name, TokenInfo* revoked) {
  return ModifyFile([&](Contents* contents, bool) -> Result<bool> {
    auto match = std::find_if(contents->entries.begin(), contents->entries.end(),
                              [&](const Entry& entry) { return entry.info.id == id_or_name; });
    if (match == contents->entries.end()) {
      match = std::find_if(contents->entries.begin(), contents->entries.end(),
                           [&](const Entry& entry) { return entry.info.name == id_or_name; });
    }
    if (match == contents->entries.end()) {
      return Status::NotFound("no token has the id or name '" + Shown(id_or_name) + "'");
    }
    if (revoked != nullptr) *revoked = match->info;
    contents->entries.erase(match);
    contents->by_id.clear();
    for (size_t i = 0; i < contents->entries.size(); ++i)
      contents->by_id.emplace(contents->entries[i].info.id, i);
    return true;
  });
}

std::optional<TokenInfo> TokenStore::FindByName(std::string_view name) const {
  ReaderLock guard(&state_mutex_);
  for (const Entry& entry : contents_.entries) {
    if (entry.info.name == name) return entry.info;
  }
  return std::nullopt;
}

std::vector<TokenInfo> TokenStore::List() const {
  ReaderLock guard(&state_mutex_);
  std::vector<TokenInfo> infos;
  infos.reserve(contents_.entries.size());
  for (const Entry& entry : contents_.entries) infos.push_back(entry.info);
  return infos;
}

Result<TokenInfo> TokenStore::Authenticate(std::string_view presented) const {
  const bool well_formed = presented.size() == kTokenChars &&
                           presented.substr(0, kTokenPrefix.size()) == kTokenPrefix &&
                           IsLowerHex(presented.substr(kTokenPrefix.size(), kIdChars)) &&
                           presented[kTokenPrefix.size() + kIdChars] == '_' &&
                           std::all_of(presented.end() - kSecretChars, presented.end(), IsBase64UrlCharacter);
  if (!well_formed) return InvalidToken();
  const Sha256Digest presented_hash = Sha256(presented);
  const std::string_view id = presented.substr(kTokenPrefix.size(), kIdChars);

  ReaderLock guard(&state_mutex_);
  const auto found = contents_.by_id.find(id);
  // An unknown id is compared against a digest no token has, so that both
  // failures do the same work.
  static constexpr Sha256Digest kNoDigest{};
  const Sha256Digest& expected =
      found != contents_.by_id.end() ? contents_.entries[found->second].hash : kNoDigest;
  const bool equal = ConstantTimeEqual(presented_hash, expected);
  if (found == contents_.by_id.end() || !equal) return InvalidToken();
  return contents_.entries[found->second].info;
}

Status TokenStore::ReloadIfChanged() {
  // Serialised with this process's changes: a read taken before a change
  // must not be installed after it. A change in progress installs a fresh
  // read of the file itself, so this reload has nothing to add.
  if (!change_mutex_.TryLock()) return Status::Ok();
  Status status = ReloadLocked();
  change_mutex_.Unlock();
  return status;
}

Status TokenStore::ReloadLocked() {
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> bytes, ReadFile());
  bool damaged;
  {
    ReaderLock guard(&state_mutex_);
    if (bytes == loaded_bytes_) return damage_;
    damaged = !damage_.ok();
  }
  Contents contents;
  if (bytes.has_value()) {
    Result<Contents> parsed = Parse(*bytes);
    if (!parsed.ok()) {
      // A store that serves tokens keeps them (a half-edited file must not
      // lock everyone out); one that served none stays empty.
      if (damaged) InstallDamaged(std::move(bytes), parsed.status());
      return parsed.status();
    }
    contents = std::move(parsed).value();
  }
  Install(std::move(bytes), std::move(contents));
  return Status::Ok();
}

// ---- the Authorization header -----------------------------------------------

Result<std::string> ExtractPresentedToken(std::string_view authorization_header_value) {
  const std::string_view value = TrimSpaces(authorization_header_value);
  if (value.empty()) return Status::InvalidArgument("the Authorization header is empty");
  const size_t scheme_end = std::min(value.find(' '), value.find('\t'));
  const std::string_view scheme = value.substr(0, scheme_end);
  const std::string_view credentials =
      scheme_end == std::string_view::npos ? std::string_view() : TrimSpaces(value.substr(scheme_end));
  const bool bearer = EqualsIgnoringAsciiCase(scheme, "Bearer") || EqualsIgnoringAsciiCase(scheme, "Token");
  const bool basic = EqualsIgnoringAsciiCase(scheme, "Basic");
  if (!bearer && !basic) {
    return Status::InvalidArgument("unsupported authorization scheme '" + Shown(scheme) +
                                   "': use Bearer, Token or Basic");
  }
  if (credentials.empty()) {
    return Status::InvalidArgument("the Authorization header has no credentials after '" + Shown(scheme) +
                                   "'");
  }
  if (std::any_of(credentials.begin(), credentials.end(), IsAsciiSpace)) {
    return Status::InvalidArgument("the Authorization header's credentials contain a space");
  }
  if (bearer) return std::string(credentials);

  std::optional<std::string> decoded = Base64Decode(credentials);
  if (!decoded.has_value()) {
    return Status::InvalidArgument("the Basic credentials of the Authorization header are not valid base64");
  }
  const size_t colon = decoded->find(':');
  if (colon == std::string::npos) {
    return Status::InvalidArgument("the Basic credentials of the Authorization header are not user:password");
  }
  std::string password = decoded->substr(colon + 1);
  if (password.empty()) {
    return Status::InvalidArgument(
        "the Basic credentials of the Authorization header have an empty password");
  }
  return password;
}

}  // namespace cairn
