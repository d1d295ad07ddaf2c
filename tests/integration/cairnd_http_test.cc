// cairnd's HTTP(S) API as clients meet it: a real daemon on loopback, its
// first-start admin token, `cairnd token` while it runs, HTTPS with
// certificates generated for the test (curl with the right CA, the wrong CA,
// mutual TLS), and an acknowledged write surviving kill -9.
//
// Every wait is bounded; every child is killed and reaped by its guard.
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include "cairn/platform/env.h"
#include "cairn/platform/tls.h"
#include "cairn/transport/json_value.h"

#include "cairnd_location.h"
#include "cairnd_process.h"
#include "http_test_client.h"
#include "test_dirs.h"
#include "test_pki.h"

namespace cairn {
namespace {

constexpr int kTimeoutMs = 60000;

bool ExitedWith(const std::optional<int>& status, int code) {
  return status && WIFEXITED(*status) && WEXITSTATUS(*status) == code;
}

// Runs a shell command line; returns its exit status and its stdout (and
// its stderr, when `with_stderr`).
std::pair<int, std::string> RunCommand(const std::string& command, bool with_stderr = true) {
  std::string output;
  FILE* pipe = ::popen((command + (with_stderr ? " 2>&1" : " 2>/dev/null")).c_str(), "r");
  if (pipe == nullptr) return {-1, ""};
  char buffer[4096];
  size_t got;
  while ((got = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, got);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

std::string CairndCommandLine() {
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
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTimeoutMs);
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
    EXPECT_TRUE(ExitedWith(daemon_->WaitForExit(kTimeoutMs), 0)) << daemon_->Stderr();
  }

  // The admin token cairnd printed at its first start.
  std::string FirstAdminToken() {
    const std::regex shown("created the admin token \\(shown once; store it now\\): (cairn_[A-Za-z0-9_-]+)");
    std::smatch match;
    const std::string log = daemon_->Stderr();
    return std::regex_search(log, match, shown) ? match[1].str() : "";
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

TEST_F(CairndHttpTest, FirstStartShowsOneAdminTokenAndTokenCommandsWorkWhileRunning) {
  StartDaemon({"--http-plain"});
  const std::string admin = FirstAdminToken();
  ASSERT_FALSE(admin.empty()) << daemon_->Stderr();
  Result<HttpTestResponse> tables = Get("/v1/tables", admin);
  ASSERT_TRUE(tables.ok()) << tables.status().ToString();
  ASSERT_EQ(tables->status, 200) << tables->body;
  EXPECT_NE(tables->body.find("\"table\":\"sensors\""), std::string::npos);
  // The file keeps only a hash.
  Result<std::string> file = Env::Default()->ReadFileToString(dir_.PathOf("data/tokens"));
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file->find(admin.substr(admin.rfind('_') + 1)), std::string::npos);

  // A token created with the CLI while cairnd runs.
  auto [created_status, created] =
      RunCommand(CairndCommandLine() + " token create --data-dir " + dir_.PathOf("data") +
                     " --name grafana --scope read:sensors",
                 /*with_stderr=*/false);
  ASSERT_EQ(created_status, 0) << created;
  const std::string reader = created.substr(0, created.find('\n'));
  ASSERT_EQ(reader.rfind("cairn_", 0), 0u) << created;
  EXPECT_EQ(WaitForStatus("/v1/tables/sensors/devices", reader, 200), 200);
  // Its scope is one table, read only.
  {
    Result<HttpTestClient> client = HttpTestClient::Connect("127.0.0.1", port_);
    ASSERT_TRUE(client.ok());
    Result<HttpTestResponse> created_table =
        client->Request("PUT", "/v1/tables/plant", {{"Authorization", "Bearer " + admin}});
    ASSERT_TRUE(created_table.ok());
    EXPECT_EQ(created_table->status, 201) << created_table->body;
    Result<HttpTestResponse> other =
        client->Request("GET", "/v1/tables/plant/devices", {{"Authorization", "Bearer " + reader}});
    ASSERT_TRUE(other.ok());
    EXPECT_EQ(other->status, 403) << other->body;
    Result<HttpTestResponse> write = client->Request(
        "POST", "/write?db=sensors", {{"Authorization", "Bearer " + reader}}, "env,device=d t=1");
    ASSERT_TRUE(write.ok());
    EXPECT_EQ(write->status, 403) << write->body;
  }
  auto [listed_status, listed] =
      RunCommand(CairndCommandLine() + " token list --data-dir " + dir_.PathOf("data"));
  EXPECT_EQ(listed_status, 0);
  EXPECT_NE(listed.find("grafana"), std::string::npos);
  EXPECT_NE(listed.find("read:sensors"), std::string::npos);
  EXPECT_EQ(listed.find(reader), std::string::npos);  // never shown again
  auto [revoked_status, revoked] =
      RunCommand(CairndCommandLine() + " token revoke grafana --data-dir " + dir_.PathOf("data"));
  ASSERT_EQ(revoked_status, 0) << revoked;
  EXPECT_EQ(WaitForStatus("/v1/tables/sensors/devices", reader, 401), 401);

  // A restart creates no second admin token; the first still works.
  StopDaemon();
  StartDaemon({"--http-plain"});
  EXPECT_EQ(FirstAdminToken(), "");
  EXPECT_EQ(WaitForStatus("/v1/tables", admin, 200), 200);
  StopDaemon();
}

TEST_F(CairndHttpTest, AcknowledgedHttpWritesSurviveKill9) {
  StartDaemon({"--http-plain"});
  const std::string admin = FirstAdminToken();
  ASSERT_FALSE(admin.empty());
  const int64_t now_seconds = Env::Default()->NowUnixNanos() / 1'000'000'000;
  int acknowledged = 0;
  for (int batch = 0; batch < 20; ++batch) {
    std::string body;
    for (int i = 0; i < 50; ++i) {
      const int n = batch * 50 + i;
      body += "env,device=k9 temperature=" + std::to_string(n) + " " +
              std::to_string(now_seconds - 3000 + n) + "\n";
    }
    Result<HttpTestClient> client = HttpTestClient::Connect("127.0.0.1", port_);
    ASSERT_TRUE(client.ok());
    Result<HttpTestResponse> response =
        client->Request("POST", "/write?db=sensors&precision=s", {{"Authorization", "Token " + admin}}, body);
    ASSERT_TRUE(response.ok());
    ASSERT_EQ(response->status, 204) << response->body;
    acknowledged += 50;
  }
  ASSERT_TRUE(daemon_->Signal(SIGKILL));
  daemon_->WaitForExit(kTimeoutMs);
  StartDaemon({"--http-plain"});
  Result<HttpTestResponse> readings =
      Get("/v1/tables/sensors/devices/k9/readings?limit=1000&from=-1d&order=desc", admin);
  ASSERT_TRUE(readings.ok());
  ASSERT_EQ(readings->status, 200) << readings->body;
  Result<JsonValue> json = JsonValue::Parse(readings->body);
  ASSERT_TRUE(json.ok());
  ASSERT_EQ(json->Find("records")->elements().size(), static_cast<size_t>(acknowledged));
  EXPECT_EQ(json->Find("records")->elements()[0].Find("temperature")->number(), acknowledged - 1);
  StopDaemon();
}

class CairndHttpsTest : public CairndHttpTest {
 protected:
  void SetUp() override {
    Result<TestPki> pki = GenerateTestPki(dir_.path());
    ASSERT_TRUE(pki.ok()) << pki.status().ToString();
    pki_ = *pki;
  }

  std::string Curl(const std::string& arguments) {
    return "curl -sS --max-time 30 -o /dev/null -w '%{http_code}' " + arguments +
           " https://127.0.0.1:" + std::to_string(port_) + "/healthz";
  }

  TestPki pki_;
};

TEST_F(CairndHttpsTest, ServesTheApiOverTlsAndCurlChecksTheCertificate) {
  StartDaemon({"--tls-cert", pki_.server_certificate_path, "--tls-key", pki_.server_key_path});
  EXPECT_NE(daemon_->Stderr().find("listening on https://"), std::string::npos);
  const std::string admin = FirstAdminToken();
  ASSERT_FALSE(admin.empty());

  // cairn's own TLS client, with the test CA: a write and a query.
  TlsClientOptions client_options;
  client_options.ca_path = pki_.ca_certificate_path;
  client_options.server_name = "127.0.0.1";
  Result<std::unique_ptr<TlsClientContext>> tls = TlsClientContext::Create(Env::Default(), client_options);
  ASSERT_TRUE(tls.ok()) << tls.status().ToString();
  Result<std::unique_ptr<TcpConnection>> raw = Env::Default()->ConnectTcp("127.0.0.1", port_, 10000);
  ASSERT_TRUE(raw.ok());
  Result<std::unique_ptr<TcpConnection>> secure = (*tls)->Connect(std::move(*raw));
  ASSERT_TRUE(secure.ok()) << secure.status().ToString();
  HttpTestClient client(std::move(*secure));
  const int64_t now_seconds = Env::Default()->NowUnixNanos() / 1'000'000'000;
  Result<HttpTestResponse> written =
      client.Request("POST", "/write?db=sensors&precision=s", {{"Authorization", "Bearer " + admin}},
                     "env,device=tls-1 temperature=21.5 " + std::to_string(now_seconds) + "\n");
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_EQ(written->status, 204) << written->body;
  Result<HttpTestResponse> latest = client.Request("GET", "/v1/tables/sensors/devices/tls-1/latest",
                                                   {{"Authorization", "Bearer " + admin}});
  ASSERT_TRUE(latest.ok());
  EXPECT_NE(latest->body.find("\"temperature\":21.5"), std::string::npos) << latest->body;

  // curl: the right CA works, the wrong CA and no CA fail verification.
  auto [ok_status, ok_output] = RunCommand(Curl("--cacert " + pki_.ca_certificate_path));
  EXPECT_EQ(ok_status, 0) << ok_output;
  EXPECT_EQ(ok_output, "200");
  auto [wrong_status, wrong_output] = RunCommand(Curl("--cacert " + pki_.other_ca_certificate_path));
  EXPECT_EQ(wrong_status, 60) << wrong_output;  // peer certificate cannot be authenticated
  auto [system_status, system_output] = RunCommand(Curl(""));
  EXPECT_EQ(system_status, 60) << system_output;

  // Plain HTTP to the TLS port gets no answer but a closed connection.
  Result<HttpTestClient> plain = HttpTestClient::Connect("127.0.0.1", port_);
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->Request("GET", "/healthz").ok());
  // ... and the daemon keeps serving.
  auto [again_status, again_output] = RunCommand(Curl("--cacert " + pki_.ca_certificate_path));
  EXPECT_EQ(again_output, "200");
  StopDaemon();
}

TEST_F(CairndHttpsTest, MutualTlsRequiresAClientCertificate) {
  StartDaemon({"--tls-cert", pki_.server_certificate_path, "--tls-key", pki_.server_key_path,
               "--tls-client-ca", pki_.ca_certificate_path});
  auto [anonymous_status, anonymous_output] = RunCommand(Curl("--cacert " + pki_.ca_certificate_path));
  EXPECT_NE(anonymous_status, 0) << anonymous_output;
  auto [client_status, client_output] =
      RunCommand(Curl("--cacert " + pki_.ca_certificate_path + " --cert " + pki_.client_certificate_path +
                      " --key " + pki_.client_key_path));
  EXPECT_EQ(client_status, 0) << client_output;
  EXPECT_EQ(client_output, "200");
  StopDaemon();
}

TEST_F(CairndHttpsTest, BadCertificateFilesStopTheStartWithAClearError) {
  CairndProcess daemon({"--data-dir", dir_.PathOf("data"), "--http-listen", "127.0.0.1:0", "--tls-cert",
                        pki_.server_certificate_path, "--tls-key", pki_.client_key_path},
                       dir_.PathOf("bad-key-stderr"));
  ASSERT_TRUE(daemon.started());
  EXPECT_TRUE(ExitedWith(daemon.WaitForExit(kTimeoutMs), 1));
  EXPECT_NE(daemon.Stderr().find("cannot set up TLS for the HTTP API"), std::string::npos) << daemon.Stderr();
}

}  // namespace
}  // namespace cairn
