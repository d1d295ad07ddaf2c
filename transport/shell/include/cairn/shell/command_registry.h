// CommandRegistry: the one command layer behind every shell (serial now,
// HTTP later). A line of text is tokenised (command_line.h), bound to a
// registered command's declared options and arguments, run by that command's
// handler, and the handler's CommandResult is rendered (result_renderer.h).
//
// Syntax of a line:   NAME [--option VALUE | --option=VALUE | --flag | ARG]... [-- ARG...]
//   - options may appear anywhere after the name; `--` ends them, so later
//     words are arguments even if they start with "--";
//   - a word that was quoted or escaped is always an argument;
//   - `--json` is understood by every command: render the result as JSON.
// Binding errors name the problem and the way out: "unknown command 'foo';
// type help", "unknown option --bar for version; type help version",
// "option --limit needs a value: --limit N", "too many arguments ...".
//
// Thread-safety: register every command before the registry is shared; after
// that, all const methods may be called concurrently (handlers must then be
// safe to run concurrently with themselves and each other).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cairn/platform/status.h"
#include "cairn/shell/command_line.h"
#include "cairn/shell/command_result.h"
#include "cairn/shell/result_renderer.h"

namespace cairn {

// One `--name` option of a command.
struct CommandOption {
  std::string name;        // without "--": a lowercase letter, then lowercase letters, digits, '-'
  std::string value_name;  // the value's name in usage ("N", "TIME"); empty: a flag without value
  std::string summary;     // one line for `help <command>`
};

// What a command is called, what it accepts and how it explains itself.
struct CommandSpec {
  std::string name;                    // a lowercase letter, then lowercase letters, digits, '-', '_'
  std::string arguments;               // synopsis of the positional arguments: "[command]", "TABLE DEVICE"
  std::string summary;                 // one line for `help`
  std::vector<CommandOption> options;  // besides --json, which every command has
  size_t min_arguments = 0;
  size_t max_arguments = 0;
  // When true, the last positional argument (number max_arguments) is the
  // rest of the line from where it starts, verbatim: not split, quotes and
  // backslashes kept, only trailing separators dropped. For payloads with a
  // syntax of their own, like a line-protocol point. Options, --json
  // included, must come before it. Requires max_arguments >= 1.
  bool verbatim_last_argument = false;
};

// The option every command accepts, and how `help <command>` describes it.
inline constexpr std::string_view kJsonOption = "json";
inline constexpr std::string_view kJsonOptionSummary = "print the result as JSON instead of aligned text";

// "name [--opt VALUE]... [--json] arguments", e.g. "help [--json] [command]".
std::string CommandUsage(const CommandSpec& spec);

// A command line bound to its command: what the handler reads.
class CommandInvocation {
 public:
  // The registered spec; valid as long as the registry that produced it.
  const CommandSpec& spec() const { return *spec_; }
  const std::string& name() const { return spec_->name; }

  // Positional arguments, in order. Their count is within the spec's bounds.
  const std::vector<std::string>& arguments() const { return arguments_; }

  // Whether the option was given (with or without a value).
  bool Has(std::string_view option) const { return options_.find(option) != options_.end(); }

  // The value of an option that takes one; nullopt when it was not given.
  std::optional<std::string_view> Value(std::string_view option) const;

  // Whether --json was given.
  bool json() const { return Has(kJsonOption); }

 private:
  friend class CommandRegistry;
  explicit CommandInvocation(const CommandSpec* spec) : spec_(spec) {}

  const CommandSpec* spec_;
  std::vector<std::string> arguments_;
  std::map<std::string, std::string, std::less<>> options_;  // name -> value ("" for flags)
};

// Runs one bound command. Reports failures as CommandResult::Error; must not
// throw.
using CommandHandler = std::function<CommandResult(const CommandInvocation&)>;

class CommandRegistry {
 public:
  CommandRegistry() = default;
  CommandRegistry(const CommandRegistry&) = delete;
  CommandRegistry& operator=(const CommandRegistry&) = delete;

  // Adds a command. InvalidArgument for a malformed name, option name or
  // argument bounds, or an option named like a global one; AlreadyExists when
  // the name is taken.
  Status Register(CommandSpec spec, CommandHandler handler);

  // The spec of command `name`, or null. Valid as long as the registry.
  const CommandSpec* Find(std::string_view name) const;

  // Every registered command, sorted by name.
  std::vector<const CommandSpec*> Commands() const;

  // Tokenises `line` and binds it to its command. InvalidArgument for an
  // empty line, a tokenising error, an unknown command or option, a missing
  // or unexpected option value, a repeated option or a wrong argument count.
  Result<CommandInvocation> Parse(std::string_view line) const;

  // Binds a command given as already separated parts, for front ends that
  // are not a command line (the HTTP API maps a request onto a command).
  // `options` are (name without "--", value) pairs; flags take "" as value.
  // The same checks as Parse: unknown command or option, a flag given a
  // value or an option none, a repeated option, a wrong argument count.
  Result<CommandInvocation> BindArguments(
      std::string_view name, std::vector<std::string> arguments,
      const std::vector<std::pair<std::string, std::string>>& options) const;

  // Runs the command's handler.
  CommandResult Run(const CommandInvocation& invocation) const;

  // Parses, runs and renders one line: text, or JSON when the line carries
  // --json (parse errors included, as far as the line could be tokenised).
  // Returns "" for a line that holds no words.
  std::string Execute(std::string_view line, const RenderOptions& options) const;

 private:
  struct Command {
    CommandSpec spec;
    CommandHandler handler;
  };

  // Splits `line` into words one at a time and binds them; sets
  // `*wants_json` (when not null) once a --json option has been read.
  Result<CommandInvocation> Bind(std::string_view line, bool* wants_json) const;
  // InvalidArgument unless the invocation's argument count fits its spec.
  static Status CheckArgumentCount(const CommandInvocation& invocation);

  // std::map: node-based, so CommandInvocation may point at a spec.
  std::map<std::string, Command, std::less<>> commands_;
};

}  // namespace cairn
