// The shell's engine commands, the sync command and the HTTP API over an
// EngineHolder that is empty at first (cairnd could not open its data
// directory) and is handed the engine later: every command and endpoint
// that needs the engine answers the outage, health says `unavailable` with
// the reason and the remedy, and once the engine is published everything
// works without registering anything again.
#include "cairn/shell/engine_holder.h"

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "cairn/core/engine.h"
#include "cairn/http/http_api.h"
#include "cairn/shell/builtin_commands.h"
#include "cairn/shell/engine_commands.h"
#include "cairn/sync/sync_commands.h"

#include "test_dirs.h"

namespace cairn {
namespace {

bool Contains(const std::string& text, std::string_view needle) {
  return text.find(needle) != std::string::npos;
}

class EngineHolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_dir_ = dir_.PathOf("data");
    ASSERT_TRUE(env_->CreateDirs(data_dir_).ok());
    storage_.SetUnavailable(
        {"cannot open data directory " + data_dir_ + ": open " + data_dir_ + "/LOCK: Read-only file system",
         "remount it read-write"});
    ASSERT_TRUE(RegisterBuiltinCommands(&commands_).ok());
    EngineCommandOptions command_options;
    command_options.data_dir = data_dir_;
    ASSERT_TRUE(RegisterEngineCommands(&commands_, &storage_, env_, command_options).ok());
    ASSERT_TRUE(RegisterSyncCommands(&commands_, &storage_, [] { return nullptr; }).ok());
    Result<std::unique_ptr<TokenStore>> tokens = TokenStore::Open(env_, data_dir_);
    ASSERT_TRUE(tokens.ok()) << tokens.status().ToString();
    tokens_ = std::move(*tokens);
    Result<CreatedToken> admin = tokens_->Create("admin", {"admin"});
    ASSERT_TRUE(admin.ok()) << admin.status().ToString();
    admin_ = admin->token;
    HttpApiOptions options;
    options.data_dir = data_dir_;
    options.storage_retry_after_seconds = 7;
    api_ =
        std::make_unique<HttpApi>(&storage_, env_, &commands_, tokens_.get(), &limiter_, &metrics_, options);
  }

  void TearDown() override {
    if (engine_) {
      EXPECT_TRUE(engine_->Close().ok());
    }
  }

  void OpenAndPublish() {
    EngineOptions options;
    options.maintenance_interval_ms = 0;
    Result<std::unique_ptr<Engine>> engine = Engine::Open(env_, data_dir_, options);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    engine_ = std::move(*engine);
    ASSERT_TRUE(engine_->CreateTable("sensors", TableOptions()).ok());
    storage_.Publish(engine_.get());
  }

  std::string Run(std::string_view line) { return commands_.Execute(line, RenderOptions{}); }

  HttpResponse Call(const std::string& method, const std::string& path, const std::string& query = "",
                    const std::string& body = "", bool with_token = true) {
    HttpRequest request;
    request.method = method;
    request.path = path;
    request.query = query;
    request.body = body;
    request.peer_address = "192.0.2.7";
    if (with_token) request.headers.emplace_back("authorization", "Bearer " + admin_);
    return api_->Handle(request);
  }

  static std::string Header(const HttpResponse& response, const std::string& name) {
    for (const auto& [key, value] : response.headers) {
      if (key == name) return value;
    }
    return "";
  }

  Env* const env_ = Env::Default();
  ScopedTempDir dir_{"engine-holder"};
  std::string data_dir_;
  EngineHolder storage_;
  CommandRegistry commands_;
  std::unique_ptr<TokenStore> tokens_;
  std::string admin_;
  AuthThrottle limiter_;
  ApiMetrics metrics_;
  std::unique_ptr<HttpApi> api_;
  std::unique_ptr<Engine> engine_;
};

TEST(EngineHolderStateTest, EmptyUntilPublishedThenOk) {
  EngineHolder holder;
  EXPECT_EQ(holder.engine(), nullptr);
  EXPECT_TRUE(holder.Check().Is(StatusCode::kUnavailable));
  EXPECT_EQ(holder.Check().message(), "storage unavailable: the storage engine is not open yet");
  holder.SetUnavailable({"disk gone", "plug it in"});
  EXPECT_EQ(holder.Check().message(), "storage unavailable: disk gone; plug it in");
  EXPECT_EQ(holder.outage().remedy, "plug it in");
}

TEST_F(EngineHolderTest, ShellCommandsAnswerTheOutageAndHealthNamesIt) {
  const std::string put = Run("put sensors env,device=d1 t=1i");
  EXPECT_EQ(put, "error: storage unavailable: cannot open data directory " + data_dir_ + ": open " +
                     data_dir_ + "/LOCK: Read-only file system; remount it read-write\n");
  EXPECT_TRUE(Contains(Run("tables"), "error: storage unavailable: ")) << Run("tables");
  EXPECT_TRUE(Contains(Run("latest sensors d1"), "error: storage unavailable: "));
  EXPECT_TRUE(Contains(Run("sync quota"), "error: storage unavailable: "));
  EXPECT_TRUE(Contains(Run("version"), "version")) << Run("version");
  const std::string health = Run("health --json");
  EXPECT_TRUE(Contains(health, "\"status\":\"unavailable\"")) << health;
  EXPECT_TRUE(Contains(health, "\"problem.storage\":\"unavailable: cannot open data directory " + data_dir_))
      << health;
  EXPECT_TRUE(Contains(health, "(fix: remount it read-write)")) << health;
  EXPECT_TRUE(Contains(health, "\"free_bytes\":")) << health;

  OpenAndPublish();
  EXPECT_TRUE(Contains(Run("put sensors env,device=d1 t=1i"), "stored"))
      << Run("put sensors env,device=d1 t=1i");
  EXPECT_TRUE(Contains(Run("health --json"), "\"status\":\"ok\"")) << Run("health --json");
  EXPECT_TRUE(Contains(Run("sync"), "sync is off")) << Run("sync");
}

TEST_F(EngineHolderTest, HttpAnswers503WithRetryAfterUntilTheEngineIsPublished) {
  HttpResponse write = Call("POST", "/write", "db=sensors", "env,device=d1 t=1i");
  EXPECT_EQ(write.status, 503);
  EXPECT_EQ(Header(write, "Retry-After"), "7");
  EXPECT_TRUE(Contains(write.body, "\"code\":\"Unavailable\"")) << write.body;
  EXPECT_TRUE(Contains(write.body, "storage unavailable: cannot open data directory")) << write.body;
  EXPECT_EQ(Call("GET", "/v1/tables").status, 503);
  EXPECT_EQ(Call("GET", "/metrics").status, 503);
  EXPECT_EQ(Call("GET", "/v1/tables", "", "", /*with_token=*/false).status, 401);
  EXPECT_EQ(Call("GET", "/ping", "", "", /*with_token=*/false).status, 204);
  HttpResponse level = Call("GET", "/healthz", "", "", /*with_token=*/false);
  EXPECT_EQ(level.status, 503);
  EXPECT_EQ(level.body, "{\"status\":\"unavailable\"}\n");
  EXPECT_EQ(Header(level, "Retry-After"), "7");
  HttpResponse details = Call("GET", "/v1/health");
  EXPECT_EQ(details.status, 503);
  EXPECT_TRUE(Contains(details.body, "Read-only file system (fix: remount it read-write)")) << details.body;

  OpenAndPublish();
  EXPECT_EQ(Call("POST", "/write", "db=sensors", "env,device=d1 t=1i").status, 204);
  HttpResponse ok = Call("GET", "/healthz", "", "", /*with_token=*/false);
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, "{\"status\":\"ok\"}\n");
  EXPECT_EQ(Call("GET", "/metrics").status, 200);
}

}  // namespace
}  // namespace cairn
