// cairnd with its storage engine, as an operator meets it over a serial line:
// writes in line protocol, queries in text and JSON, bad input, a clean stop
// and a restart, a kill -9 after an acknowledged write, and a damaged log
// repaired with `cairnd --repair-log`.
//
// Every wait is bounded and every child is killed and reaped by its guard,
// whatever assertion fails first.
#include <charconv>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cairn/platform/env.h"
#include "cairn/text/json_value.h"
#include "cairn/text/timestamp_format.h"

#include "cairnd_process.h"
#include "pty_pair.h"
#include "test_dirs.h"

namespace cairn {
namespace {

// Generous: the daemon may run under sanitizers on a busy machine. No test
// asserts on how long anything took, only that it happened before this.
constexpr int kTimeoutMs = 60000;
constexpr std::string_view kPrompt = "cairn> ";
constexpr int64_t kMinute = int64_t{60} * 1'000'000'000;

bool ExitedWith(const std::optional<int>& status, int code) {
  return status && WIFEXITED(*status) && WEXITSTATUS(*status) == code;
}

// The JSON document a `--json` command printed: the answer between the
// echoed command line and the prompt.
std::optional<JsonValue> ParseAnswer(const std::string& terminal) {
  const size_t echo_end = terminal.find("\r\n");
  const size_t prompt = terminal.rfind(kPrompt);
  if (echo_end == std::string::npos || prompt == std::string::npos || prompt < echo_end) return std::nullopt;
  Result<JsonValue> parsed =
      JsonValue::Parse(std::string_view(terminal).substr(echo_end + 2, prompt - echo_end - 2));
  if (!parsed.ok()) return std::nullopt;
  return std::move(parsed).value();
}

// ---- the fixture ------------------------------------------------------------

class CairndEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::unique_ptr<PtyPair>> pty = PtyPair::Open();
    ASSERT_TRUE(pty.ok()) << pty.status().ToString();
    pty_ = std::move(pty).value();
    data_dir_ = temp_.PathOf("data");
  }

  // Starts cairnd on the pty and waits for its prompt.
  std::unique_ptr<CairndProcess> StartDaemon(const std::string& log_name,
                                             const std::vector<std::string>& extra_flags = {}) {
    std::vector<std::string> flags = {"--data-dir", data_dir_, "--serial", pty_->slave_path()};
    flags.insert(flags.end(), extra_flags.begin(), extra_flags.end());
    auto daemon =
        std::make_unique<CairndProcess>(flags, temp_.PathOf(log_name), temp_.PathOf(log_name + ".out"));
    EXPECT_TRUE(daemon->started()) << "posix_spawn: " << daemon->spawn_error();
    std::string text;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTimeoutMs);
    while (!Contains(text, kPrompt) && std::chrono::steady_clock::now() < deadline) {
      text += pty_->ReadUntil(kPrompt, 200);
      if (Contains(text, kPrompt)) break;
      daemon->WaitForExit(0);
      if (daemon->exit_status().has_value()) break;
    }
    EXPECT_TRUE(Contains(text, kPrompt))
        << "no prompt; cairnd " << DescribeWaitStatus(daemon->exit_status()) << "; terminal:\n"
        << text << "\nlog:\n"
        << daemon->Stderr();
    return daemon;
  }

  // A daemon run that must fail at start: its exit status and log.
  std::unique_ptr<CairndProcess> RunToExit(const std::vector<std::string>& flags,
                                           const std::string& log_name) {
    auto process =
        std::make_unique<CairndProcess>(flags, temp_.PathOf(log_name), temp_.PathOf(log_name + ".out"));
    EXPECT_TRUE(process->started()) << "posix_spawn: " << process->spawn_error();
    process->WaitForExit(kTimeoutMs);
    return process;
  }

  // Types `line` and Enter; returns everything up to the next prompt.
  std::string Type(std::string_view line) {
    Status written = pty_->Write(std::string(line) + "\r");
    EXPECT_TRUE(written.ok()) << written.ToString();
    const std::string answer = pty_->ReadUntil(kPrompt, kTimeoutMs);
    EXPECT_TRUE(Contains(answer, kPrompt)) << "no prompt after '" << line << "':\n" << answer;
    return answer;
  }

  void StopWithSigterm(CairndProcess* daemon) {
    ASSERT_TRUE(daemon->Signal(SIGTERM));
    const std::optional<int> status = daemon->WaitForExit(kTimeoutMs);
    EXPECT_TRUE(ExitedWith(status, 0)) << DescribeWaitStatus(status) << "\nlog:\n" << daemon->Stderr();
    EXPECT_TRUE(Contains(daemon->Stderr(), "INFO stopped")) << daemon->Stderr();
  }

  // Now on the machine's clock, which cairnd uses too; readings are placed
  // a little in the past so that they are inside the table's retention and
  // never ahead of the daemon's clock.
  static int64_t Now() { return Env::Default()->NowUnixNanos(); }

  ScopedTempDir temp_{"cairnd-engine"};
  std::unique_ptr<PtyPair> pty_;
  std::string data_dir_;
};

TEST_F(CairndEngineTest, WritesAndQueriesOverTheSerialLineAndKeepsDataAcrossARestart) {
  auto daemon = StartDaemon("first.log");
  EXPECT_TRUE(
      Contains(daemon->Stderr(), "INFO created the default table 'sensors' (period day, retention 30d)"))
      << daemon->Stderr();
  EXPECT_TRUE(Contains(Type("tables"), "\r\nsensors  day     30d"));

  // On a 5-minute boundary, so that the five readings one minute apart fill
  // exactly one `agg --step 5m` bucket.
  const int64_t base = (Now() - 30 * kMinute) / (5 * kMinute) * (5 * kMinute);
  const std::string base_text = FormatTimestampUtc(base);
  const std::string put =
      Type("put sensors env,device=d1 temperature=21.5,humidity=40i " + std::to_string(base));
  ASSERT_TRUE(Contains(put, "outcome  stored\r\n")) << put;

  const std::string latest = Type("latest sensors d1");
  EXPECT_TRUE(Contains(latest, "time                  measure  humidity  temperature\r\n")) << latest;
  EXPECT_TRUE(Contains(latest, base_text + "  env            40         21.5\r\n")) << latest;

  for (int i = 1; i <= 4; ++i) {
    const std::string more =
        Type("put sensors env,device=d1 temperature=" + std::to_string(21 + i) +
             ".5,humidity=" + std::to_string(40 + i) + "i " + std::to_string(base + i * kMinute));
    ASSERT_TRUE(Contains(more, "outcome  stored\r\n")) << more;
  }
  const std::string range = Type("range sensors d1");
  for (const char* value : {"21.5", "22.5", "23.5", "24.5", "25.5"}) {
    EXPECT_TRUE(Contains(range, std::string("  ") + value + "\r\n")) << value << "\n" << range;
  }
  const std::string page = Type("range sensors d1 --limit 2");
  EXPECT_TRUE(Contains(page, "\r\nmore: use --page ")) << page;

  const std::string agg =
      Type("agg sensors d1 env temperature --step 5m --fn min,max,count --from " + base_text);
  EXPECT_TRUE(Contains(agg, "start                  min   max  count\r\n")) << agg;
  EXPECT_TRUE(Contains(agg, base_text + "  21.5  25.5      5\r\n")) << agg;

  // --json: documents a program can read, carrying the values.
  std::optional<JsonValue> latest_json = ParseAnswer(Type("latest sensors d1 --json"));
  ASSERT_TRUE(latest_json.has_value());
  const JsonValue* rows = latest_json->Find("rows");
  ASSERT_TRUE(rows != nullptr && rows->elements().size() == 1);
  ASSERT_TRUE(rows->elements()[0].Find("temperature") != nullptr);
  EXPECT_EQ(rows->elements()[0].Find("temperature")->number(), 25.5);
  EXPECT_EQ(rows->elements()[0].Find("humidity")->number(), 44);
  EXPECT_EQ(rows->elements()[0].Find("time")->text(), FormatTimestampUtc(base + 4 * kMinute));

  std::optional<JsonValue> range_json = ParseAnswer(Type("range sensors d1 --limit 3 --json"));
  ASSERT_TRUE(range_json.has_value());
  ASSERT_EQ(range_json->Find("rows")->elements().size(), 3u);
  EXPECT_EQ(range_json->Find("rows")->elements()[2].Find("temperature")->number(), 23.5);
  ASSERT_TRUE(range_json->Find("next_page") != nullptr);
  std::optional<JsonValue> rest_json =
      ParseAnswer(Type("range sensors d1 --limit 3 --json --page " + range_json->Find("next_page")->text()));
  ASSERT_TRUE(rest_json.has_value());
  ASSERT_EQ(rest_json->Find("rows")->elements().size(), 2u);
  EXPECT_EQ(rest_json->Find("rows")->elements()[1].Find("temperature")->number(), 25.5);
  EXPECT_EQ(rest_json->Find("next_page"), nullptr);

  std::optional<JsonValue> agg_json =
      ParseAnswer(Type("agg sensors d1 env humidity --step 5m --fn avg,max --from " + base_text + " --json"));
  ASSERT_TRUE(agg_json.has_value());
  ASSERT_EQ(agg_json->Find("rows")->elements().size(), 1u);
  EXPECT_EQ(agg_json->Find("rows")->elements()[0].Find("avg")->number(), 42);
  EXPECT_EQ(agg_json->Find("rows")->elements()[0].Find("max")->number(), 44);

  std::optional<JsonValue> stats_json = ParseAnswer(Type("stats --json"));
  ASSERT_TRUE(stats_json.has_value());
  EXPECT_EQ(stats_json->Find("records_written")->number(), 5);
  std::optional<JsonValue> health_json = ParseAnswer(Type("health --json"));
  ASSERT_TRUE(health_json.has_value());
  EXPECT_EQ(health_json->Find("status")->text(), "ok");

  // Bad input: a clear error each time, and the daemon keeps serving.
  EXPECT_TRUE(Contains(Type("put sensors garbage"), "\r\nerror: put: line protocol: no fields"));
  EXPECT_TRUE(
      Contains(Type("put sensors env temperature=1"), "\r\nerror: put: line protocol: no 'device' tag\r\n"));
  EXPECT_TRUE(Contains(Type("put nope env,device=d1 v=1"),
                       "\r\nerror: table 'nope' does not exist; type tables to list them\r\n"));
  EXPECT_TRUE(Contains(Type("latest nope d1"), "\r\nerror: table 'nope' does not exist"));
  EXPECT_TRUE(
      Contains(Type("range sensors d1 --from yesterday"), "\r\nerror: --from: bad time 'yesterday': "));
  EXPECT_TRUE(
      Contains(Type("agg sensors d1 env temperature --step soon"), "\r\nerror: --step: bad duration 'soon'"));
  std::optional<JsonValue> error_json = ParseAnswer(Type("latest nope d1 --json"));
  ASSERT_TRUE(error_json.has_value());
  EXPECT_EQ(error_json->Find("error")->Find("code")->text(), "NotFound");
  EXPECT_TRUE(Contains(Type("version"), "\r\nversion "));
  daemon->WaitForExit(0);
  EXPECT_FALSE(daemon->exit_status().has_value()) << daemon->Stderr();

  StopWithSigterm(daemon.get());

  // A restart finds everything, and does not create the default table again.
  auto second = StartDaemon("second.log");
  EXPECT_FALSE(Contains(second->Stderr(), "created the default table")) << second->Stderr();
  const std::string again = Type("latest sensors d1");
  EXPECT_TRUE(
      Contains(again, FormatTimestampUtc(base + 4 * kMinute) + "  env            44         25.5\r\n"))
      << again;
  EXPECT_TRUE(
      Contains(Type("range sensors d1 --limit 10"), base_text + "  env            40         21.5\r\n"));
  StopWithSigterm(second.get());
}

TEST_F(CairndEngineTest, AnAcknowledgedWriteSurvivesKill9) {
  auto daemon = StartDaemon("first.log");
  const int64_t when = (Now() - 5 * kMinute) / 1000 * 1000;
  const std::string put =
      Type("put sensors env,device=gw-7,site=roof temperature=-3.25 " + std::to_string(when));
  ASSERT_TRUE(Contains(put, "outcome  stored\r\n")) << put;

  // The prompt after "stored" is the acknowledgement: the record is synced.
  ASSERT_TRUE(daemon->Signal(SIGKILL));
  const std::optional<int> killed = daemon->WaitForExit(kTimeoutMs);
  ASSERT_TRUE(killed && WIFSIGNALED(*killed)) << DescribeWaitStatus(killed);

  auto second = StartDaemon("second.log");
  EXPECT_TRUE(Contains(second->Stderr(), "INFO recovered 1 records from the write-ahead log"))
      << second->Stderr();
  const std::string latest = Type("latest sensors gw-7");
  EXPECT_TRUE(Contains(latest, FormatTimestampUtc(when) + "  env      roof        -3.25\r\n")) << latest;
  EXPECT_TRUE(Contains(Type("measures sensors"), "  site  ")) << "dimensions are kept too";
  StopWithSigterm(second.get());
}

TEST_F(CairndEngineTest, DurabilityAndSealFlagsAreHonoured) {
  // Sealing after two records per series: the background seal runs while the
  // queries go on, and the answers merge sealed chunks and head alike.
  auto daemon = StartDaemon("cairnd.log", {"--durability", "interval=20", "--seal-records", "2"});
  const int64_t base = (Now() - 10 * kMinute) / kMinute * kMinute;
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(Contains(
        Type("put sensors env,device=d1 v=" + std::to_string(i) + "i " + std::to_string(base + i * kMinute)),
        "outcome  stored\r\n"));
  }
  std::optional<JsonValue> range = ParseAnswer(Type("range sensors d1 --json"));
  ASSERT_TRUE(range.has_value());
  ASSERT_EQ(range->Find("rows")->elements().size(), 5u);
  for (size_t i = 0; i < 5; ++i)
    EXPECT_EQ(range->Find("rows")->elements()[i].Find("v")->number(), static_cast<double>(i));
  StopWithSigterm(daemon.get());

  // The stop sealed everything: the next start has nothing to replay.
  auto second = StartDaemon("second.log", {"--durability", "off"});
  EXPECT_FALSE(Contains(second->Stderr(), "recovered")) << second->Stderr();
  std::optional<JsonValue> stats = ParseAnswer(Type("stats --json"));
  ASSERT_TRUE(stats.has_value());
  EXPECT_EQ(stats->Find("head_records")->number(), 0);
  EXPECT_EQ(ParseAnswer(Type("range sensors d1 --json"))->Find("rows")->elements().size(), 5u);
  StopWithSigterm(second.get());
}

TEST_F(CairndEngineTest, ADamagedLogKeepsTheStorageUnavailableUntilRepaired) {
  auto daemon = StartDaemon("first.log");
  const int64_t base = (Now() - 10 * kMinute) / kMinute * kMinute;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(Contains(
        Type("put sensors env,device=d1 v=" + std::to_string(i) + "i " + std::to_string(base + i * kMinute)),
        "outcome  stored\r\n"));
  }
  ASSERT_TRUE(daemon->Signal(SIGKILL));
  ASSERT_TRUE(daemon->WaitForExit(kTimeoutMs).has_value());

  // Flip a byte in the header of the first of the three log records
  // (segment header 32 bytes, record header 21): damage in the middle of the
  // log, not a torn tail.
  Result<std::vector<std::string>> segments = Env::Default()->ListDir(data_dir_ + "/log");
  ASSERT_TRUE(segments.ok() && !segments->empty()) << segments.status().ToString();
  const std::string segment = data_dir_ + "/log/" + segments->front();
  {
    std::fstream file(segment, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(file.good()) << segment;
    file.seekg(50);
    char byte = 0;
    file.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x5A);
    file.seekp(50);
    file.write(&byte, 1);
    ASSERT_TRUE(file.good());
  }

  // cairnd keeps its shell up without storage: `health` and the log name
  // the damage and the repair; commands that need the engine answer that.
  auto refused = StartDaemon("refused.log", {"--storage-retry-ms", "200"});
  const std::string repair_line = "run: cairnd --repair-log --data-dir " + data_dir_;
  const std::string health = Type("health");
  EXPECT_TRUE(Contains(health, "unavailable: cannot open data directory " + data_dir_ + ": ")) << health;
  EXPECT_TRUE(Contains(health, repair_line)) << health;
  EXPECT_TRUE(Contains(Type("range sensors d1"), "error: storage unavailable: cannot open data directory"));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // several quiet retries
  const std::string log = refused->Stderr();
  EXPECT_TRUE(Contains(log, "ERROR cannot open data directory " + data_dir_ + ": ")) << log;
  EXPECT_TRUE(Contains(log, repair_line)) << log;
  EXPECT_EQ(log.find(repair_line), log.rfind(repair_line)) << "the damage is logged once:\n" << log;
  StopWithSigterm(refused.get());

  auto repair = RunToExit({"--repair-log", "--data-dir", data_dir_}, "repair.log");
  EXPECT_TRUE(ExitedWith(repair->exit_status(), 0)) << DescribeWaitStatus(repair->exit_status()) << "\n"
                                                    << repair->Stderr();
  // Only the damaged record's reading is lost; the two after it are kept.
  EXPECT_TRUE(Contains(repair->Stdout(), "cairnd: repaired the log of " + data_dir_ +
                                             ": 1 reading(s) lost (LSNs 1), 0 of them already synced to the "
                                             "cloud; 2 intact reading(s) after the damage kept"))
      << repair->Stdout();

  // cairnd starts and serves the readings after the damage.
  auto restarted = StartDaemon("restarted.log");
  std::optional<JsonValue> range = ParseAnswer(Type("range sensors d1 --json"));
  ASSERT_TRUE(range.has_value());
  EXPECT_EQ(range->Find("rows")->elements().size(), 2u);
  EXPECT_TRUE(
      Contains(Type("put sensors env,device=d1 v=9i " + std::to_string(base)), "outcome  stored\r\n"));
  StopWithSigterm(restarted.get());

  auto intact = RunToExit({"--repair-log", "--data-dir", data_dir_}, "intact.log");
  EXPECT_TRUE(ExitedWith(intact->exit_status(), 0)) << intact->Stderr();
  EXPECT_TRUE(Contains(intact->Stdout(), "needed no repair; no reading lost")) << intact->Stdout();
}

TEST_F(CairndEngineTest, RepairRefusesADataDirectoryInUse) {
  auto daemon = StartDaemon("cairnd.log");
  auto repair = RunToExit({"--repair-log", "--data-dir", data_dir_}, "repair.log");
  EXPECT_TRUE(ExitedWith(repair->exit_status(), 1)) << DescribeWaitStatus(repair->exit_status());
  EXPECT_TRUE(Contains(repair->Stderr(), "is in use by a running cairnd; stop it first")) << repair->Stderr();
  EXPECT_TRUE(Contains(Type("version"), "\r\nversion ")) << "the running daemon is unaffected";
  StopWithSigterm(daemon.get());
}

// Flags cairnd refuses before touching anything: exit 2 and the reason.
struct BadFlags {
  std::vector<std::string> flags;
  std::string message;
};

class CairndEngineFlagsTest : public ::testing::TestWithParam<BadFlags> {};

TEST_P(CairndEngineFlagsTest, ExitsWithStatus2AndSaysWhy) {
  ScopedTempDir temp("cairnd-engine-flags");
  CairndProcess daemon(GetParam().flags, temp.PathOf("stderr"), temp.PathOf("stdout"));
  ASSERT_TRUE(daemon.started()) << "posix_spawn: " << daemon.spawn_error();
  const std::optional<int> status = daemon.WaitForExit(kTimeoutMs);
  EXPECT_TRUE(ExitedWith(status, 2)) << DescribeWaitStatus(status);
  EXPECT_TRUE(Contains(daemon.Stderr(), "cairnd: " + GetParam().message + "\n")) << daemon.Stderr();
}

INSTANTIATE_TEST_SUITE_P(
    Flags, CairndEngineFlagsTest,
    ::testing::Values(
        BadFlags{{"--serial", "/dev/null", "--durability", "sometimes"},
                 "flag --durability: 'sometimes' is not full, interval=MS or off"},
        BadFlags{{"--serial", "/dev/null", "--durability=interval=0"},
                 "flag --durability interval: 0 is not a positive number"},
        BadFlags{{"--serial", "/dev/null", "--durability", "interval=soon"},
                 "flag --durability interval: 'soon' is not a number"},
        BadFlags{{"--serial", "/dev/null", "--seal-records", "0"},
                 "flag --seal-records: 0 is not a positive number"},
        BadFlags{{"--repair-log", "--serial", "/dev/null"}, "flag --serial does not go with --repair-log"},
        BadFlags{{"--repair-log", "--data-dir"}, "flag --data-dir needs a value: --data-dir DIR"}));

}  // namespace
}  // namespace cairn
