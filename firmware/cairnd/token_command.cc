#include "cairnd/token_command.h"

#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "cairn/core/record.h"
#include "cairn/shell/command_result.h"
#include "cairn/shell/result_renderer.h"
#include "cairn/http/token_store.h"

#include "cairnd/flag_words.h"
#include "cairnd/options.h"

namespace cairn::cairnd {

namespace {

constexpr std::string_view kProgram = "cairnd token";
constexpr int64_t kNanosPerSecond = 1'000'000'000;

enum class Subcommand { kCreate, kList, kRevoke, kRepair, kHelp };

struct TokenCommandLine {
  Subcommand subcommand = Subcommand::kHelp;
  std::string data_dir;  // resolved: --data-dir, the config file's, or the default
  std::optional<std::string> data_dir_flag;
  std::string config_path = std::string(kDefaultConfigPath);
  bool config_named = false;
  std::string name;                 // create
  std::vector<std::string> scopes;  // create
  std::string id_or_name;           // revoke
  bool json = false;                // list
};

struct FlagSpec {
  std::string_view name;  // with the leading "--"
  bool takes_value;
  bool repeatable;
};

constexpr FlagSpec kCreateFlags[] = {
    {"--name", true, false}, {"--scope", true, true}, {"--data-dir", true, false}, {"--config", true, false}};
constexpr FlagSpec kListFlags[] = {
    {"--json", false, false}, {"--data-dir", true, false}, {"--config", true, false}};
constexpr FlagSpec kRevokeFlags[] = {{"--data-dir", true, false}, {"--config", true, false}};
constexpr FlagSpec kRepairFlags[] = {{"--data-dir", true, false}, {"--config", true, false}};

std::span<const FlagSpec> FlagsOf(Subcommand subcommand) {
  switch (subcommand) {
    case Subcommand::kCreate:
      return kCreateFlags;
    case Subcommand::kList:
      return kListFlags;
    case Subcommand::kRevoke:
      return kRevokeFlags;
    case Subcommand::kRepair:
      return kRepairFlags;
    case Subcommand::kHelp:
      break;
  }
  return {};
}

bool IsHelpWord(std::string_view word) { return word == "--help" || word == "-h"; }

// Checks the words that are not flags, and the flags a subcommand needs.
Status CheckTokenArguments(const std::vector<std::string_view>& arguments, TokenCommandLine* parsed) {
  switch (parsed->subcommand) {
    case Subcommand::kCreate:
      if (!arguments.empty()) {
        return Status::InvalidArgument("unexpected argument '" + std::string(arguments[0]) +
                                       "' (create takes --name and --scope)");
      }
      if (parsed->name.empty()) return Status::InvalidArgument("create needs --name NAME");
      if (parsed->scopes.empty()) {
        return Status::InvalidArgument(
            "create needs at least one --scope (admin, read:TABLE or write:TABLE)");
      }
      break;
    case Subcommand::kList:
    case Subcommand::kRepair:
      if (!arguments.empty())
        return Status::InvalidArgument("unexpected argument '" + std::string(arguments[0]) + "'");
      break;
    case Subcommand::kRevoke:
      if (arguments.size() != 1) {
        return Status::InvalidArgument("revoke needs exactly one token id or name, got " +
                                       std::to_string(arguments.size()));
      }
      parsed->id_or_name = std::string(arguments[0]);
      break;
    case Subcommand::kHelp:
      break;
  }
  return Status::Ok();
}

// InvalidArgument carries a usage error, to be shown after "cairnd token: ".
Result<TokenCommandLine> ParseTokenCommandLine(std::span<const char* const> words) {
  TokenCommandLine parsed;
  if (words.empty()) return Status::InvalidArgument("missing subcommand: create, list, revoke or repair");
  for (const char* word : words) {
    if (IsHelpWord(word)) return parsed;
  }
  const std::string_view subcommand = words[0];
  if (subcommand == "help") return parsed;
  if (subcommand == "create") {
    parsed.subcommand = Subcommand::kCreate;
  } else if (subcommand == "list") {
    parsed.subcommand = Subcommand::kList;
  } else if (subcommand == "revoke") {
    parsed.subcommand = Subcommand::kRevoke;
  } else if (subcommand == "repair") {
    parsed.subcommand = Subcommand::kRepair;
  } else {
    return Status::InvalidArgument("unknown subcommand '" + std::string(subcommand) +
                                   "' (expected create, list, revoke or repair)");
  }

  const std::span<const FlagSpec> flags = FlagsOf(parsed.subcommand);
  std::set<std::string_view> seen;
  std::vector<std::string_view> arguments;
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string_view word = words[i];
    if (word.empty() || word[0] != '-') {
      arguments.push_back(word);
      continue;
    }
    const FlagWord flag_word = SplitFlagWord(word);
    const FlagSpec* flag = nullptr;
    for (const FlagSpec& candidate : flags) {
      if (candidate.name == flag_word.name) flag = &candidate;
    }
    if (flag == nullptr) {
      return Status::InvalidArgument("unknown flag '" + std::string(flag_word.name) + "' for " +
                                     std::string(subcommand));
    }
    if (!flag->repeatable && !seen.insert(flag->name).second) {
      return Status::InvalidArgument("flag " + std::string(flag->name) + " is given more than once");
    }
    CAIRN_ASSIGN_OR_RETURN(const std::string_view value,
                           TakeFlagValue(words, &i, flag_word, flag->takes_value, ""));

    if (flag->name == "--data-dir") {
      parsed.data_dir_flag = std::string(value);
    } else if (flag->name == "--config") {
      parsed.config_path = value == "none" ? "" : std::string(value);
      parsed.config_named = true;
    } else if (flag->name == "--name") {
      CAIRN_RETURN_IF_ERROR(ValidateTokenName(value));
      parsed.name = std::string(value);
    } else if (flag->name == "--scope") {
      std::string_view list = value;
      for (;;) {
        const size_t comma = list.find(',');
        const std::string_view scope = list.substr(0, comma);
        CAIRN_RETURN_IF_ERROR(ParseTokenScope(scope).status());
        parsed.scopes.emplace_back(scope);
        if (comma == std::string_view::npos) break;
        list.remove_prefix(comma + 1);
      }
    } else if (flag->name == "--json") {
      parsed.json = true;
    }
  }

  CAIRN_RETURN_IF_ERROR(CheckTokenArguments(arguments, &parsed));
  return parsed;
}

int Fail(std::string* err, std::string_view message) {
  *err += std::string(kProgram) + ": " + std::string(message) + "\n";
  return 1;
}

Result<std::unique_ptr<TokenStore>> OpenStore(Env* env, const std::string& data_dir) {
  Result<std::unique_ptr<TokenStore>> store = TokenStore::Open(env, data_dir);
  if (!store.ok() && store.status().Is(StatusCode::kNotFound)) {
    return Status::NotFound("data directory " + data_dir +
                            " does not exist; check --data-dir (cairnd creates it on its first start)");
  }
  return store;
}

int RunCreate(Env* env, const TokenCommandLine& command, std::string* out, std::string* err) {
  Result<std::unique_ptr<TokenStore>> store = OpenStore(env, command.data_dir);
  if (!store.ok()) return Fail(err, store.status().message());
  Result<CreatedToken> created = (*store)->Create(command.name, command.scopes);
  if (!created.ok()) {
    return Fail(err, "cannot create token '" + command.name + "': " + created.status().message());
  }
  *out += created->token + "\n";
  *err += "shown once: store it now; cairn keeps only its hash (token " + created->info.id + ", name " +
          created->info.name + ", scopes " + created->info.ScopesText() + ")\n";
  return 0;
}

int RunList(Env* env, const TokenCommandLine& command, std::string* out, std::string* err) {
  Result<std::unique_ptr<TokenStore>> store = OpenStore(env, command.data_dir);
  if (!store.ok()) return Fail(err, store.status().message());
  std::vector<CommandResult::Row> rows;
  for (const TokenInfo& info : (*store)->List()) {
    // Whole seconds: enough to tell tokens apart, and a column that lines up.
    int64_t seconds = info.created_unix_nanos / kNanosPerSecond;
    if (info.created_unix_nanos % kNanosPerSecond < 0) --seconds;
    rows.push_back({info.id, info.name, info.ScopesText(), Timestamp{seconds * kNanosPerSecond}});
  }
  const CommandResult table = CommandResult::Table({"id", "name", "scopes", "created"}, std::move(rows));
  *out += command.json ? RenderJson(table, RenderOptions{}) : RenderText(table, RenderOptions{});
  return 0;
}

int RunRevoke(Env* env, const TokenCommandLine& command, std::string* out, std::string* err) {
  Result<std::unique_ptr<TokenStore>> store = OpenStore(env, command.data_dir);
  if (!store.ok()) return Fail(err, store.status().message());
  TokenInfo revoked;
  Status status = (*store)->Revoke(command.id_or_name, &revoked);
  if (!status.ok()) return Fail(err, "cannot revoke: " + status.message());
  *out += "revoked token " + revoked.id + " (" + revoked.name +
          "); a running cairnd refuses it within a second\n";
  return 0;
}

int RunRepair(Env* env, const TokenCommandLine& command, std::string* out, std::string* err) {
  Result<TokenRepairReport> report = TokenStore::Repair(env, command.data_dir);
  if (!report.ok()) {
    if (report.status().Is(StatusCode::kNotFound) && !env->FileExists(command.data_dir)) {
      return Fail(err, "data directory " + command.data_dir + " does not exist; check --data-dir");
    }
    return Fail(err, "cannot repair: " + report.status().message());
  }
  if (!report->rewritten) {
    *out +=
        "the tokens file is intact (" + std::to_string(report->kept.size()) + " tokens); nothing to repair\n";
    return 0;
  }
  *out += "repaired the tokens file: kept " + std::to_string(report->kept.size()) + " intact token" +
          (report->kept.size() == 1 ? "" : "s") + ", dropped " + std::to_string(report->dropped.size()) +
          " damaged line" + (report->dropped.size() == 1 ? "" : "s") + "; the damaged original is in " +
          report->damaged_copy_path + "\n";
  for (const TokenInfo& info : report->kept) *out += "  kept    " + info.id + " " + info.name + "\n";
  for (const std::string& line : report->dropped) *out += "  dropped " + line + "\n";
  if (!report->dropped.empty()) {
    *out +=
        "create the dropped tokens again with `cairnd token create`; a running cairnd takes the repaired "
        "file up within a second\n";
  }
  return 0;
}

}  // namespace

std::string TokenCommandUsage() {
  return "usage: cairnd token create --name NAME --scope SCOPE [--scope SCOPE ...] [--data-dir DIR]\n"
         "       cairnd token list [--json] [--data-dir DIR]\n"
         "       cairnd token revoke ID|NAME [--data-dir DIR]\n"
         "       cairnd token repair [--data-dir DIR]\n"
         "       cairnd token --help\n"
         "\n"
         "Every form also takes --config FILE|none.\n"
         "\n"
         "Manages the API tokens of cairnd's HTTP shell, kept in DIR/tokens as hashes only.\n"
         "Safe while cairnd runs: it takes the change up within a second or on SIGHUP. Run it\n"
         "as the user cairnd runs as, so that both can go on changing the token files.\n"
         "\n"
         "  create            make a token and print it on standard output; it is shown this\n"
         "                    once and cannot be recovered, only revoked and replaced\n"
         "  list              show every token's id, name, scopes and creation time\n"
         "  revoke ID|NAME    remove a token; requests presenting it fail from then on\n"
         "  repair            rewrite a damaged tokens file (a flipped byte, a file cut\n"
         "                    short) keeping every intact token, and name the lines dropped;\n"
         "                    the original is kept as DIR/tokens.damaged\n"
         "\n"
         "  --name NAME       1-64 letters, digits, '-', '_' or '.'; unique\n"
         "  --scope SCOPE     admin          everything, including tables and tokens\n"
         "                    read:TABLE     queries of TABLE\n"
         "                    write:TABLE    writes to TABLE (does not include read)\n"
         "                    TABLE may be * for every table; repeat --scope or separate\n"
         "                    scopes with commas to give several\n"
         "  --data-dir DIR    cairnd's data directory (default: storage.data_dir of the\n"
         "                    config file, else " +
         DaemonOptions{}.data_dir +
         "); must exist\n"
         "  --config FILE     the config file that names it (default " +
         std::string(kDefaultConfigPath) +
         "\n"
         "                    when it exists; none: do not read one)\n"
         "  --json            list as JSON\n"
         "\n"
         "Exit status: 0 done, 1 failed, 2 usage error.\n";
}

int RunTokenCommand(Env* env, std::span<const char* const> words, std::string* out, std::string* err) {
  Result<TokenCommandLine> parsed = ParseTokenCommandLine(words);
  if (parsed.ok() && parsed->subcommand != Subcommand::kHelp) {
    Result<std::string> data_dir =
        ResolveDataDir(env, parsed->data_dir_flag, parsed->config_path, parsed->config_named);
    if (!data_dir.ok()) {
      parsed = data_dir.status();
    } else {
      parsed->data_dir = std::move(data_dir).value();
    }
  }
  if (!parsed.ok()) {
    *err +=
        std::string(kProgram) + ": " + parsed.status().message() + "\nTry 'cairnd token --help' for usage.\n";
    return 2;
  }
  switch (parsed->subcommand) {
    case Subcommand::kHelp:
      *out += TokenCommandUsage();
      return 0;
    case Subcommand::kCreate:
      return RunCreate(env, *parsed, out, err);
    case Subcommand::kList:
      return RunList(env, *parsed, out, err);
    case Subcommand::kRevoke:
      return RunRevoke(env, *parsed, out, err);
    case Subcommand::kRepair:
      return RunRepair(env, *parsed, out, err);
  }
  return 2;
}

}  // namespace cairn::cairnd
