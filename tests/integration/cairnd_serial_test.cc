// cairnd as an operator meets it: started as a separate process on a
// pseudo-terminal and a fresh data directory, typed at, signalled, and
// raced by a second cairnd on the same directory.
//
// Every wait is bounded and every child is killed and reaped by its guard,
// whatever assertion fails first.
#include <chrono>
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
#include "cairn/shell/builtin_commands.h"

#include "cairnd_process.h"
#include "pty_pair.h"
#include "test_dirs.h"

namespace cairn {
namespace {

// Generous: the daemon may run under sanitizers on a busy machine. No test
// asserts on how long anything took, only that it happened before this.
constexpr int kTimeoutMs = 60000;
constexpr std::string_view kPrompt = "cairn> ";

class CairndSerialTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::unique_ptr<PtyPair>> pty = PtyPair::Open();
    ASSERT_TRUE(pty.ok()) << pty.status().ToString();
    pty_ = std::move(pty).value();
    data_dir_ = temp_.PathOf("data");
  }

  std::unique_ptr<CairndProcess> StartDaemon(const std::string& serial_path, const std::string& log_name,
                                             const std::vector<std::string>& more_flags = {}) {
    std::vector<std::string> flags = {"--data-dir", data_dir_, "--serial", serial_path, "--baud", "115200"};
    flags.insert(flags.end(), more_flags.begin(), more_flags.end());
    return std::make_unique<CairndProcess>(flags, temp_.PathOf(log_name));
  }

  // Reads the terminal until the next prompt, giving up early if the daemon
  // exits instead (a start-up failure then shows at once, with its log).
  std::string AwaitPrompt(CairndProcess* daemon) {
    std::string text;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTimeoutMs);
    while (!Contains(text, kPrompt) && std::chrono::steady_clock::now() < deadline) {
      text += pty_->ReadUntil(kPrompt, 200);
      if (Contains(text, kPrompt)) break;
      daemon->WaitForExit(0);
      if (daemon->exit_status().has_value()) break;
    }
    if (!Contains(text, kPrompt)) {
      ADD_FAILURE() << "no prompt; cairnd " << DescribeWaitStatus(daemon->exit_status()) << "; terminal:\n"
                    << text << "\nlog:\n"
                    << daemon->Stderr();
    }
    return text;
  }

  // Types `line` and Enter, and returns everything up to the next prompt.
  std::string Type(std::string_view line) {
    Status written = pty_->Write(std::string(line) + "\r");
    EXPECT_TRUE(written.ok()) << written.ToString();
    return pty_->ReadUntil(kPrompt, kTimeoutMs);
  }

  ScopedTempDir temp_{"cairnd-serial"};
  std::unique_ptr<PtyPair> pty_;
  std::string data_dir_;
};

TEST_F(CairndSerialTest, AnswersVersionAndHelpOnTheSerialLine) {
  auto daemon = StartDaemon(pty_->slave_path(), "cairnd.log");
  ASSERT_TRUE(daemon->started()) << "posix_spawn: " << daemon->spawn_error();

  const std::string greeting = AwaitPrompt(daemon.get());
  ASSERT_TRUE(Contains(greeting, kPrompt));
  EXPECT_TRUE(Contains(greeting, "type help")) << greeting;

  const BuildInfo build = GetBuildInfo();
  const std::string version = Type("version");
  EXPECT_TRUE(Contains(version, "version\r\n")) << version;  // the echo
  EXPECT_TRUE(Contains(version, "version      " + build.version + "\r\n")) << version;
  EXPECT_TRUE(Contains(version, "target_arch  " + build.target_arch + "\r\n")) << version;

  const std::string help = Type("help");
  // Column widths grow with the commands cairnd registers; the words do not.
  EXPECT_TRUE(Contains(help, "help\r\ncommand ")) << help;
  EXPECT_TRUE(Contains(help, "\r\nhelp [command] ")) << help;
  EXPECT_TRUE(Contains(help, " list the commands, or show one command's usage and options\r\n")) << help;
  EXPECT_TRUE(Contains(help, "\r\nversion ")) << help;
  EXPECT_TRUE(Contains(help, " show the cairn version, target architecture and compiler\r\n")) << help;

  const std::string json = Type("version --json");
  EXPECT_TRUE(Contains(json, "{\"version\":\"" + build.version + "\",")) << json;

  const std::string unknown = Type("frobnicate");
  EXPECT_TRUE(Contains(unknown, "error: unknown command 'frobnicate'; type help\r\n")) << unknown;

  ASSERT_TRUE(daemon->Signal(SIGTERM));
  const std::optional<int> status = daemon->WaitForExit(kTimeoutMs);
  EXPECT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
      << DescribeWaitStatus(status) << "\nlog:\n"
      << daemon->Stderr();
}

TEST_F(CairndSerialTest, SecondDaemonOnTheSameDataDirectoryExitsWithTheLockHolderNamed) {
  auto first = StartDaemon(pty_->slave_path(), "first.log");
  ASSERT_TRUE(first->started()) << "posix_spawn: " << first->spawn_error();
  // The prompt proves the first daemon holds the lock: it locks before it
  // opens the serial port.
  const std::string greeting = AwaitPrompt(first.get());
  ASSERT_TRUE(Contains(greeting, kPrompt));

  Result<std::unique_ptr<PtyPair>> other_pty = PtyPair::Open();
  ASSERT_TRUE(other_pty.ok()) << other_pty.status().ToString();
  auto second = StartDaemon((*other_pty)->slave_path(), "second.log");
  ASSERT_TRUE(second->started()) << "posix_spawn: " << second->spawn_error();
  const pid_t second_pid = second->pid();
  const std::optional<int> second_status = second->WaitForExit(kTimeoutMs);
  ASSERT_TRUE(second_status && WIFEXITED(*second_status)) << DescribeWaitStatus(second_status);
  EXPECT_EQ(WEXITSTATUS(*second_status), 1);
  const std::string lock_path = data_dir_ + "/LOCK";
  EXPECT_TRUE(Contains(second->Stderr(), "cairnd[" + std::to_string(second_pid) + "]: ERROR data directory " +
                                             data_dir_ + " is in use by another cairnd (lock " + lock_path +
                                             " held)\n"))
      << second->Stderr();

  // The first daemon is unaffected and still answers.
  const std::string version = Type("version");
  EXPECT_TRUE(Contains(version, "version      " + GetBuildInfo().version)) << version;

  ASSERT_TRUE(first->Signal(SIGTERM));
  const std::optional<int> first_status = first->WaitForExit(kTimeoutMs);
  EXPECT_TRUE(first_status && WIFEXITED(*first_status) && WEXITSTATUS(*first_status) == 0)
      << DescribeWaitStatus(first_status) << "\nlog:\n"
      << first->Stderr();
}

TEST_F(CairndSerialTest, SigtermStopsCleanlyAndReleasesTheDataDirectory) {
  auto daemon = StartDaemon(pty_->slave_path(), "cairnd.log");
  ASSERT_TRUE(daemon->started()) << "posix_spawn: " << daemon->spawn_error();
  const std::string greeting = AwaitPrompt(daemon.get());
  ASSERT_TRUE(Contains(greeting, kPrompt));

  // While it runs, the lock is held against this process too.
  Result<std::unique_ptr<FileLock>> while_running = Env::Default()->LockFile(data_dir_ + "/LOCK");
  EXPECT_TRUE(while_running.status().Is(StatusCode::kBusy)) << while_running.status().ToString();

  ASSERT_TRUE(daemon->Signal(SIGTERM));
  const std::optional<int> status = daemon->WaitForExit(kTimeoutMs);
  ASSERT_TRUE(status && WIFEXITED(*status)) << DescribeWaitStatus(status) << "\nlog:\n" << daemon->Stderr();
  EXPECT_EQ(WEXITSTATUS(*status), 0) << daemon->Stderr();
  const std::string log = daemon->Stderr();
  EXPECT_TRUE(Contains(log, "INFO termination requested; stopping")) << log;
  EXPECT_TRUE(Contains(log, "INFO stopped")) << log;

  Result<std::unique_ptr<FileLock>> after_exit = Env::Default()->LockFile(data_dir_ + "/LOCK");
  EXPECT_TRUE(after_exit.ok()) << after_exit.status().ToString();
}

TEST_F(CairndSerialTest, SigintAlsoStopsCleanly) {
  auto daemon = StartDaemon(pty_->slave_path(), "cairnd.log");
  ASSERT_TRUE(daemon->started()) << "posix_spawn: " << daemon->spawn_error();
  const std::string greeting = AwaitPrompt(daemon.get());
  ASSERT_TRUE(Contains(greeting, kPrompt));

  ASSERT_TRUE(daemon->Signal(SIGINT));
  const std::optional<int> status = daemon->WaitForExit(kTimeoutMs);
  EXPECT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
      << DescribeWaitStatus(status) << "\nlog:\n"
      << daemon->Stderr();
}

TEST_F(CairndSerialTest, SighupReopensTheSerialPort) {
  auto daemon = StartDaemon(pty_->slave_path(), "cairnd.log");
  ASSERT_TRUE(daemon->started()) << "posix_spawn: " << daemon->spawn_error();
  const std::string greeting = AwaitPrompt(daemon.get());
  ASSERT_TRUE(Contains(greeting, kPrompt));

  ASSERT_TRUE(daemon->Signal(SIGHUP));
  // A reopened port greets again with the banner and a fresh prompt.
  const std::string second_greeting = AwaitPrompt(daemon.get());
  ASSERT_TRUE(Contains(second_greeting, kPrompt));
  EXPECT_TRUE(Contains(second_greeting, "type help")) << second_greeting;

  const std::string version = Type("version");
  EXPECT_TRUE(Contains(version, "version      " + GetBuildInfo().version)) << version;

  ASSERT_TRUE(daemon->Signal(SIGTERM));
  const std::optional<int> status = daemon->WaitForExit(kTimeoutMs);
  EXPECT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
      << DescribeWaitStatus(status) << "\nlog:\n"
      << daemon->Stderr();
  EXPECT_TRUE(
      Contains(daemon->Stderr(), "INFO SIGHUP: tokens reread; reopening serial port " + pty_->slave_path()))
      << daemon->Stderr();
}

// A tty that is not there at start (a USB adapter not yet plugged in, a
// board whose UART has another name) does not stop cairnd: it says so and
// opens the port once it appears.
TEST_F(CairndSerialTest, WaitsForASerialDeviceThatAppearsLater) {
  const std::string later = temp_.PathOf("ttyUSB-later");
  auto daemon = StartDaemon(later, "cairnd.log");
  ASSERT_TRUE(daemon->started()) << "posix_spawn: " << daemon->spawn_error();
  ASSERT_TRUE(daemon->AwaitStderr("(waiting for the device)", kTimeoutMs)) << daemon->Stderr();
  EXPECT_TRUE(Contains(daemon->Stderr(), "cannot open serial port " + later)) << daemon->Stderr();
  EXPECT_TRUE(Contains(daemon->Stderr(), "retrying every 5 s")) << daemon->Stderr();

  ASSERT_EQ(::symlink(pty_->slave_path().c_str(), later.c_str()), 0);
  const std::string greeting = AwaitPrompt(daemon.get());
  ASSERT_TRUE(Contains(greeting, kPrompt));
  EXPECT_TRUE(Contains(Type("version"), "version      " + GetBuildInfo().version));
  EXPECT_TRUE(daemon->AwaitStderr("serial shell on " + later + " is back", kTimeoutMs)) << daemon->Stderr();

  ASSERT_TRUE(daemon->Signal(SIGTERM));
  const std::optional<int> status = daemon->WaitForExit(kTimeoutMs);
  EXPECT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << DescribeWaitStatus(status);
}

TEST_F(CairndSerialTest, SurvivesTheTerminalHangingUp) {
  auto daemon = StartDaemon(pty_->slave_path(), "cairnd.log");
  ASSERT_TRUE(daemon->started()) << "posix_spawn: " << daemon->spawn_error();
  const std::string greeting = AwaitPrompt(daemon.get());
  ASSERT_TRUE(Contains(greeting, kPrompt));

  const std::string slave_path = pty_->slave_path();
  pty_->CloseMaster();
  const std::string expected = "ERROR serial session on " + slave_path + " ended: ";
  ASSERT_TRUE(daemon->AwaitStderr(expected, kTimeoutMs)) << daemon->Stderr();

  ASSERT_TRUE(daemon->Signal(SIGTERM));
  const std::optional<int> status = daemon->WaitForExit(kTimeoutMs);
  EXPECT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
      << DescribeWaitStatus(status) << "\nlog:\n"
      << daemon->Stderr();
}

// A command line cairnd cannot act on: exit status 2 and a message naming
// the word at fault, before any data directory is touched.
struct BadCommandLine {
  std::vector<std::string> flags;
  std::string message;
};

class CairndCommandLineTest : public ::testing::TestWithParam<BadCommandLine> {};

TEST_P(CairndCommandLineTest, ExitsWithStatus2AndSaysWhy) {
  ScopedTempDir temp("cairnd-flags");
  CairndProcess daemon(GetParam().flags, temp.PathOf("stderr"));
  ASSERT_TRUE(daemon.started()) << "posix_spawn: " << daemon.spawn_error();
  const std::optional<int> status = daemon.WaitForExit(kTimeoutMs);
  ASSERT_TRUE(status && WIFEXITED(*status)) << DescribeWaitStatus(status);
  EXPECT_EQ(WEXITSTATUS(*status), 2);
  EXPECT_TRUE(Contains(daemon.Stderr(), "cairnd: " + GetParam().message + "\n")) << daemon.Stderr();
  EXPECT_TRUE(Contains(daemon.Stderr(), "cairnd --help")) << daemon.Stderr();
}

INSTANTIATE_TEST_SUITE_P(
    Flags, CairndCommandLineTest,
    ::testing::Values(
        BadCommandLine{{"--serial", "/dev/null", "--colour"}, "unknown flag '--colour'"},
        BadCommandLine{{"--serial"}, "flag --serial needs a value: --serial PATH"},
        BadCommandLine{{"--serial", "/dev/null", "--baud", "fast"}, "flag --baud: 'fast' is not a number"},
        BadCommandLine{{"--serial", "/dev/null", "--baud=-9600"},
                       "flag --baud: -9600 is not a positive number"},
        BadCommandLine{{"--serial", "/dev/null", "--baud", "99999999999"},
                       "flag --baud: 99999999999 is out of range"},
        BadCommandLine{
            {"--data-dir", "/tmp/x"},
            "nothing to serve: give --serial PATH for the shell and/or --tls-cert FILE --tls-key FILE "
            "(HTTPS) or --http-plain (HTTP)"},
        BadCommandLine{
            {"--http-plain", "--http-listen", "127.0.0.1"},
            "flag --http-listen: '127.0.0.1' is not ADDR:PORT (0.0.0.0:8086, [::]:8086, 127.0.0.1:0) "
            "or off"},
        BadCommandLine{
            {"--http-plain", "--http-listen", "::1:80"},
            "flag --http-listen: '::1:80' is not ADDR:PORT (0.0.0.0:8086, [::]:8086, 127.0.0.1:0) or "
            "off"},
        BadCommandLine{{"--tls-cert", "c.pem", "--serial", "/dev/null"},
                       "--tls-cert and --tls-key go together"},
        BadCommandLine{
            {"--tls-cert", "c.pem", "--tls-key", "k.pem", "--http-plain"},
            "--http-plain and --tls-cert exclude each other: one listener is either HTTPS or plain "
            "HTTP"},
        BadCommandLine{{"--http-plain", "--http-max-connections", "0"},
                       "flag --http-max-connections: 0 is not a positive number"},
        BadCommandLine{
            {"--http-plain", "--http-max-connections", "8", "--http-max-connections-per-address", "9"},
            "--http-max-connections-per-address must not exceed --http-max-connections"},
        BadCommandLine{
            {"--tls-cert", "c.pem", "--tls-key", "k.pem", "--tls-client-identity", "cn"},
            "--tls-client-identity needs --tls-client-ca (only verified certificates name tokens)"},
        BadCommandLine{{"--tls-cert", "c.pem", "--tls-key", "k.pem", "--tls-client-ca", "ca.pem",
                        "--tls-client-identity", "email"},
                       "flag --tls-client-identity: 'email' is not off, cn or san"},
        BadCommandLine{{"--http-plain", "--max-series", "none"}, "flag --max-series: 'none' is not a number"},
        BadCommandLine{{"--serial", "a", "--serial", "b"}, "flag --serial is given more than once"},
        BadCommandLine{{"--serial", "/dev/null", "extra"},
                       "unexpected argument 'extra' (cairnd takes flags only)"}));

TEST(CairndVersionTest, PrintsVersionAndExitsZero) {
  ScopedTempDir temp("cairnd-version");
  CairndProcess daemon({"--version"}, temp.PathOf("stderr"), temp.PathOf("stdout"));
  ASSERT_TRUE(daemon.started()) << "posix_spawn: " << daemon.spawn_error();
  const std::optional<int> status = daemon.WaitForExit(kTimeoutMs);
  ASSERT_TRUE(status && WIFEXITED(*status)) << DescribeWaitStatus(status);
  EXPECT_EQ(WEXITSTATUS(*status), 0);
  std::ifstream out(temp.PathOf("stdout"));
  std::string line;
  std::getline(out, line);
  const BuildInfo build = GetBuildInfo();
  EXPECT_EQ(line, "cairnd " + build.version + " (" + build.target_arch + ", " + build.compiler + ")");
}

// A terminal that stops reading (a console server that hung, a cable pulled
// with flow control on) once wedged the console for good, and with it the
// stop: cairnd drops the output the line does not take, goes on, and
// answers the next command once the line drains.
TEST_F(CairndSerialTest, ALineThatStopsDrainingWedgesNeitherTheConsoleNorTheStop) {
  auto daemon = StartDaemon(pty_->slave_path(), "wedge.log", {"--serial-output-timeout-ms", "300"});
  ASSERT_TRUE(daemon->started()) << "posix_spawn: " << daemon->spawn_error();
  AwaitPrompt(daemon.get());
  const auto stalls = [&] {
    const std::string log = daemon->Stderr();
    size_t count = 0;
    for (size_t at = log.find("made no progress for 300 ms"); at != std::string::npos;
         at = log.find("made no progress for 300 ms", at + 1)) {
      ++count;
    }
    return count;
  };
  // The terminal stops reading while answers keep coming.
  for (int i = 0; i < 60; ++i) ASSERT_TRUE(pty_->Write("help\r").ok());
  for (int i = 0; i < kTimeoutMs / 20 && stalls() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_GE(stalls(), 1u) << daemon->Stderr();

  // It reads again: the console answers a new command.
  while (!pty_->ReadAvailable(500).empty()) {
  }
  const BuildInfo build = GetBuildInfo();
  const std::string version = Type("version");
  EXPECT_TRUE(Contains(version, "version      " + build.version + "\r\n")) << version;

  // Wedged again, a SIGTERM still stops cairnd cleanly.
  const size_t before = stalls();
  for (int i = 0; i < 60; ++i) ASSERT_TRUE(pty_->Write("help\r").ok());
  for (int i = 0; i < kTimeoutMs / 20 && stalls() == before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_GT(stalls(), before) << daemon->Stderr();
  ASSERT_TRUE(daemon->Signal(SIGTERM));
  const std::optional<int> status = daemon->WaitForExit(kTimeoutMs);
  EXPECT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
      << DescribeWaitStatus(status) << "\nlog:\n"
      << daemon->Stderr();
}

}  // namespace
}  // namespace cairn
