// The engine commands that define and write: creating and dropping tables,
// put and its fields, devices and measures, and registration's checks.
#include "cairn/shell/engine_commands.h"

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "engine_commands_test_util.h"

namespace cairn::engine_commands_testing {
namespace {

TEST_F(EngineCommandsTest, EveryCommandIsListedByHelp) {
  const std::string help = Run("help");
  for (const char* name : {"tables", "create-table", "alter-table", "drop-table", "devices", "measures",
                           "latest", "range", "agg", "put", "stats", "health"}) {
    EXPECT_TRUE(Contains(help, std::string("\n") + name + " ")) << name << "\n" << help;
  }
  EXPECT_TRUE(Contains(Run("help range"), "--page TOKEN")) << Run("help range");
}

TEST_F(EngineCommandsTest, CreateTableAndListTables) {
  EXPECT_EQ(Run("create-table hourly --period hour --retention 36h --ttl 90m"),
            "created      hourly\n"
            "period       hour\n"
            "retention    36h\n"
            "default_ttl  90m\n"
            "max_series   -\n"
            "on_conflict  reject\n"
            "attributes   -\n");
  const std::string tables = Run("tables");
  EXPECT_TRUE(Contains(tables, "table    period  retention  default_ttl  max_series  on_conflict  attributes  created\n")) << tables;
  EXPECT_TRUE(Contains(tables, "hourly   hour    36h        90m          -           reject       -           2023-11-14T22:13:20Z\n"))
      << tables;
  EXPECT_TRUE(Contains(tables, "sensors  day     30d        -            -           reject       -           2023-11-14T22:13:20Z\n"))
      << tables;

  Result<TableInfo> info = engine_->GetTable("hourly");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->options.period, Period::kHour);
  EXPECT_EQ(info->options.retention_seconds, 36 * 3600);
  EXPECT_EQ(info->options.default_ttl_seconds, 90 * 60);

  EXPECT_EQ(Run("tables --json"),
            "{\"columns\":[\"table\",\"period\",\"retention\",\"default_ttl\",\"max_series\",\"on_conflict\",\"attributes\",\"created\"],"
            "\"rows\":["
            "{\"table\":\"hourly\",\"period\":\"hour\",\"retention\":\"36h\",\"default_ttl\":\"90m\","
            "\"max_series\":null,\"on_conflict\":\"reject\",\"attributes\":null,\"created\":\"2023-11-14T22:13:20Z\"},"
            "{\"table\":\"sensors\",\"period\":\"day\",\"retention\":\"30d\",\"default_ttl\":null,"
            "\"max_series\":null,\"on_conflict\":\"reject\",\"attributes\":null,\"created\":\"2023-11-14T22:13:20Z\"}]}\n");

  // alter-table changes what may change and keeps the rest.
  EXPECT_EQ(Run("alter-table hourly --max-series 5000 --retention 2d"),
            "altered      hourly\n"
            "period       hour\n"
            "retention    2d\n"
            "default_ttl  90m\n"
            "max_series   5000\n"
            "on_conflict  reject\n"
            "attributes   -\n");
  EXPECT_EQ(engine_->GetTable("hourly")->options.max_series, 5000u);
  EXPECT_TRUE(Contains(Run("alter-table hourly --on-conflict overwrite"), "on_conflict  overwrite\n"));
  EXPECT_EQ(engine_->GetTable("hourly")->options.on_conflict, ConflictPolicy::kOverwrite);
  EXPECT_EQ(Run("alter-table hourly --on-conflict merge"),
            "error: --on-conflict: unknown on_conflict 'merge' (reject, overwrite)\n");
  EXPECT_EQ(Run("alter-table hourly --max-series lots"),
            "error: --max-series: 'lots' is not a count from 0 to 100000000 (0: the engine's default)\n");
  EXPECT_TRUE(Contains(Run("alter-table hourly --period day"), "error: ")) << "the period is fixed";
  EXPECT_TRUE(Contains(Run("alter-table nowhere --max-series 1"), "error: table 'nowhere' does not exist"));
}

TEST_F(EngineCommandsTest, CreateTableErrorsNameTheProblem) {
  EXPECT_EQ(Run("create-table t --period fortnight"),
            "error: --period: unknown period 'fortnight' (hour, day, week or month)\n");
  EXPECT_TRUE(Contains(Run("create-table t --retention 30 days"), "error: too many arguments"));
  EXPECT_TRUE(
      Contains(Run("create-table t --retention 30"), "error: --retention: bad duration '30': expected"));
  EXPECT_EQ(Run("create-table t --retention 1500ms"),
            "error: --retention: '1500ms' is not a whole number of seconds\n");
  EXPECT_EQ(Run("create-table t --retention 0s"), "error: --retention must be positive\n");
  EXPECT_EQ(Run("create-table sensors"), "error: table 'sensors' exists\n");
  EXPECT_TRUE(Contains(Run("create-table ../etc"), "error: ")) << Run("create-table ../etc");
  EXPECT_EQ(Run("create-table"),
            "error: create-table needs 1 argument, got 0; usage: create-table [--period P] "
            "[--retention D] [--ttl D] [--max-series N] [--on-conflict P] [--attributes A,...] [--json] NAME\n");
  // Nothing was created by the failed attempts.
  Result<std::vector<TableInfo>> tables = engine_->ListTables();
  ASSERT_TRUE(tables.ok());
  EXPECT_EQ(tables->size(), 1u);
}

TEST_F(EngineCommandsTest, DropTableDeletesItAndUnknownTablesAreNamed) {
  PutReadings();
  EXPECT_EQ(Run("drop-table sensors"), "dropped  sensors\n");
  EXPECT_EQ(Run("devices sensors"), "error: table 'sensors' does not exist; type tables to list them\n");
  EXPECT_EQ(Run("drop-table sensors"), "error: table 'sensors' does not exist; type tables to list them\n");
  EXPECT_EQ(Run("latest nope d1"), "error: table 'nope' does not exist; type tables to list them\n");
  EXPECT_EQ(Run("range nope d1"), "error: table 'nope' does not exist; type tables to list them\n");
  EXPECT_EQ(Run("measures nope"), "error: table 'nope' does not exist; type tables to list them\n");
  EXPECT_EQ(Run("put nope m,device=d v=1"), "error: table 'nope' does not exist; type tables to list them\n");
  EXPECT_EQ(Run("agg nope d1 env temperature --step 1m"),
            "error: table 'nope' does not exist; type tables to list them\n");
  EXPECT_EQ(
      Run("latest nope d1 --json"),
      "{\"error\":{\"code\":\"NotFound\",\"message\":\"table 'nope' does not exist; type tables to list "
      "them\"}}\n");
}

TEST_F(EngineCommandsTest, PutThenLatest) {
  EXPECT_EQ(Run("put sensors env,device=d1 temperature=21.5,humidity=40i 1699999990000000000"),
            "outcome  stored\n"
            "table    sensors\n"
            "device   d1\n"
            "measure  env\n"
            "time     2023-11-14T22:13:10Z\n"
            "lsn      1\n");
  EXPECT_EQ(Run("latest sensors d1"),
            "time                  measure  humidity  temperature\n"
            "2023-11-14T22:13:10Z  env            40         21.5\n");
  EXPECT_EQ(Run("latest sensors d1 --json"),
            "{\"columns\":[\"time\",\"measure\",\"humidity\",\"temperature\"],\"rows\":[{\"time\":"
            "\"2023-11-14T22:13:10Z\",\"measure\":\"env\",\"humidity\":40,\"temperature\":21.5}]}\n");
  EXPECT_EQ(Run("latest sensors d1 power"), "time  measure\n(no rows)\n");
  EXPECT_EQ(Run("latest sensors nobody"), "time  measure\n(no rows)\n");
}

TEST_F(EngineCommandsTest, PutSetsVersionTtlAndTimestampFields) {
  EXPECT_EQ(Run("put sensors env,device=d1 v=1,_version=3i,_ttl=1800000000i,at=1690000000000000000t "
                "1699999990000000000"),
            "outcome  stored\n"
            "table    sensors\n"
            "device   d1\n"
            "measure  env\n"
            "version  3\n"
            "ttl      2027-01-15T08:00:00Z\n"
            "time     2023-11-14T22:13:10Z\n"
            "lsn      1\n");
  EXPECT_EQ(Run("latest sensors d1 --json"),
            "{\"columns\":[\"time\",\"measure\",\"version\",\"ttl\",\"at\",\"v\"],\"rows\":[{\"time\":"
            "\"2023-11-14T22:13:10Z\",\"measure\":\"env\",\"version\":3,\"ttl\":\"2027-01-15T08:00:00Z\","
            "\"at\":\"2023-07-22T04:26:40Z\",\"v\":1}]}\n");
  // A lower version of the same point is rejected; --precision applies to t values.
  EXPECT_TRUE(
      Contains(Run("put sensors env,device=d1 v=2,_version=2i 1699999990000000000"), "error: put: rejected"));
  EXPECT_TRUE(Contains(Run("put --precision s sensors env,device=d2 at=1690000000t 1699999990"),
                       "outcome  stored\n"));
  EXPECT_TRUE(Contains(Run("latest sensors d2 --json"), "\"at\":\"2023-07-22T04:26:40Z\""))
      << Run("latest sensors d2 --json");
  EXPECT_EQ(Run("put sensors env,device=d1 v=1,_version=-1i"),
            "error: put: line protocol: reserved field _version must not be negative (e.g. _version=3i or "
            "_version=3u) (column 28)\n");
  EXPECT_TRUE(Contains(Run("put sensors env,device=d1 v=1,_ttl=60i"), "not after the record's time"));
}

TEST_F(EngineCommandsTest, PutWithoutTimestampUsesTheClockAndHonoursPrecision) {
  ASSERT_TRUE(Contains(Run("put sensors env,device=d1 v=1"), "time     2023-11-14T22:13:20Z\n"));
  clock_.AdvanceNanos(1'500'000'000);
  EXPECT_TRUE(
      Contains(Run("put --precision s sensors env,device=d2 v=1"), "time     2023-11-14T22:13:21Z\n"));
  EXPECT_TRUE(Contains(Run("put --precision ms sensors env,device=d3 v=1 1699999999250"),
                       "time     2023-11-14T22:13:19.250Z\n"));
  EXPECT_EQ(Run("put --precision d sensors env,device=d4 v=1"),
            "error: --precision: unknown timestamp precision 'd' (ns, us, ms, s, m or h)\n");
}

// A gateway that booted at 1970 without a time source.
class EngineCommandsUntrustedClockTest : public EngineCommandsTest {
 protected:
  EngineCommandsUntrustedClockTest() {
    clock_.SetUnixNanos(9 * kSecond);
    clock_.SetWallClockSynchronized(false);
  }
};

TEST_F(EngineCommandsUntrustedClockTest, PutWithoutTimestampIsHeldUntilTheClockIsTrusted) {
  const std::string out = Run("put sensors env,device=d1 v=1");
  EXPECT_TRUE(Contains(out, "outcome  held\n")) << out;
  EXPECT_TRUE(Contains(out, "stamped when the clock is trusted")) << out;
  EXPECT_TRUE(Contains(Run("stats --json"), "\"clock_held_readings\":1,")) << Run("stats --json");
  EXPECT_TRUE(Contains(Run("health"), "problem.clock.untrusted")) << Run("health");

  clock_.SetUnixNanos(kNow);
  clock_.SetWallClockSynchronized(true);
  ASSERT_TRUE(engine_->Maintain().ok());
  const std::string stats = Run("stats --json");
  EXPECT_TRUE(Contains(stats, "\"clock_held_readings\":0,")) << stats;
  EXPECT_TRUE(Contains(stats, "\"clock_readings_restamped\":1,")) << stats;
  EXPECT_FALSE(Contains(Run("health"), "problem.clock.untrusted"));
  EXPECT_TRUE(Contains(Run("latest sensors d1"), "2023-11-14T22:13:20Z")) << Run("latest sensors d1");
}

TEST_F(EngineCommandsTest, PutTakesTheLineVerbatim) {
  // Quotes, backslashes and runs of spaces reach the line-protocol parser as typed.
  Put(R"(note,device=d1,room=living\ room text="say \"hi\", twice",n=1i  1699999990000000000)");
  const std::string latest = Run("latest sensors d1 --json");
  EXPECT_TRUE(Contains(latest, R"("text":"say \"hi\", twice")")) << latest;
  const std::string measures = Run("measures sensors");
  EXPECT_TRUE(Contains(measures, "note     n:int64, text:string  room        -                 1       1\n"))
      << measures;
  EXPECT_TRUE(Contains(Run("range sensors d1 --measure note --json"), R"("room":"living room")"));
  // Options go before the line; after it they are part of it.
  EXPECT_TRUE(
      Contains(Run("put --json sensors env,device=d1 v=2 1699999991000000000"), "{\"outcome\":\"stored\""));
  EXPECT_EQ(Run("put sensors env,device=d1 v=2 1699999992000000000 --json"),
            "error: put: line protocol: unexpected text after the timestamp (column 39)\n");
}

TEST_F(EngineCommandsTest, PutReportsDuplicatesAndRejections) {
  Put("env,device=d1 v=1 1699999990000000000");
  EXPECT_EQ(Run("put sensors env,device=d1 v=1 1699999990000000000"),
            "outcome  duplicate\n"
            "table    sensors\n"
            "device   d1\n"
            "measure  env\n"
            "time     2023-11-14T22:13:10Z\n");
  EXPECT_EQ(Run("put sensors env,device=d1 v=2 1699999990000000000"),
            "error: put: conflict: version 0 of this point is stored with other values: field 'v' is 2 here, "
            "1 stored (the table's on_conflict is reject: write a higher version to replace it)\n");
  EXPECT_TRUE(HasEntry(Run("stats"), "records_conflict", "1"));
  EXPECT_EQ(Run("put sensors env,device=d1 v=\"text\" 1699999991000000000"),
            "error: put: invalid: field 'v' is double in this series, not string\n");
  EXPECT_EQ(Run("put sensors env,device=d1 v=1 1500000000000000000"),
            "error: put: invalid: timestamp 1500000000000000000 is older than the table's retention of "
            "2592000 s\n");
  EXPECT_EQ(
      Run("put sensors env,device=d1 v=1 1800000000000000000"),
      "error: put: invalid: timestamp 1800000000000000000 is more than 86400 s ahead of the gateway's trusted "
      "clock (1700000000000000000)\n");
}

TEST_F(EngineCommandsTest, PutRefusesBadLinesWithTheReason) {
  EXPECT_EQ(
      Run("put sensors garbage"),
      "error: put: line protocol: no fields (expected a space, then field=value after the measurement and "
      "tags) (column 8)\n");
  EXPECT_EQ(Run("put sensors env temperature=1"), "error: put: line protocol: no 'device' tag\n");
  EXPECT_EQ(Run("put sensors env,device=d1 temperature=NaN"),
            "error: put: line protocol: field 'temperature' is NaN; NaN and infinities are not accepted\n");
  EXPECT_EQ(Run("put sensors # just a comment"),
            "error: put: the line holds no point (it is blank or a comment)\n");
  EXPECT_TRUE(Contains(Run("put sensors"), "error: put needs 2 arguments, got 1"));
  EXPECT_EQ(Run("put sensors env,device=d1 v=1 --json"),
            "error: put: line protocol: timestamp '--json' is not an integer (column 19)\n");
  EXPECT_EQ(engine_->Stats().records_written, 0u);
}

TEST_F(EngineCommandsTest, DevicesAndMeasures) {
  PutReadings();
  EXPECT_EQ(Run("devices sensors"),
            "device  measures\n"
            "d1      env\n"
            "d2      power\n");
  EXPECT_EQ(Run("measures sensors"),
            "measure  fields                              dimensions  attributes  devices  series\n"
            "env      humidity:int64, temperature:double  site        -                 1       1\n"
            "power    watts:double                        -           -                 1       1\n");
  EXPECT_EQ(Run("devices sensors --json"),
            "{\"columns\":[\"device\",\"measures\"],\"rows\":[{\"device\":\"d1\",\"measures\":\"env\"},"
            "{\"device\":\"d2\",\"measures\":\"power\"}]}\n");
}

TEST(EngineCommandsRegistrationTest, RefusesAMissingDataDirectoryAndBadLimits) {
  CommandRegistry registry;
  ManualClockEnv clock(Env::Default());
  EngineCommandOptions options;
  EXPECT_TRUE(RegisterEngineCommands(&registry, static_cast<Engine*>(nullptr), &clock, options)
                  .Is(StatusCode::kInvalidArgument));
  options.data_dir = "/tmp";
  options.default_limit = 10;
  options.max_limit = 5;
  EXPECT_TRUE(RegisterEngineCommands(&registry, static_cast<Engine*>(nullptr), &clock, options)
                  .Is(StatusCode::kInvalidArgument));
  EXPECT_TRUE(registry.Commands().empty());
}

}  // namespace
}  // namespace cairn::engine_commands_testing
