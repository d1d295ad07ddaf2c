#include "cairn/shell/engine_commands.h"

#include <cstdint>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/core/engine.h"
#include "cairn/text/time_argument.h"
#include "cairn/shell/builtin_commands.h"
#include "cairn/shell/command_registry.h"
#include "cairn/text/json_value.h"
#include "cairn/shell/result_renderer.h"

#include "forwarding_engine.h"
#include "manual_clock_env.h"
#include "test_dirs.h"

namespace cairn {
namespace {

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kMinute = 60 * kSecond;
constexpr int64_t kHour = 60 * kMinute;
constexpr int64_t kDay = 24 * kHour;
// ManualClockEnv's start: 2023-11-14T22:13:20Z.
constexpr int64_t kNow = ManualClockEnv::kDefaultStartUnixNanos;

bool Contains(const std::string& text, std::string_view needle) {
  return text.find(needle) != std::string::npos;
}

// True when a key/value answer in text shows `key` with `value` on one line,
// whatever width the longest key gives the column.
bool HasEntry(const std::string& text, const std::string& key, const std::string& value) {
  for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + 1)) {
    if (at != 0 && text[at - 1] != '\n') continue;
    size_t pos = at + key.size();
    if (pos >= text.size() || text[pos] != ' ') continue;
    while (pos < text.size() && text[pos] == ' ') ++pos;
    if (text.compare(pos, value.size() + 1, value + "\n") == 0) return true;
  }
  return false;
}

// The shell's command layer with the engine commands over a real engine in a
// temporary directory, with a manual clock and no background thread.
class EngineCommandsTest : public ::testing::Test {
 protected:
  EngineCommandsTest() : clock_(Env::Default()) {}

  void SetUp() override {
    EngineOptions options;
    options.maintenance_interval_ms = 0;
    Result<std::unique_ptr<Engine>> engine = Engine::Open(&clock_, dir_.path(), options);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    engine_ = std::move(engine).value();
    ASSERT_TRUE(RegisterBuiltinCommands(&registry_).ok());
    EngineCommandOptions command_options;
    command_options.data_dir = dir_.path();
    command_options.default_limit = 5;
    command_options.max_limit = 50;
    Status registered = RegisterEngineCommands(&registry_, engine_.get(), &clock_, command_options);
    ASSERT_TRUE(registered.ok()) << registered.ToString();
    ASSERT_TRUE(engine_->CreateTable("sensors", TableOptions{}).ok());
  }

  void TearDown() override {
    if (engine_) {
      EXPECT_TRUE(engine_->Close().ok());
    }
  }

  std::string Run(std::string_view line) { return registry_.Execute(line, RenderOptions{}); }

  // Runs a put that must store its point.
  void Put(const std::string& line_protocol) {
    const std::string out = Run("put sensors " + line_protocol);
    ASSERT_TRUE(Contains(out, "outcome  stored\n")) << line_protocol << "\n" << out;
  }

  // Twelve readings of d1, one every 5 minutes over the last hour, with
  // temperature 20, 21, ... and humidity 40, 41, ...; one of d2.
  void PutReadings() {
    for (int i = 0; i < 12; ++i) {
      const int64_t ts = kNow - kHour + i * 5 * kMinute;
      Put("env,device=d1,site=lab temperature=" + std::to_string(20 + i) +
          ",humidity=" + std::to_string(40 + i) + "i " + std::to_string(ts));
    }
    Put("power,device=d2 watts=3.5 " + std::to_string(kNow - kMinute));
  }

  ScopedTempDir dir_{"engine-commands"};
  ManualClockEnv clock_;
  std::unique_ptr<Engine> engine_;
  CommandRegistry registry_;
};

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

// Telegraf's cpu=cpu0 / cpu=cpu1 at one timestamp: two series, both kept,
// each row showing its tags; --tags narrows reads, --group-by splits buckets,
// and a table's attributes stay metadata.
TEST_F(EngineCommandsTest, TagsTellSeriesApartAndFilterEveryRead) {
  const std::string at = " " + std::to_string(kNow - kMinute);
  Put("cpu,device=gw,cpu=cpu0 usage=10i" + at);
  Put("cpu,device=gw,cpu=cpu1 usage=20i" + at);
  Put("cpu,device=gw,cpu=cpu1 usage=30i " + std::to_string(kNow - 2 * kMinute));
  EXPECT_EQ(Run("range sensors gw --measure cpu"),
            "time                  measure  cpu   usage\n"
            "2023-11-14T22:11:20Z  cpu      cpu1     30\n"
            "2023-11-14T22:12:20Z  cpu      cpu0     10\n"
            "2023-11-14T22:12:20Z  cpu      cpu1     20\n");
  EXPECT_EQ(Run("latest sensors gw --tags cpu=cpu1"),
            "time                  measure  cpu   usage\n"
            "2023-11-14T22:12:20Z  cpu      cpu1     20\n");
  EXPECT_TRUE(Contains(Run("range sensors gw --json --tags cpu=cpu0"), R"("tags":"cpu")"));
  EXPECT_EQ(Run("agg sensors gw cpu usage --step 1h --fn sum --group-by cpu --from -1h"),
            "cpu   start                 sum\n"
            "cpu0  2023-11-14T22:00:00Z   10\n"
            "cpu1  2023-11-14T22:00:00Z   50\n");
  EXPECT_EQ(Run("agg sensors gw cpu usage --step 1h --fn sum --tags cpu=cpu1 --from -1h"),
            "start                 sum\n"
            "2023-11-14T22:00:00Z   50\n");
  EXPECT_EQ(Run("range sensors gw --tags cpu"), "error: --tags: 'cpu' has no '=VALUE'\n");
  EXPECT_EQ(Run("range sensors gw --tags cpu=a,cpu=b"), "error: --tags: 'cpu' is given twice\n");

  EXPECT_TRUE(Contains(Run("create-table fleet --attributes firmware,model"), "attributes   firmware,model\n"));
  ASSERT_TRUE(Contains(Run("put fleet env,device=gw,firmware=1.2 t=1" + at), "outcome  stored\n"));
  ASSERT_TRUE(Contains(Run("put fleet env,device=gw,firmware=1.3 t=2 " + std::to_string(kNow)), "outcome  stored\n"));
  EXPECT_EQ(Run("measures fleet"),
            "measure  fields    dimensions  attributes  devices  series\n"
            "env      t:double  -           firmware          1       1\n");
}

TEST_F(EngineCommandsTest, RangeShowsRowsInOrderWithinTheDefaultLimit) {
  PutReadings();
  const std::string range = Run("range sensors d1");
  EXPECT_EQ(range,
            "time                  measure  site  humidity  temperature\n"
            "2023-11-14T21:13:20Z  env      lab         40           20\n"
            "2023-11-14T21:18:20Z  env      lab         41           21\n"
            "2023-11-14T21:23:20Z  env      lab         42           22\n"
            "2023-11-14T21:28:20Z  env      lab         43           23\n"
            "2023-11-14T21:33:20Z  env      lab         44           24\n"
            "more: use --page " +
                range.substr(range.rfind(' ') + 1));
  EXPECT_TRUE(Contains(Run("range sensors d1 --desc --limit 1"),
                       "2023-11-14T22:08:20Z  env      lab         51           31\nmore: use --page "));
  EXPECT_EQ(Run("range sensors d1 --from 2023-11-14T22:00:00Z --to 2023-11-14T23:08:20+01:00"),
            "time                  measure  site  humidity  temperature\n"
            "2023-11-14T22:03:20Z  env      lab         50           30\n");
}

TEST_F(EngineCommandsTest, RangePagesThroughEverythingWithTheToken) {
  PutReadings();
  std::vector<std::string> times;
  std::string page;
  for (int request = 0; request < 10; ++request) {
    const std::string json =
        Run("range sensors d1 --json --limit 5" + (page.empty() ? "" : " --page " + page));
    ASSERT_TRUE(Contains(json, "{\"columns\":[\"time\",\"measure\",\"site\",\"humidity\",\"temperature\"]"))
        << json;
    for (size_t at = json.find("\"time\":\""); at != std::string::npos;
         at = json.find("\"time\":\"", at + 1)) {
      times.push_back(json.substr(at + 8, 20));
    }
    const size_t next = json.find("\"next_page\":\"");
    if (next == std::string::npos) break;
    page = json.substr(next + 13, json.find('"', next + 13) - (next + 13));
    ASSERT_FALSE(page.empty()) << json;
  }
  ASSERT_EQ(times.size(), 12u);
  EXPECT_EQ(times.front(), "2023-11-14T21:13:20Z");
  EXPECT_EQ(times.back(), "2023-11-14T22:08:20Z");
  for (size_t i = 1; i < times.size(); ++i) EXPECT_LT(times[i - 1], times[i]);

  // The text form's hint is a command-line word that continues the same way.
  const std::string first = Run("range sensors d1 --limit 11");
  const std::string token = first.substr(first.rfind(' ') + 1, first.size() - first.rfind(' ') - 2);
  const std::string rest = Run("range sensors d1 --limit 11 --page " + token);
  EXPECT_EQ(rest,
            "time                  measure  site  humidity  temperature\n"
            "2023-11-14T22:08:20Z  env      lab         51           31\n");
}

TEST_F(EngineCommandsTest, RangeFiltersByMeasureAndPrefix) {
  Put("env#temperature,device=d1 v=1 1699999990000000000");
  Put("env#humidity,device=d1 v=2 1699999991000000000");
  Put("power,device=d1 v=3 1699999992000000000");
  const std::string prefix = Run("range sensors d1 --prefix env#");
  EXPECT_TRUE(Contains(prefix, "env#temperature")) << prefix;
  EXPECT_TRUE(Contains(prefix, "env#humidity")) << prefix;
  EXPECT_FALSE(Contains(prefix, "power")) << prefix;
  const std::string exact = Run("range sensors d1 --measure power");
  EXPECT_TRUE(Contains(exact, "2023-11-14T22:13:12Z  power    3\n")) << exact;
  EXPECT_FALSE(Contains(exact, "env#")) << exact;
  EXPECT_EQ(Run("range sensors d1 --measure a --prefix b"), "error: give --measure or --prefix, not both\n");
}

TEST_F(EngineCommandsTest, RangeArgumentErrors) {
  EXPECT_EQ(Run("range sensors d1 --limit 0"), "error: --limit: '0' is not a number from 1 to 50\n");
  EXPECT_EQ(Run("range sensors d1 --limit 51"), "error: --limit: '51' is not a number from 1 to 50\n");
  EXPECT_EQ(Run("range sensors d1 --limit ten"), "error: --limit: 'ten' is not a number from 1 to 50\n");
  EXPECT_TRUE(Contains(Run("range sensors d1 --from yesterday"),
                       "error: --from: bad time 'yesterday': expected RFC 3339 like 2026-11-21T09:41:07Z"));
  EXPECT_EQ(Run("range sensors d1 --from 2023-13-01T00:00:00Z"),
            "error: --from: bad time '2023-13-01T00:00:00Z': month 13 does not exist\n");
  EXPECT_EQ(Run("range sensors d1 --from -1h --to -2h"), "error: --from must be before --to\n");
  EXPECT_EQ(Run("range sensors d1 --page bogus"),
            "error: --page: 'bogus' is not a page token from an earlier range\n");
}

TEST_F(EngineCommandsTest, RelativeTimesCountFromTheClock) {
  PutReadings();
  // The last 12 minutes hold the readings of 22:03:20 and 22:08:20.
  const std::string recent = Run("range sensors d1 --from -12m");
  EXPECT_EQ(recent,
            "time                  measure  site  humidity  temperature\n"
            "2023-11-14T22:03:20Z  env      lab         50           30\n"
            "2023-11-14T22:08:20Z  env      lab         51           31\n");
  EXPECT_EQ(Run("range sensors d1 --from now"), "time  measure\n(no rows)\n");
}

TEST_F(EngineCommandsTest, AggregatesPerStep) {
  PutReadings();
  // Buckets start at whole half hours; the first counts only readings from
  // --from (21:13:20) on: readings 0-3, then 4-9, then 10-11.
  EXPECT_EQ(Run("agg sensors d1 env temperature --step 30m --fn min,max,avg,count,sum,first,last --from -1h"),
            "start                 min  max   avg  count  sum  first  last\n"
            "2023-11-14T21:00:00Z   20   23  21.5      4   86     20    23\n"
            "2023-11-14T21:30:00Z   24   29  26.5      6  159     24    29\n"
            "2023-11-14T22:00:00Z   30   31  30.5      2   61     30    31\n");
  EXPECT_EQ(Run("agg sensors d1 env humidity --step 1h --from -1h --json"),
            "{\"columns\":[\"start\",\"count\",\"min\",\"max\",\"avg\"],\"rows\":["
            "{\"start\":\"2023-11-14T21:00:00Z\",\"count\":10,\"min\":40,\"max\":49,\"avg\":44.5},"
            "{\"start\":\"2023-11-14T22:00:00Z\",\"count\":2,\"min\":50,\"max\":51,\"avg\":50.5}]}\n");
  // Without --from: the day before now; the first (aligned) bucket is empty.
  EXPECT_EQ(Run("agg sensors d1 env temperature --step 1d --fn count"),
            "start                 count\n"
            "2023-11-14T00:00:00Z     12\n");
}

TEST_F(EngineCommandsTest, TheFirstAlignedBucketCountsNothingBeforeFrom) {
  PutReadings();
  // --from 21:23:20: the readings of 21:13:20 and 21:18:20 lie in the
  // 21:00 bucket but before --from, so only 21:23:20 and 21:28:20 count.
  EXPECT_EQ(
      Run("agg sensors d1 env temperature --step 30m --fn count,min --from -50m --to 2023-11-14T21:30:00Z"),
      "start                 count  min\n"
      "2023-11-14T21:00:00Z      2   22\n");
  // A --from on a step boundary needs no partial bucket.
  EXPECT_EQ(Run("agg sensors d1 env temperature --step 30m --fn count --from 2023-11-14T21:30:00Z"),
            "start                 count\n"
            "2023-11-14T21:30:00Z      6\n"
            "2023-11-14T22:00:00Z      2\n");
  // A window inside one step: one partial bucket, labelled with its step.
  EXPECT_EQ(Run("agg sensors d1 env temperature --step 1d --fn count --from -20m --to -5m"),
            "start                 count\n"
            "2023-11-14T00:00:00Z      3\n");
}

TEST_F(EngineCommandsTest, AggregateErrorsNameTheProblem) {
  PutReadings();
  EXPECT_EQ(Run("agg sensors d1 env temperature"), "error: agg needs --step D, e.g. --step 15m\n");
  EXPECT_TRUE(
      Contains(Run("agg sensors d1 env temperature --step fast"), "error: --step: bad duration 'fast'"));
  EXPECT_EQ(Run("agg sensors d1 env temperature --step 0s"), "error: --step must be positive\n");
  EXPECT_EQ(Run("agg sensors d1 env temperature --step 1m --fn median"),
            "error: --fn: unknown aggregate function 'median' (min, max, avg, sum, count, first, last)\n");
  EXPECT_EQ(Run("agg sensors d1 env temperature --step 1m --fn min,"),
            "error: --fn: unknown aggregate function '' (min, max, avg, sum, count, first, last)\n");
  EXPECT_EQ(Run("agg sensors d1 env pressure --step 1m"), "error: measure 'env' has no field 'pressure'\n");
  EXPECT_EQ(Run("agg sensors d1 env temperature --step 1ns --from 2000-01-01"),
            "error: too many buckets: at most 1000000 steps per query\n");
  EXPECT_EQ(Run("agg sensors d1 env temperature --step 1m --from now --to -1h"),
            "error: --from must be before --to\n");
  EXPECT_EQ(Run("agg sensors d1 env"),
            "error: agg needs 4 arguments, got 3; usage: agg [--step D] [--fn F,...] "
            "[--tags K=V,...] [--group-by TAG,...] [--from T] [--to T] [--json] TABLE DEVICE MEASURE FIELD\n");
}

TEST_F(EngineCommandsTest, AggregateOfTheSameFunctionTwiceKeepsColumnsDistinct) {
  PutReadings();
  EXPECT_EQ(
      Run("agg sensors d1 env temperature --step 1d --from -1h --fn max,max --json"),
      "{\"columns\":[\"start\",\"max\",\"max#2\"],\"rows\":[{\"start\":\"2023-11-14T00:00:00Z\",\"max\":31,"
      "\"max#2\":31}]}\n");
}

TEST_F(EngineCommandsTest, StatsAndHealth) {
  PutReadings();
  Run("put sensors env,device=d1,site=lab temperature=20,humidity=40i " + std::to_string(kNow - kHour));
  const std::string stats = Run("stats");
  EXPECT_TRUE(HasEntry(stats, "records_written", "13")) << stats;
  EXPECT_TRUE(HasEntry(stats, "records_duplicate", "1")) << stats;
  EXPECT_TRUE(HasEntry(stats, "series", "2")) << stats;
  EXPECT_TRUE(HasEntry(stats, "records_over_series_limit", "0")) << stats;
  // Flash wear: the 13 readings stored (the put above was a duplicate),
  // 8 bytes of time and 8 per number field, counted by the next sample.
  EXPECT_TRUE(HasEntry(stats, "flash_reading_bytes", "0")) << stats;
  clock_.AdvanceSeconds(61);
  ASSERT_TRUE(engine_->Maintain().ok());
  const std::string sampled = Run("stats");
  EXPECT_TRUE(HasEntry(sampled, "flash_reading_bytes", std::to_string(12 * 24 + 16))) << sampled;
  EXPECT_TRUE(HasEntry(sampled, "flash_observed_seconds", "61")) << sampled;
  EXPECT_TRUE(Contains(Run("stats --json"), "\"records_written\":13,")) << Run("stats --json");

  const std::string health = Run("health");
  EXPECT_TRUE(HasEntry(health, "status", "ok")) << health;
  EXPECT_TRUE(HasEntry(health, "data_dir", dir_.path())) << health;
  EXPECT_TRUE(HasEntry(health, "tables", "1")) << health;
  EXPECT_TRUE(Contains(health, "\nflash_device ")) << health;
  EXPECT_TRUE(HasEntry(health, "flash_projected_days", "-")) << health;
  const std::string json = Run("health --json");
  EXPECT_TRUE(Contains(json, "{\"status\":\"ok\",\"data_dir\":")) << json;
  EXPECT_TRUE(Contains(json, "\"free_bytes\":")) << json;
}

TEST_F(EngineCommandsTest, LatestShowsVersionAndTtlOnlyWhenPresent) {
  Record record;
  record.device_id = "d1";
  record.measure_name = "env";
  record.timestamp = kNow - kMinute;
  record.fields = {{"time", 1.5}};
  record.version = 3;
  record.ttl = kNow / kSecond + 3600;
  Result<WriteResult> written = engine_->Write("sensors", {record});
  ASSERT_TRUE(written.ok());
  ASSERT_EQ(written->stored, 1u);
  EXPECT_EQ(Run("latest sensors d1"),
            "time                  measure  version  ttl                   time (field)\n"
            "2023-11-14T22:12:20Z  env            3  2023-11-14T23:13:20Z           1.5\n");
}

TEST_F(EngineCommandsTest, FieldNamesNeverMakeDuplicateColumns) {
  Record record;
  record.device_id = "d1";
  record.measure_name = "env";
  record.timestamp = kNow - kMinute;
  record.fields = {{"time", 1.0}, {"time (field)", 2.0}, {"device", 3.0}, {"device (field)", 4.0}};
  Result<WriteResult> written = engine_->Write("sensors", {record});
  ASSERT_TRUE(written.ok());
  ASSERT_EQ(written->stored, 1u);
  // JSON objects with a repeated key lose one of the values in most parsers.
  for (const std::string& command :
       {std::string("latest sensors d1 --json"), std::string("latest-batch sensors d1 --json")}) {
    const std::string json = Run(command);
    Result<JsonValue> parsed = JsonValue::Parse(json);
    ASSERT_TRUE(parsed.ok()) << json;
    const JsonValue& row = parsed->Find("rows")->elements()[0];
    std::set<std::string> keys;
    std::set<double> values;
    for (const auto& [key, value] : row.members()) {
      EXPECT_TRUE(keys.insert(key).second) << command << ": duplicate key " << key << " in " << json;
      if (value.is_number() && key != "time") values.insert(value.number());
    }
    EXPECT_EQ(values, (std::set<double>{1, 2, 3, 4})) << json;
  }
}

TEST(EngineCommandsRegistrationTest, RefusesAMissingDataDirectoryAndBadLimits) {
  CommandRegistry registry;
  ManualClockEnv clock(Env::Default());
  EngineCommandOptions options;
  EXPECT_TRUE(RegisterEngineCommands(&registry, nullptr, &clock, options).Is(StatusCode::kInvalidArgument));
  options.data_dir = "/tmp";
  options.default_limit = 10;
  options.max_limit = 5;
  EXPECT_TRUE(RegisterEngineCommands(&registry, nullptr, &clock, options).Is(StatusCode::kInvalidArgument));
  EXPECT_TRUE(registry.Commands().empty());
}

// ---- time and duration arguments -----------------------------------------------

int64_t Time(std::string_view text) {
  Result<int64_t> parsed = ParseTimeArgument(text, kNow);
  EXPECT_TRUE(parsed.ok()) << text << ": " << parsed.status().ToString();
  return parsed.ok() ? *parsed : 0;
}

std::string TimeError(std::string_view text) {
  Result<int64_t> parsed = ParseTimeArgument(text, kNow);
  EXPECT_FALSE(parsed.ok()) << text << " parsed as " << (parsed.ok() ? *parsed : 0);
  return parsed.ok() ? "" : parsed.status().message();
}

TEST(TimeArgumentTest, Rfc3339) {
  EXPECT_EQ(Time("2023-11-14T22:13:20Z"), kNow);
  EXPECT_EQ(Time("2023-11-14t22:13:20z"), kNow);
  EXPECT_EQ(Time("2023-11-14 22:13:20Z"), kNow);
  EXPECT_EQ(Time("2023-11-14T23:13:20+01:00"), kNow);
  EXPECT_EQ(Time("2023-11-14T16:43:20-05:30"), kNow);
  EXPECT_EQ(Time("2023-11-14T22:13:20.5Z"), kNow + 500'000'000);
  EXPECT_EQ(Time("2023-11-14T22:13:20.000000001Z"), kNow + 1);
  EXPECT_EQ(Time("2023-11-14T22:13:20.123456789Z"), kNow + 123'456'789);
  EXPECT_EQ(Time("2023-11-14"), kNow - (22 * kHour + 13 * kMinute + 20 * kSecond));
  EXPECT_EQ(Time("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(Time("1969-12-31T23:59:59.999999999Z"), -1);
  EXPECT_EQ(Time("2024-02-29T00:00:00Z"), Time("2024-03-01T00:00:00Z") - kDay);
  EXPECT_EQ(Time("2000-02-29"), 951782400 * kSecond);
  // The extremes int64 nanoseconds can hold.
  EXPECT_EQ(Time("2262-04-11T23:47:16.854775807Z"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(Time("1677-09-21T00:12:43.145224192Z"), std::numeric_limits<int64_t>::min());
}

TEST(TimeArgumentTest, EpochNanosecondsNowAndRelative) {
  EXPECT_EQ(Time("0"), 0);
  EXPECT_EQ(Time("1700000000000000000"), kNow);
  EXPECT_EQ(Time("-5"), -5);
  EXPECT_EQ(Time("now"), kNow);
  EXPECT_EQ(Time("-1h"), kNow - kHour);
  EXPECT_EQ(Time("-30m"), kNow - 30 * kMinute);
  EXPECT_EQ(Time("+10s"), kNow + 10 * kSecond);
  EXPECT_EQ(Time("-1d12h"), kNow - 36 * kHour);
}

TEST(TimeArgumentTest, ErrorsNameWhatIsWrong) {
  const std::string forms =
      "expected RFC 3339 like 2026-11-21T09:41:07Z, nanoseconds since the epoch, now, or a time relative to "
      "now "
      "like -1h";
  EXPECT_EQ(TimeError("yesterday"), "bad time 'yesterday': " + forms);
  EXPECT_EQ(TimeError(""), "bad time '': " + forms);
  EXPECT_EQ(TimeError("-1x"), "bad time '-1x': " + forms);
  EXPECT_EQ(TimeError("2023-11-14T22:13Z"), "bad time '2023-11-14T22:13Z': " + forms);
  EXPECT_EQ(TimeError("2023-11-14T22:13:20"),
            "bad time '2023-11-14T22:13:20': no time zone; end it with Z or an offset like +01:00");
  EXPECT_EQ(TimeError("2023-11-14T22:13:20+0100"),
            "bad time '2023-11-14T22:13:20+0100': the offset must look like +01:00 or -05:30");
  EXPECT_EQ(TimeError("2023-11-14T22:13:20Zjunk"), "bad time '2023-11-14T22:13:20Zjunk': " + forms);
  EXPECT_EQ(TimeError("2023-11-14T22:13:20.Z"),
            "bad time '2023-11-14T22:13:20.Z': no digits after the decimal point");
  EXPECT_EQ(
      TimeError("2023-11-14T22:13:20.1234567891Z"),
      "bad time '2023-11-14T22:13:20.1234567891Z': more than 9 fraction digits (cairn keeps nanoseconds)");
  EXPECT_EQ(TimeError("2023-00-10"), "bad time '2023-00-10': month 0 does not exist");
  EXPECT_EQ(TimeError("2023-02-29"), "bad time '2023-02-29': day 29 does not exist in that month");
  EXPECT_EQ(TimeError("2100-02-29"), "bad time '2100-02-29': day 29 does not exist in that month");
  EXPECT_EQ(TimeError("2023-04-31"), "bad time '2023-04-31': day 31 does not exist in that month");
  EXPECT_EQ(TimeError("2023-11-14T24:00:00Z"), "bad time '2023-11-14T24:00:00Z': hour 24 does not exist");
  EXPECT_EQ(TimeError("2023-11-14T22:60:00Z"), "bad time '2023-11-14T22:60:00Z': minute 60 does not exist");
  EXPECT_EQ(TimeError("2016-12-31T23:59:60Z"),
            "bad time '2016-12-31T23:59:60Z': second 60 does not exist (leap seconds are not kept)");
  EXPECT_EQ(TimeError("1600-01-01"),
            "bad time '1600-01-01': outside the times cairn can store (1677-09-21 to 2262-04-11)");
  EXPECT_EQ(TimeError("2262-04-11T23:47:16.854775808Z"),
            "bad time '2262-04-11T23:47:16.854775808Z': outside the times cairn can store (1677-09-21 to "
            "2262-04-11)");
  EXPECT_EQ(TimeError("9223372036854775808"),
            "bad time '9223372036854775808': out of the range of int64 nanoseconds");
  EXPECT_EQ(TimeError("+106751d"),
            "bad time '+106751d': outside the times cairn can store (1677-09-21 to 2262-04-11)");
}

TEST(DurationArgumentTest, UnitsAndSequences) {
  EXPECT_EQ(*ParseDurationArgument("30d"), 30 * kDay);
  EXPECT_EQ(*ParseDurationArgument("12h"), 12 * kHour);
  EXPECT_EQ(*ParseDurationArgument("90m"), 90 * kMinute);
  EXPECT_EQ(*ParseDurationArgument("3600s"), kHour);
  EXPECT_EQ(*ParseDurationArgument("1h30m"), 90 * kMinute);
  EXPECT_EQ(*ParseDurationArgument("2w"), 14 * kDay);
  EXPECT_EQ(*ParseDurationArgument("250ms"), 250'000'000);
  EXPECT_EQ(*ParseDurationArgument("7us"), 7'000);
  EXPECT_EQ(*ParseDurationArgument("1ns"), 1);
  EXPECT_EQ(*ParseDurationArgument("0s"), 0);
  EXPECT_EQ(*ParseDurationArgument("106751d"), 106751 * kDay);
}

TEST(DurationArgumentTest, ErrorsNameTheAcceptedForms) {
  const std::string forms =
      "expected numbers with units like 30d, 12h, 90m, 3600s or 1h30m (units ns, us, ms, s, m, h, d, w)";
  for (const char* text : {"", "h", "10", "10x", "-1h", "1.5h", "1h 30m", "1H", "h1"}) {
    Result<int64_t> parsed = ParseDurationArgument(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.status().message(), "bad duration '" + std::string(text) + "': " + forms);
  }
  EXPECT_EQ(ParseDurationArgument("106752d").status().message(),
            "bad duration '106752d': too long (at most about 292 years)");
  EXPECT_EQ(ParseDurationArgument("99999999999999999999s").status().message(),
            "bad duration '99999999999999999999s': too long (at most about 292 years)");
  EXPECT_EQ(ParseDurationArgument("106751d1d").status().message(),
            "bad duration '106751d1d': too long (at most about 292 years)");
}

TEST(DurationArgumentTest, FormatsInTheLargestExactUnit) {
  EXPECT_EQ(FormatDurationSeconds(0), "0s");
  EXPECT_EQ(FormatDurationSeconds(30 * 86400), "30d");
  EXPECT_EQ(FormatDurationSeconds(36 * 3600), "36h");
  EXPECT_EQ(FormatDurationSeconds(5400), "90m");
  EXPECT_EQ(FormatDurationSeconds(3601), "3601s");
}

// ---- the command-layer extensions the engine commands rely on --------------------

CommandResult Echo(const CommandInvocation& invocation) {
  std::vector<CommandResult::Entry> entries;
  for (size_t i = 0; i < invocation.arguments().size(); ++i) {
    entries.emplace_back("arg" + std::to_string(i), invocation.arguments()[i]);
  }
  entries.emplace_back("json", invocation.json());
  return CommandResult::KeyValues(std::move(entries));
}

TEST(VerbatimArgumentTest, TheLastArgumentIsTheRestOfTheLineAsTyped) {
  CommandRegistry registry;
  CommandSpec spec;
  spec.name = "send";
  spec.min_arguments = 2;
  spec.max_arguments = 2;
  spec.options = {{"to", "X", "destination"}};
  spec.verbatim_last_argument = true;
  ASSERT_TRUE(registry.Register(spec, Echo).ok());

  Result<CommandInvocation> invocation =
      registry.Parse(R"(send --to a  first "quoted \"text\""  \ spaced  --to b  )");
  ASSERT_TRUE(invocation.ok()) << invocation.status().ToString();
  EXPECT_EQ(invocation->arguments(),
            (std::vector<std::string>{"first", R"("quoted \"text\""  \ spaced  --to b)"}));
  EXPECT_EQ(invocation->Value("to"), std::optional<std::string_view>("a"));

  // A quote left open in the verbatim part is the payload's business.
  EXPECT_EQ(registry.Execute(R"(send one two "open)", {}), "arg0  one\narg1  two \"open\njson  false\n");
  // --json before the payload counts; inside it, it is payload.
  EXPECT_EQ(registry.Execute("send --json one two", {}),
            "{\"arg0\":\"one\",\"arg1\":\"two\",\"json\":true}\n");
  EXPECT_EQ(registry.Execute("send one two --json", {}), "arg0  one\narg1  two --json\njson  false\n");
  // Errors before the payload still render as JSON when --json came first.
  EXPECT_EQ(registry.Execute("send --json --bad one two", {}),
            "{\"error\":{\"code\":\"InvalidArgument\",\"message\":\"unknown option --bad for send; type help "
            "send\"}}\n");
  EXPECT_TRUE(registry.Parse("send one").status().Is(StatusCode::kInvalidArgument));

  CommandSpec no_arguments;
  no_arguments.name = "broken";
  no_arguments.verbatim_last_argument = true;
  EXPECT_TRUE(registry.Register(no_arguments, Echo).Is(StatusCode::kInvalidArgument));
}

TEST(VerbatimArgumentTest, TokensRememberWhereTheyStart) {
  Result<std::vector<CommandToken>> tokens = TokenizeCommandLine(R"(  put "a b"  c\ d)");
  ASSERT_TRUE(tokens.ok());
  ASSERT_EQ(tokens->size(), 3u);
  EXPECT_EQ((*tokens)[0].offset, 2u);
  EXPECT_EQ((*tokens)[1].offset, 6u);
  EXPECT_EQ((*tokens)[2].offset, 13u);
  size_t position = 5;
  Result<std::optional<CommandToken>> next = NextCommandToken(R"(  put "a b"  c\ d)", &position);
  ASSERT_TRUE(next.ok() && next->has_value());
  EXPECT_EQ((*next)->text, "a b");
  EXPECT_EQ(position, 11u);
  position = 17;
  next = NextCommandToken(R"(  put "a b"  c\ d)", &position);
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(next->has_value());
}

TEST(CommandNoteTest, NotesFollowTheResultInTextAndJson) {
  CommandResult table = CommandResult::Table({"a"}, {{int64_t{1}}});
  table.AddNote("next_page", std::string("12:env"), "more: use --page 12:env");
  EXPECT_EQ(RenderText(table, {}), "a\n1\nmore: use --page 12:env\n");
  EXPECT_EQ(RenderJson(table, {}), "{\"columns\":[\"a\"],\"rows\":[{\"a\":1}],\"next_page\":\"12:env\"}\n");

  CommandResult entries = CommandResult::KeyValues({{"k", true}});
  entries.AddNote("count", int64_t{3}, "3 more\x1b[0m");
  EXPECT_EQ(RenderText(entries, {}), "k  true\n3 more\\x1b[0m\n");
  EXPECT_EQ(RenderJson(entries, {}), "{\"k\":true,\"count\":3}\n");

  CommandResult error = CommandResult::Error(Status::NotFound("gone"));
  error.AddNote("ignored", int64_t{1}, "ignored");
  EXPECT_TRUE(error.notes().empty());
  EXPECT_EQ(RenderText(error, {}), "error: gone\n");
}

// An engine whose reads stepped over a damaged chunk.
class DamagedReadsEngine : public ForwardingEngine {
 public:
  using ForwardingEngine::ForwardingEngine;
  static SkippedDamage Damage() {
    return SkippedDamage{"/data/sensors/2023-11-12.db", "chunk of series 1 from 5 seq 0",
                         "chunk: checksum mismatch", 7};
  }
  Result<RangeResult> Range(const RangeQuery& query) override {
    CAIRN_ASSIGN_OR_RETURN(RangeResult result, target()->Range(query));
    result.skipped.push_back(Damage());
    return result;
  }
  Result<AggregateResult> Aggregate(const AggregateQuery& query) override {
    CAIRN_ASSIGN_OR_RETURN(AggregateResult result, target()->Aggregate(query));
    result.skipped.push_back(Damage());
    return result;
  }
};

TEST_F(EngineCommandsTest, RangeAndAggSayWhenTheyMissedDamagedData) {
  PutReadings();
  DamagedReadsEngine damaged(engine_.get());
  CommandRegistry registry;
  ASSERT_TRUE(RegisterBuiltinCommands(&registry).ok());
  EngineCommandOptions options;
  options.data_dir = dir_.path();
  ASSERT_TRUE(RegisterEngineCommands(&registry, &damaged, &clock_, options).ok());

  const std::string text = registry.Execute("range sensors d1 --from -2h", RenderOptions{});
  EXPECT_TRUE(Contains(text,
                       "incomplete: 1 damaged part(s) of the stored data skipped, 7 reading(s) not shown: "
                       "/data/sensors/2023-11-12.db: chunk of series 1 from 5 seq 0 (chunk: checksum "
                       "mismatch); see `health`\n"))
      << text;
  Result<JsonValue> json = JsonValue::Parse(registry.Execute("range sensors d1 --from -2h --json", RenderOptions{}));
  ASSERT_TRUE(json.ok());
  ASSERT_NE(json->Find("incomplete"), nullptr);
  EXPECT_TRUE(json->Find("incomplete")->boolean());
  ASSERT_NE(json->Find("skipped"), nullptr);
  EXPECT_TRUE(Contains(json->Find("skipped")->text(), "chunk of series 1 from 5 seq 0"));

  const std::string agg = registry.Execute("agg sensors d1 env temperature --step 15m --from -2h", RenderOptions{});
  EXPECT_TRUE(Contains(agg, "incomplete: 1 damaged part(s)")) << agg;
  // An intact answer says nothing of the kind.
  EXPECT_FALSE(Contains(Run("range sensors d1 --from -2h"), "incomplete"));
}

}  // namespace
}  // namespace cairn
