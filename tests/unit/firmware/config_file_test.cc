// cairnd's config file: the flag table's keys, the example against the
// defaults, precedence of flags, errors with file:line:column, show and its
// redaction, table declarations and `cairnd config check|show`.
#include "cairnd/config_file.h"

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/platform/env.h"

#include "cairnd/config_command.h"
#include "cairnd/flag_table.h"
#include "cairnd/options.h"
#include "test_dirs.h"

namespace cairn::cairnd {
namespace {

Result<ParsedCommandLine> Parse(const std::string& toml, std::vector<const char*> words = {"--http-plain"}) {
  const ConfigText config{"cairn.toml", toml};
  return ParseCommandLine(words, &config);
}

std::string ErrorOf(const std::string& toml) {
  Result<ParsedCommandLine> parsed = Parse(toml);
  EXPECT_FALSE(parsed.ok()) << toml;
  return parsed.ok() ? "" : parsed.status().message();
}

std::string ReadExample() {
  std::ifstream in(CAIRN_CONFIG_EXAMPLE);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ConfigFlagTableTest, EveryConfigurationFlagHasOneKeyAndAShowFunction) {
  const std::set<std::string_view> not_configuration = {"--config", "--repair-log", "--help", "--version"};
  std::set<std::string_view> keys;
  for (const FlagSpec& flag : AllFlags()) {
    if (not_configuration.count(flag.name) != 0) {
      EXPECT_TRUE(flag.key.empty()) << flag.name;
      continue;
    }
    ASSERT_FALSE(flag.key.empty()) << flag.name << " has no config key";
    EXPECT_NE(flag.key.find('.'), std::string_view::npos) << flag.key;
    EXPECT_NE(flag.show, nullptr) << flag.name;
    EXPECT_TRUE(keys.insert(flag.key).second) << flag.key << " is the key of two flags";
    ASSERT_TRUE(FindFlagByKey(flag.key).has_value());
    EXPECT_EQ(FindFlagByKey(flag.key)->name, flag.name);
  }
  EXPECT_TRUE(FindFlag("--card-pe-cycles").has_value()) << "the flash-wear flags are rows too";
}

TEST(ConfigExampleTest, ExampleListsEveryKeyAndEqualsTheDefaults) {
  const std::string example = ReadExample();
  ASSERT_FALSE(example.empty()) << CAIRN_CONFIG_EXAMPLE;
  for (const FlagSpec& flag : AllFlags()) {
    if (flag.key.empty()) continue;
    const std::string name(flag.key_name());
    const bool listed = example.find("\n" + name + " = ") != std::string::npos ||
                        example.find("\n# " + name + " =") != std::string::npos;
    EXPECT_TRUE(listed) << flag.key << " is missing from cairn.toml.example";
  }
  ParsedCommandLine parsed;
  std::set<std::string_view> seen;
  const Status applied = ApplyConfigText({"cairn.toml.example", example}, &parsed, &seen);
  ASSERT_TRUE(applied.ok()) << applied.ToString();
  EXPECT_EQ(RenderConfig(parsed.options), RenderConfig(DaemonOptions{}));
  EXPECT_TRUE(parsed.options.tables.empty());
}

TEST(ConfigPrecedenceTest, FileAppliesAndFlagsOverrideIt) {
  Result<ParsedCommandLine> parsed = Parse(
      "[serial]\npath = '/dev/ttyS0'\nbaud = 9600\n[http]\nmax_connections = 8\n"
      "[storage]\ndurability = 'interval=50'\n",
      {"--baud", "19200", "--http-plain"});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->options.serial_path, "/dev/ttyS0");
  EXPECT_EQ(parsed->options.baud, 19200);
  EXPECT_EQ(parsed->options.http_max_connections, 8u);
  EXPECT_EQ(parsed->options.http_max_connections_per_address, 8u) << "the default is capped as for the flag";
  EXPECT_EQ(parsed->options.engine.durability, Durability::kInterval);
  EXPECT_EQ(parsed->options.engine.sync_interval_ms, 50);
}

TEST(ConfigPrecedenceTest, ChecksAcrossFlagsSeeTheFileToo) {
  EXPECT_NE(ErrorOf("[sync]\ngateway_id = 'gw'\n").find("need --sync-broker"), std::string::npos);
  Result<ParsedCommandLine> parsed = Parse("[serial]\npath = '/dev/ttyS0'\n", {});
  EXPECT_TRUE(parsed.ok()) << "the file's serial path is something to serve";
  parsed = Parse("[http]\nplain = false\n", {});
  EXPECT_FALSE(parsed.ok()) << "false is the default: still nothing to serve";
}

TEST(ConfigErrorTest, UnknownKeysWrongTypesAndBadValuesNameFileLineColumnAndKey) {
  EXPECT_EQ(ErrorOf("[serial]\nspeed = 9600\n"), "cairn.toml:2:1: serial.speed: unknown key");
  EXPECT_EQ(ErrorOf("[serail]\nbaud = 9600\n"), "cairn.toml:1:2: serail: unknown section");
  EXPECT_EQ(ErrorOf("[serial]\nbaud = 'fast'\n"),
            "cairn.toml:2:8: serial.baud: expected an integer, found a string");
  EXPECT_EQ(ErrorOf("[http]\n  max_connections = 0\n"),
            "cairn.toml:2:21: http.max_connections: 0 is not a positive number");
  EXPECT_EQ(ErrorOf("[http]\nplain = 1\n"),
            "cairn.toml:2:9: http.plain: expected true or false, found an integer");
  EXPECT_EQ(ErrorOf("[sync]\nbroker = 'tcp://b:1883'\ngateway_id = 'g'\nkey_file = 'k'\nconfirm = 'never'\n"),
            "cairn.toml:5:11: sync.confirm: 'never' is not receipt or broker");
  EXPECT_EQ(ErrorOf("storage = 3\n"), "cairn.toml:1:11: storage: expected a [storage] section");
  EXPECT_EQ(ErrorOf("[serial]\nbaud = 'fast'\n[http]\nmax_connections = 0\n"),
            "cairn.toml:2:8: serial.baud: expected an integer, found a string")
      << "the first error in the file, not in name order";
  const std::string syntax = ErrorOf("[http]\nplain = \n");
  EXPECT_EQ(syntax.rfind("cairn.toml:2:", 0), 0u) << syntax;
}

TEST(ConfigErrorTest, SizesAndDecimalsTakeBothForms) {
  Result<ParsedCommandLine> parsed = Parse(
      "[sync]\nbroker = 'tcp://b:1883'\ngateway_id = 'g'\nkey_file = 'k'\nquota_bytes = '2G'\nfree_floor = "
      "1024\n"
      "[flash_wear]\ncard_endurance_tbw = 40.5\nwarn_amplification = 3\n");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->options.engine.sync_quota.max_unsynced_bytes, uint64_t{2} << 30);
  EXPECT_EQ(parsed->options.engine.sync_quota.min_free_bytes, 1024u);
  EXPECT_EQ(parsed->options.engine.flash_wear.endurance_tbw, 40.5);
  EXPECT_EQ(parsed->options.engine.flash_wear.warn_amplification, 3.0);
}

TEST(ConfigShowTest, ShowReadsBackToTheSameOptionsAndRedactsBrokerCredentials) {
  Result<ParsedCommandLine> parsed =
      Parse("[tables.weather]\nperiod = 'hour'\nretention = '7d'\n",
            {"--http-listen", "[::1]:8443", "--http-plain", "--sync-broker", "tcp://gw:s3cret@cloud:1883",
             "--gateway-id", "g1", "--sync-key-file", "/etc/cairn/sync.key", "--sync-password-file",
             "/etc/cairn/broker.pass", "--clock", "trust=ntp,horizon=1700000000", "--card-pe-cycles", "3000",
             "--card-size", "32G"});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const std::string shown = RenderConfig(parsed->options);
  EXPECT_EQ(shown.find("s3cret"), std::string::npos) << shown;
  EXPECT_NE(shown.find("broker = 'tcp://<redacted>@cloud:1883'"), std::string::npos) << shown;
  EXPECT_NE(shown.find("key_file = '/etc/cairn/sync.key'"), std::string::npos) << "paths are shown";
  EXPECT_NE(shown.find("[tables.weather]\nperiod = 'hour'\nretention = '7d'\n"), std::string::npos) << shown;

  // Without the credentials the shown text is a config file that gives the
  // same options again.
  parsed->options.sync_broker = "tcp://cloud:1883";
  const std::string without = RenderConfig(parsed->options);
  Result<ParsedCommandLine> again = Parse(without, {});
  ASSERT_TRUE(again.ok()) << again.status().ToString() << "\n" << without;
  EXPECT_EQ(RenderConfig(again->options), without);
  EXPECT_EQ(again->options.http_address, "::1");
}

TEST(ConfigTablesTest, TableSectionsDeclareTables) {
  Result<ParsedCommandLine> parsed = Parse(
      "[tables.weather]\nperiod = 'hour'\nretention = '7d'\ndefault_ttl = '1d'\non_conflict = 'overwrite'\n"
      "sync = false\nmax_series = 500\nattributes = ['firmware']\n[tables.plain]\n");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->options.tables.size(), 2u);
  // In the file's order.
  EXPECT_EQ(parsed->options.tables[1].name, "plain");
  EXPECT_TRUE(parsed->options.tables[1].keys.empty());
  const TableDeclaration& weather = parsed->options.tables[0];
  EXPECT_EQ(weather.name, "weather");
  EXPECT_EQ(weather.where, "cairn.toml:1:9");
  EXPECT_EQ(weather.options.period, Period::kHour);
  EXPECT_EQ(weather.options.retention_seconds, 7 * 86400);
  EXPECT_EQ(weather.options.default_ttl_seconds, 86400);
  EXPECT_EQ(weather.options.on_conflict, ConflictPolicy::kOverwrite);
  EXPECT_FALSE(weather.options.sync);
  EXPECT_EQ(weather.options.max_series, 500u);
  EXPECT_EQ(weather.options.attributes, std::set<std::string>{"firmware"});
  EXPECT_EQ(weather.keys.size(), 7u);
}

TEST(ConfigTablesTest, BadTableKeysNameTheirPosition) {
  EXPECT_EQ(ErrorOf("[tables.w]\nperiod = 'fortnight'\n").rfind("cairn.toml:2:10: tables.w.period: ", 0), 0u);
  EXPECT_EQ(ErrorOf("[tables.w]\nretention = 30\n"),
            "cairn.toml:2:13: tables.w.retention: expected a duration string like \"30d\", found an integer");
  const std::string unknown = ErrorOf("[tables.w]\nshards = 2\n");
  EXPECT_EQ(unknown.rfind("cairn.toml:2:1: tables.w.shards: unknown key", 0), 0u) << unknown;
  EXPECT_EQ(ErrorOf("[tables.log]\n").rfind("cairn.toml:1:9: tables.log: ", 0), 0u) << "a reserved name";
  EXPECT_EQ(ErrorOf("[tables.w]\nretention = '0s'\n").rfind("cairn.toml:1:9: tables.w: ", 0), 0u);
}

TEST(ConfigFileTest, DefaultFileMayBeMissingANamedOneMayNot) {
  ScopedTempDir dir;
  Env* env = Env::Default();
  Result<std::optional<ConfigText>> read = ReadConfigFile(env, dir.PathOf("absent.toml"), /*named=*/false);
  ASSERT_TRUE(read.ok());
  EXPECT_FALSE(read->has_value());
  read = ReadConfigFile(env, dir.PathOf("absent.toml"), /*named=*/true);
  ASSERT_FALSE(read.ok());
  EXPECT_TRUE(read.status().Is(StatusCode::kNotFound));
  read = ReadConfigFile(env, "", /*named=*/true);
  ASSERT_TRUE(read.ok());
  EXPECT_FALSE(read->has_value()) << "--config none";
}

TEST(ConfigCommandTest, CheckAndShowReadTheNamedFile) {
  ScopedTempDir dir;
  const std::string path = dir.PathOf("cairn.toml");
  std::ofstream(path) << "[http]\nplain = true\nmax_connections = 4\n";
  std::string out, err;
  std::vector<const char*> words = {"check", "--config", path.c_str()};
  EXPECT_EQ(RunConfigCommand(Env::Default(), words, &out, &err), 0) << err;
  EXPECT_EQ(out, path + ": ok\n");

  out.clear();
  words = {"show", "--config", path.c_str(), "--http-max-connections", "6"};
  EXPECT_EQ(RunConfigCommand(Env::Default(), words, &out, &err), 0) << err;
  EXPECT_NE(out.find("max_connections = 6\n"), std::string::npos) << out;

  std::ofstream(path) << "[http]\nplain = true\nmax_connections = -4\n";
  out.clear();
  words = {"check", "--config", path.c_str()};
  EXPECT_EQ(RunConfigCommand(Env::Default(), words, &out, &err), 2);
  EXPECT_EQ(err, "cairnd: " + path + ":3:19: http.max_connections: -4 is not a positive number\n");
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace cairn::cairnd
