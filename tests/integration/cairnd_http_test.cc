// cairnd's HTTP(S) API as clients meet it: a real daemon on loopback, its
// first-start admin token, `cairnd token` while it runs, HTTPS with
// certificates generated for the test (curl with the right CA, the wrong CA,
// mutual TLS), and an acknowledged write surviving kill -9.
//
// Every wait is bounded; every child is killed and reaped by its guard.
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <signal.h>

#include "cairn/platform/env.h"
#include "cairn/platform/tls.h"
#include "cairn/text/json_value.h"

#include "cairnd_http_fixture.h"
#include "test_pki.h"

namespace cairn {
namespace {

constexpr int kTimeoutMs = kCairndTimeoutMs;

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
  // The secret follows "cairn_" and the 16-digit id; it may itself hold '_'.
  const std::string secret = admin.substr(std::string_view("cairn_").size() + 16 + 1);
  ASSERT_GE(secret.size(), 20u) << admin;
  EXPECT_EQ(file->find(secret), std::string::npos);

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

// An hour of 1 Hz readings comes back in one HTTP page; the console's cap
// (1 000 rows) does not apply to the API, and past 10 000 a page is refused.
TEST_F(CairndHttpTest, AnHourOfReadingsIsOnePage) {
  StartDaemon({"--http-plain"});
  const std::string admin = FirstAdminToken();
  ASSERT_FALSE(admin.empty());
  const int64_t now_seconds = Env::Default()->NowUnixNanos() / 1'000'000'000;
  std::string body;
  for (int n = 0; n < 3600; ++n) {
    body += "env,device=h1 temperature=" + std::to_string(n) + ",humidity=" + std::to_string(n % 100) + " " +
            std::to_string(now_seconds - 7200 + n) + "\n";
  }
  Result<HttpTestClient> client = HttpTestClient::Connect("127.0.0.1", port_);
  ASSERT_TRUE(client.ok());
  Result<HttpTestResponse> written =
      client->Request("POST", "/write?db=sensors&precision=s", {{"Authorization", "Token " + admin}}, body);
  ASSERT_TRUE(written.ok());
  ASSERT_EQ(written->status, 204) << written->body;

  Result<HttpTestResponse> page = Get("/v1/tables/sensors/devices/h1/readings?limit=10000&from=-3h", admin);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->status, 200) << page->body;
  Result<JsonValue> json = JsonValue::Parse(page->body);
  ASSERT_TRUE(json.ok());
  const std::vector<JsonValue>& records = json->Find("records")->elements();
  ASSERT_EQ(records.size(), 3600u);
  for (size_t n = 0; n < records.size(); ++n) {
    ASSERT_EQ(records[n].Find("temperature")->number(), static_cast<double>(n));
  }
  EXPECT_EQ(json->Find("next_page"), nullptr);

  Result<HttpTestResponse> too_long = Get("/v1/tables/sensors/devices/h1/readings?limit=10001", admin);
  ASSERT_TRUE(too_long.ok());
  EXPECT_EQ(too_long->status, 400) << too_long->body;
  EXPECT_NE(too_long->body.find("from 1 to 10000"), std::string::npos) << too_long->body;
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
  // A short drain: the client below keeps its connection open to the end.
  StartDaemon({"--tls-cert", pki_.server_certificate_path, "--tls-key", pki_.server_key_path,
               "--http-drain-ms", "300"});
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

// Mutual TLS as identity: the client certificate's common name (or a SAN)
// names a token whose scopes the request gets, without any Authorization.
class CairndClientCertificateTest : public CairndHttpsTest {
 protected:
  // A TLS connection to cairnd presenting the test PKI's client certificate.
  Result<HttpTestClient> CertificateClient() {
    TlsClientOptions options;
    options.ca_path = pki_.ca_certificate_path;
    options.server_name = "127.0.0.1";
    options.certificate_path = pki_.client_certificate_path;
    options.private_key_path = pki_.client_key_path;
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<TlsClientContext> tls,
                           TlsClientContext::Create(Env::Default(), options));
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<TcpConnection> raw,
                           Env::Default()->ConnectTcp("127.0.0.1", port_, 10000));
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<TcpConnection> secure, tls->Connect(std::move(raw)));
    return HttpTestClient(std::move(secure));
  }

  int Status(const std::string& method, const std::string& target, const std::string& body = "",
             std::string* response_body = nullptr) {
    Result<HttpTestClient> client = CertificateClient();
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    if (!client.ok()) return -1;
    Result<HttpTestResponse> response = client->Request(method, target, {}, body);
    if (!response.ok()) return -1;
    if (response_body != nullptr) *response_body = response->body;
    return response->status;
  }

  void StartWithIdentity(const std::string& identity) {
    StartDaemon({"--tls-cert", pki_.server_certificate_path, "--tls-key", pki_.server_key_path,
                 "--tls-client-ca", pki_.ca_certificate_path, "--tls-client-identity", identity,
                 "--http-drain-ms", "300"});
  }
};

TEST_F(CairndClientCertificateTest, TheCommonNameNamesTheTokenWhoseScopesApply) {
  StartWithIdentity("cn");
  std::string body;
  EXPECT_EQ(Status("GET", "/v1/tables/sensors/devices", "", &body), 401) << "no token is named yet";
  EXPECT_NE(body.find("common name ('cairn-test-client') name no token"), std::string::npos) << body;
  CreateToken("cairn-test-client", "read:sensors");
  int status = 0;
  for (int attempt = 0; attempt < 100 && status != 200; ++attempt) {
    status = Status("GET", "/v1/tables/sensors/devices");
    if (status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(status, 200);
  EXPECT_EQ(Status("POST", "/write?db=sensors", "env,device=d t=1"), 403) << "read:sensors only";
  EXPECT_NE(daemon_->Stderr().find("refused a client certificate from 127.0.0.1"), std::string::npos);
  // A token in the request still wins over the certificate.
  Result<HttpTestClient> client = CertificateClient();
  ASSERT_TRUE(client.ok());
  Result<HttpTestResponse> explicit_token = client->Request(
      "POST", "/write?db=sensors", {{"Authorization", "Bearer " + FirstAdminToken()}}, "env,device=d t=1");
  ASSERT_TRUE(explicit_token.ok());
  EXPECT_EQ(explicit_token->status, 204) << explicit_token->body;
  StopDaemon();
}

TEST_F(CairndClientCertificateTest, AnAlternativeNameCanNameTheTokenInstead) {
  StartWithIdentity("san");
  CreateToken("cairn-test-client", "admin");  // the CN: not looked at in this mode
  CreateToken("gateway-7.example", "write:sensors");
  int status = 0;
  for (int attempt = 0; attempt < 100 && status != 204; ++attempt) {
    status = Status("POST", "/write?db=sensors", "env,device=gw7 t=1");
    if (status != 204) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(status, 204);
  EXPECT_EQ(Status("GET", "/v1/tables/sensors/devices"), 403) << "the SAN's token, not the CN's";
  StopDaemon();
}

TEST_F(CairndClientCertificateTest, WithoutAnIdentityModeTheCertificateGrantsNothing) {
  StartDaemon({"--tls-cert", pki_.server_certificate_path, "--tls-key", pki_.server_key_path,
               "--tls-client-ca", pki_.ca_certificate_path});
  const std::string named = CreateToken("cairn-test-client", "admin");
  // Once the token is known to cairnd (it works when presented) ...
  bool known = false;
  for (int attempt = 0; attempt < 100 && !known; ++attempt) {
    Result<HttpTestClient> client = CertificateClient();
    ASSERT_TRUE(client.ok());
    Result<HttpTestResponse> response =
        client->Request("GET", "/v1/tables", {{"Authorization", "Bearer " + named}});
    known = response.ok() && response->status == 200;
    if (!known) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(known);
  // ... the certificate naming it still grants nothing by itself.
  EXPECT_EQ(Status("GET", "/v1/tables"), 401);
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
