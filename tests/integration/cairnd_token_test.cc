// `cairnd token create|list|revoke` through its entry point, on a real data
// directory: output shapes, exit statuses, usage errors, and the command
// working while a cairnd holds the data directory's LOCK.
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/platform/env.h"
#include "cairn/http/token_store.h"

#include "cairnd/token_command.h"
#include "manual_clock_env.h"
#include "test_dirs.h"

namespace cairn::cairnd {
namespace {

struct CommandOutcome {
  int exit_status = -1;
  std::string out;
  std::string err;
};

CommandOutcome RunWith(Env* env, const std::vector<std::string>& words) {
  std::vector<const char*> pointers;
  for (const std::string& word : words) pointers.push_back(word.c_str());
  CommandOutcome outcome;
  outcome.exit_status = RunTokenCommand(env, pointers, &outcome.out, &outcome.err);
  return outcome;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

bool Contains(const std::string& text, std::string_view needle) {
  return text.find(needle) != std::string::npos;
}

class CairndTokenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_dir_ = temp_.PathOf("data");
    ASSERT_TRUE(Env::Default()->CreateDirs(data_dir_).ok());
  }

  CommandOutcome Run(std::vector<std::string> words) { return RunWith(Env::Default(), words); }

  // Runs `create` and returns the printed token ("" on failure).
  std::string Create(const std::string& name, const std::string& scope) {
    CommandOutcome outcome = Run({"create", "--name", name, "--scope", scope, "--data-dir", data_dir_});
    EXPECT_EQ(outcome.exit_status, 0) << outcome.err;
    return outcome.exit_status == 0 && !outcome.out.empty() ? outcome.out.substr(0, outcome.out.size() - 1)
                                                            : "";
  }

  std::unique_ptr<TokenStore> OpenStore() {
    Result<std::unique_ptr<TokenStore>> store = TokenStore::Open(Env::Default(), data_dir_);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  void ExpectUsageError(const std::vector<std::string>& words, std::string_view message_part) {
    CommandOutcome outcome = Run(words);
    std::string joined;
    for (const std::string& word : words) joined += word + " ";
    EXPECT_EQ(outcome.exit_status, 2) << joined << "\n" << outcome.err;
    EXPECT_TRUE(outcome.out.empty()) << joined;
    EXPECT_EQ(outcome.err.rfind("cairnd token: ", 0), 0u) << joined << ": " << outcome.err;
    EXPECT_TRUE(Contains(outcome.err, message_part)) << joined << ": " << outcome.err;
    EXPECT_TRUE(Contains(outcome.err, "Try 'cairnd token --help' for usage.\n")) << joined;
  }

  ScopedTempDir temp_{"cairnd-token"};
  std::string data_dir_;
};

TEST_F(CairndTokenTest, HelpDescribesEverySubcommandAndTheDefaultDirectory) {
  for (const std::vector<std::string>& words : std::vector<std::vector<std::string>>{
           {"--help"}, {"-h"}, {"help"}, {"create", "--help"}, {"revoke", "x", "-h"}}) {
    CommandOutcome outcome = Run(words);
    EXPECT_EQ(outcome.exit_status, 0);
    EXPECT_EQ(outcome.out, TokenCommandUsage());
    EXPECT_TRUE(outcome.err.empty());
  }
  const std::string usage = TokenCommandUsage();
  for (std::string_view part :
       {"cairnd token create --name NAME --scope SCOPE", "cairnd token list", "cairnd token revoke ID|NAME",
        "read:TABLE", "write:TABLE", "admin", "else /var/lib/cairn)", "--config FILE"}) {
    EXPECT_TRUE(Contains(usage, part)) << part;
  }
}

// On an installed gateway the data directory is the config file's: the
// token commands find it there unless --data-dir says otherwise.
TEST_F(CairndTokenTest, TheConfigFileNamesTheDataDirectory) {
  Env* env = Env::Default();
  const std::string config = temp_.PathOf("cairn.toml");
  ASSERT_TRUE(env->WriteFileAtomically(config, "[storage]\ndata_dir = '" + data_dir_ + "'\n").ok());
  CommandOutcome created = Run({"create", "--name", "from-config", "--scope", "admin", "--config", config});
  ASSERT_EQ(created.exit_status, 0) << created.err;
  EXPECT_TRUE(Contains(Run({"list", "--config", config}).out, "from-config"));

  const std::string other = temp_.PathOf("other");
  ASSERT_TRUE(env->CreateDirs(other).ok());
  CommandOutcome elsewhere = Run({"list", "--config", config, "--data-dir", other});
  EXPECT_EQ(elsewhere.exit_status, 0) << elsewhere.err;
  EXPECT_FALSE(Contains(elsewhere.out, "from-config")) << elsewhere.out;

  ExpectUsageError({"list", "--config", temp_.PathOf("missing.toml")}, "missing.toml");
  ASSERT_TRUE(env->WriteFileAtomically(config, "[storage]\ndata_dir = 7\n").ok());
  ExpectUsageError({"list", "--config", config}, "cairn.toml:2:");
}

TEST_F(CairndTokenTest, UsageErrorsExitWithTwo) {
  ExpectUsageError({}, "missing subcommand");
  ExpectUsageError({"make"}, "unknown subcommand 'make'");
  ExpectUsageError({"create", "--scope", "admin", "--data-dir", data_dir_}, "create needs --name");
  ExpectUsageError({"create", "--name", "a", "--data-dir", data_dir_}, "at least one --scope");
  ExpectUsageError({"create", "--name", "a", "--scope", "root"}, "scope 'root'");
  ExpectUsageError({"create", "--name", "a", "--scope", "read:a,,write:a"}, "scope ''");
  ExpectUsageError({"create", "--name", "bad name", "--scope", "admin"}, "token name");
  ExpectUsageError({"create", "--name", "a", "--name", "b", "--scope", "admin"}, "more than once");
  ExpectUsageError({"create", "--name", "a", "--scope", "admin", "--json"}, "unknown flag '--json'");
  ExpectUsageError({"create", "--name", "a", "--scope", "admin", "extra"}, "unexpected argument 'extra'");
  ExpectUsageError({"create", "--name"}, "--name needs a value");
  ExpectUsageError({"create", "--name=", "--scope", "admin"}, "non-empty value");
  ExpectUsageError({"list", "--json=yes"}, "takes no value");
  ExpectUsageError({"list", "extra"}, "unexpected argument 'extra'");
  ExpectUsageError({"list", "--data-dir", data_dir_, "--data-dir", data_dir_}, "more than once");
  ExpectUsageError({"revoke"}, "exactly one token id or name");
  ExpectUsageError({"revoke", "a", "b"}, "exactly one token id or name");
  ExpectUsageError({"revoke", "a", "--scope", "admin"}, "unknown flag '--scope'");
  EXPECT_TRUE(OpenStore()->List().empty()) << "no usage error changed anything";
}

TEST_F(CairndTokenTest, CreatePrintsOnlyTheTokenOnStandardOutput) {
  CommandOutcome outcome = Run(
      {"create", "--name=grafana", "--scope=read:a,write:b", "--scope", "read:*", "--data-dir", data_dir_});
  ASSERT_EQ(outcome.exit_status, 0) << outcome.err;
  const std::vector<std::string> lines = Lines(outcome.out);
  ASSERT_EQ(lines.size(), 1u) << outcome.out;
  const std::string& token = lines[0];
  EXPECT_EQ(outcome.out, token + "\n");
  ASSERT_EQ(token.size(), 66u);
  EXPECT_EQ(token.rfind("cairn_", 0), 0u);
  EXPECT_TRUE(Contains(outcome.err, "shown once: store it now")) << outcome.err;
  EXPECT_TRUE(Contains(outcome.err, token.substr(6, 16))) << "names the id: " << outcome.err;
  EXPECT_FALSE(Contains(outcome.err, token.substr(23))) << "the secret only once, on stdout";

  std::unique_ptr<TokenStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  Result<TokenInfo> info = store->Authenticate(token);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->name, "grafana");
  EXPECT_EQ(info->ScopesText(), "read:a,write:b,read:*");
}

TEST_F(CairndTokenTest, CreateOfATakenNameFails) {
  ASSERT_FALSE(Create("ci", "write:a").empty());
  CommandOutcome outcome = Run({"create", "--name", "ci", "--scope", "admin", "--data-dir", data_dir_});
  EXPECT_EQ(outcome.exit_status, 1);
  EXPECT_TRUE(outcome.out.empty());
  EXPECT_TRUE(Contains(outcome.err, "cannot create token 'ci'")) << outcome.err;
  EXPECT_TRUE(Contains(outcome.err, "exists already")) << outcome.err;
  EXPECT_EQ(OpenStore()->List().size(), 1u);
}

TEST_F(CairndTokenTest, ListShowsAnAlignedTableWithoutSecrets) {
  const std::string admin = Create("admin", "admin");
  const std::string grafana = Create("grafana-dashboards", "read:*");
  CommandOutcome outcome = Run({"list", "--data-dir", data_dir_});
  ASSERT_EQ(outcome.exit_status, 0) << outcome.err;
  EXPECT_TRUE(outcome.err.empty());
  const std::vector<std::string> lines = Lines(outcome.out);
  ASSERT_EQ(lines.size(), 3u) << outcome.out;
  EXPECT_EQ(lines[0].rfind("id", 0), 0u) << lines[0];
  const size_t name_column = lines[0].find("name");
  const size_t scopes_column = lines[0].find("scopes");
  const size_t created_column = lines[0].find("created");
  ASSERT_NE(created_column, std::string::npos) << lines[0];
  EXPECT_EQ(lines[1].substr(0, 16), admin.substr(6, 16));
  EXPECT_EQ(lines[1].substr(name_column, 5), "admin");
  EXPECT_EQ(lines[1].substr(scopes_column, 5), "admin");
  EXPECT_EQ(lines[2].substr(0, 16), grafana.substr(6, 16));
  EXPECT_EQ(lines[2].substr(name_column, 18), "grafana-dashboards");
  EXPECT_EQ(lines[2].substr(scopes_column, 6), "read:*");
  // RFC 3339 in whole seconds: 2024-05-01T12:00:00Z.
  const std::string created = lines[2].substr(created_column);
  EXPECT_EQ(created.size(), 20u) << created;
  EXPECT_EQ(created.back(), 'Z') << created;
  EXPECT_EQ(created[10], 'T') << created;
  EXPECT_FALSE(Contains(outcome.out, admin.substr(23)));
  EXPECT_FALSE(Contains(outcome.out, grafana.substr(23)));
}

TEST_F(CairndTokenTest, ListAsJson) {
  const std::string token = Create("sensor-7", "write:sensors,read:sensors");
  CommandOutcome outcome = Run({"list", "--json", "--data-dir", data_dir_});
  ASSERT_EQ(outcome.exit_status, 0) << outcome.err;
  EXPECT_EQ(outcome.out.front(), '{');
  EXPECT_EQ(outcome.out.back(), '\n');
  EXPECT_EQ(Lines(outcome.out).size(), 1u);
  EXPECT_TRUE(Contains(outcome.out, "\"id\":\"" + token.substr(6, 16) + "\"")) << outcome.out;
  EXPECT_TRUE(Contains(outcome.out, "\"name\":\"sensor-7\"")) << outcome.out;
  EXPECT_TRUE(Contains(outcome.out, "\"scopes\":\"write:sensors,read:sensors\"")) << outcome.out;
  EXPECT_TRUE(Contains(outcome.out, "\"created\":\"")) << outcome.out;
  EXPECT_FALSE(Contains(outcome.out, token.substr(23)));
}

TEST_F(CairndTokenTest, ListOfAnEmptyStoreSucceeds) {
  CommandOutcome outcome = Run({"list", "--data-dir", data_dir_});
  EXPECT_EQ(outcome.exit_status, 0) << outcome.err;
  // The header and the renderer's note that the table is empty.
  const std::vector<std::string> lines = Lines(outcome.out);
  ASSERT_EQ(lines.size(), 2u) << outcome.out;
  EXPECT_EQ(lines[0], "id  name  scopes  created");
  EXPECT_EQ(lines[1], "(no rows)");
  EXPECT_FALSE(Env::Default()->FileExists(JoinPath(data_dir_, "tokens"))) << "listing creates nothing";
}

TEST_F(CairndTokenTest, RevokeByNameOrId) {
  const std::string first = Create("first", "admin");
  const std::string second = Create("second", "read:a");
  const std::string first_id = first.substr(6, 16);
  const std::string second_id = second.substr(6, 16);

  CommandOutcome by_name = Run({"revoke", "first", "--data-dir", data_dir_});
  ASSERT_EQ(by_name.exit_status, 0) << by_name.err;
  EXPECT_TRUE(Contains(by_name.out, "revoked token " + first_id + " (first)")) << by_name.out;
  CommandOutcome by_id = Run({"revoke", "--data-dir", data_dir_, second_id});
  ASSERT_EQ(by_id.exit_status, 0) << by_id.err;
  EXPECT_TRUE(Contains(by_id.out, "revoked token " + second_id + " (second)")) << by_id.out;

  std::unique_ptr<TokenStore> store = OpenStore();
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->List().empty());
  EXPECT_FALSE(store->Authenticate(first).ok());
  EXPECT_FALSE(store->Authenticate(second).ok());

  CommandOutcome again = Run({"revoke", "first", "--data-dir", data_dir_});
  EXPECT_EQ(again.exit_status, 1);
  EXPECT_TRUE(again.out.empty());
  EXPECT_TRUE(Contains(again.err, "cannot revoke: no token has the id or name 'first'")) << again.err;
}

TEST_F(CairndTokenTest, MissingDataDirectoryIsAFailureAndIsNotCreated) {
  const std::string missing = temp_.PathOf("typo");
  for (const std::vector<std::string>& words : std::vector<std::vector<std::string>>{
           {"create", "--name", "a", "--scope", "admin", "--data-dir", missing},
           {"list", "--data-dir", missing},
           {"revoke", "a", "--data-dir", missing}}) {
    CommandOutcome outcome = Run(words);
    EXPECT_EQ(outcome.exit_status, 1) << words[0];
    EXPECT_TRUE(outcome.out.empty());
    EXPECT_TRUE(Contains(outcome.err, "data directory " + missing + " does not exist")) << outcome.err;
  }
  EXPECT_FALSE(Env::Default()->FileExists(missing));
}

TEST_F(CairndTokenTest, DamagedTokenFileIsReportedWithItsLine) {
  ASSERT_TRUE(
      Env::Default()
          ->WriteFileAtomically(JoinPath(data_dir_, "tokens"), "cairn-tokens 1\nthis is not a token\n")
          .ok());
  for (const std::vector<std::string>& words : std::vector<std::vector<std::string>>{
           {"list", "--data-dir", data_dir_},
           {"create", "--name", "a", "--scope", "admin", "--data-dir", data_dir_}}) {
    CommandOutcome outcome = Run(words);
    EXPECT_EQ(outcome.exit_status, 1) << words[0];
    EXPECT_TRUE(Contains(outcome.err, JoinPath(data_dir_, "tokens") + ": line 2:")) << outcome.err;
  }
}

TEST_F(CairndTokenTest, WorksWhileTheDaemonHoldsTheDataDirectoryLock) {
  // What a running cairnd holds for its whole life. Another lock attempt in
  // this process would be refused as Busy, so success here shows the command
  // never reaches for it.
  Result<std::unique_ptr<FileLock>> daemon_lock = Env::Default()->LockFile(JoinPath(data_dir_, "LOCK"));
  ASSERT_TRUE(daemon_lock.ok()) << daemon_lock.status().ToString();
  const std::string token = Create("while-running", "write:a");
  ASSERT_FALSE(token.empty());
  EXPECT_EQ(Run({"list", "--data-dir", data_dir_}).exit_status, 0);
  EXPECT_EQ(Run({"revoke", "while-running", "--data-dir", data_dir_}).exit_status, 0);
}

TEST_F(CairndTokenTest, GivesUpWhenTheTokenLockStaysHeld) {
  Result<std::unique_ptr<FileLock>> held = Env::Default()->LockFile(JoinPath(data_dir_, "tokens.lock"));
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  // The manual clock makes the retry sleeps instant.
  ManualClockEnv env(Env::Default());
  CommandOutcome outcome =
      RunWith(&env, {"create", "--name", "a", "--scope", "admin", "--data-dir", data_dir_});
  EXPECT_EQ(outcome.exit_status, 1);
  EXPECT_TRUE(outcome.out.empty());
  EXPECT_TRUE(Contains(outcome.err, "tokens.lock stayed locked")) << outcome.err;
  EXPECT_EQ(env.SleptMicros(), (TokenStore::kLockAttempts - 1) * TokenStore::kLockRetryMicros);
  held->reset();
  EXPECT_EQ(RunWith(&env, {"create", "--name", "a", "--scope", "admin", "--data-dir", data_dir_}).exit_status,
            0);
}

TEST_F(CairndTokenTest, ConcurrentCommandsLoseNoToken) {
  constexpr int kThreads = 3;
  constexpr int kTokensPerThread = 4;
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kTokensPerThread; ++i) {
        const std::string name = "t" + std::to_string(t) + "-" + std::to_string(i);
        CommandOutcome outcome = RunWith(
            Env::Default(), {"create", "--name", name, "--scope", "write:a", "--data-dir", data_dir_});
        if (outcome.exit_status != 0) ++failures[t];
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
  EXPECT_EQ(OpenStore()->List().size(), size_t{kThreads * kTokensPerThread});
}

}  // namespace
}  // namespace cairn::cairnd
