#include "cairn/http/token_store.h"

#include <atomic>
#include <cctype>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/platform/crypto.h"
#include "cairn/platform/env.h"
#include "cairn/util/hex.h"

#include "fault_injection_env.h"
#include "test_dirs.h"

namespace cairn {
namespace {

// Hands out the bytes 0, 1, 2, ... so that token texts are known in advance.
class CountingRandomEnv : public EnvWrapper {
 public:
  explicit CountingRandomEnv(Env* target) : EnvWrapper(target) {}
  Status RandomBytes(std::span<uint8_t> out) override {
    for (uint8_t& byte : out) byte = next_++;
    return Status::Ok();
  }

 private:
  uint8_t next_ = 0;
};

class FailingRandomEnv : public EnvWrapper {
 public:
  explicit FailingRandomEnv(Env* target) : EnvWrapper(target) {}
  Status RandomBytes(std::span<uint8_t>) override { return Status::IOError("getrandom: no entropy"); }
};

bool IsLowerHexText(std::string_view text) {
  return text.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

bool IsBase64UrlText(std::string_view text) {
  return text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") ==
         std::string_view::npos;
}

std::vector<std::string> Names(const std::vector<TokenInfo>& infos) {
  std::vector<std::string> names;
  for (const TokenInfo& info : infos) names.push_back(info.name);
  return names;
}

class TokenStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<TokenStore> OpenStore(Env* env = Env::Default()) {
    Result<std::unique_ptr<TokenStore>> store = TokenStore::Open(env, dir_.path());
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  CreatedToken MustCreate(TokenStore* store, const std::string& name, std::vector<std::string> scopes) {
    Result<CreatedToken> created = store->Create(name, std::move(scopes));
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return created.ok() ? std::move(created).value() : CreatedToken{};
  }

  std::string FileBytes() {
    Result<std::string> bytes = Env::Default()->ReadFileToString(dir_.PathOf("tokens"));
    EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
    return bytes.ok() ? *bytes : "";
  }

  void WriteFile(std::string_view bytes) {
    ASSERT_TRUE(Env::Default()->WriteFileAtomically(dir_.PathOf("tokens"), bytes).ok());
  }

  static void ExpectInvalidToken(const TokenStore& store, std::string_view presented) {
    Result<TokenInfo> info = store.Authenticate(presented);
    ASSERT_FALSE(info.ok()) << "accepted: " << presented;
    EXPECT_EQ(info.status().code(), StatusCode::kPermissionDenied);
    EXPECT_EQ(info.status().message(), "invalid token");
  }

  ScopedTempDir dir_{"cairn-tokens"};
};

// ---- tokens -----------------------------------------------------------------

TEST_F(TokenStoreTest, CreatedTokenAuthenticatesAndIsListed) {
  std::unique_ptr<TokenStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->List().empty());
  const CreatedToken created = MustCreate(store.get(), "grafana", {"read:*"});

  Result<TokenInfo> info = store->Authenticate(created.token);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->id, created.info.id);
  EXPECT_EQ(info->name, "grafana");
  ASSERT_EQ(info->scopes.size(), 1u);
  EXPECT_EQ(info->scopes[0], (TokenScope{Access::kRead, "*"}));

  const std::vector<TokenInfo> listed = store->List();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].id, created.info.id);
  EXPECT_EQ(listed[0].ScopesText(), "read:*");
}

TEST_F(TokenStoreTest, TokenTextIsPrefixIdAndSecret) {
  std::unique_ptr<TokenStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  const CreatedToken created = MustCreate(store.get(), "a", {"admin"});
  const std::string& token = created.token;
  ASSERT_EQ(token.size(), 66u);
  EXPECT_EQ(token.substr(0, 6), "cairn_");
  EXPECT_EQ(token.substr(6, 16), created.info.id);
  EXPECT_TRUE(IsLowerHexText(created.info.id));
  EXPECT_EQ(token[22], '_');
  EXPECT_TRUE(IsBase64UrlText(token.substr(23))) << token;

  const CreatedToken second = MustCreate(store.get(), "b", {"admin"});
  EXPECT_NE(second.info.id, created.info.id);
  EXPECT_NE(second.token.substr(23), token.substr(23));
}

TEST_F(TokenStoreTest, CreationTimeComesFromTheEnvClock) {
  std::unique_ptr<TokenStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  const int64_t before = Env::Default()->NowUnixNanos();
  const CreatedToken created = MustCreate(store.get(), "a", {"admin"});
  const int64_t after = Env::Default()->NowUnixNanos();
  EXPECT_GE(created.info.created_unix_nanos, before);
  EXPECT_LE(created.info.created_unix_nanos, after);
}

TEST_F(TokenStoreTest, FileStoresTheSha256OfTheTokenAndNoSecret) {
  CountingRandomEnv env(Env::Default());
  std::unique_ptr<TokenStore> store = OpenStore(&env);
  ASSERT_NE(store, nullptr);
  const CreatedToken created = MustCreate(store.get(), "sensor-7", {"write:sensors", "read:sensors"});
  // Bytes 0..7 make the id, 8..39 the secret.
  EXPECT_EQ(created.token, "cairn_0001020304050607_CAkKCwwNDg8QERITFBUWFxgZGhscHR4fICEiIyQlJic");

  const std::string bytes = FileBytes();
  const std::string line =
      "0001020304050607 426fc5353a41e2ac8cbec78e0221755418b9de6a4696507263291ac0da72855a " +
      std::to_string(created.info.created_unix_nanos) + " sensor-7 write:sensors,read:sensors";
  const Sha256Digest check = Sha256(line);
  EXPECT_EQ(bytes, "cairn-tokens 2\n" + line + " " +
                       util::HexEncode(std::span<const uint8_t>(check.data(), 4)) + "\nend 1\n");
  EXPECT_EQ(bytes.find("CAkKCwwNDg8QERITFBUWFxgZGhscHR4fICEiIyQlJic"), std::string::npos);
}

TEST_F(TokenStoreTest, FileNeverHoldsARandomSecret) {
  std::unique_ptr<TokenStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  std::vector<std::string> secrets;
  for (int i = 0; i < 5; ++i)
    secrets.push_back(MustCreate(store.get(), "t" + std::to_string(i), {"admin"}).token);
  const std::string bytes = FileBytes();
  for (const std::string& token : secrets) {
    EXPECT_NE(bytes.find(token.substr(6, 16)), std::string::npos) << "the id is stored";
    EXPECT_EQ(bytes.find(token.substr(23)), std::string::npos) << "the secret is not";
    // Nor any long piece of it.
    EXPECT_EQ(bytes.find(token.substr(23, 12)), std::string::npos);
  }
}

TEST_F(TokenStoreTest, PersistsAcrossReopen) {
  CreatedToken first;
  CreatedToken second;
  {
    std::unique_ptr<TokenStore> store = OpenStore();
    ASSERT_NE(store, nullptr);
    first = MustCreate(store.get(), "first", {"read:a", "write:b"});
    second = MustCreate(store.get(), "second.v2", {"admin"});
  }
  std::unique_ptr<TokenStore> reopened = OpenStore();
  ASSERT_NE(reopened, nullptr);
  const std::vector<TokenInfo> listed = reopened->List();
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].id, first.info.id);
  EXPECT_EQ(listed[0].name, "first");
  EXPECT_EQ(listed[0].ScopesText(), "read:a,write:b");
  EXPECT_EQ(listed[0].created_unix_nanos, first.info.created_unix_nanos);
  EXPECT_EQ(listed[1].name, "second.v2");
  EXPECT_TRUE(reopened->Authenticate(first.token).ok());
  EXPECT_TRUE(reopened->Authenticate(second.token).ok());
}

TEST_F(TokenStoreTest, RejectsEveryTokenThatIsNotExactlyALiveOne) {
  std::unique_ptr<TokenStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  const std::string token = MustCreate(store.get(), "live", {"admin"}).token;
  const std::string other = MustCreate(store.get(), "other", {"admin"}).token;
  ASSERT_TRUE(store->Authenticate(token).ok());

  // Tampered secret: every position, to a different base64url character.
  for (size_t i = 23; i < token.size(); ++i) {
    std::string tampered = token;
    tampered[i] = tampered[i] == 'A' ? 'B' : 'A';
    ExpectInvalidToken(*store, tampered);
  }
  // Unknown id, with a valid secret.
  std::string unknown_id = token;
  unknown_id[6] = unknown_id[6] == '0' ? '1' : '0';
  ExpectInvalidToken(*store, unknown_id);
  // Another token's secret under this id.
  ExpectInvalidToken(*store, token.substr(0, 23) + other.substr(23));
  // Malformed texts.
  ExpectInvalidToken(*store, "");
  ExpectInvalidToken(*store, "cairn_");
  ExpectInvalidToken(*store, token.substr(0, token.size() - 1));
  ExpectInvalidToken(*store, token + "A");
  ExpectInvalidToken(*store, " " + token);
  ExpectInvalidToken(*store, "CAIRN_" + token.substr(6));
  std::string upper_id = token;
  for (size_t i = 6; i < 22; ++i) upper_id[i] = static_cast<char>(std::toupper(upper_id[i]));
  if (upper_id != token) ExpectInvalidToken(*store, upper_id);
  std::string bad_separator = token;
  bad_separator[22] = '-';
  ExpectInvalidToken(*store, bad_separator);
  std::string bad_character = token;
  bad_character[40] = '=';
  ExpectInvalidToken(*store, bad_character);
  std::string with_nul = token;
  with_nul[30] = '\0';
  ExpectInvalidToken(*store, with_nul);
  ExpectInvalidToken(*store, std::string(100000, 'a'));
  // The live token still works after all that.
  EXPECT_TRUE(store->Authenticate(token).ok());
}

TEST_F(TokenStoreTest, RevokeByIdOrName) {
  std::unique_ptr<TokenStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  const CreatedToken a = MustCreate(store.get(), "a", {"admin"});
  const CreatedToken b = MustCreate(store.get(), "b", {"read:x"});
  const CreatedToken c = MustCreate(store.get(), "c", {"write:x"});

  TokenInfo revoked;
  ASSERT_TRUE(store->Revoke(b.info.id, &revoked).ok());
  EXPECT_EQ(revoked.name, "b");
  EXPECT_EQ(revoked.ScopesText(), "read:x");
  ExpectInvalidToken(*store, b.token);
  ASSERT_TRUE(store->Revoke("c").ok());
  ExpectInvalidToken(*store, c.token);
  EXPECT_TRUE(store->Authenticate(a.token).ok());
  EXPECT_EQ(Names(store->List()), std::vector<std::string>{"a"});

  Status missing = store->Revoke("b");
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("'b'"), std::string::npos) << missing.message();
  EXPECT_EQ(store->Revoke(b.info.id).code(), StatusCode::kNotFound);

  std::unique_ptr<TokenStore> reopened = OpenStore();
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(Names(reopened->List()), std::vector<std::string>{"a"});
  ExpectInvalidToken(*reopened, b.token);
  ExpectInvalidToken(*reopened, c.token);
}

TEST_F(TokenStoreTest, NameOfRevokedTokenCanBeReused) {
  std::unique_ptr<TokenStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  const CreatedToken old_token = MustCreate(store.get(), "ci", {"write:a"});
  ASSERT_TRUE(store->Revoke("ci").ok());
  const CreatedToken new_token = MustCreate(store.get(), "ci", {"write:a"});
  ExpectInvalidToken(*store, old_token.token);
  EXPECT_TRUE(store->Authenticate(new_token.token).ok());
}

TEST_F(TokenStoreTest, CreateChecksNameAndScopes) {
  std::unique_ptr<TokenStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  for (const std::string& name : {std::string(), std::string(65, 'n'), std::string("two words"),
                                  std::string("-dash"), std::string("a/b"), std::string("a,b"),
                                  std::string("0123456789abcdef"), std::string("caf\xc3\xa9")}) {
    Result<CreatedToken> created = store->Create(name, {"admin"});
    EXPECT_EQ(created.status().code(), StatusCode::kInvalidArgument) << "name '" << name << "'";
  }
  EXPECT_TRUE(store->Create(std::string(64, 'n'), {"admin"}).ok());
  EXPECT_TRUE(store->Create("0123456789ABCDEF", {"admin"}).ok()) << "not an id: ids are lowercase";

  for (const char* scope : {"", "Admin", "read", "read:", "readx:a", "read:a b", "read:-a", "write:a,b",
                            "read:**", "read:a*", "delete:a", " admin"}) {
    Result<CreatedToken> created = store->Create("s", {scope});
    EXPECT_EQ(created.status().code(), StatusCode::kInvalidArgument) << "scope '" << scope << "'";
  }
  EXPECT_EQ(store->Create("s", {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Names(store->List()).size(), 2u) << "nothing was stored by the failed calls";

  Result<CreatedToken> deduplicated = store->Create("dedup", {"read:a", "write:a", "read:a"});
  ASSERT_TRUE(deduplicated.ok());
  EXPECT_EQ(deduplicated->info.ScopesText(), "read:a,write:a");

  Result<CreatedToken> taken = store->Create("dedup", {"admin"});
  EXPECT_EQ(taken.status().code(), StatusCode::kAlreadyExists);
}

TEST_F(TokenStoreTest, NameTakenByAnotherProcessMeanwhileIsAlreadyExists) {
  std::unique_ptr<TokenStore> first = OpenStore();
  std::unique_ptr<TokenStore> second = OpenStore();
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  MustCreate(first.get(), "shared", {"admin"});
  EXPECT_EQ(second->Create("shared", {"admin"}).status().code(), StatusCode::kAlreadyExists);
  // The failed change still brought the second store up to date.
  EXPECT_EQ(Names(second->List()), std::vector<std::string>{"shared"});
}

TEST_F(TokenStoreTest, RandomnessFailureCreatesNothing) {
  FailingRandomEnv env(Env::Default());
  std::unique_ptr<TokenStore> store = OpenStore(&env);
  ASSERT_NE(store, nullptr);
  Result<CreatedToken> created = store->Create("a", {"admin"});
  EXPECT_EQ(created.status().code(), StatusCode::kIOError);
  EXPECT_TRUE(store->List().empty());
  EXPECT_FALSE(Env::Default()->FileExists(dir_.PathOf("tokens")));
  EXPECT_EQ(store->EnsureAdminToken().status().code(), StatusCode::kIOError);
}

TEST_F(TokenStoreTest, OpenNeedsAnExistingDataDirectoryAndNeverCreatesIt) {
  const std::string missing = dir_.PathOf("no-such-dir");
  Result<std::unique_ptr<TokenStore>> store = TokenStore::Open(Env::Default(), missing);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kNotFound);
  EXPECT_NE(store.status().message().find(missing), std::string::npos);
  EXPECT_FALSE(Env::Default()->FileExists(missing));
}

// ---- scopes -------------------------------------------------------------------

TEST(TokenScopeTest, ParseAndPrintRoundTrip) {
  for (const std::string text :
       {"admin", "read:sensors", "write:sensors", "read:*", "write:*", "read:A_b-9"}) {
    Result<TokenScope> scope = ParseTokenScope(text);
    ASSERT_TRUE(scope.ok()) << text << ": " << scope.status().ToString();
    EXPECT_EQ(scope->ToString(), text);
  }
  EXPECT_EQ(ParseTokenScope("admin")->access, Access::kAdmin);
  EXPECT_EQ(ParseTokenScope("read:t")->access, Access::kRead);
  EXPECT_EQ(ParseTokenScope("read:t")->table, "t");
  EXPECT_EQ(ParseTokenScope("write:t")->access, Access::kWrite);
  Result<TokenScope> bad = ParseTokenScope("read:bad table");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("read:bad table"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(ParseTokenScope("read:" + std::string(65, 't')).ok());
}

TokenInfo WithScopes(std::vector<std::string> texts) {
  TokenInfo info;
  for (const std::string& text : texts) info.scopes.push_back(*ParseTokenScope(text));
  return info;
}

TEST(TokenScopeTest, AdminAllowsEverything) {
  const TokenInfo admin = WithScopes({"admin"});
  EXPECT_TRUE(admin.Allows(Access::kAdmin, ""));
  EXPECT_TRUE(admin.Allows(Access::kRead, "sensors"));
  EXPECT_TRUE(admin.Allows(Access::kWrite, "sensors"));
  EXPECT_TRUE(admin.Allows(Access::kWrite, "any-other"));
}

TEST(TokenScopeTest, ReadAndWriteAreSeparateAndPerTable) {
  const TokenInfo reader = WithScopes({"read:sensors"});
  EXPECT_TRUE(reader.Allows(Access::kRead, "sensors"));
  EXPECT_FALSE(reader.Allows(Access::kWrite, "sensors"));
  EXPECT_FALSE(reader.Allows(Access::kRead, "other"));
  EXPECT_FALSE(reader.Allows(Access::kRead, "Sensors")) << "table names are case-sensitive";
  EXPECT_FALSE(reader.Allows(Access::kRead, "sensors2"));
  EXPECT_FALSE(reader.Allows(Access::kAdmin, "sensors"));

  const TokenInfo writer = WithScopes({"write:sensors"});
  EXPECT_TRUE(writer.Allows(Access::kWrite, "sensors"));
  EXPECT_FALSE(writer.Allows(Access::kRead, "sensors")) << "write does not include read";
  EXPECT_FALSE(writer.Allows(Access::kWrite, "other"));
  EXPECT_FALSE(writer.Allows(Access::kAdmin, ""));

  const TokenInfo both = WithScopes({"read:a", "write:b"});
  EXPECT_TRUE(both.Allows(Access::kRead, "a"));
  EXPECT_FALSE(both.Allows(Access::kWrite, "a"));
  EXPECT_TRUE(both.Allows(Access::kWrite, "b"));
  EXPECT_FALSE(both.Allows(Access::kRead, "b"));
}

TEST(TokenScopeTest, WildcardCoversEveryTableButNotAdmin) {
  const TokenInfo all_reader = WithScopes({"read:*"});
  EXPECT_TRUE(all_reader.Allows(Access::kRead, "sensors"));
  EXPECT_TRUE(all_reader.Allows(Access::kRead, "created-later"));
  EXPECT_FALSE(all_reader.Allows(Access::kWrite, "sensors"));
  EXPECT_FALSE(all_reader.Allows(Access::kAdmin, ""));

  const TokenInfo all_writer = WithScopes({"write:*"});
  EXPECT_TRUE(all_writer.Allows(Access::kWrite, "x"));
  EXPECT_FALSE(all_writer.Allows(Access::kRead, "x"));
  EXPECT_FALSE(all_writer.Allows(Access::kAdmin, "x"));

  EXPECT_FALSE(TokenInfo{}.Allows(Access::kRead, "x")) << "no scope, no access";
}

// ---- first start --------------------------------------------------------------

TEST_F(TokenStoreTest, EnsureAdminTokenCreatesOneOnlyOnFirstStart) {
  std::unique_ptr<TokenStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  Result<std::optional<CreatedToken>> first = store->EnsureAdminToken();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(first->has_value());
  const CreatedToken admin = **first;
  EXPECT_EQ(admin.info.name, "admin");
  EXPECT_EQ(admin.info.ScopesText(), "admin");
  Result<TokenInfo> info = store->Authenticate(admin.token);
  ASSERT_TRUE(info.ok());
  EXPECT_TRUE(info->Allows(Access::kAdmin, ""));

  Result<std::optional<CreatedToken>> again = store->EnsureAdminToken();
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->has_value());

  std::unique_ptr<TokenStore> restarted = OpenStore();
  ASSERT_NE(restarted, nullptr);
  Result<std::optional<CreatedToken>> after_restart = restarted->EnsureAdminToken();
  ASSERT_TRUE(after_restart.ok());
  EXPECT_FALSE(after_restart->has_value());
  EXPECT_EQ(restarted->List().size(), 1u);
}

TEST_F(TokenStoreTest, EnsureAdminTokenRespectsEveryTokenRevoked) {
  std::unique_ptr<TokenStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->EnsureAdminToken().ok());
  ASSERT_TRUE(store->Revoke("admin").ok());
  EXPECT_EQ(FileBytes(), "cairn-tokens 2\nend 0\n");
  std::unique_ptr<TokenStore> restarted = OpenStore();
  ASSERT_NE(restarted, nullptr);
  Result<std::optional<CreatedToken>> ensured = restarted->EnsureAdminToken();
  ASSERT_TRUE(ensured.ok());
  EXPECT_FALSE(ensured->has_value());
  EXPECT_TRUE(restarted->List().empty());
}

TEST_F(TokenStoreTest, EnsureAdminTokenAfterACommandLineTokenCreatesNothing) {
  std::unique_ptr<TokenStore> daemon = OpenStore();
  std::unique_ptr<TokenStore> command_line = OpenStore();
  ASSERT_NE(daemon, nullptr);
  ASSERT_NE(command_line, nullptr);
  MustCreate(command_line.get(), "grafana", {"read:*"});
  // The daemon's view is stale (opened before), but the decision is taken on
  // a fresh read under the lock.
  Result<std::optional<CreatedToken>> ensured = daemon->EnsureAdminToken();
  ASSERT_TRUE(ensured.ok());
  EXPECT_FALSE(ensured->has_value());
  EXPECT_EQ(Names(daemon->List()), std::vector<std::string>{"grafana"});
}

TEST_F(TokenStoreTest, EnsureAdminTokenRacingStoresMakeExactlyOne) {
  constexpr int kStores = 4;
  std::vector<std::unique_ptr<TokenStore>> stores;
  for (int i = 0; i < kStores; ++i) stores.push_back(OpenStore());
  for (const auto& store : stores) ASSERT_NE(store, nullptr);
  std::atomic<int> created{0};
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kStores; ++i) {
    threads.emplace_back([&, i] {
      Result<std::optional<CreatedToken>> ensured = stores[i]->EnsureAdminToken();
      if (!ensured.ok()) {
        ++failed;
      } else if (ensured->has_value()) {
        ++created;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(created.load(), 1);
  std::unique_ptr<TokenStore> reopened = OpenStore();
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(Names(reopened->List()), std::vector<std::string>{"admin"});
}

// ---- damaged files ------------------------------------------------------------

struct DamagedFile {
  std::string bytes;
  std::string expected_line;  // "line N"
  StatusCode expected_code = StatusCode::kCorruption;
};

TEST_F(TokenStoreTest, DamagedFileIsAnErrorNamingTheLine) {
  const std::string header = "cairn-tokens 1\n";
  const std::string hash(64, 'a');
  const std::string good = "0123456789abcdef " + hash + " 1700000000000000000 good admin\n";
  const std::vector<DamagedFile> cases = {
      {"", "line 1"},
      {"cairn-tokens 1", "line 1"},
      {"tokens 1\n", "line 1"},
      {"cairn-tokens\n", "line 1"},
      {"cairn-tokens 3\n", "line 1", StatusCode::kFailedPrecondition},
      {"cairn-tokens 2\n", "line 1"},
      {"cairn-tokens 2\nend 1\n", "line 2"},
      {"cairn-tokens 2\n" + good + "end 1\n", "line 2"},  // a version 1 line: no check
      {header + good + "0123456789abcdef", "line 3"},
      {header + "\n", "line 2"},
      {header + good + "\n", "line 3"},
      {header + "0123456789abcdef " + hash + " 17 name\n", "line 2"},
      {header + "0123456789abcdef " + hash + " 17 name admin extra\n", "line 2"},
      {header + "0123456789abcdef  " + hash + " 17 name admin\n", "line 2"},
      {header + "0123456789ABCDEF " + hash + " 17 name admin\n", "line 2"},
      {header + "0123456789abcde " + hash + " 17 name admin\n", "line 2"},
      {header + "0123456789abcdef " + hash.substr(1) + " 17 name admin\n", "line 2"},
      {header + "0123456789abcdef " + std::string(64, 'g') + " 17 name admin\n", "line 2"},
      {header + "0123456789abcdef " + hash + " x17 name admin\n", "line 2"},
      {header + "0123456789abcdef " + hash + " 99999999999999999999 name admin\n", "line 2"},
      {header + "0123456789abcdef " + hash + " 17 bad/name admin\n", "line 2"},
      {header + "0123456789abcdef " + hash + " 17 name root\n", "line 2"},
      {header + "0123456789abcdef " + hash + " 17 name read:a,\n", "line 2"},
      {header + "0123456789abcdef " + hash + " 17 name read:a,read:a\n", "line 2"},
      {header + "0123456789abcdef " + hash + " 17 name admin\r\n", "line 2"},
      {header + good + good, "line 3"},
      {header + good + "1123456789abcdef " + hash + " 17 good admin\n", "line 3"},
  };
  for (const DamagedFile& damaged : cases) {
    WriteFile(damaged.bytes);
    Result<std::unique_ptr<TokenStore>> store = TokenStore::Open(Env::Default(), dir_.path());
    ASSERT_FALSE(store.ok()) << "accepted:\n" << damaged.bytes;
    EXPECT_EQ(store.status().code(), damaged.expected_code) << store.status().ToString();
    EXPECT_NE(store.status().message().find(dir_.PathOf("tokens") + ": " + damaged.expected_line + ":"),
              std::string::npos)
        << store.status().ToString();
  }
  WriteFile(header + good);
  EXPECT_TRUE(TokenStore::Open(Env::Default(), dir_.path()).ok());
}

TEST_F(TokenStoreTest, ChangesLeaveADamagedFileAloneAndCreateNoAdmin) {
  std::unique_ptr<TokenStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  const std::string damaged = "cairn-tokens 1\nnot a token line\n";
  WriteFile(damaged);
  EXPECT_EQ(store->Create("a", {"admin"}).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(store->EnsureAdminToken().status().code(), StatusCode::kCorruption);
  EXPECT_EQ(store->Revoke("a").code(), StatusCode::kCorruption);
  EXPECT_EQ(FileBytes(), damaged);
}

// Every damage to a file this store wrote is found: no flipped bit and no
// cut reads as other tokens.
TEST_F(TokenStoreTest, EveryFlippedBitAndEveryCutOfAWrittenFileIsFound) {
  std::unique_ptr<TokenStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  MustCreate(store.get(), "grafana", {"read:sensors"});
  MustCreate(store.get(), "sensor-7", {"write:sensors"});
  const std::string good = FileBytes();
  for (size_t i = 0; i < good.size(); ++i) {
    for (int bit : {0, 1, 5}) {
      std::string damaged = good;
      damaged[i] = static_cast<char>(damaged[i] ^ (1 << bit));
      WriteFile(damaged);
      Result<std::unique_ptr<TokenStore>> opened = TokenStore::Open(Env::Default(), dir_.path());
      ASSERT_FALSE(opened.ok()) << "byte " << i << " bit " << bit << " went unnoticed";
    }
  }
  for (size_t length = 0; length < good.size(); ++length) {
    WriteFile(good.substr(0, length));
    ASSERT_FALSE(TokenStore::Open(Env::Default(), dir_.path()).ok()) << "cut at " << length;
  }
}

TEST_F(TokenStoreTest, ADamagedFileServesNoTokenUntilItIsRepaired) {
  std::unique_ptr<TokenStore> writer = OpenStore();
  ASSERT_NE(writer, nullptr);
  const CreatedToken a = MustCreate(writer.get(), "a", {"admin"});
  const CreatedToken b = MustCreate(writer.get(), "b", {"read:x"});
  const CreatedToken c = MustCreate(writer.get(), "c", {"write:x"});
  const std::string good = FileBytes();
  std::string damaged = good;
  const size_t b_line = damaged.find(b.info.id);
  damaged[damaged.find(" read:x", b_line) + 6] = 'y';  // read:x -> read:y, a valid scope
  WriteFile(damaged);

  Result<std::unique_ptr<TokenStore>> refused = TokenStore::Open(Env::Default(), dir_.path());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kCorruption);
  EXPECT_NE(refused.status().message().find("line 3"), std::string::npos) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("cairnd token repair --data-dir " + dir_.path()),
            std::string::npos)
      << refused.status().ToString();

  Result<std::unique_ptr<TokenStore>> serving = TokenStore::Open(Env::Default(), dir_.path(), true);
  ASSERT_TRUE(serving.ok()) << serving.status().ToString();
  EXPECT_EQ((*serving)->damage().code(), StatusCode::kCorruption);
  ExpectInvalidToken(**serving, a.token);
  EXPECT_TRUE((*serving)->List().empty());
  EXPECT_EQ((*serving)->Create("d", {"admin"}).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(FileBytes(), damaged) << "a change never overwrites a damaged file";
  EXPECT_EQ((*serving)->ReloadIfChanged().code(), StatusCode::kCorruption) << "still damaged";

  Result<TokenRepairReport> repaired = TokenStore::Repair(Env::Default(), dir_.path());
  ASSERT_TRUE(repaired.ok()) << repaired.status().ToString();
  EXPECT_TRUE(repaired->rewritten);
  EXPECT_EQ(Names(repaired->kept), (std::vector<std::string>{"a", "c"}));
  ASSERT_EQ(repaired->dropped.size(), 1u);
  EXPECT_EQ(repaired->dropped[0].rfind("line 3: ", 0), 0u) << repaired->dropped[0];
  EXPECT_EQ(Env::Default()->ReadFileToString(dir_.PathOf("tokens.damaged")).value(), damaged);
  EXPECT_EQ(Env::Default()->FileMode(dir_.PathOf("tokens")).value(), 0600u);

  ASSERT_TRUE((*serving)->ReloadIfChanged().ok());
  EXPECT_TRUE((*serving)->damage().ok());
  EXPECT_TRUE((*serving)->Authenticate(a.token).ok());
  EXPECT_TRUE((*serving)->Authenticate(c.token).ok());
  ExpectInvalidToken(**serving, b.token);
  // An intact file is left alone.
  const std::string repaired_bytes = FileBytes();
  Result<TokenRepairReport> again = TokenStore::Repair(Env::Default(), dir_.path());
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->rewritten);
  EXPECT_EQ(FileBytes(), repaired_bytes);
}

TEST_F(TokenStoreTest, RepairKeepsTheWholeLinesOfAFileCutShort) {
  std::unique_ptr<TokenStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  const CreatedToken a = MustCreate(store.get(), "a", {"admin"});
  MustCreate(store.get(), "b", {"read:x"});
  const std::string good = FileBytes();
  WriteFile(good.substr(0, good.find(" read:x")));
  Result<TokenRepairReport> repaired = TokenStore::Repair(Env::Default(), dir_.path());
  ASSERT_TRUE(repaired.ok()) << repaired.status().ToString();
  EXPECT_EQ(Names(repaired->kept), (std::vector<std::string>{"a"}));
  ASSERT_EQ(repaired->dropped.size(), 1u);
  EXPECT_NE(repaired->dropped[0].find("cut short"), std::string::npos) << repaired->dropped[0];
  std::unique_ptr<TokenStore> reopened = OpenStore();
  ASSERT_NE(reopened, nullptr);
  EXPECT_TRUE(reopened->Authenticate(a.token).ok());
  ASSERT_TRUE(Env::Default()->RemoveFile(dir_.PathOf("tokens")).ok());
  EXPECT_EQ(TokenStore::Repair(Env::Default(), dir_.path()).status().code(), StatusCode::kNotFound);
}

TEST_F(TokenStoreTest, VersionOneFilesAreStillReadAndRewrittenAsVersionTwo) {
  std::unique_ptr<TokenStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  const CreatedToken a = MustCreate(store.get(), "a", {"admin"});
  // The same token in the version 1 layout: no check, no end line.
  const std::string v2 = FileBytes();
  const std::string line = v2.substr(v2.find('\n') + 1, v2.find(" admin ") + 6 - v2.find('\n') - 1);
  WriteFile("cairn-tokens 1\n" + line + "\n");
  std::unique_ptr<TokenStore> reopened = OpenStore();
  ASSERT_NE(reopened, nullptr);
  EXPECT_TRUE(reopened->Authenticate(a.token).ok());
  MustCreate(reopened.get(), "b", {"read:x"});
  EXPECT_EQ(FileBytes().rfind("cairn-tokens 2\n", 0), 0u);
  EXPECT_NE(FileBytes().find("\nend 2\n"), std::string::npos);
}

TEST_F(TokenStoreTest, TheFileIsKeptToItsOwner) {
  std::unique_ptr<TokenStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  EXPECT_FALSE(store->RestrictFileMode().value().has_value()) << "no file yet";
  MustCreate(store.get(), "a", {"admin"});
  EXPECT_EQ(Env::Default()->FileMode(dir_.PathOf("tokens")).value(), 0600u);
  ASSERT_TRUE(Env::Default()->SetFileMode(dir_.PathOf("tokens"), 0644).ok());
  Result<std::optional<uint32_t>> loosened = store->RestrictFileMode();
  ASSERT_TRUE(loosened.ok());
  EXPECT_EQ(loosened->value_or(0), 0644u);
  EXPECT_EQ(Env::Default()->FileMode(dir_.PathOf("tokens")).value(), 0600u);
  EXPECT_FALSE(store->RestrictFileMode().value().has_value());
}

TEST_F(TokenStoreTest, FindByNameGivesTheTokensScopes) {
  std::unique_ptr<TokenStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  MustCreate(store.get(), "gw-7.example", {"write:sensors"});
  std::optional<TokenInfo> found = store->FindByName("gw-7.example");
  ASSERT_TRUE(found.has_value());
  EXPECT_TRUE(found->Allows(Access::kWrite, "sensors"));
  EXPECT_FALSE(store->FindByName("gw-8.example").has_value());
}

// ---- reloading ----------------------------------------------------------------

TEST_F(TokenStoreTest, ReloadTakesOverChangesOfAnotherProcess) {
  std::unique_ptr<TokenStore> daemon = OpenStore();
  std::unique_ptr<TokenStore> command_line = OpenStore();
  ASSERT_NE(daemon, nullptr);
  ASSERT_NE(command_line, nullptr);

  const CreatedToken created = MustCreate(command_line.get(), "new", {"write:a"});
  ExpectInvalidToken(*daemon, created.token);
  ASSERT_TRUE(daemon->ReloadIfChanged().ok());
  EXPECT_TRUE(daemon->Authenticate(created.token).ok());
  ASSERT_TRUE(daemon->ReloadIfChanged().ok()) << "unchanged file";
  EXPECT_TRUE(daemon->Authenticate(created.token).ok());

  ASSERT_TRUE(command_line->Revoke("new").ok());
  EXPECT_TRUE(daemon->Authenticate(created.token).ok()) << "not reloaded yet";
  ASSERT_TRUE(daemon->ReloadIfChanged().ok());
  ExpectInvalidToken(*daemon, created.token);
}

TEST_F(TokenStoreTest, ReloadKeepsTheOldTokensWhenTheFileIsDamaged) {
  std::unique_ptr<TokenStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  const CreatedToken created = MustCreate(store.get(), "keep", {"admin"});
  const std::string good = FileBytes();
  WriteFile(good + "garbage\n");
  Status reloaded = store->ReloadIfChanged();
  EXPECT_EQ(reloaded.code(), StatusCode::kCorruption);
  EXPECT_NE(reloaded.message().find("line 4"), std::string::npos) << reloaded.ToString();
  EXPECT_TRUE(store->Authenticate(created.token).ok());
  EXPECT_EQ(store->ReloadIfChanged().code(), StatusCode::kCorruption) << "still damaged: reported again";

  WriteFile(good);
  EXPECT_TRUE(store->ReloadIfChanged().ok());
  EXPECT_TRUE(store->Authenticate(created.token).ok());
}

TEST_F(TokenStoreTest, ReloadOfARemovedFileMeansNoTokens) {
  std::unique_ptr<TokenStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  const CreatedToken created = MustCreate(store.get(), "gone", {"admin"});
  ASSERT_TRUE(Env::Default()->RemoveFile(dir_.PathOf("tokens")).ok());
  ASSERT_TRUE(store->ReloadIfChanged().ok());
  ExpectInvalidToken(*store, created.token);
  EXPECT_TRUE(store->List().empty());
}

// ---- faults -------------------------------------------------------------------

TEST_F(TokenStoreTest, FailedWritesNeverDamageTheFile) {
  // Sweeps every write, sync and rename of one Create until it completes
  // without a fault: each failure leaves the file with the old tokens or,
  // when only the directory sync failed, the new ones, never anything else.
  for (FaultOp op : {FaultOp::kWrite, FaultOp::kSync, FaultOp::kRename}) {
    for (int64_t n = 1;; ++n) {
      ScopedTempDir dir("cairn-token-faults");
      FaultInjectionEnv env(Env::Default());
      Result<std::unique_ptr<TokenStore>> store = TokenStore::Open(&env, dir.path());
      ASSERT_TRUE(store.ok());
      ASSERT_TRUE((*store)->Create("before", {"admin"}).ok());
      env.FailNth(op, n, Status::IOError("injected"));
      Result<CreatedToken> created = (*store)->Create("during", {"read:a"});
      const bool fired = env.InjectedCount(op) > 0;
      env.ClearFaults();

      Result<std::unique_ptr<TokenStore>> reopened = TokenStore::Open(Env::Default(), dir.path());
      ASSERT_TRUE(reopened.ok()) << FaultOpName(op) << " #" << n << ": " << reopened.status().ToString();
      const std::vector<std::string> names = Names((*reopened)->List());
      if (!fired) {
        ASSERT_TRUE(created.ok()) << created.status().ToString();
        EXPECT_EQ(names, (std::vector<std::string>{"before", "during"}));
        break;
      }
      EXPECT_FALSE(created.ok()) << FaultOpName(op) << " #" << n;
      EXPECT_TRUE(names == std::vector<std::string>{"before"} ||
                  names == (std::vector<std::string>{"before", "during"}))
          << FaultOpName(op) << " #" << n;
      ASSERT_LT(n, 10) << "the sweep does not end";
    }
  }
}

TEST_F(TokenStoreTest, CreatedTokenSurvivesAPowerCut) {
  FaultInjectionEnv env(Env::Default());
  std::unique_ptr<TokenStore> store = OpenStore(&env);
  ASSERT_NE(store, nullptr);
  const CreatedToken created = MustCreate(store.get(), "durable", {"admin"});
  store.reset();
  ASSERT_TRUE(env.SimulatePowerCut().ok());
  std::unique_ptr<TokenStore> rebooted = OpenStore(&env);
  ASSERT_NE(rebooted, nullptr);
  EXPECT_TRUE(rebooted->Authenticate(created.token).ok());
}

// ---- concurrency --------------------------------------------------------------

TEST_F(TokenStoreTest, AuthenticateRunsConcurrentlyWithChangesAndReloads) {
  std::unique_ptr<TokenStore> daemon = OpenStore();
  std::unique_ptr<TokenStore> command_line = OpenStore();
  ASSERT_NE(daemon, nullptr);
  ASSERT_NE(command_line, nullptr);
  const CreatedToken stable = MustCreate(daemon.get(), "stable", {"read:a"});
  const std::string stable_id = stable.info.id;

  constexpr int kReaders = 3;
  constexpr int kAuthenticationsPerReader = 300;
  constexpr int kChanges = 8;
  std::atomic<int> failures{0};
  std::atomic<int> change_errors{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < kReaders; ++r) {
    threads.emplace_back([&] {
      for (int i = 0; i < kAuthenticationsPerReader; ++i) {
        Result<TokenInfo> info = daemon->Authenticate(stable.token);
        if (!info.ok() || info->id != stable_id || !info->Allows(Access::kRead, "a")) ++failures;
        if (daemon->List().empty()) ++failures;
      }
    });
  }
  threads.emplace_back([&] {
    for (int i = 0; i < kChanges; ++i) {
      if (!daemon->Create("daemon-" + std::to_string(i), {"write:a"}).ok()) ++change_errors;
      if (!daemon->ReloadIfChanged().ok()) ++change_errors;
    }
  });
  threads.emplace_back([&] {
    for (int i = 0; i < kChanges; ++i) {
      const std::string name = "cli-" + std::to_string(i);
      if (!command_line->Create(name, {"read:b"}).ok()) ++change_errors;
      if (i % 2 == 0 && !command_line->Revoke(name).ok()) ++change_errors;
    }
  });
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(change_errors.load(), 0);

  // No change was lost between the two writers.
  ASSERT_TRUE(daemon->ReloadIfChanged().ok());
  EXPECT_EQ(daemon->List().size(), size_t{1 + kChanges + kChanges / 2});
  std::unique_ptr<TokenStore> reopened = OpenStore();
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(Names(reopened->List()), Names(daemon->List()));
}

// ---- Authorization header -----------------------------------------------------

std::string Extracted(std::string_view header) {
  Result<std::string> token = ExtractPresentedToken(header);
  EXPECT_TRUE(token.ok()) << "'" << header << "': " << token.status().ToString();
  return token.ok() ? *token : "<error>";
}

TEST(ExtractPresentedTokenTest, BearerAndTokenSchemesInAnyCase) {
  EXPECT_EQ(Extracted("Bearer cairn_abc"), "cairn_abc");
  EXPECT_EQ(Extracted("bearer cairn_abc"), "cairn_abc");
  EXPECT_EQ(Extracted("BEARER cairn_abc"), "cairn_abc");
  EXPECT_EQ(Extracted("Token cairn_abc"), "cairn_abc");
  EXPECT_EQ(Extracted("tOKEN cairn_abc"), "cairn_abc");
  EXPECT_EQ(Extracted("  Bearer \t  cairn_abc \t"), "cairn_abc");
  EXPECT_EQ(Extracted("Bearer\tcairn_abc"), "cairn_abc");
}

TEST(ExtractPresentedTokenTest, BasicPasswordIsTheToken) {
  EXPECT_EQ(Extracted("Basic dXNlcjp0b2s="), "tok");                    // user:tok
  EXPECT_EQ(Extracted("basic aW5mbHV4OmNhaXJuX3g6eQ=="), "cairn_x:y");  // influx:cairn_x:y
  EXPECT_EQ(Extracted("Basic OmFiYw=="), "abc");                        // :abc
  EXPECT_EQ(Extracted("Basic dTpwMQ=="), "p1");                         // u:p1
  EXPECT_EQ(Extracted("Basic dTpwMQ"), "p1") << "padding is optional";
}

void ExpectMalformed(std::string_view header, std::string_view message_part) {
  Result<std::string> token = ExtractPresentedToken(header);
  ASSERT_FALSE(token.ok()) << "'" << header << "' gave '" << *token << "'";
  EXPECT_EQ(token.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(token.status().message().find(message_part), std::string::npos)
      << "'" << header << "': " << token.status().message();
}

TEST(ExtractPresentedTokenTest, MalformedHeadersAreInvalidArgument) {
  ExpectMalformed("", "empty");
  ExpectMalformed(" \t ", "empty");
  ExpectMalformed("Bearer", "no credentials");
  ExpectMalformed("Bearer   ", "no credentials");
  ExpectMalformed("Basic", "no credentials");
  ExpectMalformed("cairn_abc", "unsupported authorization scheme");
  ExpectMalformed("Digest username=x", "unsupported authorization scheme 'Digest'");
  ExpectMalformed("Bearer a b", "space");
  ExpectMalformed("Basic !!!!", "base64");
  ExpectMalformed("Basic dXNlc", "base64");                // a length no encoding produces
  ExpectMalformed("Basic dXNlcjp0b2s==", "base64");        // wrong padding
  ExpectMalformed("Basic dXNl=cjp0", "base64");            // padding inside
  ExpectMalformed("Basic dXNlcjp0b2s===", "base64");       // too much padding
  ExpectMalformed("Basic dXNlcjp0b2s-", "base64");         // base64url is not Basic's alphabet
  ExpectMalformed("Basic anVzdHVzZXI=", "user:password");  // justuser
  ExpectMalformed("Basic dXNlcjo=", "empty password");     // user:
}

}  // namespace
}  // namespace cairn
