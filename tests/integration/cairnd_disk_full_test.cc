// cairnd on a disk that fills up: a real tmpfs of a few MiB mounted by the
// test holds the data directory, a filler file takes every free byte, and
// clients write over HTTP on loopback. Writes answer 507 with a body that
// names the condition, queries keep working, /healthz is degraded with the
// reason, writes resume by themselves once space is freed, and a stop (also
// while the disk is full) leaves a directory the next start accepts with every
// acknowledged reading in it, none twice.
//
// Needs root (mount); skipped with a message otherwise. Every wait is
// bounded; the daemon is killed and the tmpfs unmounted in teardown.
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
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
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cairn/platform/env.h"
#include "cairn/text/json_value.h"

#include "cairnd_process.h"
#include "http_test_client.h"
#include "test_dirs.h"

namespace cairn {
namespace {

constexpr int kTimeoutMs = 60000;
constexpr int kReadingsPerBatch = 200;

class CairndDiskFullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root; run the test as root";
    mount_point_ = dir_.PathOf("tmpfs");
    ASSERT_TRUE(Env::Default()->CreateDirs(mount_point_).ok());
    ASSERT_EQ(::mount("tmpfs", mount_point_.c_str(), "tmpfs", 0, "size=6m"), 0)
        << "mount tmpfs on " << mount_point_ << ": " << std::strerror(errno);
    mounted_ = true;
    data_dir_ = mount_point_ + "/data";
  }

  void TearDown() override {
    daemon_.reset();  // kills and reaps a daemon still running
    if (mounted_) {
      EXPECT_EQ(::umount2(mount_point_.c_str(), MNT_DETACH), 0) << std::strerror(errno);
    }
  }

  void StartDaemon() {
    ++starts_;
    daemon_ = std::make_unique<CairndProcess>(
        std::vector<std::string>{"--data-dir", data_dir_, "--http-listen", "127.0.0.1:0", "--http-plain"},
        dir_.PathOf("stderr" + std::to_string(starts_)));
    ASSERT_TRUE(daemon_->started());
    const std::regex listening("listening on http://127\\.0\\.0\\.1:([0-9]+)");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTimeoutMs);
    std::smatch match;
    std::string log;
    while (std::chrono::steady_clock::now() < deadline) {
      log = daemon_->Stderr();
      if (std::regex_search(log, match, listening)) {
        port_ = static_cast<uint16_t>(std::stoi(match[1].str()));
        if (token_.empty()) {
          const std::regex shown("shown once; store it now\\): (cairn_[A-Za-z0-9_-]+)");
          if (std::regex_search(log, match, shown)) token_ = match[1].str();
        }
        return;
      }
      if (daemon_->WaitForExit(0)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    FAIL() << "cairnd did not start listening: " << log;
  }

  // Stops the daemon with SIGTERM; returns its exit code (-1 if it did not exit).
  int StopDaemon() {
    EXPECT_TRUE(daemon_->Signal(SIGTERM));
    std::optional<int> status = daemon_->WaitForExit(kTimeoutMs);
    return status && WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
  }

  Result<HttpTestResponse> Request(const std::string& method, const std::string& target,
                                   const std::string& body = "") {
    CAIRN_ASSIGN_OR_RETURN(HttpTestClient client, HttpTestClient::Connect("127.0.0.1", port_));
    return client.Request(method, target, {{"Authorization", "Bearer " + token_}}, body);
  }

  // Writes the next batch of readings of device `device`; returns the status
  // (and the body in `body`). Acknowledged readings are remembered.
  int WriteBatch(const std::string& device, std::string* body = nullptr) {
    std::string lines;
    const int first = next_value_[device];
    for (int i = first; i < first + kReadingsPerBatch; ++i) {
      lines += "env,device=" + device + " temperature=" + std::to_string(i) + " " +
               std::to_string(base_seconds_ + i) + "\n";
    }
    Result<HttpTestResponse> response = Request("POST", "/write?db=sensors&precision=s", lines);
    EXPECT_TRUE(response.ok()) << response.status().ToString();
    if (!response.ok()) return -1;
    if (body) *body = response->body;
    if (response->status == 204) {
      for (int i = first; i < first + kReadingsPerBatch; ++i) acknowledged_[device].insert(i);
      next_value_[device] = first + kReadingsPerBatch;
    }
    return response->status;
  }

  // Every reading of `device` the daemon returns, paging through the API.
  std::multiset<int> ReadBack(const std::string& device) {
    std::multiset<int> values;
    std::string page;
    for (int pages = 0; pages < 1000; ++pages) {
      std::string target = "/v1/tables/sensors/devices/" + device + "/readings?limit=1000&from=-30d";
      if (!page.empty()) target += "&page=" + page;
      Result<HttpTestResponse> response = Request("GET", target);
      EXPECT_TRUE(response.ok() && response->status == 200)
          << (response.ok() ? response->body : response.status().ToString());
      if (!response.ok() || response->status != 200) break;
      Result<JsonValue> json = JsonValue::Parse(response->body);
      EXPECT_TRUE(json.ok());
      if (!json.ok()) break;
      for (const JsonValue& record : json->Find("records")->elements()) {
        values.insert(static_cast<int>(record.Find("temperature")->number()));
      }
      const JsonValue* next = json->Find("next_page");
      if (next == nullptr) break;
      page = next->text();
    }
    return values;
  }

  // Checks that every acknowledged reading is stored exactly once; returns
  // (lost, duplicated) counts.
  std::pair<size_t, size_t> CheckReadings(const std::string& device) {
    const std::multiset<int> stored = ReadBack(device);
    size_t lost = 0, duplicated = 0;
    for (int value : acknowledged_[device]) {
      const size_t n = stored.count(value);
      if (n == 0) ++lost;
      if (n > 1) duplicated += n - 1;
    }
    EXPECT_EQ(lost, 0u) << device << ": acknowledged readings missing";
    EXPECT_EQ(duplicated, 0u) << device << ": readings stored twice";
    return {lost, duplicated};
  }

  std::string Health() {
    Result<HttpTestResponse> response = Request("GET", "/healthz");
    EXPECT_TRUE(response.ok());
    return response.ok() ? response->body : "";
  }

  // Takes every free byte of the tmpfs with a filler file.
  void FillDisk() {
    FILE* filler = std::fopen((mount_point_ + "/filler").c_str(), "ab");
    ASSERT_NE(filler, nullptr);
    const std::string chunk(64 << 10, 'f');
    int error = 0;
    for (int i = 0; i < 10000 && error == 0; ++i) {
      if (std::fwrite(chunk.data(), 1, chunk.size(), filler) != chunk.size() || std::fflush(filler) != 0) {
        error = errno;
      }
    }
    std::fclose(filler);
    ASSERT_EQ(error, ENOSPC) << "the filler stopped before the disk was full";
  }

  void FreeDisk() { ASSERT_EQ(::unlink((mount_point_ + "/filler").c_str()), 0); }

  // Writes batches until one is refused (the log may still have room in its
  // last page at first); returns that answer's body.
  std::string WriteUntilRefused(const std::string& device) {
    std::string body;
    for (int attempt = 0; attempt < 20; ++attempt) {
      const int status = WriteBatch(device, &body);
      if (status == 507) return body;
      EXPECT_EQ(status, 204) << body;
    }
    ADD_FAILURE() << "no write was refused on a full disk";
    return body;
  }

  size_t Acknowledged() const {
    size_t n = 0;
    for (const auto& [device, values] : acknowledged_) n += values.size();
    return n;
  }

  ScopedTempDir dir_{"cairnd-disk-full"};
  std::string mount_point_, data_dir_;
  bool mounted_ = false;
  std::unique_ptr<CairndProcess> daemon_;
  uint16_t port_ = 0;
  int starts_ = 0;
  std::string token_;
  const int64_t base_seconds_ = Env::Default()->NowUnixNanos() / 1'000'000'000 - 86400;
  std::map<std::string, int> next_value_;
  std::map<std::string, std::set<int>> acknowledged_;
};

TEST_F(CairndDiskFullTest, WritesAre507WhileTheDiskIsFullAndResumeOnceSpaceIsFreed) {
  StartDaemon();
  ASSERT_FALSE(token_.empty()) << daemon_->Stderr();
  for (int i = 0; i < 5; ++i) ASSERT_EQ(WriteBatch("a"), 204);

  FillDisk();
  const std::string refused = WriteUntilRefused("a");
  EXPECT_NE(refused.find("no space left on the filesystem holding " + data_dir_), std::string::npos)
      << refused;
  EXPECT_NE(refused.find("bytes free"), std::string::npos) << refused;
  EXPECT_NE(refused.find("writes resume once space is freed"), std::string::npos) << refused;
  // Refused again while it lasts; queries keep working; health says why.
  std::string body;
  EXPECT_EQ(WriteBatch("a", &body), 507) << body;
  CheckReadings("a");
  const std::string degraded = Health();
  EXPECT_NE(degraded.find("\"status\":\"degraded\""), std::string::npos) << degraded;
  EXPECT_NE(degraded.find("disk.full"), std::string::npos) << degraded;

  // Space is back: the next write goes through, without a restart.
  FreeDisk();
  ASSERT_EQ(WriteBatch("a", &body), 204) << body;
  EXPECT_NE(Health().find("\"status\":\"ok\""), std::string::npos) << Health();
  for (int i = 0; i < 3; ++i) ASSERT_EQ(WriteBatch("a"), 204);

  // A clean stop, and the next start accepts the log: every acknowledged
  // reading is there once.
  EXPECT_EQ(StopDaemon(), 0) << daemon_->Stderr();
  StartDaemon();
  EXPECT_FALSE(daemon_->Stderr().find("LSN gap") != std::string::npos) << daemon_->Stderr();
  const auto [lost, duplicated] = CheckReadings("a");
  ASSERT_EQ(WriteBatch("a"), 204);
  EXPECT_EQ(StopDaemon(), 0) << daemon_->Stderr();
  std::printf(
      "disk full once, space freed: %zu acknowledged, %zu lost, %zu duplicated, refused with 507: \"%s\"\n",
      Acknowledged(), lost, duplicated, refused.c_str());
}

TEST_F(CairndDiskFullTest, AStopWhileTheDiskIsFullLosesNothingAndTheNextStartWaitsForRoom) {
  StartDaemon();
  ASSERT_FALSE(token_.empty()) << daemon_->Stderr();
  for (int i = 0; i < 5; ++i) ASSERT_EQ(WriteBatch("b"), 204);
  FillDisk();
  WriteUntilRefused("b");

  // The stop cannot seal (no room), but the log keeps what was acknowledged.
  const int stopped = StopDaemon();
  EXPECT_TRUE(stopped == 0 || stopped == 1) << daemon_->Stderr();
  // The start on a still full disk serves queries and refuses writes.
  StartDaemon();
  CheckReadings("b");
  std::string body;
  EXPECT_EQ(WriteBatch("b", &body), 507) << body;
  EXPECT_NE(Health().find("disk.full"), std::string::npos) << Health();

  FreeDisk();
  ASSERT_EQ(WriteBatch("b", &body), 204) << body;
  EXPECT_EQ(StopDaemon(), 0) << daemon_->Stderr();
  StartDaemon();
  const auto [lost, duplicated] = CheckReadings("b");
  EXPECT_EQ(StopDaemon(), 0) << daemon_->Stderr();
  std::printf("stop and start while full: %zu acknowledged, %zu lost, %zu duplicated\n", Acknowledged(), lost,
              duplicated);
}

}  // namespace
}  // namespace cairn
