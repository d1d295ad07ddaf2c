#include "cairn/shell/command_registry.h"

#include <utility>

namespace cairn {

namespace {

bool IsLowerOrDigit(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

bool IsValidCommandName(std::string_view name) {
  if (name.empty() || !(name[0] >= 'a' && name[0] <= 'z')) return false;
  for (char c : name) {
    if (!IsLowerOrDigit(c) && c != '-' && c != '_') return false;
  }
  return true;
}

bool IsValidOptionName(std::string_view name) {
  if (name.empty() || !(name[0] >= 'a' && name[0] <= 'z')) return false;
  for (char c : name) {
    if (!IsLowerOrDigit(c) && c != '-') return false;
  }
  return true;
}

const CommandOption kJsonOptionSpec{std::string(kJsonOption), "", std::string(kJsonOptionSummary)};

// The declaration of `--name` for `spec`, global options included; null when
// the command has no such option.
const CommandOption* FindOption(const CommandSpec& spec, std::string_view name) {
  if (name == kJsonOption) return &kJsonOptionSpec;
  for (const CommandOption& option : spec.options) {
    if (option.name == name) return &option;
  }
  return nullptr;
}

std::string Plural(size_t count, const char* noun) {
  return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

// Whether an unquoted "--json" appears among the option words of `tokens`.
bool WantsJson(const std::vector<CommandToken>& tokens) {
  for (size_t i = 1; i < tokens.size(); ++i) {
    if (tokens[i].literal) continue;
    if (tokens[i].text == "--") return false;
    if (tokens[i].text == "--json") return true;
  }
  return false;
}

}  // namespace

std::string CommandUsage(const CommandSpec& spec) {
  std::string usage = spec.name;
  for (const CommandOption& option : spec.options) {
    usage += " [--" + option.name;
    if (!option.value_name.empty()) usage += " " + option.value_name;
    usage += "]";
  }
  usage += " [--json]";
  if (!spec.arguments.empty()) usage += " " + spec.arguments;
  return usage;
}

std::optional<std::string_view> CommandInvocation::Value(std::string_view option) const {
  auto it = options_.find(option);
  if (it == options_.end()) return std::nullopt;
  return std::string_view(it->second);
}

Status CommandRegistry::Register(CommandSpec spec, CommandHandler handler) {
  if (!IsValidCommandName(spec.name)) {
    return Status::InvalidArgument("command name '" + spec.name +
                                   "' must start with a-z and hold only a-z, 0-9, '-' and '_'");
  }
  if (spec.min_arguments > spec.max_arguments) {
    return Status::InvalidArgument("command " + spec.name + ": min_arguments exceeds max_arguments");
  }
  if (spec.verbatim_last_argument && spec.max_arguments == 0) {
    return Status::InvalidArgument("command " + spec.name +
                                   ": a verbatim last argument needs max_arguments >= 1");
  }
  if (!handler) return Status::InvalidArgument("command " + spec.name + " has no handler");
  for (size_t i = 0; i < spec.options.size(); ++i) {
    const std::string& option = spec.options[i].name;
    if (!IsValidOptionName(option)) {
      return Status::InvalidArgument("command " + spec.name + ": option name '" + option +
                                     "' must start with a-z and hold only a-z, 0-9 and '-'");
    }
    if (option == kJsonOption) {
      return Status::InvalidArgument("command " + spec.name + ": --" + option + " is a global option");
    }
    for (size_t j = 0; j < i; ++j) {
      if (spec.options[j].name == option) {
        return Status::InvalidArgument("command " + spec.name + " declares --" + option + " twice");
      }
    }
  }
  if (commands_.find(spec.name) != commands_.end()) {
    return Status::AlreadyExists("command " + spec.name + " is already registered");
  }
  std::string name = spec.name;
  commands_.emplace(std::move(name), Command{std::move(spec), std::move(handler)});
  return Status::Ok();
}

const CommandSpec* CommandRegistry::Find(std::string_view name) const {
  auto it = commands_.find(name);
  return it == commands_.end() ? nullptr : &it->second.spec;
}

std::vector<const CommandSpec*> CommandRegistry::Commands() const {
  std::vector<const CommandSpec*> specs;
  specs.reserve(commands_.size());
  for (const auto& [name, command] : commands_) specs.push_back(&command.spec);
  return specs;
}

Result<CommandInvocation> CommandRegistry::Parse(std::string_view line) const { return Bind(line, nullptr); }

Result<CommandInvocation> CommandRegistry::Bind(std::string_view line, bool* wants_json) const {
  size_t position = 0;
  CAIRN_ASSIGN_OR_RETURN(std::optional<CommandToken> name_token, NextCommandToken(line, &position));
  if (!name_token) return Status::InvalidArgument("empty command line; type help");
  const std::string& name = name_token->text;
  const CommandSpec* spec = Find(name);
  if (spec == nullptr) return Status::InvalidArgument("unknown command '" + name + "'; type help");

  CommandInvocation invocation(spec);
  bool options_ended = false;
  for (;;) {
    CAIRN_ASSIGN_OR_RETURN(std::optional<CommandToken> token, NextCommandToken(line, &position));
    if (!token) break;
    const std::string_view text = token->text;
    if (options_ended || token->literal || text.size() < 2 || text.substr(0, 2) != "--") {
      if (spec->verbatim_last_argument && invocation.arguments_.size() + 1 == spec->max_arguments) {
        // The token starts with a non-separator, so the rest is not empty.
        const std::string_view rest = line.substr(token->offset);
        invocation.arguments_.emplace_back(rest.substr(0, rest.find_last_not_of(" \t\r\n\v\f") + 1));
        break;
      }
      invocation.arguments_.push_back(std::move(token->text));
      continue;
    }
    if (text == "--") {
      options_ended = true;
      continue;
    }
    std::string_view option_name = text.substr(2);
    std::optional<std::string> inline_value;
    if (const size_t equals = option_name.find('='); equals != std::string_view::npos) {
      inline_value = std::string(option_name.substr(equals + 1));
      option_name = option_name.substr(0, equals);
    }
    const CommandOption* option = FindOption(*spec, option_name);
    if (option == nullptr) {
      return Status::InvalidArgument("unknown option --" + std::string(option_name) + " for " + spec->name +
                                     "; type help " + spec->name);
    }
    if (option->name == kJsonOption && wants_json != nullptr) *wants_json = true;
    if (invocation.Has(option->name)) {
      return Status::InvalidArgument("option --" + option->name + " is given more than once");
    }
    std::string value;
    if (option->value_name.empty()) {
      if (inline_value) return Status::InvalidArgument("option --" + option->name + " takes no value");
    } else if (inline_value) {
      value = std::move(*inline_value);
    } else {
      CAIRN_ASSIGN_OR_RETURN(std::optional<CommandToken> value_token, NextCommandToken(line, &position));
      if (!value_token) {
        return Status::InvalidArgument("option --" + option->name + " needs a value: --" + option->name +
                                       " " + option->value_name);
      }
      value = std::move(value_token->text);
    }
    invocation.options_.emplace(option->name, std::move(value));
  }

  CAIRN_RETURN_IF_ERROR(CheckArgumentCount(invocation));
  return invocation;
}

Status CommandRegistry::CheckArgumentCount(const CommandInvocation& invocation) {
  const CommandSpec* spec = invocation.spec_;
  const size_t count = invocation.arguments_.size();
  if (count > spec->max_arguments) {
    if (spec->max_arguments == 0) {
      return Status::InvalidArgument(spec->name + " takes no arguments (got '" + invocation.arguments_[0] +
                                     "'); usage: " + CommandUsage(*spec));
    }
    return Status::InvalidArgument("too many arguments for " + spec->name + " (at most " +
                                   std::to_string(spec->max_arguments) + ", got " + std::to_string(count) +
                                   "); usage: " + CommandUsage(*spec));
  }
  if (count < spec->min_arguments) {
    return Status::InvalidArgument(spec->name + " needs " +
                                   (spec->min_arguments < spec->max_arguments ? "at least " : "") +
                                   Plural(spec->min_arguments, "argument") + ", got " +
                                   std::to_string(count) + "; usage: " + CommandUsage(*spec));
  }
  return Status::Ok();
}

Result<CommandInvocation> CommandRegistry::BindArguments(
    std::string_view name, std::vector<std::string> arguments,
    const std::vector<std::pair<std::string, std::string>>& options) const {
  const CommandSpec* spec = Find(name);
  if (spec == nullptr) return Status::InvalidArgument("unknown command '" + std::string(name) + "'");
  CommandInvocation invocation(spec);
  invocation.arguments_ = std::move(arguments);
  for (const auto& [option_name, value] : options) {
    const CommandOption* option = FindOption(*spec, option_name);
    if (option == nullptr) {
      return Status::InvalidArgument("unknown option " + option_name + " for " + spec->name);
    }
    if (invocation.Has(option->name)) {
      return Status::InvalidArgument("option " + option->name + " is given more than once");
    }
    if (option->value_name.empty() != value.empty()) {
      return Status::InvalidArgument(option->value_name.empty()
                                         ? "option " + option->name + " takes no value"
                                         : "option " + option->name + " needs a value");
    }
    invocation.options_.emplace(option->name, value);
  }
  CAIRN_RETURN_IF_ERROR(CheckArgumentCount(invocation));
  return invocation;
}

CommandResult CommandRegistry::Run(const CommandInvocation& invocation) const {
  auto it = commands_.find(invocation.name());
  // An invocation comes from this registry's Parse, which only binds
  // registered commands; a foreign invocation is reported, not trusted.
  if (it == commands_.end() || &it->second.spec != &invocation.spec()) {
    return CommandResult::Error(
        Status::FailedPrecondition("command " + invocation.name() + " is not registered in this shell"));
  }
  return it->second.handler(invocation);
}

std::string CommandRegistry::Execute(std::string_view line, const RenderOptions& options) const {
  size_t position = 0;
  Result<std::optional<CommandToken>> name_token = NextCommandToken(line, &position);
  if (!name_token.ok()) return RenderText(CommandResult::Error(name_token.status()), options);
  if (!name_token->has_value()) return "";
  const CommandSpec* spec = Find((*name_token)->text);
  const bool verbatim = spec != nullptr && spec->verbatim_last_argument;
  bool json = false;
  if (!verbatim) {
    // The whole line is words: a quoting error anywhere is reported before
    // anything runs, and --json counts wherever it stands.
    Result<std::vector<CommandToken>> tokens = TokenizeCommandLine(line);
    if (!tokens.ok()) return RenderText(CommandResult::Error(tokens.status()), options);
    json = WantsJson(*tokens);
  }
  Result<CommandInvocation> invocation = Bind(line, verbatim ? &json : nullptr);
  // The words alone cannot tell `--json` from an option's value ("--from --json").
  if (invocation.ok()) json = invocation->json();
  const CommandResult result = invocation.ok() ? Run(*invocation) : CommandResult::Error(invocation.status());
  return json ? RenderJson(result, options) : RenderText(result, options);
}

}  // namespace cairn
