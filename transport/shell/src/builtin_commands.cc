#include "cairn/shell/builtin_commands.h"

#include <string_view>

namespace cairn {

namespace {

std::string CompilerDescription() {
#if defined(__clang__)
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "gcc " + std::to_string(__GNUC__) + "." + std::to_string(__GNUC_MINOR__) + "." +
         std::to_string(__GNUC_PATCHLEVEL__);
#else
  return "unknown";
#endif
}

CommandResult Help(const CommandRegistry& registry, const CommandInvocation& invocation) {
  if (invocation.arguments().empty()) {
    std::vector<CommandResult::Row> rows;
    for (const CommandSpec* spec : registry.Commands()) {
      std::string synopsis = spec->name;
      if (!spec->arguments.empty()) synopsis += " " + spec->arguments;
      rows.push_back({synopsis, spec->summary});
    }
    return CommandResult::Table({"command", "summary"}, std::move(rows));
  }
  const std::string& name = invocation.arguments()[0];
  const CommandSpec* spec = registry.Find(name);
  if (spec == nullptr) {
    return CommandResult::Error(Status::NotFound("help: unknown command '" + name + "'; type help"));
  }
  std::vector<CommandResult::Entry> entries;
  entries.emplace_back("usage", CommandUsage(*spec));
  entries.emplace_back("summary", spec->summary);
  for (const CommandOption& option : spec->options) {
    std::string key = "--" + option.name;
    if (!option.value_name.empty()) key += " " + option.value_name;
    entries.emplace_back(std::move(key), option.summary);
  }
  entries.emplace_back("--" + std::string(kJsonOption), std::string(kJsonOptionSummary));
  return CommandResult::KeyValues(std::move(entries));
}

CommandResult Version() {
  const BuildInfo info = GetBuildInfo();
  return CommandResult::KeyValues({
      {"version", info.version},
      {"target_arch", info.target_arch},
      {"compiler", info.compiler},
  });
}

}  // namespace

BuildInfo GetBuildInfo() { return BuildInfo{CAIRN_VERSION_STRING, CAIRN_TARGET_ARCH, CompilerDescription()}; }

Status RegisterBuiltinCommands(CommandRegistry* registry) {
  CAIRN_RETURN_IF_ERROR(registry->Register(
      CommandSpec{.name = "help",
                  .arguments = "[command]",
                  .summary = "list the commands, or show one command's usage and options",
                  .options = {},
                  .min_arguments = 0,
                  .max_arguments = 1},
      [registry](const CommandInvocation& invocation) { return Help(*registry, invocation); }));
  return registry->Register(CommandSpec{.name = "version",
                                        .arguments = "",
                                        .summary = "show the cairn version, target architecture and compiler",
                                        .options = {},
                                        .min_arguments = 0,
                                        .max_arguments = 0},
                            [](const CommandInvocation&) { return Version(); });
}

}  // namespace cairn
