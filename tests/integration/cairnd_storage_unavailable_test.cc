// cairnd whose data partition is read-only at boot: a real tmpfs the test
// mounts, fills with a data directory through a first cairnd, and remounts
// read-only. cairnd must keep running with its serial shell (a real
// pseudo-terminal) and HTTP API up: `health` and /healthz say `unavailable`
// with the reason and the remedy, writes answer the outage (503 with
// Retry-After over HTTP, "error: storage unavailable: ..." on the shell),
// the failure is logged once however often it is retried. Remounted
// read-write, cairnd opens the storage within its retry period, writes
// succeed, health is ok, and the readings survive a restart.
//
// Needs root (mount); skipped with a message otherwise. Every wait is
// bounded; the daemon is killed and the tmpfs unmounted in teardown.
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cairn/platform/env.h"

#include "cairnd_process.h"
#include "http_test_client.h"
#include "pty_pair.h"
#include "test_dirs.h"

namespace cairn {
namespace {

constexpr int kTimeoutMs = 30000;
constexpr int kRetryMs = 1000;
constexpr std::string_view kPrompt = "cairn> ";
constexpr const char* kTmpfsOptions = "size=4m";

size_t Occurrences(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

class CairndStorageUnavailableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs read-only needs root; run the test as root";
    mount_point_ = dir_.PathOf("tmpfs");
    ASSERT_TRUE(Env::Default()->CreateDirs(mount_point_).ok());
    ASSERT_EQ(::mount("tmpfs", mount_point_.c_str(), "tmpfs", 0, kTmpfsOptions), 0)
        << "mount tmpfs on " << mount_point_ << ": " << std::strerror(errno);
    mounted_ = true;
    data_dir_ = mount_point_ + "/data";
    Result<std::unique_ptr<PtyPair>> pty = PtyPair::Open();
    ASSERT_TRUE(pty.ok()) << pty.status().ToString();
    pty_ = std::move(pty).value();
  }

  void TearDown() override {
    daemon_.reset();  // kills and reaps a daemon still running
    if (mounted_) {
      EXPECT_EQ(::umount2(mount_point_.c_str(), MNT_DETACH), 0) << std::strerror(errno);
    }
  }

  void Remount(bool read_only) {
    const unsigned long flags = MS_REMOUNT | (read_only ? MS_RDONLY : 0);
    ASSERT_EQ(::mount("tmpfs", mount_point_.c_str(), "tmpfs", flags, kTmpfsOptions), 0)
        << "remount " << mount_point_ << (read_only ? " ro: " : " rw: ") << std::strerror(errno);
  }

  // Starts cairnd with its shell on the pty and HTTP on a free port; waits
  // for both (the prompt, and "listening on" in the log).
  void StartDaemon() {
    ++starts_;
    daemon_ = std::make_unique<CairndProcess>(
        std::vector<std::string>{"--config", "none", "--data-dir", data_dir_, "--serial", pty_->slave_path(),
                                 "--http-listen", "127.0.0.1:0", "--http-plain", "--storage-retry-ms",
                                 std::to_string(kRetryMs)},
        dir_.PathOf("stderr" + std::to_string(starts_)));
    ASSERT_TRUE(daemon_->started());
    const std::regex listening("listening on http://127\\.0\\.0\\.1:([0-9]+)");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTimeoutMs);
    std::string terminal;
    std::smatch match;
    while (std::chrono::steady_clock::now() < deadline) {
      if (!Contains(terminal, kPrompt)) terminal += pty_->ReadUntil(kPrompt, 100);
      const std::string log = daemon_->Stderr();
      if (Contains(terminal, kPrompt) && std::regex_search(log, match, listening)) {
        port_ = static_cast<uint16_t>(std::stoi(match[1].str()));
        const std::regex shown("shown once; store it now\\): (cairn_[A-Za-z0-9_-]+)");
        if (token_.empty() && std::regex_search(log, match, shown)) token_ = match[1].str();
        return;
      }
      if (daemon_->WaitForExit(0)) break;
    }
    FAIL() << "cairnd did not bring up its shell and HTTP (" << DescribeWaitStatus(daemon_->exit_status())
           << "); terminal:\n"
           << terminal << "\nlog:\n"
           << daemon_->Stderr();
  }

  int StopDaemon() {
    EXPECT_TRUE(daemon_->Signal(SIGTERM));
    std::optional<int> status = daemon_->WaitForExit(kTimeoutMs);
    return status && WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
  }

  // Types `line` and Enter on the serial shell; returns the answer up to the
  // next prompt.
  std::string Type(std::string_view line) {
    EXPECT_TRUE(pty_->Write(std::string(line) + "\r").ok());
    return pty_->ReadUntil(kPrompt, kTimeoutMs);
  }

  HttpTestResponse Request(const std::string& method, const std::string& target, bool with_token = true,
                           const std::string& body = "") {
    Result<HttpTestClient> client = HttpTestClient::Connect("127.0.0.1", port_);
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    if (!client.ok()) return {};
    std::vector<std::pair<std::string, std::string>> headers;
    if (with_token) headers.emplace_back("Authorization", "Bearer " + token_);
    Result<HttpTestResponse> response = client->Request(method, target, headers, body);
    EXPECT_TRUE(response.ok()) << response.status().ToString();
    return response.ok() ? *response : HttpTestResponse{};
  }

  // Takes every free byte of the tmpfs with a filler file.
  void FillDisk() {
    FILE* filler = std::fopen((mount_point_ + "/filler").c_str(), "ab");
    ASSERT_NE(filler, nullptr);
    const std::string chunk(64 << 10, 'f');
    int error = 0;
    for (int i = 0; i < 1000 && error == 0; ++i) {
      if (std::fwrite(chunk.data(), 1, chunk.size(), filler) != chunk.size() || std::fflush(filler) != 0) {
        error = errno;
      }
    }
    std::fclose(filler);
    ASSERT_EQ(error, ENOSPC) << "the filler stopped before the disk was full";
  }

  HttpTestResponse Write(int value) {
    return Request(
        "POST", "/write?db=sensors&precision=s", true,
        "env,device=d1 t=" + std::to_string(value) + "i " + std::to_string(base_seconds_ + value) + "\n");
  }

  ScopedTempDir dir_{"cairnd-storage-unavailable"};
  std::string mount_point_, data_dir_;
  bool mounted_ = false;
  std::unique_ptr<PtyPair> pty_;
  std::unique_ptr<CairndProcess> daemon_;
  uint16_t port_ = 0;
  int starts_ = 0;
  std::string token_;
  const int64_t base_seconds_ = Env::Default()->NowUnixNanos() / 1'000'000'000 - 3600;
};

TEST_F(CairndStorageUnavailableTest, ReadOnlyPartitionAtBootKeepsTheShellAndApiUpUntilItIsWritable) {
  // A first start makes the directory, its tables and the admin token.
  StartDaemon();
  ASSERT_FALSE(token_.empty()) << daemon_->Stderr();
  ASSERT_EQ(Write(1).status, 204);
  ASSERT_EQ(StopDaemon(), 0) << daemon_->Stderr();

  Remount(/*read_only=*/true);
  StartDaemon();
  const std::string reason = "open " + data_dir_ + "/LOCK: Read-only file system";
  const std::string remedy = "the file system holding " + data_dir_ + " is read-only: remount it read-write";

  // HTTP: the level without a token, the reason with one, 503 and
  // Retry-After; a write answers the outage; the probe answers.
  HttpTestResponse level = Request("GET", "/healthz", /*with_token=*/false);
  EXPECT_EQ(level.status, 503);
  EXPECT_EQ(level.body, "{\"status\":\"unavailable\"}\n");
  EXPECT_EQ(level.Header("retry-after"), "1");
  HttpTestResponse details = Request("GET", "/v1/health");
  EXPECT_EQ(details.status, 503);
  EXPECT_TRUE(Contains(details.body, "\"status\":\"unavailable\"")) << details.body;
  EXPECT_TRUE(Contains(details.body, reason)) << details.body;
  EXPECT_TRUE(Contains(details.body, remedy)) << details.body;
  HttpTestResponse refused = Write(2);
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_EQ(refused.Header("retry-after"), "1");
  EXPECT_TRUE(Contains(refused.body, "\"message\":\"storage unavailable: cannot open data directory " +
                                         data_dir_ + ": " + reason))
      << refused.body;
  EXPECT_EQ(Request("GET", "/v1/tables/sensors/devices/d1/latest").status, 503);
  EXPECT_EQ(Request("GET", "/ping", /*with_token=*/false).status, 204);
  EXPECT_EQ(Request("GET", "/v1/tables", /*with_token=*/false).status, 401) << "the token check comes first";

  // The serial shell: health names the outage, put answers it, version works.
  const std::string health = Type("health");
  EXPECT_TRUE(std::regex_search(health, std::regex("status +unavailable\r\n"))) << health;
  EXPECT_TRUE(Contains(health, reason)) << health;
  EXPECT_TRUE(Contains(health, remedy)) << health;
  const std::string put = Type("put sensors env,device=d1 t=3i");
  EXPECT_TRUE(
      Contains(put, "error: storage unavailable: cannot open data directory " + data_dir_ + ": " + reason))
      << put;
  EXPECT_TRUE(Contains(Type("version"), "version ")) << "version answers without storage";

  // Still running after a few retries, which log the failure only once.
  std::this_thread::sleep_for(std::chrono::milliseconds(3 * kRetryMs));
  EXPECT_FALSE(daemon_->WaitForExit(0).has_value()) << DescribeWaitStatus(daemon_->exit_status());
  EXPECT_EQ(Occurrences(daemon_->Stderr(), reason), 1u) << daemon_->Stderr();

  // Writable again: within the retry period writes succeed, without a restart.
  Remount(/*read_only=*/false);
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(5 * kRetryMs);
  while ((status = Write(4).status) != 204 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(status, 204) << daemon_->Stderr();
  EXPECT_TRUE(Contains(daemon_->Stderr(), "INFO storage is back: data directory " + data_dir_))
      << daemon_->Stderr();
  HttpTestResponse ok = Request("GET", "/healthz", /*with_token=*/false);
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, "{\"status\":\"ok\"}\n");
  EXPECT_TRUE(Contains(Type("put sensors env,device=d1 t=5i"), "outcome  stored\r\n"));
  const std::string healthy = Type("health");
  EXPECT_TRUE(std::regex_search(healthy, std::regex("status +ok\r\n"))) << healthy;
  ASSERT_EQ(StopDaemon(), 0) << daemon_->Stderr();

  // The readings written before and after the outage are stored.
  StartDaemon();
  const std::string range = Type("range sensors d1 --json");
  EXPECT_TRUE(Contains(range, "\"t\":1}")) << range;
  EXPECT_TRUE(Contains(range, "\"t\":4}")) << range;
  EXPECT_TRUE(Contains(range, "\"t\":5}")) << range;
  EXPECT_FALSE(Contains(range, "\"t\":2}")) << "a refused write was stored: " << range;
  EXPECT_EQ(StopDaemon(), 0) << daemon_->Stderr();
}

// A first boot on a partition already full: no directory can be set up.
// cairnd waits with its shell up, and once space is freed it finishes the
// first start it could not do: the default table and the first admin token.
TEST_F(CairndStorageUnavailableTest, AFullPartitionAtFirstBootWaitsForSpaceThenSetsTheGatewayUp) {
  FillDisk();
  StartDaemon();
  EXPECT_TRUE(token_.empty()) << "an admin token was made without storage";
  const std::string health = Type("health");
  EXPECT_TRUE(std::regex_search(health, std::regex("status +unavailable\r\n"))) << health;
  EXPECT_TRUE(Contains(health, "free space on the file system holding " + data_dir_)) << health;
  EXPECT_EQ(Request("GET", "/healthz", /*with_token=*/false).status, 503);

  ASSERT_EQ(::unlink((mount_point_ + "/filler").c_str()), 0);
  const std::regex shown("shown once; store it now\\): (cairn_[A-Za-z0-9_-]+)");
  std::smatch match;
  std::string log;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(5 * kRetryMs);
  while (!std::regex_search(log = daemon_->Stderr(), match, shown) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(std::regex_search(log, match, shown)) << "no first admin token once space was freed:\n" << log;
  token_ = match[1].str();
  EXPECT_TRUE(Contains(log, "INFO storage is back")) << log;
  EXPECT_EQ(Write(1).status, 204);
  EXPECT_EQ(Request("GET", "/healthz", /*with_token=*/false).status, 200);
  EXPECT_EQ(StopDaemon(), 0) << daemon_->Stderr();
}

// Two daemons must never share a directory: one waiting for its storage
// that finds another cairnd holding the directory when it tries again ends
// as a start would have (exit 1, the lock named), and the other serves on.
// The waiting one sees the directory through a read-only bind mount, the
// other through the writable tmpfs, so the other holds the lock before the
// view turns writable: no race decides the order.
TEST_F(CairndStorageUnavailableTest, AnotherCairndTakingTheDirectoryMeanwhileEndsTheWaitingOne) {
  ASSERT_TRUE(Env::Default()->CreateDirs(data_dir_).ok());
  const std::string writable_dir = data_dir_;
  const std::string view = mount_point_ + "/view";
  ASSERT_TRUE(Env::Default()->CreateDirs(view).ok());
  ASSERT_EQ(::mount(writable_dir.c_str(), view.c_str(), nullptr, MS_BIND, nullptr), 0)
      << std::strerror(errno);
  ASSERT_EQ(::mount(nullptr, view.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr), 0)
      << std::strerror(errno);
  data_dir_ = view;
  StartDaemon();  // waits without storage: not even its LOCK can be made
  data_dir_ = writable_dir;

  CairndProcess other(
      {"--config", "none", "--data-dir", writable_dir, "--http-listen", "127.0.0.1:0", "--http-plain"},
      dir_.PathOf("stderr-other"));
  ASSERT_TRUE(other.started());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTimeoutMs);
  while (!Contains(other.Stderr(), "listening on") && !other.WaitForExit(0) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(Contains(other.Stderr(), "listening on")) << other.Stderr();
  ASSERT_EQ(::mount(nullptr, view.c_str(), nullptr, MS_REMOUNT | MS_BIND, nullptr), 0)
      << std::strerror(errno);

  const std::optional<int> status = daemon_->WaitForExit(kTimeoutMs);
  ASSERT_TRUE(status.has_value()) << "the waiting cairnd shares the directory:\n" << daemon_->Stderr();
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 1) << DescribeWaitStatus(status);
  EXPECT_TRUE(Contains(daemon_->Stderr(), "is in use by another cairnd (lock " + view + "/LOCK held)"))
      << daemon_->Stderr();
  EXPECT_FALSE(other.WaitForExit(0).has_value()) << other.Stderr();
  EXPECT_TRUE(other.Signal(SIGTERM));
  const std::optional<int> other_status = other.WaitForExit(kTimeoutMs);
  EXPECT_TRUE(other_status && WIFEXITED(*other_status) && WEXITSTATUS(*other_status) == 0) << other.Stderr();
  EXPECT_EQ(::umount2(view.c_str(), MNT_DETACH), 0) << std::strerror(errno);
}

}  // namespace
}  // namespace cairn
