// API tokens of the HTTP shell: creation, scopes, hashed storage and
// authentication (DESIGN §7).
//
// A token reads `cairn_<id>_<secret>`:
//   id      8 random bytes as 16 lowercase hex digits. Public: it names the
//           token in `cairnd token list` and `revoke`, and finds the stored
//           hash without comparing secrets.
//   secret  32 random bytes (Env::RandomBytes) in unpadded base64url, 43
//           characters. The secret alphabet contains '_' too; the id's fixed
//           width keeps the text unambiguous.
// The full text is shown once, when the token is created; the store keeps
// only its SHA-256. A KDF (bcrypt, Argon2) exists to slow down guessing
// low-entropy passwords from a stolen hash; a 256-bit random secret cannot be
// guessed at any speed, so one SHA-256 is as strong and costs microseconds on
// each request of a small ARM board. Hashes are compared in constant time.
//
// Scopes (one or more per token):
//   admin          everything: every table, and the endpoints that are about
//                  no single table (create and drop tables, tokens, metrics)
//   read:<table>   queries of that table
//   write:<table>  writes to that table
// <table> is a table name (ValidateTableName) or `*` for every table,
// including tables created later. `write` does not include `read`: a sensor
// or an ingest job holding a write token cannot read back what other devices
// stored, which is the tenant isolation of DESIGN §4. Give both scopes to a
// token that needs both.
//
// Storage: <data_dir>/tokens, a small text file replaced atomically on every
// change (format in transport/http/src/auth/token_format.md: every line carries
// a check, and an end line counts them, so a flipped byte or a file cut
// short is found rather than read as different tokens). Every change
// re-reads the file under the lock file <data_dir>/tokens.lock, so a running
// cairnd and `cairnd token` commands never lose each other's changes. The
// file holds no secret (its hashes are useless to a reader, see above), but
// its names and scopes tell which token is worth stealing: it is written
// with mode 0600, and RestrictFileMode tightens a looser one.
//
// Thread-safety: TokenStore may be used from any number of threads at once:
// Authenticate and List run concurrently with each other and with Create,
// Revoke, EnsureAdminToken and ReloadIfChanged.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/platform/env.h"
#include "cairn/platform/mutex.h"
#include "cairn/platform/status.h"

namespace cairn {

// What a request wants to do.
enum class Access : uint8_t {
  kRead,   // read a table's data
  kWrite,  // write a table's data
  kAdmin,  // anything else: manage tables and tokens, server-wide endpoints
};

// One grant of a token.
struct TokenScope {
  // kAdmin grants everything and has no table.
  Access access = Access::kRead;
  // For kRead and kWrite: a table name, or "*" for every table. Empty for
  // kAdmin.
  std::string table;

  // The scope's text: "admin", "read:sensors", "write:*".
  std::string ToString() const;

  friend bool operator==(const TokenScope&, const TokenScope&) = default;
};

// Parses "admin", "read:<table>" or "write:<table>" (<table> a valid table
// name or "*"; lowercase keywords). InvalidArgument naming the text otherwise.
Result<TokenScope> ParseTokenScope(std::string_view text);

// Token names: 1-64 bytes of letters, digits, '-', '_' and '.', and not 16
// lowercase hex digits (that is how ids look, and `revoke` accepts either).
// InvalidArgument naming the rule otherwise.
Status ValidateTokenName(std::string_view name);

// What the store knows about a token: everything but its secret.
struct TokenInfo {
  std::string id;                  // 16 lowercase hex digits
  std::string name;                // unique within the store
  std::vector<TokenScope> scopes;  // at least one, no duplicates
  int64_t created_unix_nanos = 0;  // wall clock at creation (may be 1970 on a board without RTC)

  // True when a scope grants `access` to `table`. Admin grants everything;
  // kAdmin needs the admin scope (`table` is then ignored); kRead needs
  // read:<table> or read:*; kWrite needs write:<table> or write:*. Table
  // names match exactly (they are case-sensitive in the engine too).
  bool Allows(Access access, std::string_view table) const;

  // The scopes as one comma-separated text: "read:a,write:a".
  std::string ScopesText() const;
};

// What TokenStore::Repair did.
struct TokenRepairReport {
  // False when the file was intact and left alone.
  bool rewritten = false;
  // The tokens the file holds now.
  std::vector<TokenInfo> kept;
  // "line 3: <why>" for each damaged line dropped; their tokens must be
  // created again.
  std::vector<std::string> dropped;
  // Where the damaged original was kept (rewritten only).
  std::string damaged_copy_path;
};

// The result of creating a token.
struct CreatedToken {
  // The full token text. Exists only here: show it to the operator once and
  // drop it.
  std::string token;
  TokenInfo info;
};

// The API tokens of one data directory, loaded in memory for Authenticate
// and kept in step with <data_dir>/tokens (see the top of this file).
// Thread-safe.
class TokenStore {
 public:
  // File names inside the data directory.
  static constexpr std::string_view kFileName = "tokens";
  static constexpr std::string_view kLockFileName = "tokens.lock";
  // Where Repair keeps the damaged original.
  static constexpr std::string_view kDamagedCopyName = "tokens.damaged";
  // The permissions of the file.
  static constexpr uint32_t kFileMode = 0600;
  // The name of the token EnsureAdminToken creates.
  static constexpr std::string_view kAdminTokenName = "admin";
  // How long a change waits for another writer's tokens.lock: that many
  // attempts this far apart, then Busy. Writers hold it for one small file
  // write, so a few seconds in all is plenty even on an SD card.
  static constexpr int kLockAttempts = 200;
  static constexpr int64_t kLockRetryMicros = 25'000;

  // Loads <data_dir>/tokens; a missing file is a store without tokens.
  // `env` is not owned and must outlive the store. NotFound when `data_dir`
  // itself does not exist (the store never creates it); Corruption naming
  // the file and line when the file is malformed; IOError when it cannot be
  // read.
  //
  // With `serve_damaged`, a malformed or unreadable file does not fail the
  // open: the store then holds no token (every Authenticate fails, which is
  // safe), damage() says what is wrong, changes are refused with the same
  // error, and ReloadIfChanged takes the file over once it is repaired
  // (Repair, or a restored copy). The daemon opens its store this way so
  // that a damaged tokens file stops the HTTP API and nothing else.
  static Result<std::unique_ptr<TokenStore>> Open(Env* env, std::string data_dir, bool serve_damaged = false);

  // Rewrites a damaged <data_dir>/tokens keeping every token whose line is
  // intact (Salvage in token_file.h), after copying the original to
  // kDamagedCopyName; leaves an intact file alone. Works while cairnd runs
  // (under tokens.lock; cairnd takes the result over within a second).
  // NotFound when there is no file; Busy as Create.
  static Result<TokenRepairReport> Repair(Env* env, std::string data_dir);

  // OK, or why the file the store last looked at could not be used (see
  // Open's `serve_damaged`).
  Status damage() const;

  // When <data_dir>/tokens exists with permissions looser than kFileMode,
  // sets kFileMode and returns the mode it had; nullopt when nothing was
  // changed.
  Result<std::optional<uint32_t>> RestrictFileMode();

  TokenStore(const TokenStore&) = delete;
  TokenStore& operator=(const TokenStore&) = delete;

  // Creates a token with a fresh id and secret and persists it before
  // returning. `scopes` are scope texts (ParseTokenScope); duplicates are
  // kept once. InvalidArgument for a bad name or scope or no scope at all;
  // AlreadyExists when the name is taken (also by a token another process
  // added meanwhile); Corruption when the file on disk is malformed (it is
  // then left alone); Busy when tokens.lock stayed held (see kLockAttempts).
  Result<CreatedToken> Create(std::string name, std::vector<std::string> scopes);

  // First start: when <data_dir>/tokens does not exist, creates a token named
  // kAdminTokenName with the admin scope and returns it, so the daemon can
  // show it once; otherwise returns nullopt. Decided under tokens.lock on a
  // fresh read of the disk, so a `cairnd token create` running at the same
  // time can never leave two first tokens or none. A file that exists with
  // no token in it (every token revoked) is the operator's choice and is
  // kept: no admin token appears behind their back at the next start.
  Result<std::optional<CreatedToken>> EnsureAdminToken();

  // Removes the token whose id or name is `id_or_name` (ids are tried
  // first). Fills `*revoked` (when not null) with what was removed. NotFound
  // when no token matches; otherwise as Create. A revoked token fails
  // Authenticate from the moment this returns (in this process; in others
  // from their next ReloadIfChanged).
  Status Revoke(std::string_view id_or_name, TokenInfo* revoked = nullptr);

  // Every token, in creation order.
  std::vector<TokenInfo> List() const;

  // The token named `name`, for identities established otherwise than by
  // presenting the token (a mutual-TLS client certificate); nullopt when no
  // token has that name.
  std::optional<TokenInfo> FindByName(std::string_view name) const;

  // Checks a presented token text (ExtractPresentedToken gives it from a
  // request). PermissionDenied "invalid token" for anything but a live token
  // of this store: malformed text, unknown id, wrong secret. The message
  // does not tell these apart, and an unknown id costs the same work as a
  // wrong secret.
  Result<TokenInfo> Authenticate(std::string_view presented) const;

  // Re-reads <data_dir>/tokens and takes it over when its bytes differ from
  // what this store last read or wrote (another process changed it). A
  // missing file means no tokens. When the file is malformed or unreadable,
  // returns that error and keeps the tokens loaded before, so a half-edited
  // file never locks everyone out or lets anyone in. Returns OK at once
  // while a change of this store is in progress: that change installs a
  // fresh read itself. Reads the whole file: meant for a small file at most
  // every second or so.
  Status ReloadIfChanged() EXCLUDES(change_mutex_);

  const std::string& file_path() const { return file_path_; }

 private:
  struct Entry {
    TokenInfo info;
    std::array<uint8_t, 32> hash;
  };
  // An immutable parse of one version of the file.
  struct Contents {
    std::vector<Entry> entries;
    // id -> index in entries.
    std::map<std::string, size_t, std::less<>> by_id;
  };

  TokenStore(Env* env, std::string data_dir);

  // Parses the file's bytes; Corruption naming path and line.
  Result<Contents> Parse(std::string_view bytes) const;
  static std::string Serialize(const Contents& contents);
  // The file's bytes; nullopt when it does not exist.
  Result<std::optional<std::string>> ReadFile() const;
  // Takes tokens.lock, retrying while another holder has it.
  Result<std::unique_ptr<FileLock>> LockForChange();
  // One read-modify-write of the file under tokens.lock: reads and parses
  // it, lets `edit` change the parsed tokens (`file_exists` tells whether
  // there was a file), and writes the result atomically when `edit` returns
  // true. What was read (also when `edit` fails) or written becomes what
  // this store serves.
  Status ModifyFile(const std::function<Result<bool>(Contents* contents, bool file_exists)>& edit)
      EXCLUDES(change_mutex_);
  // ReloadIfChanged's work, once it holds change_mutex_.
  Status ReloadLocked() REQUIRES(change_mutex_);
  // Makes `bytes` (nullopt: no file) and their parse what Authenticate and
  // List see, and clears damage().
  void Install(std::optional<std::string> bytes, Contents contents) EXCLUDES(state_mutex_);
  // Serves no token because `bytes` (what was read) could not be used.
  void InstallDamaged(std::optional<std::string> bytes, Status why) EXCLUDES(state_mutex_);
  // Fresh id and secret; the id differs from every id in `contents`.
  Result<CreatedToken> NewToken(const Contents& contents, std::string name, std::vector<TokenScope> scopes);

  Env* const env_;
  const std::string data_dir_;
  const std::string file_path_;
  const std::string lock_path_;

  // Serialises this process's changes before they compete for tokens.lock
  // (which reports a second holder in the same process as Busy).
  Mutex change_mutex_ ACQUIRED_BEFORE(state_mutex_);
  // Guards the fields below: shared by readers, exclusive to Install.
  mutable SharedMutex state_mutex_;
  // The file as last read or written; nullopt when there was none.
  std::optional<std::string> loaded_bytes_ GUARDED_BY(state_mutex_);
  Contents contents_ GUARDED_BY(state_mutex_);
  // Why loaded_bytes_ could not be used; OK when they could.
  Status damage_ GUARDED_BY(state_mutex_);
};

// The token a request presents in its Authorization header value:
//   "Bearer <token>" and "Token <token>"  (InfluxDB 2.x and most clients)
//   "Basic <base64(user:token)>"           (InfluxDB 1.x clients: the
//                                           password is the token, the user
//                                           name is ignored)
// Schemes are case-insensitive; spaces and tabs around the value and between
// scheme and credentials are skipped. Returns the token text unchecked
// (TokenStore::Authenticate decides). InvalidArgument naming the problem for
// an empty value, an unknown scheme, missing credentials, bad base64, Basic
// credentials without ':' or with an empty password. A request without the
// header at all is the caller's case to handle (it may carry the token
// elsewhere, e.g. InfluxDB 1.x's `p` query parameter).
Result<std::string> ExtractPresentedToken(std::string_view authorization_header_value);

}  // namespace cairn
