// cairnd with a config file: the tables it declares exist once cairnd
// listens, a SIGHUP after an edit applies the tables live and names the keys
// that need a restart, and `cairnd config check` refuses a bad file with its
// line and column.
#include <fstream>
#include <string>

#include "cairnd_http_fixture.h"

namespace cairn {
namespace {

class CairndConfigTest : public CairndHttpTest {
 protected:
  void WriteConfig(const std::string& text) {
    std::ofstream out(config_path_, std::ios::trunc);
    out << text;
  }

  std::string Tables(const std::string& token) {
    Result<HttpTestResponse> response = Get("/v1/tables", token);
    EXPECT_TRUE(response.ok() && response->status == 200);
    return response.ok() ? response->body : "";
  }

  const std::string config_path_ = dir_.PathOf("cairn.toml");
};

TEST_F(CairndConfigTest, DeclaredTablesExistAndSighupAppliesTheEditedFile) {
  WriteConfig(
      "[http]\nplain = true\nmax_connections = 8\n"
      "[tables.weather]\nperiod = 'hour'\nretention = '7d'\n");
  StartDaemon({"--config", config_path_});
  const std::string admin = FirstAdminToken();
  ASSERT_FALSE(admin.empty()) << daemon_->Stderr();
  std::string tables = Tables(admin);
  EXPECT_TRUE(Contains(tables, "\"weather\"")) << tables;
  EXPECT_TRUE(Contains(tables, "7d")) << tables;
  EXPECT_TRUE(Contains(daemon_->Stderr(), "created table 'weather'")) << daemon_->Stderr();

  WriteConfig(
      "[http]\nplain = true\nmax_connections = 9\n"
      "[tables.weather]\nperiod = 'hour'\nretention = '14d'\n"
      "[tables.plant]\nperiod = 'week'\n");
  ASSERT_TRUE(daemon_->Signal(SIGHUP));
  // The keys needing a restart are logged last, after the tables changed.
  EXPECT_TRUE(daemon_->AwaitStderr("needs a restart", kCairndTimeoutMs)) << daemon_->Stderr();
  tables = Tables(admin);
  EXPECT_TRUE(Contains(tables, "\"plant\"")) << tables << daemon_->Stderr();
  EXPECT_TRUE(Contains(tables, "14d")) << tables;
  const std::string log = daemon_->Stderr();
  EXPECT_TRUE(Contains(log, "tables.weather.retention changed from 7d to 14d")) << log;
  EXPECT_TRUE(Contains(log, "SIGHUP: http.max_connections changed; it needs a restart")) << log;

  // A file broken while cairnd runs changes nothing and is reported.
  WriteConfig("[http]\nplain = yes\n");
  ASSERT_TRUE(daemon_->Signal(SIGHUP));
  EXPECT_TRUE(daemon_->AwaitStderr("configuration was not reread", kCairndTimeoutMs)) << daemon_->Stderr();
  EXPECT_TRUE(Contains(daemon_->Stderr(), "cairn.toml:2:9")) << daemon_->Stderr();
  EXPECT_EQ(Get("/v1/tables", admin)->status, 200) << "still serving";
  StopDaemon();
}

TEST_F(CairndConfigTest, ConfigCheckRefusesABadFileWithLineAndColumn) {
  WriteConfig("[serial]\nbaud = 'fast'\n");
  auto [status, output] = RunCommand(CairndCommandLine() + " config check --config " + config_path_);
  EXPECT_EQ(status, 2) << output;
  EXPECT_TRUE(Contains(output, config_path_ + ":2:8: serial.baud: expected an integer")) << output;

  // cairnd itself refuses to start on it, with the same words.
  auto [run_status, run_output] =
      RunCommand(CairndCommandLine() + " --config " + config_path_ + " --data-dir " + dir_.PathOf("data"));
  EXPECT_EQ(run_status, 2) << run_output;
  EXPECT_TRUE(Contains(run_output, ":2:8: serial.baud")) << run_output;
  EXPECT_FALSE(Env::Default()->FileExists(dir_.PathOf("data"))) << "nothing touched on disk";

  WriteConfig("[serial]\nbaud = 9600\n[http]\nplain = true\n");
  std::tie(status, output) = RunCommand(CairndCommandLine() + " config check --config " + config_path_);
  EXPECT_EQ(status, 0) << output;
  EXPECT_EQ(output, config_path_ + ": ok\n");
}

}  // namespace
}  // namespace cairn
