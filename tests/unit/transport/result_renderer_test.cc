#include "cairn/shell/result_renderer.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace cairn {
namespace {

CommandResult Readings() {
  return CommandResult::Table({"device", "temperature", "ok"},
                              {
                                  {std::string("dev-1"), 21.5, true},
                                  {std::string("Küche"), -3.25, false},
                                  {std::string("long-device-name"), Value(), true},
                              });
}

TEST(RenderTextTest, AlignsColumnsAndRightAlignsNumbers) {
  EXPECT_EQ(RenderText(Readings(), {}),
            "device            temperature  ok\n"
            "dev-1                    21.5  true\n"
            "Küche                   -3.25  false\n"
            "long-device-name            -  true\n");
}

TEST(RenderTextTest, EmptyTableSaysSo) {
  EXPECT_EQ(RenderText(CommandResult::Table({"a", "b"}, {}), {}), "a  b\n(no rows)\n");
}

TEST(RenderTextTest, KeyValuesAlignValues) {
  const CommandResult result = CommandResult::KeyValues({
      {"records", int64_t{42}},
      {"oldest_unsynced", Timestamp{1714564800 * int64_t{1000000000}}},
      {"ratio", 0.1},
  });
  EXPECT_EQ(RenderText(result, {}),
            "records          42\n"
            "oldest_unsynced  2024-05-01T12:00:00Z\n"
            "ratio            0.1\n");
}

TEST(RenderTextTest, ErrorsArePrefixed) {
  EXPECT_EQ(RenderText(CommandResult::Error(Status::NotFound("no table sensors")), {}),
            "error: no table sensors\n");
}

TEST(RenderTextTest, StoredTextCannotDriveTheTerminal) {
  const CommandResult result = CommandResult::Table(
      {"value"},
      {{std::string("\x1b[2J\r\nboom\x07")}, {std::string("bad\xFF")}, {std::string("c1\xC2\x9B")}});
  EXPECT_EQ(RenderText(result, {}),
            "value\n"
            "\\x1b[2J\\r\\nboom\\x07\n"
            "bad\xEF\xBF\xBD\n"
            "c1\\u009b\n");
}

TEST(RenderTextTest, ValueToTextCoversEveryType) {
  EXPECT_EQ(ValueToText(Value()), "-");
  EXPECT_EQ(ValueToText(true), "true");
  EXPECT_EQ(ValueToText(std::numeric_limits<int64_t>::min()), "-9223372036854775808");
  EXPECT_EQ(ValueToText(1e21), "1e+21");
  EXPECT_EQ(ValueToText(0.30000000000000004), "0.30000000000000004");
  EXPECT_EQ(ValueToText(std::string("text")), "text");
  EXPECT_EQ(ValueToText(Timestamp{-1}), "1969-12-31T23:59:59.999999999Z");
}

CommandResult Numbers(int count) {
  std::vector<CommandResult::Row> rows;
  for (int i = 0; i < count; ++i) rows.push_back({int64_t{i}});
  return CommandResult::Table({"n"}, std::move(rows));
}

TEST(RenderTextTest, RowCapShowsTheFirstRowsAndSaysHowManyAreLeft) {
  EXPECT_EQ(RenderText(Numbers(5), RenderOptions{.max_rows = 2}),
            "n\n"
            "0\n"
            "1\n"
            "more: 3 of 5 rows not shown; narrow the query or page with --limit/--from\n");
  EXPECT_EQ(RenderText(Numbers(2), RenderOptions{.max_rows = 2}), "n\n0\n1\n");
}

TEST(RenderTextTest, ByteCapStopsAddingRowsOnceReached) {
  // "n\n" is 2 bytes; every row "k\n" 2 more. With a 5-byte cap, rows are
  // added while the output is below 5 bytes: after "n\n0\n1\n" (6) it stops.
  EXPECT_EQ(RenderText(Numbers(10), RenderOptions{.max_bytes = 5}),
            "n\n0\n1\nmore: 8 of 10 rows not shown; narrow the query or page with --limit/--from\n");
}

TEST(RenderTextTest, KeyValuesAreCappedToo) {
  const CommandResult result =
      CommandResult::KeyValues({{"a", int64_t{1}}, {"b", int64_t{2}}, {"c", int64_t{3}}});
  EXPECT_EQ(RenderText(result, RenderOptions{.max_rows = 1}),
            "a  1\nmore: 2 of 3 entries not shown; narrow the query or page with --limit/--from\n");
}

TEST(RenderJsonTest, TableRowsAreObjectsInColumnOrder) {
  EXPECT_EQ(RenderJson(Readings(), {}), R"({"columns":["device","temperature","ok"],"rows":[)"
                                        R"({"device":"dev-1","temperature":21.5,"ok":true},)"
                                        R"({"device":"Küche","temperature":-3.25,"ok":false},)"
                                        R"({"device":"long-device-name","temperature":null,"ok":true}]})"
                                        "\n");
}

// Aggregates of int64 fields answer int64 values: both renderings print
// every digit, so a sum past 2^53 or at the int64 extremes reads back
// exactly (a JSON reader keeps an integer literal as an integer).
TEST(RenderJsonTest, Int64AggregatesPrintEveryDigit) {
  const CommandResult result = CommandResult::Table(
      {"sum", "min", "max", "avg"}, {{int64_t{9007199254740993}, std::numeric_limits<int64_t>::min(),
                                      std::numeric_limits<int64_t>::max(), 9007199254740992.0}});
  EXPECT_EQ(RenderJson(result, {}), R"({"columns":["sum","min","max","avg"],"rows":[)"
                                    R"({"sum":9007199254740993,"min":-9223372036854775808,)"
                                    R"("max":9223372036854775807,"avg":9007199254740992}]})"
                                    "\n");
  EXPECT_NE(RenderText(result, {}).find("9007199254740993  -9223372036854775808  9223372036854775807"),
            std::string::npos)
      << RenderText(result, {});
}

TEST(RenderJsonTest, KeyValuesAreOneObject) {
  const CommandResult result = CommandResult::KeyValues({
      {"count", int64_t{-7}},
      {"since", Timestamp{1500}},
      {"name", std::string("a\"b")},
  });
  EXPECT_EQ(RenderJson(result, {}), R"({"count":-7,"since":"1970-01-01T00:00:00.000001500Z","name":"a\"b"})"
                                    "\n");
}

TEST(RenderJsonTest, ErrorCarriesCodeAndMessage) {
  EXPECT_EQ(RenderJson(CommandResult::Error(Status::PermissionDenied("token lacks write on t")), {}),
            R"({"error":{"code":"PermissionDenied","message":"token lacks write on t"}})"
            "\n");
}

TEST(RenderJsonTest, CapsReportRowsNotShown) {
  EXPECT_EQ(RenderJson(Numbers(5), RenderOptions{.max_rows = 2}),
            R"({"columns":["n"],"rows":[{"n":0},{"n":1}],"rows_not_shown":3})"
            "\n");
  // `{"columns":["n"],"rows":[` is 25 bytes; each row adds 7 or 8.
  EXPECT_EQ(RenderJson(Numbers(10), RenderOptions{.max_bytes = 30}),
            R"({"columns":["n"],"rows":[{"n":0}],"rows_not_shown":9})"
            "\n");
  EXPECT_EQ(RenderJson(CommandResult::KeyValues({{"a", true}, {"b", false}}), RenderOptions{.max_rows = 1}),
            R"({"a":true,"entries_not_shown":1})"
            "\n");
}

TEST(RenderJsonTest, InvalidUtf8AndControlCharactersInDataStayValidJson) {
  const CommandResult result = CommandResult::Table({"v"}, {{std::string("\x01\xC3")}});
  EXPECT_EQ(RenderJson(result, {}), R"({"columns":["v"],"rows":[{"v":"\u0001\ufffd"}]})"
                                    "\n");
}

// CSV as RFC 4180 readers take it: quoted where a value holds a separator,
// a quote, a line break or outer blanks; absent values empty; no escaping
// of stored text for terminals.
TEST(RenderCsvTest, QuotesWhatWouldBreakAFieldAndNothingElse) {
  CommandResult table = CommandResult::Table(
      {"time", "note", "v"},
      {
          {Timestamp{1'795'835'167'250'000'000}, std::string("plain"), 1.5},
          {Value(), std::string("a, \"quoted\"\nline"), int64_t{-3}},
          {Value(), std::string(" padded"), true},
          {Value(), std::string("tab\there\x1b[31m"), Value()},
      });
  EXPECT_EQ(RenderCsv(table, true),
            "time,note,v\n"
            "2026-11-28T03:06:07.250Z,plain,1.5\n"
            ",\"a, \"\"quoted\"\"\nline\",-3\n"
            ",\" padded\",true\n"
            ",tab\there\x1b[31m,\n");
  EXPECT_EQ(RenderCsv(table, false).substr(0, 5), "2026-");
  EXPECT_EQ(RenderCsv(CommandResult::Table({"a,b"}, {}), true), "\"a,b\"\n");
}

TEST(RenderNdjsonTest, OneJsonObjectPerRow) {
  EXPECT_EQ(RenderNdjson(Readings()),
            "{\"device\":\"dev-1\",\"temperature\":21.5,\"ok\":true}\n"
            "{\"device\":\"K\u00fcche\",\"temperature\":-3.25,\"ok\":false}\n"
            "{\"device\":\"long-device-name\",\"temperature\":null,\"ok\":true}\n");
  EXPECT_EQ(RenderNdjson(CommandResult::Table({"a"}, {})), "");
}

}  // namespace
}  // namespace cairn
