// The argument forms the engine commands accept: time and duration texts,
// the verbatim last argument, and notes that follow a result.
#include "cairn/text/time_argument.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/shell/command_registry.h"
#include "cairn/shell/result_renderer.h"

#include "engine_commands_test_util.h"

namespace cairn::engine_commands_testing {
namespace {

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

}  // namespace
}  // namespace cairn::engine_commands_testing
