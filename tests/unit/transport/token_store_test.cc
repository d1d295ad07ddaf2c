// The token store: creating, listing, authenticating and revoking tokens,
// the first start's admin token, and Authenticate under concurrent changes.
#include "cairn/http/token_store.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "token_store_test_util.h"

namespace cairn::token_testing {
namespace {

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

}  // namespace
}  // namespace cairn::token_testing
