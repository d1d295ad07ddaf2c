// cairnd's tokens file from the outside: kept to its owner, a damaged or
// lost file never accepting requests nor minting credentials, and
// /healthz telling a monitor no more than the level.
//
// Every wait is bounded; the daemon is killed and reaped by its guard.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/text/json_value.h"

#include "cairnd_http_fixture.h"

namespace cairn {
namespace {

class CairndTokenFileTest : public CairndHttpTest {
 protected:
  std::string TokensPath() { return dir_.PathOf("data/tokens"); }

  Result<HttpTestResponse> Healthz() {
    CAIRN_ASSIGN_OR_RETURN(HttpTestClient client, HttpTestClient::Connect("127.0.0.1", port_));
    return client.Request("GET", "/healthz");
  }
};

TEST_F(CairndTokenFileTest, TheFileIsKeptToItsOwnerAndALooserOneIsFixedWithALogLine) {
  StartDaemon({"--http-plain"});
  const std::string admin = FirstAdminToken();
  ASSERT_FALSE(admin.empty());
  EXPECT_EQ(Env::Default()->FileMode(TokensPath()).value(), 0600u);
  StopDaemon();
  ASSERT_TRUE(Env::Default()->SetFileMode(TokensPath(), 0644).ok());
  StartDaemon({"--http-plain"});
  EXPECT_EQ(Env::Default()->FileMode(TokensPath()).value(), 0600u);
  EXPECT_TRUE(
      Contains(daemon_->Stderr(), TokensPath() + " was readable by others (mode 0644); its mode is now 0600"))
      << daemon_->Stderr();
  EXPECT_EQ(WaitForStatus("/v1/tables", admin, 200), 200);
  StopDaemon();
}

// Before: /healthz showed the data directory's path and free bytes to anyone.
TEST_F(CairndTokenFileTest, HealthzWithoutATokenSaysOnlyTheLevel) {
  StartDaemon({"--http-plain"});
  const std::string admin = FirstAdminToken();
  Result<HttpTestResponse> health = Healthz();
  ASSERT_TRUE(health.ok());
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(health->body, "{\"status\":\"ok\"}\n");
  Result<HttpTestResponse> full = Get("/v1/health", admin);
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->status, 200);
  EXPECT_TRUE(Contains(full->body, dir_.PathOf("data"))) << full->body;
  EXPECT_TRUE(Contains(full->body, "\"free_bytes\":")) << full->body;
  StopDaemon();
}

// A flipped byte or a file cut short: cairnd starts (readings over the
// serial line and MQTT go on), accepts no token, says degraded, names the
// file and `cairnd token repair`, and takes the repaired file over.
TEST_F(CairndTokenFileTest, ADamagedFileAcceptsNoTokenUntilRepairedAndKeepsTheIntactOnes) {
  StartDaemon({"--http-plain"});
  const std::string admin = FirstAdminToken();
  ASSERT_FALSE(admin.empty());
  const std::string reader = CreateToken("reader", "read:sensors");
  const std::string writer = CreateToken("writer", "write:sensors");
  StopDaemon();
  const std::string good = Env::Default()->ReadFileToString(TokensPath()).value();

  const std::string reader_id = reader.substr(6, 16);
  std::string flipped = good;
  flipped[flipped.find(" read:sensors", flipped.find(reader_id)) + 7] ^= 0x01;  // sensors -> sdnsors
  const std::string cut = good.substr(0, good.find(writer.substr(6, 16)) + 30);
  for (const auto& [what, damaged] :
       std::vector<std::pair<std::string, std::string>>{{"flipped", flipped}, {"cut", cut}}) {
    SCOPED_TRACE(what);
    ASSERT_TRUE(Env::Default()->WriteFileAtomically(TokensPath(), damaged, 0600).ok());
    StartDaemon({"--http-plain"});
    const std::string log = daemon_->Stderr();
    EXPECT_TRUE(Contains(log, "the API tokens cannot be used: " + TokensPath())) << log;
    EXPECT_TRUE(Contains(log, "cairnd token repair --data-dir " + dir_.PathOf("data"))) << log;
    EXPECT_EQ(FirstAdminToken(), "") << "no credential is minted";
    for (const std::string& token : {admin, reader, writer}) {
      Result<HttpTestResponse> refused = Get("/v1/tables", token);
      ASSERT_TRUE(refused.ok());
      EXPECT_EQ(refused->status, 401) << refused->body;
    }
    Result<HttpTestResponse> health = Healthz();
    ASSERT_TRUE(health.ok());
    EXPECT_EQ(health->body, "{\"status\":\"degraded\"}\n");

    auto [status, output] =
        RunCommand(CairndCommandLine() + " token repair --data-dir " + dir_.PathOf("data"));
    ASSERT_EQ(status, 0) << output;
    EXPECT_TRUE(Contains(output, "dropped 1 damaged line")) << output;
    EXPECT_EQ(WaitForStatus("/v1/tables", admin, 200), 200);
    const bool reader_kept = what == "cut";
    EXPECT_EQ(WaitForStatus("/v1/tables/sensors/devices", reader, reader_kept ? 200 : 401),
              reader_kept ? 200 : 401);
    EXPECT_EQ(Get("/v1/tables/sensors/devices", writer)->status, reader_kept ? 401 : 403);
    EXPECT_EQ(Healthz()->body, "{\"status\":\"ok\"}\n");
    EXPECT_EQ(Env::Default()->ReadFileToString(dir_.PathOf("data/tokens.damaged")).value(), damaged);
    StopDaemon();
    ASSERT_TRUE(Env::Default()->WriteFileAtomically(TokensPath(), good, 0600).ok());
  }
}

// A lost file in a data directory that holds data: no admin token is made
// behind the operator's back; the error names the command that makes one.
TEST_F(CairndTokenFileTest, ADeletedFileMintsNoCredentialAndNamesTheWayOut) {
  StartDaemon({"--http-plain"});
  const std::string admin = FirstAdminToken();
  ASSERT_FALSE(admin.empty());
  StopDaemon();
  ASSERT_TRUE(Env::Default()->RemoveFile(TokensPath()).ok());
  StartDaemon({"--http-plain"});
  EXPECT_EQ(FirstAdminToken(), "");
  EXPECT_TRUE(Contains(daemon_->Stderr(), "the API tokens file " + TokensPath() + " is missing"))
      << daemon_->Stderr();
  EXPECT_TRUE(Contains(daemon_->Stderr(), "cairnd token create --data-dir " + dir_.PathOf("data") +
                                              " --name admin --scope admin"))
      << daemon_->Stderr();
  EXPECT_FALSE(Env::Default()->FileExists(TokensPath()));
  EXPECT_EQ(Get("/v1/tables", admin)->status, 401);
  const std::string fresh = CreateToken("admin", "admin");
  EXPECT_EQ(WaitForStatus("/v1/tables", fresh, 200), 200);
  StopDaemon();
}

}  // namespace
}  // namespace cairn
