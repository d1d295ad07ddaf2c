// The token store's file: damage found and repaired, older versions, its
// owner, reloading after another process, and failed writes and power cuts.
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/http/token_store.h"

#include "token_store_test_util.h"

namespace cairn::token_testing {
namespace {

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

}  // namespace
}  // namespace cairn::token_testing
