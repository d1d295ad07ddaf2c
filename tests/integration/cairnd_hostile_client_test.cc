// cairnd against hostile and broken clients, recreated from the outside: a
// real daemon on loopback, clients on several loopback addresses (all of
// 127.0.0.0/8 is loopback on Linux).
//   - wrong tokens from one address never refuse a valid token; only the
//     failing credential is slowed;
//   - silent connections cannot take the connection slots other clients
//     need;
//   - a request without a valid token is refused once its head is in, not
//     after its body;
//   - a client inventing device ids meets the table's series limit.
//
// Every wait is bounded; the daemon is killed and reaped by its guard.
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/text/json_value.h"

#include "cairnd_http_fixture.h"
#include "silent_tcp_client.h"

namespace cairn {
namespace {

class CairndHostileClientTest : public CairndHttpTest {
 protected:
  Result<HttpTestResponse> Send(const std::string& method, const std::string& target,
                                const std::string& token, const std::string& body = "") {
    CAIRN_ASSIGN_OR_RETURN(HttpTestClient client, HttpTestClient::Connect("127.0.0.1", port_));
    return client.Request(method, target, {{"Authorization", "Bearer " + token}}, body);
  }

  int Status(const std::string& method, const std::string& target, const std::string& token,
             const std::string& body = "") {
    Result<HttpTestResponse> response = Send(method, target, token, body);
    return response.ok() ? response->status : -1;
  }

  // `count` readings of devices `prefix`0 .. `prefix`<count-1>, one each.
  std::string NewDevices(const std::string& prefix, int count) {
    const int64_t now_seconds = Env::Default()->NowUnixNanos() / 1'000'000'000;
    std::string body;
    for (int i = 0; i < count; ++i) {
      body += "env,device=" + prefix + std::to_string(i) + " temperature=21.5 " +
              std::to_string(now_seconds) + "\n";
    }
    return body;
  }

  static uint64_t StatOf(const std::string& stats_body, const std::string& key) {
    Result<JsonValue> json = JsonValue::Parse(stats_body);
    if (!json.ok() || json->Find(key) == nullptr) return UINT64_MAX;
    return static_cast<uint64_t>(json->Find(key)->number());
  }
};

// Before: five wrong tokens from 127.0.0.1 made every client there,
// valid tokens included, get 429 for 10-35 s.
TEST_F(CairndHostileClientTest, WrongTokensFromAnAddressNeverLockOutItsValidTokens) {
  StartDaemon({"--http-plain"});
  const std::string admin = FirstAdminToken();
  ASSERT_FALSE(admin.empty());
  const std::string writer = CreateToken("writer", "write:sensors");
  const std::string stale = CreateToken("stale", "write:sensors");
  ASSERT_EQ(WaitForStatus("/v1/tables/sensors/devices", stale, 403), 403) << "cairnd knows the token";
  auto [revoked_status, revoked] =
      RunCommand(CairndCommandLine() + " token revoke stale --data-dir " + dir_.PathOf("data"));
  ASSERT_EQ(revoked_status, 0) << revoked;
  // cairnd has seen the revocation (this is the credential's first failure).
  ASSERT_EQ(WaitForStatus("/v1/tables/sensors/devices", stale, 401), 401);

  // A forgotten script retries the revoked token; a correct client writes
  // from the same address all along.
  const std::string line = "env,device=ok temperature=1\n";
  std::vector<int> stale_answers;
  for (int i = 0; i < 10; ++i) {
    Result<HttpTestResponse> answer = Send("POST", "/write?db=sensors", stale, "env,device=stale t=1\n");
    ASSERT_TRUE(answer.ok()) << answer.status().ToString();
    stale_answers.push_back(answer->status);
    if (answer->status == 429) {
      const int retry_after = std::stoi(answer->Header("retry-after"));
      EXPECT_GE(retry_after, 1);
      EXPECT_LE(retry_after, 60);
    }
    EXPECT_EQ(Status("POST", "/write?db=sensors", writer, line), 204) << "attempt " << i;
    EXPECT_EQ(Status("GET", "/v1/tables", admin), 200) << "attempt " << i;
  }
  // 401 while the credential is within its budget, 429 once it is spent.
  EXPECT_EQ(stale_answers.front(), 401);
  EXPECT_EQ(stale_answers.back(), 429);
  for (size_t i = 1; i < stale_answers.size(); ++i) {
    EXPECT_TRUE(stale_answers[i] == 401 || stale_answers[i] == 429) << stale_answers[i];
    EXPECT_GE(stale_answers[i], stale_answers[i - 1]) << "once slowed, it stays slowed";
  }
  // Another wrong credential from the same address is judged on its own.
  EXPECT_EQ(Status("GET", "/v1/tables", "cairn_0123456789abcdef_" + std::string(43, 'A')), 401);
  EXPECT_TRUE(
      Contains(daemon_->Stderr(), "token " + stale.substr(6, 16) + " failed authentication too often"))
      << daemon_->Stderr();
  StopDaemon();
}

// Before: 32 idle connections made every other client get 503 for 60 s.
TEST_F(CairndHostileClientTest, SilentConnectionsCannotStarveOtherClients) {
  StartDaemon({"--http-plain", "--http-first-byte-timeout-ms", "1000"});
  const std::string admin = FirstAdminToken();
  ASSERT_FALSE(admin.empty());
  // More silent connections than the server has slots (32), from another
  // address.
  std::vector<std::unique_ptr<SilentTcpClient>> silent;
  for (int i = 0; i < 40; ++i) {
    silent.push_back(std::make_unique<SilentTcpClient>("127.0.0.2", port_));
    ASSERT_TRUE(silent.back()->connected()) << "connection " << i;
  }
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Status("GET", "/v1/tables", admin), 200) << "request " << i;
  // From the client's own address they only displace each other.
  for (int i = 0; i < 40; ++i) {
    silent.push_back(std::make_unique<SilentTcpClient>("127.0.0.1", port_));
    ASSERT_TRUE(silent.back()->connected()) << "connection " << i;
  }
  EXPECT_EQ(Status("GET", "/v1/tables", admin), 200);
  // Every silent connection is closed soon, by displacement or by the
  // first-byte deadline.
  for (size_t i = 0; i < silent.size(); ++i) EXPECT_TRUE(silent[i]->ClosedByServer(kCairndTimeoutMs)) << i;
  EXPECT_TRUE(Contains(daemon_->Stderr(), "that sent nothing within 1000 ms")) << daemon_->Stderr();
  StopDaemon();
}

// Before: a slow body without a token held its connection up to 60 s, with
// no 401 after the head.
TEST_F(CairndHostileClientTest, ARequestWithoutAValidTokenIsRefusedBeforeItsBody) {
  StartDaemon({"--http-plain"});
  const std::string admin = FirstAdminToken();
  ASSERT_FALSE(admin.empty());
  const std::string head = "POST /write?db=sensors HTTP/1.1\r\nHost: x\r\nContent-Length: 5000000\r\n";
  for (const std::string& authorization : {std::string(), std::string("Authorization: Bearer wrong\r\n")}) {
    Result<HttpTestClient> client = HttpTestClient::Connect("127.0.0.1", port_);
    ASSERT_TRUE(client.ok());
    // A body of 5 MB is announced and barely begun: the answer cannot wait
    // for it (this client gives up after 20 s, cairnd's body deadline is 60 s).
    ASSERT_TRUE(client->Send(head + authorization + "\r\nenv,device=d t=1\n").ok());
    Result<HttpTestResponse> refused = client->ReadResponse();
    ASSERT_TRUE(refused.ok()) << refused.status().ToString();
    EXPECT_EQ(refused->status, 401) << refused->body;
    EXPECT_EQ(refused->Header("connection"), "close");
    EXPECT_TRUE(client->ServerClosed(kCairndTimeoutMs));
  }
  {
    // Expect: 100-continue without a token: the refusal instead of the 100.
    Result<HttpTestClient> client = HttpTestClient::Connect("127.0.0.1", port_);
    ASSERT_TRUE(client.ok());
    ASSERT_TRUE(client->Send(head + "Expect: 100-continue\r\n\r\n").ok());
    Result<HttpTestResponse> refused = client->ReadResponse();
    ASSERT_TRUE(refused.ok());
    EXPECT_EQ(refused->status, 401);
  }
  {
    // With a valid token, the 100 and then the write.
    const std::string body = "env,device=continued temperature=2\n";
    Result<HttpTestClient> client = HttpTestClient::Connect("127.0.0.1", port_);
    ASSERT_TRUE(client.ok());
    ASSERT_TRUE(client
                    ->Send("POST /write?db=sensors HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + admin +
                           "\r\nContent-Length: " + std::to_string(body.size()) +
                           "\r\nExpect: 100-continue\r\n\r\n")
                    .ok());
    Result<HttpTestResponse> interim = client->ReadResponse();
    ASSERT_TRUE(interim.ok());
    EXPECT_EQ(interim->status, 100);
    ASSERT_TRUE(client->Send(body).ok());
    Result<HttpTestResponse> written = client->ReadResponse();
    ASSERT_TRUE(written.ok());
    EXPECT_EQ(written->status, 204) << written->body;
  }
  StopDaemon();
}

// Before: five POSTs of 600 000 new device ids took RSS from 66 to 641 MB,
// for good, without an error.
TEST_F(CairndHostileClientTest, InventedDeviceIdsMeetTheSeriesLimit) {
  StartDaemon({"--http-plain", "--max-series", "1000"});
  const std::string admin = FirstAdminToken();
  ASSERT_FALSE(admin.empty());
  EXPECT_EQ(Status("POST", "/write?db=sensors&precision=s", admin, NewDevices("a-", 600)), 204);
  Result<HttpTestResponse> over = Send("POST", "/write?db=sensors&precision=s", admin, NewDevices("b-", 600));
  ASSERT_TRUE(over.ok());
  ASSERT_EQ(over->status, 400) << over->body;
  EXPECT_TRUE(Contains(over->body, "table 'sensors' holds its limit of 1000 series (max_series)"))
      << over->body;
  EXPECT_TRUE(Contains(over->body, "PATCH /v1/tables/sensors?max_series=N")) << over->body;
  EXPECT_TRUE(Contains(over->body, "\"stored\":400")) << over->body;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Status("POST", "/write?db=sensors&precision=s", admin,
                     NewDevices("c" + std::to_string(i) + "-", 600)),
              400);
  }
  Result<HttpTestResponse> stats = Send("GET", "/v1/stats", admin);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(StatOf(stats->body, "series"), 1000u) << stats->body;
  EXPECT_EQ(StatOf(stats->body, "records_over_series_limit"), 2000u) << stats->body;
  EXPECT_GT(StatOf(stats->body, "series_bytes"), 1000u * 100) << stats->body;
  EXPECT_TRUE(Contains(daemon_->Stderr(), "rejected 200 lines of a write to table 'sensors' from 127.0.0.1"))
      << daemon_->Stderr();

  // The operator raises the limit; it survives a restart.
  EXPECT_EQ(Status("PATCH", "/v1/tables/sensors?max_series=1200", admin), 200);
  EXPECT_EQ(Status("POST", "/write?db=sensors&precision=s", admin, NewDevices("b-", 600)), 204);
  StopDaemon();
  StartDaemon({"--http-plain", "--max-series", "1000"});
  Result<HttpTestResponse> tables = Send("GET", "/v1/tables", admin);
  ASSERT_TRUE(tables.ok());
  EXPECT_TRUE(Contains(tables->body, "\"max_series\":1200")) << tables->body;
  EXPECT_EQ(Status("POST", "/write?db=sensors&precision=s", admin, NewDevices("d-", 1)), 400);
  StopDaemon();
}

}  // namespace
}  // namespace cairn
