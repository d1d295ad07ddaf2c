// The engine commands that read: range and its paging and filters, agg,
// stats and health, latest, tags, and answers that missed damaged data.
#include "cairn/shell/engine_commands.h"

#include <cstdint>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "cairn/text/json_value.h"

#include "engine_commands_test_util.h"
#include "forwarding_engine.h"

namespace cairn::engine_commands_testing {
namespace {

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
  Result<ColumnarRangeResult> RangeColumnar(const RangeQuery& query) override {
    CAIRN_ASSIGN_OR_RETURN(ColumnarRangeResult result, target()->RangeColumnar(query));
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
}  // namespace cairn::engine_commands_testing
