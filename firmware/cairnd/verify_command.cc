#include "cairnd/verify_command.h"

#include <optional>
#include <string>
#include <string_view>

#include "cairn/core/engine.h"
#include "cairn/http/token_store.h"

#include "cairnd/options.h"

namespace cairn::cairnd {

namespace {

struct VerifyCommandLine {
  std::string data_dir;  // resolved: --data-dir, the config file's, or the default
  bool repair = false;
  bool help = false;
};

// Whether words[*i] is `NAME VALUE` or `NAME=VALUE`; if so, sets *value
// and moves *i to the flag's last word.
Result<bool> TakeFlag(std::span<const char* const> words, size_t* i, std::string_view name,
                      std::string_view what, std::string* value) {
  const std::string_view word = words[*i];
  const bool separate = word == name;
  const bool joined = word.starts_with(name) && word.size() > name.size() && word[name.size()] == '=';
  if (!separate && !joined) return false;
  if (separate && *i + 1 < words.size()) {
    *value = words[++*i];
  } else if (joined) {
    *value = std::string(word.substr(name.size() + 1));
  } else {
    value->clear();
  }
  if (value->empty()) return Status::InvalidArgument(std::string(name) + " needs " + std::string(what));
  return true;
}

Result<VerifyCommandLine> ParseVerifyCommandLine(Env* env, std::span<const char* const> words) {
  VerifyCommandLine parsed;
  std::optional<std::string> data_dir;
  std::string config_path(kDefaultConfigPath);
  bool config_named = false;
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string_view word = words[i];
    std::string value;
    CAIRN_ASSIGN_OR_RETURN(const bool is_data_dir, TakeFlag(words, &i, "--data-dir", "a directory", &value));
    if (is_data_dir) {
      data_dir = value;
      continue;
    }
    CAIRN_ASSIGN_OR_RETURN(const bool is_config, TakeFlag(words, &i, "--config", "a file or none", &value));
    if (is_config) {
      config_path = value == "none" ? "" : value;
      config_named = true;
    } else if (word == "--help" || word == "-h") {
      parsed.help = true;
    } else if (word == "--repair") {
      parsed.repair = true;
    } else {
      return Status::InvalidArgument("unknown argument '" + std::string(word) + "'");
    }
  }
  if (parsed.help) return parsed;
  CAIRN_ASSIGN_OR_RETURN(parsed.data_dir, ResolveDataDir(env, data_dir, config_path, config_named));
  return parsed;
}

// The tokens file, checked as cairnd loads it; --repair keeps its intact
// tokens (TokenStore::Repair). Readings never live there.
VerifiedFile VerifyTokens(Env* env, const std::string& data_dir, bool repair) {
  VerifiedFile file = VerifiedFile::Of(JoinPath(data_dir, std::string(TokenStore::kFileName)), "tokens");
  if (!env->FileExists(file.path)) {
    file.summary = "no tokens file (cairnd creates an admin token at its next start)";
    return file;
  }
  Result<std::unique_ptr<TokenStore>> store = TokenStore::Open(env, data_dir);
  if (store.ok()) {
    file.summary = std::to_string((*store)->List().size()) + " token(s)";
    return file;
  }
  file.problems.push_back(store.status().message());
  if (!repair) return file;
  Result<TokenRepairReport> repaired = TokenStore::Repair(env, data_dir);
  if (!repaired.ok()) {
    file.actions.push_back("repair failed: " + repaired.status().message());
    return file;
  }
  file.actions.push_back("kept " + std::to_string(repaired->kept.size()) + " intact token(s), dropped " +
                         std::to_string(repaired->dropped.size()) + " damaged line(s) (create those tokens " +
                         "again); the damaged file is kept at " + repaired->damaged_copy_path);
  return file;
}

std::string Count(const std::optional<uint64_t>& n) { return n ? std::to_string(*n) : "unknown"; }

void PrintFile(const VerifiedFile& file, bool repair, std::string* out) {
  if (file.kind == "quarantined") {
    *out += "QUARANTINED " + file.path + "  " + file.summary + "\n";
    return;
  }
  if (!file.damaged()) {
    if (file.actions.empty()) {
      *out += "ok       " + file.path + (file.summary.empty() ? "" : "  " + file.summary) + "\n";
      return;
    }
    *out += "repaired " + file.path + "\n";
  } else {
    *out += "DAMAGED  " + file.path + (file.summary.empty() ? "" : "  " + file.summary) + "\n";
    for (const std::string& problem : file.problems) *out += "         - " + problem + "\n";
    *out += "         readings affected: " + Count(file.readings_affected) + "\n";
  }
  for (const std::string& action : file.actions) *out += "         repaired: " + action + "\n";
  if (repair && (file.damaged() || !file.actions.empty()))
    *out += "         readings lost: " + Count(file.readings_lost) + "\n";
}

// A damaged file is mended when the repair did something to it and said
// what it cost (the catalog's "not repaired" action does not count).
bool Mended(const VerifiedFile& file) {
  if (!file.damaged()) return true;
  for (const std::string& action : file.actions) {
    if (action.starts_with("repair failed") || action.starts_with("not repaired")) return false;
  }
  // Log segments are mended together by the entry for the log directory.
  return !file.actions.empty() || file.kind == "log";
}

}  // namespace

std::string VerifyCommandUsage() {
  return "usage: cairnd verify [--repair] [--data-dir DIR] [--config FILE|none]\n"
         "\n"
         "Checks every file of a stopped data directory: catalog.db (SQLite integrity,\n"
         "tables, checkpoint), each period file (SQLite integrity, meta, every chunk's\n"
         "checksum and decode), each log segment (every record's checksum and LSNs),\n"
         "the LSNs below the checkpoint against the period files, and the tokens file.\n"
         "Prints ok or DAMAGED per file with the readings affected. Refuses while\n"
         "cairnd runs on DIR (it takes the same lock).\n"
         "\n"
         "  --repair        make DIR one cairnd serves again, destroying nothing:\n"
         "                  unreadable period files move to DIR/quarantine/<table>/,\n"
         "                  damaged chunks are taken out of their file after a copy of\n"
         "                  the file is kept there, the log is mended as --repair-log\n"
         "                  does, the tokens file keeps its intact tokens; prints the\n"
         "                  readings lost. Delete the quarantine to accept the loss.\n"
         "  --data-dir DIR  the data directory (default: storage.data_dir of the config\n"
         "                  file, else " +
         DaemonOptions{}.data_dir +
         ")\n"
         "  --config FILE   the config file that names it (default " +
         std::string(kDefaultConfigPath) +
         " when it\n"
         "                  exists; none: do not read one)\n"
         "\n"
         "Exit status: 0 nothing damaged (or --repair mended all of it), 1 damage\n"
         "remains or DIR could not be checked, 2 usage error.\n";
}

int RunVerifyCommand(Env* env, std::span<const char* const> words, std::string* out, std::string* err) {
  Result<VerifyCommandLine> parsed = ParseVerifyCommandLine(env, words);
  if (!parsed.ok()) {
    *err += "cairnd verify: " + parsed.status().message() + "\nTry 'cairnd verify --help' for usage.\n";
    return 2;
  }
  if (parsed->help) {
    *out += VerifyCommandUsage();
    return 0;
  }
  Result<VerifyReport> verified = Engine::Verify(env, parsed->data_dir, parsed->repair);
  if (!verified.ok()) {
    if (verified.status().Is(StatusCode::kBusy)) {
      *err += "cairnd verify: data directory " + parsed->data_dir +
              " is in use by a running cairnd; stop it first\n";
    } else {
      *err += "cairnd verify: cannot check " + parsed->data_dir + ": " + verified.status().message() + "\n";
    }
    return 1;
  }
  VerifyReport& report = *verified;
  report.files.push_back(VerifyTokens(env, parsed->data_dir, parsed->repair));
  *out += "cairnd verify: " + parsed->data_dir + (parsed->repair ? " (repair)" : "") + "\n";
  size_t damaged = 0;
  bool all_mended = true;
  uint64_t affected = 0;
  bool affected_unknown = false;
  for (const VerifiedFile& file : report.files) {
    PrintFile(file, parsed->repair, out);
    if (!file.damaged()) continue;
    ++damaged;
    all_mended = all_mended && Mended(file);
    if (file.readings_affected) {
      affected += *file.readings_affected;
    } else {
      affected_unknown = true;
    }
  }
  if (report.lsns_below_checkpoint_not_in_period_files > 0) {
    *out += "note: " + std::to_string(report.lsns_below_checkpoint_not_in_period_files) +
            " LSN(s) below the checkpoint (" + std::to_string(report.checkpoint_lsn) +
            ") are in no period file: overwritten versions merged by compaction, retention, the sync "
            "quota and refused writes give LSNs up too, so this alone is not damage\n";
  }
  const std::string unknown = " and an unknown number in files that cannot be read";
  *out += damaged == 0 ? std::string("result: ok\n") : "result: damaged (" + std::to_string(damaged) + " file(s))\n";
  *out += "readings affected: " + std::to_string(affected) + (affected_unknown ? unknown : "") + "\n";
  if (parsed->repair) {
    bool lost_unknown = false;
    const uint64_t lost = report.ReadingsLost(&lost_unknown);
    *out += "readings lost: " + std::to_string(lost) + (lost_unknown ? unknown : "") + "\n";
    if (damaged > 0 && all_mended) {
      *out += "repaired: cairnd can start on " + parsed->data_dir + "; what was taken out is kept in " +
              JoinPath(parsed->data_dir, "quarantine") + " (delete it to accept the loss)\n";
    }
  }
  if (damaged == 0) return 0;
  return parsed->repair && all_mended ? 0 : 1;
}

}  // namespace cairn::cairnd
