// Damage to each kind of file of a real data directory, from the outside
// (leveldb's corruption_test, against the cairnd binary): readings are
// written over HTTP and acknowledged (204), cairnd is stopped (kill -9 where
// the log or a -wal must be left on disk), a real file is flipped, cut or
// deleted, and cairnd is started again. For every case the rule is the one
// of issue 16: no acknowledged reading silently lost. Either every one is
// readable with its exact value, or cairnd refuses to start or reports the
// damage in its health, naming the file and the command that fixes it; that
// command then counts the readings lost, and every reading outside the
// damaged part is readable afterwards.
//
// Each case writes 300 readings of one device: 100 in a period two days old,
// 100 two hours old (both sealed by a clean stop), then 100 an hour old in two
// log records left in the log by kill -9 (or, for the -wal cases, sealed into the
// current period's -wal first). A summary table (kind, damage, acknowledged,
// readable, lost, counted by, refused or reported with) is printed at the
// end.
//
// A case the product does not meet yet carries the reason as its known gap:
// its outcome is shown in the table as such and does not fail the test
// (a marked case that meets the rule says so in the table). Every other
// case fails the test when the rule is broken.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <signal.h>

#include "cairn/text/json_value.h"

#include "cairnd_http_fixture.h"

namespace cairn {
namespace {

namespace fs = std::filesystem;

enum class FileKind { kLog, kPeriodDb, kPeriodWal, kCatalog, kTokens };
enum class Damage { kFlip, kTruncate, kDelete };

const char* KindName(FileKind kind) {
  switch (kind) {
    case FileKind::kLog:
      return "log segment";
    case FileKind::kPeriodDb:
      return "period .db";
    case FileKind::kPeriodWal:
      return "period -wal";
    case FileKind::kCatalog:
      return "catalog.db";
    case FileKind::kTokens:
      return "tokens";
  }
  return "?";
}

const char* DamageName(Damage damage) {
  switch (damage) {
    case Damage::kFlip:
      return "flip bytes";
    case Damage::kTruncate:
      return "truncate";
    case Damage::kDelete:
      return "delete";
  }
  return "?";
}

struct Case {
  FileKind kind;
  Damage damage;
  // Why the product does not meet the rule for this case yet; empty when it
  // must.
  const char* known_gap;
};

constexpr const char* kLogEndWork =
    "a cut or deleted log looks like an empty or torn log: nothing durable records where the "
    "acknowledged log ends";

const Case kCases[] = {
    {FileKind::kLog, Damage::kFlip, ""},
    {FileKind::kLog, Damage::kTruncate, kLogEndWork},
    {FileKind::kLog, Damage::kDelete, kLogEndWork},
    {FileKind::kPeriodDb, Damage::kFlip, ""},
    {FileKind::kPeriodDb, Damage::kTruncate, ""},
    {FileKind::kPeriodDb, Damage::kDelete, ""},
    {FileKind::kPeriodWal, Damage::kFlip, ""},
    {FileKind::kPeriodWal, Damage::kTruncate, ""},
    {FileKind::kPeriodWal, Damage::kDelete, ""},
    {FileKind::kCatalog, Damage::kFlip, ""},
    {FileKind::kCatalog, Damage::kTruncate, ""},
    {FileKind::kCatalog, Damage::kDelete, ""},
    {FileKind::kTokens, Damage::kFlip, ""},
    {FileKind::kTokens, Damage::kTruncate, ""},
    {FileKind::kTokens, Damage::kDelete, ""},
};

constexpr int kReadingsPerPart = 100;

// One line of the summary table.
struct Outcome {
  std::string kind, damage;
  size_t acknowledged = 0, readable = 0, lost = 0;
  std::string counted = "-";  // the count the repair or verify report stated
  std::string told = "-";     // how cairnd refused or reported, with the command
  std::string verdict;
};

std::vector<Outcome>& Outcomes() {
  static std::vector<Outcome> outcomes;
  return outcomes;
}

std::string PrintableCase(const ::testing::TestParamInfo<Case>& info) {
  std::string name = std::string(KindName(info.param.kind)) + "_" + DamageName(info.param.damage);
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

class CairndCorruptionTest : public CairndHttpTest, public ::testing::WithParamInterface<Case> {
 protected:
  static void TearDownTestSuite() {
    std::printf("\n%-12s %-10s %6s %8s %5s %-22s %-44s %s\n", "kind", "damage", "acked", "readable", "lost",
                "counted", "refused/reported with", "verdict");
    for (const Outcome& o : Outcomes()) {
      std::printf("%-12s %-10s %6zu %8zu %5zu %-22s %-44s %s\n", o.kind.c_str(), o.damage.c_str(),
                  o.acknowledged, o.readable, o.lost, o.counted.c_str(), o.told.c_str(), o.verdict.c_str());
    }
    std::fflush(stdout);
  }

  std::string Data() { return dir_.PathOf("data"); }

  // Starts cairnd; false (without failing) when it exits instead.
  bool TryStart(std::vector<std::string> flags) {
    flags.insert(flags.begin(), {"--data-dir", Data(), "--http-listen", "127.0.0.1:0", "--http-plain"});
    ++starts_;
    daemon_ = std::make_unique<CairndProcess>(flags, dir_.PathOf("stderr" + std::to_string(starts_)));
    if (!daemon_->started()) return false;
    const std::regex listening("listening on http://127\\.0\\.0\\.1:([0-9]+)");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kCairndTimeoutMs);
    std::smatch match;
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string log = daemon_->Stderr();
      if (std::regex_search(log, match, listening)) {
        port_ = static_cast<uint16_t>(std::stoi(match[1].str()));
        return true;
      }
      if (daemon_->WaitForExit(0)) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  void Kill9() {
    ASSERT_TRUE(daemon_->Signal(SIGKILL));
    ASSERT_TRUE(daemon_->WaitForExit(kCairndTimeoutMs).has_value());
  }

  Result<HttpTestResponse> Request(const std::string& method, const std::string& target,
                                   const std::string& body = "") {
    CAIRN_ASSIGN_OR_RETURN(HttpTestClient client, HttpTestClient::Connect("127.0.0.1", port_));
    return client.Request(method, target, {{"Authorization", "Bearer " + token_}}, body);
  }

  // Writes readings first..first+n-1 of device d1, reading i at
  // base_seconds + i with temperature i; remembers them once acknowledged.
  void WritePart(int first, int64_t base_seconds, int count = kReadingsPerPart) {
    std::string lines;
    for (int i = first; i < first + count; ++i)
      lines += "env,device=d1 temperature=" + std::to_string(i) + " " + std::to_string(base_seconds + i) + "\n";
    Result<HttpTestResponse> response = Request("POST", "/write?db=sensors&precision=s", lines);
    ASSERT_TRUE(response.ok()) << response.status().ToString();
    ASSERT_EQ(response->status, 204) << response->body;
    for (int i = first; i < first + count; ++i) acknowledged_.insert(i);
  }

  // The acknowledged readings the daemon returns with their exact value
  // (nullopt when the query itself fails); `incomplete` tells whether the
  // answer said it stepped over damage.
  std::optional<std::set<int>> ReadBack(bool* incomplete) {
    std::set<int> values;
    std::string page;
    for (int pages = 0; pages < 100; ++pages) {
      std::string target = "/v1/tables/sensors/devices/d1/readings?limit=1000&from=-30d";
      if (!page.empty()) target += "&page=" + page;
      Result<HttpTestResponse> response = Request("GET", target);
      if (!response.ok() || response->status != 200) return std::nullopt;
      Result<JsonValue> json = JsonValue::Parse(response->body);
      if (!json.ok() || json->Find("records") == nullptr) return std::nullopt;
      if (json->Find("incomplete") != nullptr) *incomplete = true;
      for (const JsonValue& record : json->Find("records")->elements()) {
        const JsonValue* value = record.Find("temperature");
        if (value == nullptr) continue;
        const int v = static_cast<int>(value->number());
        EXPECT_TRUE(acknowledged_.count(v) && static_cast<double>(v) == value->number())
            << "a reading that was never written: " << value->text();
        EXPECT_TRUE(values.insert(v).second) << "reading " << v << " returned twice";
      }
      const JsonValue* next = json->Find("next_page");
      if (next == nullptr) break;
      page = next->text();
    }
    return values;
  }

  // The number of sealed chunks this daemon run reports.
  int ChunksSealed() {
    Result<HttpTestResponse> response = Request("GET", "/metrics");
    if (!response.ok()) return -1;
    std::smatch match;
    const std::regex sealed("\ncairn_engine_chunks_sealed_total ([0-9]+)");
    return std::regex_search(response->body, match, sealed) ? std::stoi(match[1].str()) : -1;
  }

  // The newest file (by name) in `dir` whose name satisfies `pick`.
  std::string NewestIn(const std::string& dir, const std::function<bool(const std::string&)>& pick) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (pick(name)) names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return names.empty() ? "" : dir + "/" + names.back();
  }

  std::string OldestPeriodFile() {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(Data() + "/sensors")) {
      const std::string name = entry.path().filename().string();
      if (name.ends_with(".db")) names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return names.empty() ? "" : Data() + "/sensors/" + names.front();
  }

  std::string TargetFile(FileKind kind) {
    switch (kind) {
      case FileKind::kLog:
        return NewestIn(Data() + "/log", [](const std::string& n) { return n.ends_with(".log"); });
      case FileKind::kPeriodDb:
        return OldestPeriodFile();
      case FileKind::kPeriodWal:
        return NewestIn(Data() + "/sensors", [&](const std::string& n) {
          return n.ends_with(".db-wal") && fs::file_size(Data() + "/sensors/" + n) > 0;
        });
      case FileKind::kCatalog:
        return Data() + "/catalog.db";
      case FileKind::kTokens:
        return Data() + "/tokens";
    }
    return "";
  }

  // A seal checkpoints its WAL at once, so a kill rarely leaves one with
  // frames. This leaves one as a crash between a seal's commit and its
  // checkpoint would: two commits (rows in the meta table, which cairn
  // ignores) made with Debian's sqlite3 shell, the WAL copied before the
  // shell checkpoints it away.
  void LeaveCommitsInAWal() {
    const std::string db = NewestIn(Data() + "/sensors", [](const std::string& n) { return n.ends_with(".db"); });
    ASSERT_FALSE(db.empty());
    const std::string script = dir_.PathOf("commits.sql");
    {
      std::ofstream out(script);
      out << "PRAGMA wal_autocheckpoint=0;\n"
          << "INSERT INTO meta(key, value) VALUES('filler_1', randomblob(9000));\n"
          << "INSERT INTO meta(key, value) VALUES('filler_2', randomblob(9000));\n"
          << ".shell cp " << db << "-wal " << db << "-wal.keep\n";
    }
    auto [status, output] = RunCommand("sqlite3 " + db + " < " + script);
    ASSERT_EQ(status, 0) << output;
    ASSERT_EQ(RunCommand("mv " + db + "-wal.keep " + db + "-wal && rm -f " + db + "-shm").first, 0);
  }

  static void Apply(const std::string& path, FileKind kind, Damage damage) {
    const uintmax_t size = fs::file_size(path);
    if (damage == Damage::kDelete) {
      fs::remove(path);
      return;
    }
    if (damage == Damage::kTruncate) {
      fs::resize_file(path, size / 2);
      return;
    }
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    size_t at = size / 2;
    if (kind == FileKind::kLog) {
      // Inside the first record's payload (segment header 32 bytes, record
      // header 21): an intact record follows it.
      at = 32 + 21 + 30;
    } else if (kind == FileKind::kPeriodDb) {
      // Inside the bytes of the first chunk (magic "CK", version 1): the
      // SQLite pages stay valid, the chunk's checksum fails.
      const size_t chunk = bytes.find(std::string("CK\x01", 3));
      ASSERT_NE(chunk, std::string::npos) << "no chunk found in " << path;
      at = chunk + 24;
    }
    for (size_t i = at; i < at + 8 && i < bytes.size(); ++i) bytes[i] = static_cast<char>(bytes[i] ^ 0x5a);
    file.seekp(0);
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  std::set<int> acknowledged_;
  std::string token_;
};

// The command a refusal or a health problem names: its words after
// "cairnd" (`label`) and a shell command line for this build's cairnd; both
// empty when none is named.
struct NamedCommand {
  std::string label, line;
};
NamedCommand FindCommand(const std::string& text) {
  const std::regex command(
      "cairnd (verify --repair|verify|--repair-log|token repair|token create) (--data-dir [^ ;)\"'`\\n]+)"
      "( --name admin --scope admin)?");
  std::smatch match;
  if (!std::regex_search(text, match, command)) return {};
  return {match[1].str(), CairndCommandLine() + " " + match[1].str() + " " + match[2].str() + match[3].str()};
}

// The readings a repair or verify report says were lost.
std::optional<size_t> StatedLoss(const std::string& report) {
  std::smatch match;
  for (const char* pattern : {"readings lost: ([0-9]+)", "([0-9]+) reading\\(s\\) lost",
                              "([0-9]+) LSN\\(s\\) below the checkpoint \\([0-9]+\\) are in no period file"}) {
    if (std::regex_search(report, match, std::regex(pattern))) return std::stoul(match[1].str());
  }
  return std::nullopt;
}

// One case from the writes to the verdict. Longer than a function should
// be, on purpose: it reads top-down as the steps an operator goes through
// (write, crash, damage, start, read, follow the named command, read again).
TEST_P(CairndCorruptionTest, NoAcknowledgedReadingIsSilentlyLost) {
  const Case c = GetParam();
  std::vector<std::string> flags;
  if (c.kind == FileKind::kPeriodWal) flags = {"--seal-records", "50"};
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  ASSERT_TRUE(TryStart(flags)) << daemon_->Stderr();
  token_ = FirstAdminToken();
  ASSERT_FALSE(token_.empty());
  WritePart(1, now - 2 * 86400);  // an old period
  WritePart(101, now - 7200);     // the current one
  StopDaemon();                   // both sealed, checkpointed
  ASSERT_TRUE(TryStart(flags)) << daemon_->Stderr();
  // Two log records: damage to the first is damage in the middle of the log.
  WritePart(201, now - 3600, kReadingsPerPart / 2);
  WritePart(201 + kReadingsPerPart / 2, now - 3600, kReadingsPerPart / 2);
  if (c.kind == FileKind::kPeriodWal) {
    // Sealed into the current period's -wal before the kill.
    for (int i = 0; i < 200 && ChunksSealed() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_GE(ChunksSealed(), 2);
  }
  Kill9();

  if (c.kind == FileKind::kPeriodWal && TargetFile(c.kind).empty()) LeaveCommitsInAWal();
  const std::string target = TargetFile(c.kind);
  ASSERT_FALSE(target.empty()) << "no " << KindName(c.kind) << " file to damage";
  Apply(target, c.kind, c.damage);

  Outcome outcome;
  outcome.kind = KindName(c.kind);
  outcome.damage = DamageName(c.damage);
  outcome.acknowledged = acknowledged_.size();
  std::string failure;  // why the rule is not met; empty when it is
  bool incomplete = false;
  std::optional<std::set<int>> readable;
  std::string told;  // the refusal or the health report
  if (TryStart({})) {
    readable = ReadBack(&incomplete);
    if (!readable && c.kind == FileKind::kTokens) told = daemon_->Stderr();
    if (!readable && c.kind != FileKind::kTokens) {
      // Up without storage: the health details name the damage and the fix.
      Result<HttpTestResponse> health = Request("GET", "/healthz");
      if (health.ok() && Contains(health->body, "\"status\":\"unavailable\"")) told = health->body;
    }
    if (readable && readable->size() < acknowledged_.size()) {
      Result<HttpTestResponse> health = Request("GET", "/healthz");
      told = health.ok() ? health->body : "";
    }
  } else {
    told = daemon_->Stderr();
    outcome.told = "refused";
  }
  const bool told_by_log = !told.empty() && told == daemon_->Stderr();
  if (c.kind == FileKind::kPeriodDb && c.damage == Damage::kFlip) {
    // A damaged chunk: the rest is served, flagged, and health names the
    // file and the chunk.
    EXPECT_TRUE(incomplete) << "the answer does not say it is incomplete";
    EXPECT_TRUE(Contains(told, "\"status\":\"degraded\"") && Contains(told, "chunk of series")) << told;
  }
  if (c.kind == FileKind::kPeriodDb && c.damage == Damage::kTruncate) {
    // An unreadable file: quarantined, named in the log and in health.
    EXPECT_TRUE(Contains(daemon_->Stderr(), "period file " + target + " could not be read")) << daemon_->Stderr();
    EXPECT_TRUE(Contains(told, "period.quarantined:sensors/")) << told;
    EXPECT_TRUE(fs::exists(Data() + "/quarantine/sensors/" + fs::path(target).filename().string()));
  }
  if (readable && readable->size() == acknowledged_.size()) {
    outcome.readable = readable->size();
    outcome.verdict = "all readable";
  } else {
    // Not all readable: the damage must be named with its file and a command.
    const std::string named_file = c.kind == FileKind::kLog ? Data() + "/log" : target;
    const NamedCommand named = FindCommand(told);
    const std::string& command = named.line;
    if (told.find(named_file) == std::string::npos || command.empty()) {
      failure = "readings missing (" + std::to_string(readable ? readable->size() : 0) + " of " +
                std::to_string(acknowledged_.size()) + " readable) and nothing names " + named_file +
                " with a command: " + told;
    } else {
      if (outcome.told == "-") outcome.told = told_by_log ? "log" : "health";
      outcome.told += ": cairnd " + named.label;
      if (!daemon_->WaitForExit(0)) StopDaemon();
      // A created token goes to stdout alone; the other reports are read whole.
      const bool creates_token = named.label == "token create";
      auto [status, report] = RunCommand(command, /*with_stderr=*/!creates_token);
      (void)status;  // the report, not the exit status, says what was lost
      std::optional<size_t> loss = StatedLoss(report);
      if (c.kind == FileKind::kTokens) loss = 0;  // tokens hold no readings
      if (creates_token) {
        token_ = report.substr(0, report.find('\n'));
      }
      if (!loss) failure = "the command named states no loss: " + report;
      outcome.counted = loss ? std::to_string(*loss) : "none";
      if (!TryStart({})) {
        failure = "cairnd does not start after `" + command + "`: " + daemon_->Stderr();
      } else {
        if (named.label == "token repair") {
          // The admin token's line may be the damaged one: a new one is made.
          auto [created, line] = RunCommand(CairndCommandLine() + " token create --data-dir " + Data() +
                                                " --name again --scope admin",
                                            /*with_stderr=*/false);
          if (created == 0) token_ = line.substr(0, line.find('\n'));
        }
        incomplete = false;
        readable = ReadBack(&incomplete);
        if (!readable) {
          failure = "the readings cannot be queried after the repair";
        } else if (loss && readable->size() + *loss != acknowledged_.size()) {
          failure = std::to_string(readable->size()) + " readable + " + std::to_string(*loss) +
                    " stated lost != " + std::to_string(acknowledged_.size()) + " acknowledged";
        }
      }
      outcome.verdict = failure.empty() ? "loss counted" : "";
    }
    outcome.readable = readable ? readable->size() : 0;
  }
  outcome.lost = acknowledged_.size() - outcome.readable;
  const std::string gap = c.known_gap;
  if (!failure.empty()) {
    outcome.verdict = gap.empty() ? "FAILS: " + failure.substr(0, 160) : "known gap: " + gap;
    if (gap.empty()) ADD_FAILURE() << failure;
  } else if (!gap.empty()) {
    outcome.verdict += " (marked as a known gap: the mark may go)";
  }
  Outcomes().push_back(outcome);
}

// `cairnd verify` takes the data directory's lock: it refuses while cairnd
// runs, and passes a directory cairnd left intact.
TEST_F(CairndHttpTest, VerifyRefusesWhileCairndRunsAndPassesAnIntactDirectory) {
  StartDaemon({"--http-plain"});
  const std::string verify = CairndCommandLine() + " verify --data-dir " + dir_.PathOf("data");
  auto [busy, refusal] = RunCommand(verify);
  EXPECT_EQ(busy, 1);
  EXPECT_TRUE(Contains(refusal, "is in use by a running cairnd; stop it first")) << refusal;
  StopDaemon();
  auto [status, report] = RunCommand(verify);
  EXPECT_EQ(status, 0) << report;
  EXPECT_TRUE(Contains(report, "ok       " + dir_.PathOf("data/catalog.db"))) << report;
  EXPECT_TRUE(Contains(report, "result: ok\n")) << report;
  // Without --data-dir, the config file's storage.data_dir is checked.
  const std::string config = dir_.PathOf("cairn.toml");
  ASSERT_TRUE(Env::Default()
                  ->WriteFileAtomically(config, "[storage]\ndata_dir = '" + dir_.PathOf("data") + "'\n")
                  .ok());
  auto [config_status, config_report] = RunCommand(CairndCommandLine() + " verify --config " + config);
  EXPECT_EQ(config_status, 0) << config_report;
  EXPECT_TRUE(Contains(config_report, "cairnd verify: " + dir_.PathOf("data") + "\n")) << config_report;
  auto [missing_status, missing] =
      RunCommand(CairndCommandLine() + " verify --config " + dir_.PathOf("no.toml"));
  EXPECT_EQ(missing_status, 2) << missing;
  EXPECT_TRUE(Contains(missing, "no.toml")) << missing;
  auto [help_status, help] = RunCommand(CairndCommandLine() + " --help");
  EXPECT_EQ(help_status, 0);
  EXPECT_TRUE(Contains(help, "verify [--repair]")) << help;
}

INSTANTIATE_TEST_SUITE_P(EveryFileKindAndDamage, CairndCorruptionTest, ::testing::ValuesIn(kCases),
                         PrintableCase);

}  // namespace
}  // namespace cairn
