// MqttInput's payload formats (mqtt_input_format.md), route parsing, option
// checks and its life cycle without a broker; deliveries over the in-memory
// broker are in mqtt_input_delivery_test.cc, and the tests with mosquitto
// and an engine in tests/integration/mqtt_input_test.cc.
#include "cairn/mqtt/mqtt_input.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "forwarding_engine.h"

namespace cairn {
namespace {

constexpr int64_t kArrival = 1'700'000'123'456'789'012;

LineProtocolOptions Options(TimestampPrecision precision = TimestampPrecision::kNanoseconds) {
  LineProtocolOptions options;
  options.precision = precision;
  options.default_timestamp = kArrival;
  return options;
}

struct Parsed {
  Status status;
  std::vector<Record> records;
  std::vector<std::string> errors;
};

Parsed Parse(std::string_view payload, const LineProtocolOptions& options = Options()) {
  Parsed parsed;
  parsed.status = MqttInput::ParsePayload(payload, options, &parsed.records, &parsed.errors);
  return parsed;
}

std::string Joined(const std::vector<std::string>& errors) {
  std::string text;
  for (const std::string& error : errors) text += error + "\n";
  return text;
}

TEST(MqttInputRouteTest, ParsesFilterEqualsTable) {
  Result<MqttInputRoute> route = ParseMqttInputRoute("sensors/+/readings=readings");
  ASSERT_TRUE(route.ok()) << route.status().ToString();
  EXPECT_EQ(route->topic_filter, "sensors/+/readings");
  EXPECT_EQ(route->table, "readings");

  // The table follows the last '='.
  route = ParseMqttInputRoute("a=b/#=t");
  ASSERT_TRUE(route.ok()) << route.status().ToString();
  EXPECT_EQ(route->topic_filter, "a=b/#");
  EXPECT_EQ(route->table, "t");

  for (const char* bad : {"", "readings", "=t", "sensors/#=", "a/#/b=t", "a+=t"}) {
    Result<MqttInputRoute> refused = ParseMqttInputRoute(bad);
    EXPECT_TRUE(refused.status().Is(StatusCode::kInvalidArgument)) << bad;
  }
}

TEST(MqttInputPayloadTest, LineProtocolAsForHttpWrites) {
  Parsed parsed = Parse(
      "env,device=pump-1,room=cellar temperature=21.5,running=true,starts=12i 1700000000000000000\n"
      "env,device=pump-2 temperature=19\n");
  ASSERT_TRUE(parsed.status.ok()) << parsed.status.ToString();
  EXPECT_TRUE(parsed.errors.empty()) << Joined(parsed.errors);
  ASSERT_EQ(parsed.records.size(), 2u);
  const Record& first = parsed.records[0];
  EXPECT_EQ(first.device_id, "pump-1");
  EXPECT_EQ(first.measure_name, "env");
  EXPECT_EQ(first.timestamp, 1'700'000'000'000'000'000);
  EXPECT_EQ(first.dimensions.at("room"), "cellar");
  ASSERT_EQ(first.fields.size(), 3u);
  EXPECT_EQ(first.fields[0].value, Value(21.5));
  EXPECT_EQ(first.fields[1].value, Value(true));
  EXPECT_EQ(first.fields[2].value, Value(int64_t{12}));
  // No timestamp: the arrival time.
  EXPECT_EQ(parsed.records[1].timestamp, kArrival);
  EXPECT_EQ(parsed.records[1].fields[0].value, Value(19.0));
}

TEST(MqttInputPayloadTest, BadLinesAreReportedAndGoodOnesKept) {
  Parsed parsed = Parse(
      "env,device=a t=1\n"
      "env t=2\n"
      "env,device=c t=nan\n"
      "env,device=d t=4\n");
  ASSERT_TRUE(parsed.status.ok());
  ASSERT_EQ(parsed.records.size(), 2u);
  EXPECT_EQ(parsed.records[0].device_id, "a");
  EXPECT_EQ(parsed.records[1].device_id, "d");
  ASSERT_EQ(parsed.errors.size(), 2u) << Joined(parsed.errors);
  EXPECT_EQ(parsed.errors[0].rfind("line 2: ", 0), 0u) << parsed.errors[0];
  EXPECT_EQ(parsed.errors[1].rfind("line 3: ", 0), 0u) << parsed.errors[1];
}

TEST(MqttInputPayloadTest, JsonReading) {
  Parsed parsed = Parse(
      "  {\"device\": \"pump-1\", \"measure\": \"env#water\", \"time\": 1700000000000000001,"
      " \"fields\": {\"t\": 21.5, \"n\": 21, \"on\": false, \"state\": \"ok\", \"starts\": {\"int\": 12},"
      " \"big\": {\"int\": \"-9223372036854775808\"}},"
      " \"tags\": {\"room\": \"cellar\"}, \"version\": 3}");
  ASSERT_TRUE(parsed.status.ok()) << parsed.status.ToString();
  EXPECT_TRUE(parsed.errors.empty()) << Joined(parsed.errors);
  ASSERT_EQ(parsed.records.size(), 1u);
  const Record& record = parsed.records[0];
  EXPECT_EQ(record.device_id, "pump-1");
  EXPECT_EQ(record.measure_name, "env#water");
  EXPECT_EQ(record.timestamp, 1'700'000'000'000'000'001);
  EXPECT_EQ(record.version, 3u);
  EXPECT_EQ(record.dimensions.at("room"), "cellar");
  ASSERT_EQ(record.fields.size(), 6u);
  EXPECT_EQ(record.fields[0].name, "t");
  EXPECT_EQ(record.fields[0].value, Value(21.5));
  EXPECT_EQ(record.fields[1].value, Value(21.0));
  EXPECT_EQ(record.fields[2].value, Value(false));
  EXPECT_EQ(record.fields[3].value, Value(std::string("ok")));
  EXPECT_EQ(record.fields[4].value, Value(int64_t{12}));
  EXPECT_EQ(record.fields[5].value, Value(std::numeric_limits<int64_t>::min()));
}

TEST(MqttInputPayloadTest, JsonArrayWithPrecisionAndArrivalTime) {
  Parsed parsed = Parse(
      "[{\"device\": \"a\", \"measure\": \"env\", \"time\": 1700000000, \"fields\": {\"t\": 1}},"
      " {\"device\": \"b\", \"measure\": \"env\", \"fields\": {\"t\": 2}}]",
      Options(TimestampPrecision::kSeconds));
  ASSERT_TRUE(parsed.status.ok()) << parsed.status.ToString();
  EXPECT_TRUE(parsed.errors.empty()) << Joined(parsed.errors);
  ASSERT_EQ(parsed.records.size(), 2u);
  EXPECT_EQ(parsed.records[0].timestamp, 1'700'000'000'000'000'000);
  // Truncated to whole seconds, as line protocol does.
  EXPECT_EQ(parsed.records[1].timestamp, 1'700'000'123'000'000'000);
}

TEST(MqttInputPayloadTest, BadJsonReadingsAreReportedAndGoodOnesKept) {
  const std::string good = "{\"device\": \"ok\", \"measure\": \"env\", \"fields\": {\"t\": 1}}";
  const std::vector<std::string> bad = {
      "{\"measure\": \"env\", \"fields\": {\"t\": 1}}",                                  // no device
      "{\"device\": \"d\", \"fields\": {\"t\": 1}}",                                     // no measure
      "{\"device\": \"d\", \"measure\": \"env\"}",                                       // no fields
      "{\"device\": \"d\", \"measure\": \"env\", \"fields\": {}}",                       // empty fields
      "{\"device\": \"d\", \"measure\": \"env\", \"fields\": {\"t\": null}}",            // null value
      "{\"device\": \"d\", \"measure\": \"env\", \"fields\": {\"t\": [1]}}",             // array value
      "{\"device\": \"d\", \"measure\": \"env\", \"fields\": {\"t\": {\"int\": 1.5}}}",  // not an integer
      "{\"device\": \"d\", \"measure\": \"env\", \"fields\": {\"t\": 1}, \"time\": 1.5}",
      "{\"device\": \"d\", \"measure\": \"env\", \"fields\": {\"t\": 1}, \"time\": 99999999999999999999}",
      "{\"device\": \"d\", \"measure\": \"env\", \"fields\": {\"t\": 1}, \"colour\": \"red\"}",
      "{\"device\": 7, \"measure\": \"env\", \"fields\": {\"t\": 1}}",
      "{\"device\": \"\", \"measure\": \"env\", \"fields\": {\"t\": 1}}",
      "{\"device\": \"d\", \"measure\": \"env\", \"fields\": {\"t\": 1}, \"tags\": {\"room\": 3}}",
      "{\"device\": \"d\", \"measure\": \"env\", \"fields\": {\"t\": 1}, \"version\": -1}",
      "42",
  };
  std::string payload = "[" + good;
  for (const std::string& reading : bad) payload += ", " + reading;
  payload += ", " + good + "]";
  Parsed parsed = Parse(payload);
  ASSERT_TRUE(parsed.status.ok()) << parsed.status.ToString();
  EXPECT_EQ(parsed.records.size(), 2u);
  ASSERT_EQ(parsed.errors.size(), bad.size()) << Joined(parsed.errors);
  for (size_t i = 0; i < bad.size(); ++i) {
    EXPECT_EQ(parsed.errors[i].rfind("reading " + std::to_string(i + 2) + ": ", 0), 0u) << parsed.errors[i];
  }

  // A time beyond int64 nanoseconds at the chosen precision.
  Parsed overflow =
      Parse("{\"device\": \"d\", \"measure\": \"env\", \"fields\": {\"t\": 1}, \"time\": 9300000000}",
            Options(TimestampPrecision::kSeconds));
  EXPECT_TRUE(overflow.records.empty());
  ASSERT_EQ(overflow.errors.size(), 1u);
  EXPECT_NE(overflow.errors[0].find("out of range"), std::string::npos) << overflow.errors[0];
}

TEST(MqttInputPayloadTest, JsonReadingSetsTtlVersionAndTimestampFields) {
  Parsed parsed = Parse(
      "[{\"device\": \"d\", \"measure\": \"env\", \"time\": 1700000000, \"ttl\": 1800000000,"
      "  \"version\": 18446744073709551615, \"fields\": {\"t\": 1, \"started\": {\"timestamp\": "
      "1690000000}}},"
      " {\"device\": \"d\", \"measure\": \"env\", \"time\": 1700000001, \"ttl\": \"1800000000\","
      "  \"version\": \"7\", \"fields\": {\"started\": {\"timestamp\": \"-1\"}}}]",
      Options(TimestampPrecision::kSeconds));
  ASSERT_TRUE(parsed.status.ok()) << parsed.status.ToString();
  EXPECT_TRUE(parsed.errors.empty()) << Joined(parsed.errors);
  ASSERT_EQ(parsed.records.size(), 2u);
  EXPECT_EQ(parsed.records[0].ttl, 1'800'000'000);
  EXPECT_EQ(parsed.records[0].version, std::numeric_limits<uint64_t>::max());
  ASSERT_EQ(parsed.records[0].fields.size(), 2u);
  // In the input's precision, like "time".
  EXPECT_EQ(parsed.records[0].fields[1].value, Value(Timestamp{1'690'000'000'000'000'000}));
  EXPECT_EQ(parsed.records[1].ttl, 1'800'000'000);
  EXPECT_EQ(parsed.records[1].version, 7u);
  EXPECT_EQ(parsed.records[1].fields[0].value, Value(Timestamp{-1'000'000'000}));
}

TEST(MqttInputPayloadTest, BadTtlVersionAndTimestampFieldsRefuseTheReading) {
  const std::string head = "{\"device\": \"d\", \"measure\": \"env\", \"time\": 1700000000000000000, ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"\"ttl\": -1, \"fields\": {\"t\": 1}}", "\"ttl\" must not be negative"},
      {"\"ttl\": 1.5e9, \"fields\": {\"t\": 1}}", "\"ttl\" must be an integer within uint64"},
      {"\"ttl\": \"soon\", \"fields\": {\"t\": 1}}", "\"ttl\" must be an integer within uint64"},
      {"\"ttl\": true, \"fields\": {\"t\": 1}}", "\"ttl\" must be an integer"},
      {"\"ttl\": 9223372036854775808, \"fields\": {\"t\": 1}}", "beyond int64 seconds"},
      {"\"ttl\": 3600, \"fields\": {\"t\": 1}}",
       "\"ttl\" 3600 is not after the record's time (1700000000 s)"},
      {"\"version\": 18446744073709551616, \"fields\": {\"t\": 1}}", "within uint64"},
      {"\"version\": 2.5, \"fields\": {\"t\": 1}}", "within uint64"},
      {"\"fields\": {\"t\": {\"timestamp\": 1.5}}}", "{\"timestamp\": ...} must be an integer within int64"},
      {"\"fields\": {\"t\": {\"timestamp\": 1, \"int\": 1}}}", "{\"timestamp\": integer}"},
      {"\"fields\": {\"_ttl\": {\"int\": 1800000000}, \"t\": 1}}",
       "field names starting with '_' are reserved ('_ttl'); a reading's expiry and version are its \"ttl\""},
  };
  for (const auto& [tail, reason] : cases) {
    Parsed parsed = Parse(head + tail);
    EXPECT_TRUE(parsed.records.empty()) << tail;
    ASSERT_EQ(parsed.errors.size(), 1u) << tail;
    EXPECT_NE(parsed.errors[0].find(reason), std::string::npos) << parsed.errors[0];
  }
  Parsed overflow =
      Parse("{\"device\": \"d\", \"measure\": \"env\", \"fields\": {\"t\": {\"timestamp\": 9300000000}}}",
            Options(TimestampPrecision::kSeconds));
  ASSERT_EQ(overflow.errors.size(), 1u);
  EXPECT_NE(overflow.errors[0].find("out of range for precision s"), std::string::npos) << overflow.errors[0];
}

TEST(MqttInputPayloadTest, LineProtocolPayloadsSetTtlAndVersionByReservedFields) {
  Parsed parsed =
      Parse("env,device=d t=1,_ttl=1800000000i,_version=4i,at=1700000000000000000t 1700000000000000000");
  ASSERT_EQ(parsed.records.size(), 1u) << Joined(parsed.errors);
  EXPECT_EQ(parsed.records[0].ttl, 1'800'000'000);
  EXPECT_EQ(parsed.records[0].version, 4u);
  EXPECT_EQ(parsed.records[0].fields.size(), 2u);
}

TEST(MqttInputPayloadTest, UnparseableJsonFailsTheMessage) {
  for (const char* payload : {"{", "[{\"device\": \"d\"", "{\"device\": \"d\"} trailing", "[1, 2"}) {
    Parsed parsed = Parse(payload);
    EXPECT_TRUE(parsed.status.Is(StatusCode::kInvalidArgument)) << payload;
    EXPECT_TRUE(parsed.records.empty());
  }
}

TEST(MqttInputOptionsTest, RefusesBadOptions) {
  MqttInputOptions options;
  options.link.server_uri = "tcp://127.0.0.1:1";
  options.link.client_id = "cairn-input-unit";
  // The engine is checked after the routes and the backoff bounds.
  Engine* no_engine = nullptr;
  EXPECT_TRUE(
      MqttInput::Create(Env::Default(), no_engine, options).status().Is(StatusCode::kInvalidArgument));
  options.routes = {{"sensors/#", "readings"}};
  Result<std::unique_ptr<MqttInput>> created = MqttInput::Create(Env::Default(), no_engine, options);
  EXPECT_NE(created.status().message().find("engine"), std::string::npos) << created.status().ToString();

  MqttInputOptions subscribed = options;
  subscribed.link.subscriptions = {"other/#"};
  created = MqttInput::Create(Env::Default(), no_engine, subscribed);
  EXPECT_NE(created.status().message().find("subscriptions"), std::string::npos)
      << created.status().ToString();

  MqttInputOptions bad_filter = options;
  bad_filter.routes = {{"sensors/#/x", "readings"}};
  EXPECT_TRUE(
      MqttInput::Create(Env::Default(), no_engine, bad_filter).status().Is(StatusCode::kInvalidArgument));

  MqttInputOptions no_table = options;
  no_table.routes = {{"sensors/#", ""}};
  EXPECT_TRUE(
      MqttInput::Create(Env::Default(), no_engine, no_table).status().Is(StatusCode::kInvalidArgument));

  MqttInputOptions backoff = options;
  backoff.retry_min_ms = 0;
  created = MqttInput::Create(Env::Default(), no_engine, backoff);
  EXPECT_NE(created.status().message().find("retry"), std::string::npos) << created.status().ToString();
}

TEST(MqttInputLifecycleTest, StartsOnceStopsOnceAndReportsNothingWithoutABroker) {
  // Nothing listens on port 1: the link keeps trying, no message arrives, so
  // the engine is never called.
  ForwardingEngine engine(nullptr);
  MqttInputOptions options;
  options.link.server_uri = "tcp://127.0.0.1:1";
  options.link.client_id = "cairn-input-unit";
  options.link.reconnect_min_ms = 10;
  options.link.reconnect_max_ms = 50;
  options.routes = {{"sensors/#", "readings"}};
  Result<std::unique_ptr<MqttInput>> created = MqttInput::Create(Env::Default(), &engine, options);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  MqttInput& input = **created;

  MqttInputStats stats = input.stats();
  EXPECT_EQ(stats.messages, 0u);
  EXPECT_EQ(stats.pauses, 0u);
  EXPECT_FALSE(stats.paused);
  EXPECT_EQ(stats.messages_held, 0u);
  EXPECT_FALSE(stats.link.connected);

  ASSERT_TRUE(input.Start().ok());
  EXPECT_TRUE(input.Start().Is(StatusCode::kFailedPrecondition));
  EXPECT_FALSE(input.WaitConnected(20));
  input.Stop();
  input.Stop();
  stats = input.stats();
  EXPECT_EQ(stats.messages, 0u);
  EXPECT_EQ(stats.messages_failed, 0u);
  EXPECT_FALSE(stats.paused);
  EXPECT_FALSE(stats.link.connected);
  // Stopped: nothing to wait for, whatever the timeout.
  EXPECT_FALSE(input.WaitConnected(3'600'000));
  EXPECT_TRUE(input.Start().Is(StatusCode::kFailedPrecondition));

  // Stopped before it ever started: it cannot start any more.
  created = MqttInput::Create(Env::Default(), &engine, options);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  (*created)->Stop();
  EXPECT_TRUE((*created)->Start().Is(StatusCode::kFailedPrecondition));
}

}  // namespace
}  // namespace cairn
