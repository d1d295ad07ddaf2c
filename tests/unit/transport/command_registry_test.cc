#include "cairn/shell/command_registry.h"

#include <atomic>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/shell/builtin_commands.h"

namespace cairn {
namespace {

// A command shaped like the query commands to come: two arguments, options
// with and without values. Its result reports how the line was bound.
CommandSpec RangeSpec() {
  return CommandSpec{.name = "range",
                     .arguments = "TABLE [DEVICE]",
                     .summary = "records of a device between two times",
                     .options = {{"limit", "N", "at most N records"},
                                 {"from", "TIME", "start at TIME"},
                                 {"desc", "", "newest first"}},
                     .min_arguments = 1,
                     .max_arguments = 2};
}

// A spec with only a name and, optionally, argument bounds and options.
CommandSpec NamedSpec(std::string name, size_t min_arguments = 0, size_t max_arguments = 0,
                      std::vector<CommandOption> options = {}) {
  CommandSpec spec;
  spec.name = std::move(name);
  spec.min_arguments = min_arguments;
  spec.max_arguments = max_arguments;
  spec.options = std::move(options);
  return spec;
}

CommandResult DescribeInvocation(const CommandInvocation& invocation) {
  std::vector<CommandResult::Entry> entries;
  entries.emplace_back("command", invocation.name());
  for (size_t i = 0; i < invocation.arguments().size(); ++i) {
    entries.emplace_back("arg" + std::to_string(i), invocation.arguments()[i]);
  }
  for (const char* option : {"limit", "from"}) {
    if (std::optional<std::string_view> value = invocation.Value(option)) {
      entries.emplace_back(option, std::string(*value));
    }
  }
  entries.emplace_back("desc", invocation.Has("desc"));
  entries.emplace_back("json", invocation.json());
  return CommandResult::KeyValues(std::move(entries));
}

class CommandRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinCommands(&registry_).ok());
    ASSERT_TRUE(registry_.Register(RangeSpec(), DescribeInvocation).ok());
  }

  std::string Execute(std::string_view line) { return registry_.Execute(line, RenderOptions{}); }

  Status ParseError(std::string_view line) {
    Result<CommandInvocation> invocation = registry_.Parse(line);
    EXPECT_FALSE(invocation.ok()) << line;
    return invocation.status();
  }

  CommandRegistry registry_;
};

TEST_F(CommandRegistryTest, BindsArgumentsAndOptionsInAnyOrder) {
  Result<CommandInvocation> invocation = registry_.Parse("range --limit 10 sensors --desc dev-1 --from=2024");
  ASSERT_TRUE(invocation.ok()) << invocation.status().ToString();
  EXPECT_EQ(invocation->name(), "range");
  EXPECT_EQ(invocation->arguments(), (std::vector<std::string>{"sensors", "dev-1"}));
  EXPECT_EQ(invocation->Value("limit"), std::optional<std::string_view>("10"));
  EXPECT_EQ(invocation->Value("from"), std::optional<std::string_view>("2024"));
  EXPECT_TRUE(invocation->Has("desc"));
  EXPECT_EQ(invocation->Value("desc"), std::optional<std::string_view>(""));
  EXPECT_FALSE(invocation->json());
  EXPECT_FALSE(invocation->Has("missing"));
  EXPECT_EQ(invocation->Value("missing"), std::nullopt);
}

TEST_F(CommandRegistryTest, DispatchesToTheHandler) {
  EXPECT_EQ(Execute("range t d --limit 5"),
            "command  range\n"
            "arg0     t\n"
            "arg1     d\n"
            "limit    5\n"
            "desc     false\n"
            "json     false\n");
}

TEST_F(CommandRegistryTest, JsonOptionWorksOnEveryCommand) {
  EXPECT_EQ(Execute("range --json t"), R"({"command":"range","arg0":"t","desc":false,"json":true})"
                                       "\n");
  EXPECT_EQ(Execute("version --json").substr(0, 12), R"({"version":")");
}

TEST_F(CommandRegistryTest, QuotedWordsAndWordsAfterDoubleDashAreArguments) {
  Result<CommandInvocation> invocation = registry_.Parse(R"(range "--desc" -- --limit)");
  ASSERT_TRUE(invocation.ok()) << invocation.status().ToString();
  EXPECT_EQ(invocation->arguments(), (std::vector<std::string>{"--desc", "--limit"}));
  EXPECT_FALSE(invocation->Has("desc"));
  EXPECT_FALSE(invocation->Has("limit"));
}

TEST_F(CommandRegistryTest, OptionValueMayStartWithDashes) {
  Result<CommandInvocation> invocation = registry_.Parse("range t --from --desc");
  ASSERT_TRUE(invocation.ok()) << invocation.status().ToString();
  EXPECT_EQ(invocation->Value("from"), std::optional<std::string_view>("--desc"));
  EXPECT_FALSE(invocation->Has("desc"));
}

TEST_F(CommandRegistryTest, UnknownCommandPointsToHelp) {
  EXPECT_EQ(Execute("foo bar"), "error: unknown command 'foo'; type help\n");
  EXPECT_EQ(ParseError("foo").code(), StatusCode::kInvalidArgument);
  // Names are case-sensitive: commands are lowercase.
  EXPECT_EQ(Execute("HELP"), "error: unknown command 'HELP'; type help\n");
}

TEST_F(CommandRegistryTest, BindingErrorsNameTheProblem) {
  EXPECT_EQ(ParseError("range t --bogus").message(), "unknown option --bogus for range; type help range");
  EXPECT_EQ(ParseError("range t --limit").message(), "option --limit needs a value: --limit N");
  EXPECT_EQ(ParseError("range t --desc=yes").message(), "option --desc takes no value");
  EXPECT_EQ(ParseError("range t --json=1").message(), "option --json takes no value");
  EXPECT_EQ(ParseError("range t --limit 1 --limit=2").message(), "option --limit is given more than once");
  EXPECT_EQ(
      ParseError("range").message(),
      "range needs at least 1 argument, got 0; usage: range [--limit N] [--from TIME] [--desc] [--json] "
      "TABLE [DEVICE]");
  EXPECT_EQ(
      ParseError("range a b c").message(),
      "too many arguments for range (at most 2, got 3); usage: range [--limit N] [--from TIME] [--desc] "
      "[--json] TABLE [DEVICE]");
  EXPECT_EQ(ParseError("version now").message(),
            "version takes no arguments (got 'now'); usage: version [--json]");
  EXPECT_EQ(ParseError("help \"unterminated").message(),
            "unterminated quote: the \" at column 6 is never closed");
  EXPECT_EQ(ParseError("   ").message(), "empty command line; type help");
}

TEST_F(CommandRegistryTest, BindingErrorsAreJsonWhenTheLineAsksForJson) {
  EXPECT_EQ(Execute("range --json"),
            R"({"error":{"code":"InvalidArgument","message":"range needs at least 1 argument, got 0; usage: )"
            R"(range [--limit N] [--from TIME] [--desc] [--json] TABLE [DEVICE]"}})"
            "\n");
  EXPECT_EQ(Execute("nope --json"),
            R"({"error":{"code":"InvalidArgument","message":"unknown command 'nope'; type help"}})"
            "\n");
  // A quoted "--json" is an argument, not a request for JSON.
  EXPECT_EQ(Execute("nope \"--json\""), "error: unknown command 'nope'; type help\n");
}

TEST_F(CommandRegistryTest, BlankLinesProduceNoOutput) {
  EXPECT_EQ(Execute(""), "");
  EXPECT_EQ(Execute("  \t "), "");
}

TEST_F(CommandRegistryTest, HelpListsEveryCommandSorted) {
  EXPECT_EQ(Execute("help"),
            "command               summary\n"
            "help [command]        list the commands, or show one command's usage and options\n"
            "range TABLE [DEVICE]  records of a device between two times\n"
            "version               show the cairn version, target architecture and compiler\n");
}

TEST_F(CommandRegistryTest, HelpForOneCommandShowsUsageAndOptions) {
  EXPECT_EQ(Execute("help range"),
            "usage        range [--limit N] [--from TIME] [--desc] [--json] TABLE [DEVICE]\n"
            "summary      records of a device between two times\n"
            "--limit N    at most N records\n"
            "--from TIME  start at TIME\n"
            "--desc       newest first\n"
            "--json       print the result as JSON instead of aligned text\n");
  EXPECT_EQ(Execute("help nothing"), "error: help: unknown command 'nothing'; type help\n");
}

TEST_F(CommandRegistryTest, VersionReportsTheBuild) {
  const BuildInfo build = GetBuildInfo();
  EXPECT_FALSE(build.version.empty());
  EXPECT_FALSE(build.target_arch.empty());
  EXPECT_EQ(Execute("version"), "version      " + build.version + "\ntarget_arch  " + build.target_arch +
                                    "\ncompiler     " + build.compiler + "\n");
}

TEST_F(CommandRegistryTest, CommandsAreListedByName) {
  std::vector<std::string> names;
  for (const CommandSpec* spec : registry_.Commands()) names.push_back(spec->name);
  EXPECT_EQ(names, (std::vector<std::string>{"help", "range", "version"}));
  ASSERT_NE(registry_.Find("range"), nullptr);
  EXPECT_EQ(registry_.Find("range")->summary, "records of a device between two times");
  EXPECT_EQ(registry_.Find("ran"), nullptr);
}

TEST(CommandRegistrationTest, RefusesMalformedOrDuplicateCommands) {
  CommandRegistry registry;
  const CommandHandler handler = [](const CommandInvocation&) { return CommandResult::KeyValues({}); };
  EXPECT_EQ(registry.Register(NamedSpec("Bad"), handler).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.Register(NamedSpec(""), handler).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.Register(NamedSpec("1st"), handler).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.Register(NamedSpec("ok", 2, 1), handler).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.Register(NamedSpec("ok", 0, 0, {{"json", "", "x"}}), handler).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.Register(NamedSpec("ok", 0, 0, {{"Bad_Name", "", "x"}}), handler).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.Register(NamedSpec("ok", 0, 0, {{"a", "", "x"}, {"a", "N", "y"}}), handler).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.Register(NamedSpec("ok"), nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(registry.Commands().empty());

  EXPECT_TRUE(registry.Register(NamedSpec("sync-now_2"), handler).ok());
  EXPECT_EQ(registry.Register(NamedSpec("sync-now_2"), handler).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(registry.Commands().size(), 1u);
}

TEST(CommandRegistrationTest, HandlerErrorsAreRenderedAsErrors) {
  CommandRegistry registry;
  ASSERT_TRUE(registry
                  .Register(NamedSpec("fail"),
                            [](const CommandInvocation&) {
                              return CommandResult::Error(Status::NotFound("no table named \"x\"\n"));
                            })
                  .ok());
  EXPECT_EQ(registry.Execute("fail", {}), "error: no table named \"x\"\\n\n");
  EXPECT_EQ(registry.Execute("fail --json", {}),
            R"({"error":{"code":"NotFound","message":"no table named \"x\"\n"}})"
            "\n");
}

TEST(CommandRegistrationTest, RunRefusesAnInvocationFromAnotherRegistry) {
  CommandRegistry first, second;
  std::atomic<int> calls{0};
  const CommandHandler handler = [&calls](const CommandInvocation&) {
    ++calls;
    return CommandResult::KeyValues({});
  };
  ASSERT_TRUE(first.Register(NamedSpec("x"), handler).ok());
  ASSERT_TRUE(second.Register(NamedSpec("x"), handler).ok());
  Result<CommandInvocation> invocation = first.Parse("x");
  ASSERT_TRUE(invocation.ok());
  const CommandResult result = second.Run(*invocation);
  EXPECT_EQ(result.kind(), CommandResult::Kind::kError);
  EXPECT_EQ(result.error().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(calls.load(), 0);
  EXPECT_TRUE(first.Run(*invocation).ok());
  EXPECT_EQ(calls.load(), 1);
}

}  // namespace
}  // namespace cairn
