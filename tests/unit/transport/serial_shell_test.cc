// SerialShell over a real pseudo-terminal: the test types on the master side
// as a person at a terminal would, the shell serves the slave side through
// the POSIX Env.
#include "cairn/shell/serial_shell.h"

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/platform/env.h"
#include "cairn/shell/builtin_commands.h"

#include "pty_pair.h"

namespace cairn {
namespace {

// Generous bounds for a loaded machine; no test measures time.
constexpr int kTimeoutMs = 30000;

class SerialShellTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinCommands(&registry_).ok());
    ASSERT_TRUE(registry_
                    .Register(CommandSpec{.name = "numbers",
                                          .arguments = "COUNT",
                                          .summary = "rows 0..COUNT-1",
                                          .options = {},
                                          .min_arguments = 1,
                                          .max_arguments = 1},
                              [](const CommandInvocation& invocation) {
                                const int count = std::stoi(invocation.arguments()[0]);
                                std::vector<CommandResult::Row> rows;
                                for (int i = 0; i < count; ++i) rows.push_back({int64_t{i}});
                                return CommandResult::Table({"n"}, std::move(rows));
                              })
                    .ok());
    Result<std::unique_ptr<PtyPair>> pty = PtyPair::Open();
    ASSERT_TRUE(pty.ok()) << pty.status().ToString();
    pty_ = std::move(pty).value();
  }

  void StartShell(SerialShellOptions options) {
    Result<std::unique_ptr<SerialPort>> port = Env::Default()->OpenSerialPort(pty_->slave_path(), 115200);
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    shell_ = std::make_unique<SerialShell>(Env::Default(), std::move(port).value(), &registry_,
                                           std::move(options));
    shell_->Start();
    const std::string greeting = pty_->ReadUntil("cairn> ", kTimeoutMs);
    ASSERT_EQ(greeting, "\r\n" + options_banner_ + "cairn> ");
  }

  void StartShell() {
    SerialShellOptions options;
    options.banner = "test banner";
    options_banner_ = "test banner\r\n";
    StartShell(std::move(options));
  }

  // Sends raw keystrokes and returns the terminal's view up to the next prompt.
  std::string Keys(std::string_view keys) {
    Status written = pty_->Write(keys);
    EXPECT_TRUE(written.ok()) << written.ToString();
    return pty_->ReadUntil("cairn> ", kTimeoutMs);
  }

  std::string VersionText() {
    const BuildInfo build = GetBuildInfo();
    return "version      " + build.version + "\r\ntarget_arch  " + build.target_arch + "\r\ncompiler     " +
           build.compiler + "\r\n";
  }

  CommandRegistry registry_;
  std::unique_ptr<PtyPair> pty_;
  std::unique_ptr<SerialShell> shell_;
  std::string options_banner_;
};

TEST_F(SerialShellTest, BackspaceEditingThenEnterRunsTheCommand) {
  StartShell();
  EXPECT_EQ(Keys("vers\x7fsion\r"), "vers\b \bsion\r\n" + VersionText() + "cairn> ");
}

TEST_F(SerialShellTest, CrLfAndLfLineEndingsEachRunOneCommand) {
  StartShell();
  EXPECT_EQ(Keys("version\r\n"), "version\r\n" + VersionText() + "cairn> ");
  EXPECT_EQ(Keys("version\n"), "version\r\n" + VersionText() + "cairn> ");
  // The LF of the CRLF above was swallowed, not taken as an empty line: the
  // next thing on the wire is the answer to this line.
  EXPECT_EQ(Keys("numbers 1\r"), "numbers 1\r\nn\r\n0\r\ncairn> ");
}

TEST_F(SerialShellTest, EmptyLineGivesAFreshPrompt) {
  StartShell();
  EXPECT_EQ(Keys("\r"), "\r\ncairn> ");
}

TEST_F(SerialShellTest, UnknownCommandAndJsonOutput) {
  StartShell();
  EXPECT_EQ(Keys("nope\r"), "nope\r\nerror: unknown command 'nope'; type help\r\ncairn> ");
  EXPECT_EQ(Keys("numbers 2 --json\r"),
            "numbers 2 --json\r\n{\"columns\":[\"n\"],\"rows\":[{\"n\":0},{\"n\":1}]}\r\ncairn> ");
}

TEST_F(SerialShellTest, CtrlCClearsTheLine) {
  StartShell();
  EXPECT_EQ(Keys("numb\x03"), "numb^C\r\ncairn> ");
}

TEST_F(SerialShellTest, OverlongLineIsRefusedWithAnError) {
  SerialShellOptions options;
  options.max_line_bytes = 16;
  StartShell(std::move(options));
  const std::string typed(40, 'x');
  EXPECT_EQ(
      Keys(typed + "\r"),
      std::string(16, 'x') + "\r\nerror: line too long (more than 16 bytes); nothing was run\r\ncairn> ");
  EXPECT_EQ(Keys("version\r"), "version\r\n" + VersionText() + "cairn> ");
}

TEST_F(SerialShellTest, DefaultLineCapIs4096Bytes) {
  StartShell();
  // Typed in pieces: a pty's input queue holds about 4 KiB.
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(pty_->Write(std::string(1000, 'y')).ok());
    const std::string echo =
        pty_->ReadUntil(i < 4 ? std::string(1000, 'y') : std::string(96, 'y'), kTimeoutMs);
    ASSERT_FALSE(echo.empty());
  }
  EXPECT_EQ(Keys("\r"), "\r\nerror: line too long (more than 4096 bytes); nothing was run\r\ncairn> ");
}

TEST_F(SerialShellTest, OutputIsCappedWithAPagingHint) {
  SerialShellOptions options;
  options.render.max_rows = 3;
  StartShell(std::move(options));
  EXPECT_EQ(Keys("numbers 10\r"),
            "numbers 10\r\nn\r\n0\r\n1\r\n2\r\n"
            "more: 7 of 10 rows not shown; narrow the query or page with --limit/--from\r\ncairn> ");
}

TEST_F(SerialShellTest, StopEndsTheSessionAndIsIdempotentAcrossThreads) {
  StartShell();
  EXPECT_FALSE(shell_->ended());
  std::thread other([this] { shell_->Stop(); });
  shell_->Stop();
  other.join();
  EXPECT_TRUE(shell_->ended());
  EXPECT_TRUE(shell_->session_status().ok()) << shell_->session_status().ToString();
  shell_->Stop();
}

TEST_F(SerialShellTest, HangUpEndsTheSessionWithAnError) {
  StartShell();
  pty_->CloseMaster();
  // The session notices within one read timeout; wait for it boundedly.
  for (int i = 0; i < 3000 && !shell_->ended(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(shell_->ended());
  EXPECT_FALSE(shell_->session_status().ok());
  shell_->Stop();
}

TEST_F(SerialShellTest, ALineThatStopsDrainingDropsOutputAndTheConsoleGoesOn) {
  std::mutex log_mutex;
  std::vector<std::string> logged;
  SerialShellOptions options;
  options.output_stall_timeout_ms = 100;
  options.log = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(log_mutex);
    logged.push_back(line);
  };
  options.render.max_rows = 100000;
  options.render.max_bytes = 4 << 20;
  StartShell(std::move(options));
  const auto stalls = [&] {
    std::lock_guard<std::mutex> lock(log_mutex);
    return logged.size();
  };
  // The terminal stops reading; answers pile up until the line is full.
  for (int i = 0; i < 40 && stalls() == 0; ++i) {
    ASSERT_TRUE(pty_->Write("numbers 20000\r").ok());
    for (int wait = 0; wait < 50 && stalls() == 0; ++wait)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GT(stalls(), 0u) << "the output never stalled";
  {
    std::lock_guard<std::mutex> lock(log_mutex);
    EXPECT_NE(logged[0].find("output to " + pty_->slave_path() + " made no progress for 100 ms"),
              std::string::npos)
        << logged[0];
  }
  EXPECT_FALSE(shell_->ended()) << "a stall does not end the session";
  // The terminal reads again: a new command is answered, after a note on
  // what was dropped.
  std::string seen;
  for (std::string more; !(more = pty_->ReadAvailable(300)).empty();) seen += more;
  ASSERT_TRUE(pty_->Write("version\r").ok());
  const std::string answer = pty_->ReadUntil(VersionText() + "cairn> ", kTimeoutMs);
  EXPECT_NE(answer.find(VersionText() + "cairn> "), std::string::npos)
      << answer.substr(answer.size() > 2000 ? answer.size() - 2000 : 0);
  seen += answer;
  EXPECT_NE(seen.find("bytes of output were dropped: the line did not drain]"), std::string::npos);
  // And Stop returns while the terminal stops reading again.
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(pty_->Write("numbers 20000\r").ok());
  shell_->Stop();
  EXPECT_TRUE(shell_->ended());
}

}  // namespace
}  // namespace cairn
