// A cairnd child process serving HTTP on a free loopback port, for the
// integration tests that talk to it as clients do.
//
// Every wait is bounded; the child is killed and reaped by its guard.
#pragma once

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include "cairn/platform/env.h"

#include "cairnd_location.h"
#include "cairnd_process.h"
#include "http_test_client.h"
#include "test_dirs.h"

namespace cairn {

inline constexpr int kCairndTimeoutMs = 60000;

inline bool ExitedWith(const std::optional<int>& status, int code) {
  return status && WIFEXITED(*status) && WEXITSTATUS(*status) == code;
}

// Runs a shell command line; returns its exit status and its stdout (and
// its stderr, when `with_stderr`).
inline std::pair<int, std::string> RunCommand(const std::string& command, bool with_stderr = true) {
  std::string output;
  FILE* pipe = ::popen((command + (with_stderr ? " 2>&1" : " 2>/dev/null")).c_str(), "r");
  if (pipe == nullptr) return {-1, ""};
  char buffer[4096];
  size_t got;
  while ((got = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, got);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// The words that run cairnd on this host, for RunCommand.
inline std::string CairndCommandLine() {
  std::string line;
  for (const char* const* word = kCairndLauncher; *word != nullptr; ++word) line += std::string(*word) + " ";
  return line + kCairndPath;
}

class CairndHttpTest : public ::testing::Test {
 protected:
  // Starts cairnd on a free loopback port and waits for its "listening on"
  // line.
  void StartDaemon(std::vector<std::string> flags) {
    flags.insert(flags.begin(), {"--data-dir", dir_.PathOf("data"), "--http-listen", "127.0.0.1:0"});
    ++starts_;
    daemon_ = std::make_unique<CairndProcess>(flags, dir_.PathOf("stderr" + std::to_string(starts_)));
    ASSERT_TRUE(daemon_->started());
    const std::regex listening("listening on (https?)://127\\.0\\.0\\.1:([0-9]+)");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kCairndTimeoutMs);
    std::smatch match;
    std::string log;
    while (std::chrono::steady_clock::now() < deadline) {
      log = daemon_->Stderr();
      if (std::regex_search(log, match, listening)) {
        port_ = static_cast<uint16_t>(std::stoi(match[2].str()));
        return;
      }
      if (daemon_->WaitForExit(0)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    FAIL() << "cairnd did not start listening: " << log;
  }

  void StopDaemon() {
    ASSERT_TRUE(daemon_->Signal(SIGTERM));
    EXPECT_TRUE(ExitedWith(daemon_->WaitForExit(kCairndTimeoutMs), 0)) << daemon_->Stderr();
  }

  // The admin token cairnd printed at its first start.
  std::string FirstAdminToken() {
    const std::regex shown("created the admin token \\(shown once; store it now\\): (cairn_[A-Za-z0-9_-]+)");
    std::smatch match;
    const std::string log = daemon_->Stderr();
    return std::regex_search(log, match, shown) ? match[1].str() : "";
  }

  // Creates a token with `cairnd token create` (cairnd may be running).
  std::string CreateToken(const std::string& name, const std::string& scope) {
    auto [status, created] = RunCommand(CairndCommandLine() + " token create --data-dir " +
                                            dir_.PathOf("data") + " --name " + name + " --scope " + scope,
                                        /*with_stderr=*/false);
    EXPECT_EQ(status, 0) << created;
    return created.substr(0, created.find('\n'));
  }

  Result<HttpTestResponse> Get(const std::string& target, const std::string& token) {
    CAIRN_ASSIGN_OR_RETURN(HttpTestClient client, HttpTestClient::Connect("127.0.0.1", port_));
    return client.Request("GET", target, {{"Authorization", "Bearer " + token}});
  }

  // Repeats a GET until it answers `status` (a token change reaches a
  // running cairnd within about a second); returns the last status.
  int WaitForStatus(const std::string& target, const std::string& token, int status) {
    int last = 0;
    for (int attempt = 0; attempt < 200; ++attempt) {
      Result<HttpTestResponse> response = Get(target, token);
      last = response.ok() ? response->status : -1;
      if (last == status) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return last;
  }

  ScopedTempDir dir_{"cairnd-http"};
  std::unique_ptr<CairndProcess> daemon_;
  uint16_t port_ = 0;
  int starts_ = 0;
};

}  // namespace cairn
