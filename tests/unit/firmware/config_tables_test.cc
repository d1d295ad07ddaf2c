// The tables a config file declares, applied to a real engine, and the keys
// a reread file changes that need a restart.
#include "cairnd/config_tables.h"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/platform/env.h"

#include "test_dirs.h"

namespace cairn::cairnd {
namespace {

class ConfigTablesEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = Engine::Open(Env::Default(), dir_.path(), EngineOptions{});
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    engine_ = std::move(opened).value();
  }

  std::string LogText() {
    std::fflush(sink_);
    std::rewind(sink_);
    std::string text;
    char buffer[512];
    while (std::fgets(buffer, sizeof buffer, sink_) != nullptr) text += buffer;
    return text;
  }

  static TableDeclaration Declare(const std::string& name, const std::set<std::string>& keys) {
    TableDeclaration table;
    table.name = name;
    table.keys = keys;
    table.where = "cairn.toml:3:9";
    return table;
  }

  ScopedTempDir dir_;
  std::unique_ptr<Engine> engine_;
  std::FILE* sink_ = std::tmpfile();
  Logger log_{Env::Default(), "cairnd", 1, sink_};
};

TEST_F(ConfigTablesEngineTest, CreatesMissingTablesAndChangesOnlyTheKeysGiven) {
  TableDeclaration weather = Declare("weather", {"period", "retention"});
  weather.options.period = Period::kHour;
  weather.options.retention_seconds = 7 * 86400;
  ASSERT_TRUE(ApplyTableDeclarations(engine_.get(), {weather}, &log_).ok());
  Result<TableInfo> stored = engine_->GetTable("weather");
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->options.period, Period::kHour);
  EXPECT_EQ(stored->options.retention_seconds, 7 * 86400);
  EXPECT_NE(LogText().find("created table 'weather'"), std::string::npos);

  // Changed outside the file (the shell): a key the file leaves out stays.
  TableOptions altered = stored->options;
  altered.default_ttl_seconds = 3600;
  ASSERT_TRUE(engine_->AlterTable("weather", altered).ok());
  TableDeclaration reread = Declare("weather", {"retention"});
  reread.options.retention_seconds = 14 * 86400;
  ASSERT_TRUE(ApplyTableDeclarations(engine_.get(), {reread}, &log_).ok());
  stored = engine_->GetTable("weather");
  EXPECT_EQ(stored->options.retention_seconds, 14 * 86400);
  EXPECT_EQ(stored->options.default_ttl_seconds, 3600);
  EXPECT_EQ(stored->options.period, Period::kHour);
  EXPECT_NE(LogText().find("tables.weather.retention changed from 7d to 14d"), std::string::npos)
      << LogText();
}

TEST_F(ConfigTablesEngineTest, ARefusedChangeNamesTheKey) {
  ASSERT_TRUE(engine_->CreateTable("t", TableOptions{}).ok());
  Record record;
  record.device_id = "d";
  record.measure_name = "temperature";
  record.timestamp = Env::Default()->NowUnixNanos();
  record.fields = {{"v", 21.5}};
  ASSERT_TRUE(engine_->Write("t", {record}).ok());

  TableDeclaration table = Declare("t", {"retention", "period"});
  table.options.period = Period::kMonth;
  table.options.retention_seconds = 90 * 86400;
  const Status applied = ApplyTableDeclarations(engine_.get(), {table}, &log_);
  ASSERT_FALSE(applied.ok());
  EXPECT_EQ(applied.message().rfind("cairn.toml:3:9: tables.t.period: cannot change day to month: ", 0), 0u)
      << applied.message();
  EXPECT_EQ(engine_->GetTable("t")->options.period, Period::kDay);
}

TEST(ConfigReloadTest, KeysNeedingRestartAreTheChangedOnes) {
  DaemonOptions running, reread;
  EXPECT_TRUE(KeysNeedingRestart(running, reread).empty());
  reread.http_port = 9000;
  reread.baud = 9600;
  reread.tables.push_back(TableDeclaration{});
  EXPECT_EQ(KeysNeedingRestart(running, reread), (std::vector<std::string>{"serial.baud", "http.listen"}));
}

}  // namespace
}  // namespace cairn::cairnd
