#include "http_peers.h"

#include <signal.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "../support/child_process.h"  // SpawnChild; bench's own child_process.h forks measurements
#include "http_test_client.h"

namespace cairn::bench {

namespace {

constexpr int kStartTimeoutMs = 30'000;
constexpr int kStopTimeoutMs = 120'000;

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

ChildOptions TruncatingOutput() {
  ChildOptions options;
  options.truncate_output = true;
  return options;
}

// Runs `argv` to its end (at most a minute) and returns what it printed.
Result<std::string> RunTool(const std::vector<std::string>& argv, const std::string& output) {
  CAIRN_ASSIGN_OR_RETURN(pid_t pid, SpawnChild(argv, output, TruncatingOutput()));
  std::optional<int> status = WaitForChild(pid, 60'000);
  if (!status) {
    kill(pid, SIGKILL);
    WaitForChild(pid, 5'000);
    return Status::TimedOut(argv[0] + " did not finish");
  }
  if (*status != 0) return Status::Internal(argv[0] + " failed (" + DescribeExit(*status) + "): " + ReadWholeFile(output));
  return ReadWholeFile(output);
}

// influxd's configuration: everything on loopback under `dir`, the WAL
// synced before a write is answered, no background services, compaction of
// cold shards after seconds rather than hours (so that the bench measures
// the compacted size).
std::string InfluxConfig(const std::string& dir, uint16_t port, uint16_t rpc_port) {
  std::ostringstream c;
  c << "reporting-disabled = true\n"
    << "bind-address = \"127.0.0.1:" << rpc_port << "\"\n"
    << "[meta]\n  dir = \"" << dir << "/meta\"\n"
    << "[data]\n  dir = \"" << dir << "/data\"\n  wal-dir = \"" << dir << "/wal\"\n"
    << "  wal-fsync-delay = \"0s\"\n  query-log-enabled = false\n"
    << "  cache-snapshot-write-cold-duration = \"2s\"\n  compact-full-write-cold-duration = \"3s\"\n"
    << "[http]\n  bind-address = \"127.0.0.1:" << port << "\"\n  log-enabled = false\n  max-body-size = 0\n"
    << "[monitor]\n  store-enabled = false\n"
    << "[continuous_queries]\n  enabled = false\n"
    << "[logging]\n  level = \"warn\"\n";
  return c.str();
}

}  // namespace

Result<std::unique_ptr<HttpPeer>> HttpPeer::Start(PeerKind kind, const std::string& binary, const std::string& dir) {
  std::unique_ptr<HttpPeer> peer(new HttpPeer(kind, binary, dir));
  CAIRN_ASSIGN_OR_RETURN(peer->port_, PickFreeLoopbackPort());
  if (kind == PeerKind::kCairn) {
    CAIRN_ASSIGN_OR_RETURN(std::string printed,
                           RunTool({binary, "token", "create", "--name", "bench", "--scope", "admin", "--data-dir",
                                    dir, "--config", "none"},
                                   dir + ".token-output"));
    std::smatch token;
    if (!std::regex_search(printed, token, std::regex("cairn_[0-9a-f]{16}_[A-Za-z0-9_-]{43}"))) {
      return Status::Internal("cairnd token create printed no token: " + printed);
    }
    peer->headers_ = {{"Authorization", "Token " + token.str()}};
    peer->argv_ = {binary,          "--config",     "none",  "--data-dir", dir, "--http-listen",
                   "127.0.0.1:" + std::to_string(peer->port_), "--http-plain", "--auto-create-tables",
                   "--durability", "full", "--http-max-body-bytes", "67108864"};
  } else {
    CAIRN_ASSIGN_OR_RETURN(uint16_t rpc_port, PickFreeLoopbackPort());
    const std::string config = dir + "/influxdb.conf";
    std::ofstream(config) << InfluxConfig(dir, peer->port_, rpc_port);
    peer->argv_ = {binary, "-config", config};
  }
  CAIRN_RETURN_IF_ERROR(peer->Launch());
  if (kind == PeerKind::kInfluxdb) {
    CAIRN_ASSIGN_OR_RETURN(HttpTestClient client, HttpTestClient::Connect("127.0.0.1", peer->port_));
    CAIRN_ASSIGN_OR_RETURN(HttpTestResponse created, client.Request("POST", "/query?q=CREATE+DATABASE+bench"));
    if (created.status != 200) return Status::Internal("influxd: CREATE DATABASE answered " + created.body);
  }
  return peer;
}

HttpPeer::~HttpPeer() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    WaitForChild(pid_, 10'000);
  }
}

Status HttpPeer::Launch() {
  CAIRN_ASSIGN_OR_RETURN(pid_, SpawnChild(argv_, dir_ + ".server-output", ChildOptions{}));
  return WaitUntilAnswering();
}

Status HttpPeer::WaitUntilAnswering() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kStartTimeoutMs);
  while (std::chrono::steady_clock::now() < deadline) {
    if (std::optional<int> exited = WaitForChild(pid_, 0)) {
      pid_ = -1;
      return Status::Internal(argv_[0] + " exited at start (" + DescribeExit(*exited) +
                              "): " + ReadWholeFile(dir_ + ".server-output"));
    }
    Result<HttpTestClient> client = HttpTestClient::Connect("127.0.0.1", port_);
    if (client.ok()) {
      Result<HttpTestResponse> ping = client->Request("GET", "/ping");
      if (ping.ok() && ping->status / 100 == 2) return Status::Ok();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Status::TimedOut(argv_[0] + " did not answer /ping within 30 s");
}

Status HttpPeer::Stop() {
  if (pid_ <= 0) return Status::Ok();
  kill(pid_, SIGTERM);
  std::optional<int> status = WaitForChild(pid_, kStopTimeoutMs);
  if (!status) return Status::TimedOut(argv_[0] + " did not stop within 120 s");
  pid_ = -1;
  return Status::Ok();
}

Status HttpPeer::Restart() { return Launch(); }

Result<double> HttpPeer::PeakResidentMib() const {
  std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return Status::NotFound("no VmHWM for process " + std::to_string(pid_));
}

}  // namespace cairn::bench
