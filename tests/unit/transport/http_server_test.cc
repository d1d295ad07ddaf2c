// HttpServer over real loopback sockets: keep-alive, pipelining, framing,
// every limit (slow and silent clients, sizes, connection slots per server
// and per address), the head check, and the drain on Stop.

#include "cairn/http/http_server.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "eventually.h"
#include "http_test_client.h"
#include "silent_tcp_client.h"

namespace cairn {
namespace {

class HttpServerTest : public ::testing::Test {
 protected:
  ~HttpServerTest() override { OpenGate(); }

  void StartServer(HttpServerOptions options = {}) {
    options.listen_address = "127.0.0.1";
    options.port = 0;
    Result<std::unique_ptr<HttpServer>> server =
        HttpServer::Start(Env::Default(), options,
                          [this](const HttpRequest& request) {
                            ++handled_;
                            if (request.path == "/slow")
                              std::this_thread::sleep_for(std::chrono::milliseconds(300));
                            if (request.path == "/gate") {
                              ++at_gate_;
                              std::unique_lock<std::mutex> lock(gate_mutex_);
                              gate_cv_.wait(lock, [this] { return gate_open_; });
                            }
                            HttpResponse response;
                            response.content_type = "text/plain";
                            response.body = request.method + " " + request.path + "?" + request.query + " " +
                                            std::to_string(request.body.size()) + ":" + request.body;
                            return response;
                          },
                          {}, {});
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
  }

  HttpTestClient Client() {
    Result<HttpTestClient> client = HttpTestClient::Connect("127.0.0.1", server_->port());
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    return std::move(*client);
  }

  // Sends `raw` on `client` and reads one response. A failed send or read
  // fails the test and gives a response with status 0.
  HttpTestResponse Exchange(HttpTestClient& client, std::string_view raw) {
    const Status sent = client.Send(raw);
    EXPECT_TRUE(sent.ok()) << sent.ToString();
    if (!sent.ok()) return HttpTestResponse();
    return Read(client);
  }

  // Reads one response from `client`, as Exchange does.
  HttpTestResponse Read(HttpTestClient& client) {
    Result<HttpTestResponse> response = client.ReadResponse();
    EXPECT_TRUE(response.ok()) << response.status().ToString();
    return response.ok() ? std::move(*response) : HttpTestResponse();
  }

  void OpenGate() {
    {
      std::lock_guard<std::mutex> lock(gate_mutex_);
      gate_open_ = true;
    }
    gate_cv_.notify_all();
  }

  std::atomic<int> handled_{0};
  std::atomic<int> at_gate_{0};
  std::mutex gate_mutex_;
  std::condition_variable gate_cv_;
  bool gate_open_ = false;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, AnswersSeveralRequestsOnOneConnection) {
  StartServer();
  HttpTestClient client = Client();
  for (int i = 0; i < 3; ++i) {
    Result<HttpTestResponse> response = client.Request("GET", "/a/b?x=" + std::to_string(i));
    ASSERT_TRUE(response.ok()) << response.status().ToString();
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->body, "GET /a/b?x=" + std::to_string(i) + " 0:");
    EXPECT_EQ(response->Header("connection"), "keep-alive");
    EXPECT_FALSE(response->Header("date").empty());
  }
  Result<HttpTestResponse> post = client.Request("POST", "/w", {}, "hello body");
  ASSERT_TRUE(post.ok());
  EXPECT_EQ(post->body, "POST /w? 10:hello body");
  EXPECT_EQ(server_->stats().connections_accepted, 1u);
}

TEST_F(HttpServerTest, AnswersPipelinedRequestsInOrder) {
  StartServer();
  HttpTestClient client = Client();
  ASSERT_TRUE(
      client
          .Send(
              "GET /one HTTP/1.1\r\nHost: x\r\n\r\nPOST /two HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n"
              "abcGET /three HTTP/1.1\r\nHost: x\r\n\r\n")
          .ok());
  for (const char* expected : {"GET /one? 0:", "POST /two? 3:abc", "GET /three? 0:"}) {
    HttpTestResponse response = Read(client);
    EXPECT_EQ(response.body, expected);
  }
}

TEST_F(HttpServerTest, DecodesChunkedBodies) {
  StartServer();
  HttpTestClient client = Client();
  HttpTestResponse response = Exchange(client,
                                       "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                                       "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
  EXPECT_EQ(response.body, "POST /c? 11:hello world");
}

TEST_F(HttpServerTest, Http10AndConnectionCloseEndTheConnection) {
  StartServer();
  {
    HttpTestClient client = Client();
    HttpTestResponse response = Exchange(client, "GET /old HTTP/1.0\r\n\r\n");
    EXPECT_EQ(response.Header("connection"), "close");
    EXPECT_TRUE(client.ServerClosed(5000));
  }
  HttpTestClient client = Client();
  Result<HttpTestResponse> response = client.Request("GET", "/bye", {{"Connection", "close"}});
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(response->Header("connection"), "close");
  EXPECT_TRUE(client.ServerClosed(5000));
}

TEST_F(HttpServerTest, HeadGetsHeadersWithoutBody) {
  StartServer();
  HttpTestClient client = Client();
  Result<HttpTestResponse> head = client.Request("HEAD", "/h");
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->Header("content-length"), "11");  // "HEAD /h? 0:"
  // The connection stays usable: no stray body bytes.
  Result<HttpTestResponse> next = client.Request("GET", "/n");
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->body, "GET /n? 0:");
}

TEST_F(HttpServerTest, RefusesADeclaredBodyOverTheLimitBeforeReadingIt) {
  HttpServerOptions options;
  options.max_body_bytes = 1000;
  StartServer(options);
  HttpTestClient client = Client();
  HttpTestResponse response =
      Exchange(client, "POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n");
  EXPECT_EQ(response.status, 413);
  EXPECT_NE(
      response.body.find("\"message\":\"request body of 1000000 bytes is larger than the limit of 1000"),
      std::string::npos)
      << response.body;
  EXPECT_TRUE(client.ServerClosed(5000));
  EXPECT_EQ(handled_, 0);
}

TEST_F(HttpServerTest, RefusesAChunkedBodyThatGrowsOverTheLimit) {
  HttpServerOptions options;
  options.max_body_bytes = 10;
  StartServer(options);
  HttpTestClient client = Client();
  HttpTestResponse response =
      Exchange(client,
               "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n12345678\r\n"
               "8\r\n12345678\r\n0\r\n\r\n");
  EXPECT_EQ(response.status, 413);
}

TEST_F(HttpServerTest, RefusesOversizedHeadersAndTargets) {
  HttpServerOptions options;
  options.max_header_bytes = 200;
  options.max_target_bytes = 100;
  StartServer(options);
  {
    HttpTestClient client = Client();
    Result<HttpTestResponse> response = client.Request("GET", "/", {{"X-Filler", std::string(500, 'a')}});
    ASSERT_TRUE(response.ok());
    EXPECT_EQ(response->status, 431);
  }
  HttpTestClient client = Client();
  Result<HttpTestResponse> response = client.Request("GET", "/" + std::string(200, 'p'));
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(response->status, 414);
  EXPECT_EQ(response->Header("content-type"), "application/json");
}

TEST_F(HttpServerTest, AnswersMalformedRequestsWith400) {
  StartServer();
  HttpTestClient client = Client();
  HttpTestResponse response = Exchange(client, "GET /x HTTP/1.1\r\nHost x\r\n\r\n");
  EXPECT_EQ(response.status, 400);
  EXPECT_NE(response.body.find("malformed HTTP request"), std::string::npos) << response.body;
  EXPECT_EQ(server_->stats().requests_malformed, 1u);
}

TEST_F(HttpServerTest, SlowHeadsGet408) {
  HttpServerOptions options;
  options.header_timeout_ms = 300;
  StartServer(options);
  HttpTestClient client = Client();
  // A slowloris client: a few bytes, then nothing more.
  HttpTestResponse response = Exchange(client, "GET /slow-head HTTP/1.1\r\nHost: x\r\n");
  EXPECT_EQ(response.status, 408);
  EXPECT_TRUE(client.ServerClosed(5000));
  EXPECT_EQ(server_->stats().requests_timed_out, 1u);
}

TEST_F(HttpServerTest, SlowBodiesGet408) {
  HttpServerOptions options;
  options.body_timeout_ms = 300;
  StartServer(options);
  HttpTestClient client = Client();
  HttpTestResponse response =
      Exchange(client, "POST /w HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc");
  EXPECT_EQ(response.status, 408);
  EXPECT_NE(response.body.find("body did not arrive in time"), std::string::npos);
}

TEST_F(HttpServerTest, IdleConnectionsAreClosed) {
  HttpServerOptions options;
  options.idle_timeout_ms = 200;
  StartServer(options);
  HttpTestClient client = Client();
  ASSERT_TRUE(client.Request("GET", "/first").ok());
  EXPECT_TRUE(client.ServerClosed(10000));
}

TEST_F(HttpServerTest, AnswersExpectContinue) {
  StartServer();
  HttpTestClient client = Client();
  ASSERT_TRUE(
      client.Send("POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n").ok());
  HttpTestResponse interim = Read(client);
  EXPECT_EQ(interim.status, 100);
  HttpTestResponse response = Exchange(client, "data");
  EXPECT_EQ(response.body, "POST /e? 4:data");
}

TEST_F(HttpServerTest, ConnectionsOverTheCapGet503WhenEveryOneIsBusy) {
  HttpServerOptions options;
  options.max_connections = 2;
  StartServer(options);
  HttpTestClient first = Client();
  HttpTestClient second = Client();
  ASSERT_TRUE(first.Send("GET /gate HTTP/1.1\r\nHost: x\r\n\r\n").ok());
  ASSERT_TRUE(second.Send("GET /gate HTTP/1.1\r\nHost: x\r\n\r\n").ok());
  ASSERT_TRUE(Eventually([this] { return at_gate_ == 2; }, 10000));
  HttpTestClient third = Client();
  HttpTestResponse refused = Read(third);
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(refused.Header("retry-after"), "5");
  EXPECT_EQ(server_->stats().connections_refused, 1u);
  OpenGate();
  // The busy ones finish, and a closed one frees its place.
  ASSERT_TRUE(first.ReadResponse().ok());
  ASSERT_TRUE(second.ReadResponse().ok());
  { HttpTestClient closing = std::move(second); }
  // The place is free once the server has seen the close.
  ASSERT_TRUE(Eventually([this] { return server_->stats().open_connections == 1; }, 10000));
  HttpTestClient fourth = Client();
  Result<HttpTestResponse> served = fourth.Request("GET", "/4");
  ASSERT_TRUE(served.ok()) << served.status().ToString();
  EXPECT_EQ(served->status, 200);
}

TEST_F(HttpServerTest, AWaitingConnectionMakesRoomForANewOne) {
  HttpServerOptions options;
  options.max_connections = 2;
  StartServer(options);
  HttpTestClient first = Client();
  // A connection waits once the server has finished writing its answer,
  // which may be a moment after the client has read it.
  ASSERT_TRUE(first.Request("GET", "/1").ok());
  ASSERT_TRUE(Eventually([this] { return server_->stats().waiting_connections == 1; }, 10000));
  HttpTestClient second = Client();
  ASSERT_TRUE(second.Request("GET", "/2").ok());
  ASSERT_TRUE(Eventually([this] { return server_->stats().waiting_connections == 2; }, 10000));
  // Both wait between requests: the one waiting longest gives way.
  HttpTestClient third = Client();
  Result<HttpTestResponse> served = third.Request("GET", "/3");
  ASSERT_TRUE(served.ok()) << served.status().ToString();
  EXPECT_EQ(served->status, 200);
  EXPECT_TRUE(first.ServerClosed(5000));
  EXPECT_EQ(server_->stats().connections_evicted, 1u);
  EXPECT_EQ(server_->stats().connections_refused, 0u);
  Result<HttpTestResponse> still = second.Request("GET", "/2-again");
  ASSERT_TRUE(still.ok()) << still.status().ToString();
}

TEST_F(HttpServerTest, SilentConnectionsOfOneAddressOnlyDisplaceTheirOwn) {
  HttpServerOptions options;
  options.max_connections = 4;
  options.max_connections_per_address = 2;
  options.first_byte_timeout_ms = 600'000;  // only displacement closes them here
  StartServer(options);
  HttpTestClient client = Client();  // from 127.0.0.1
  ASSERT_TRUE(client.Request("GET", "/before").ok());
  std::vector<std::unique_ptr<SilentTcpClient>> silent;
  for (int i = 0; i < 10; ++i) {
    silent.push_back(std::make_unique<SilentTcpClient>("127.0.0.2", server_->port()));
    ASSERT_TRUE(silent.back()->connected());
  }
  // Each newcomer from 127.0.0.2 closed the oldest of its own.
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(silent[i]->ClosedByServer(5000)) << "silent connection " << i;
  EXPECT_FALSE(silent[9]->ClosedByServer(0));
  // The client from the other address kept its connection and its place.
  Result<HttpTestResponse> after = client.Request("GET", "/after");
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after->status, 200);
  HttpTestClient another = Client();
  ASSERT_TRUE(another.Request("GET", "/another").ok());
}

TEST_F(HttpServerTest, ANewConnectionThatSendsNothingIsClosed) {
  HttpServerOptions options;
  options.first_byte_timeout_ms = 200;
  StartServer(options);
  SilentTcpClient silent("127.0.0.1", server_->port());
  ASSERT_TRUE(silent.connected());
  EXPECT_TRUE(silent.ClosedByServer(10000));
  EXPECT_EQ(server_->stats().requests_timed_out, 0u) << "nothing to answer 408 to";
}

TEST_F(HttpServerTest, TheHeadCheckRefusesBeforeTheBodyIsRead) {
  HttpServerOptions options;
  options.head_check = [](const HttpRequest& head) -> std::optional<HttpResponse> {
    if (head.Header("x-key") != nullptr) return std::nullopt;
    return HttpResponse::Error(401,
                               "no key in " + head.method + " " + head.path + " from " + head.peer_address);
  };
  StartServer(options);
  {
    // A large body announced and only begun: the answer comes at once.
    HttpTestClient client = Client();
    HttpTestResponse refused =
        Exchange(client, "POST /w HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\nsome");
    EXPECT_EQ(refused.status, 401);
    EXPECT_NE(refused.body.find("no key in POST /w from 127.0.0.1"), std::string::npos) << refused.body;
    EXPECT_EQ(refused.Header("connection"), "close");
  }
  {
    // Expect: 100-continue gets the refusal instead of the 100.
    HttpTestClient client = Client();
    ASSERT_TRUE(
        client.Send("POST /w HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n").ok());
    HttpTestResponse refused = Read(client);
    EXPECT_EQ(refused.status, 401);
  }
  {
    HttpTestClient client = Client();
    HttpTestResponse interim = Exchange(client,
                                        "POST /w HTTP/1.1\r\nHost: x\r\nX-Key: k\r\nContent-Length: 4\r\n"
                                        "Expect: 100-continue\r\n\r\n");
    EXPECT_EQ(interim.status, 100);
    HttpTestResponse response = Exchange(client, "data");
    EXPECT_EQ(response.body, "POST /w? 4:data");
  }
  EXPECT_EQ(handled_, 1);
  EXPECT_EQ(server_->stats().requests_refused_at_head, 2u);
}

TEST_F(HttpServerTest, StopAnswersRequestsInProgressAndRefusesLaterOnes) {
  StartServer();
  HttpTestClient idle = Client();
  ASSERT_TRUE(idle.Request("GET", "/x").ok());
  HttpTestClient writing = Client();
  // The 100 Continue proves the server has read the head before the stop
  // begins (an accepted connection's thread may not have run yet).
  HttpTestResponse interim =
      Exchange(writing, "POST /w HTTP/1.1\r\nHost: x\r\nContent-Length: 8\r\nExpect: 100-continue\r\n\r\n");
  ASSERT_EQ(interim.status, 100);
  ASSERT_TRUE(writing.Send("half").ok());
  std::thread stopper([this] { server_->Stop(); });
  ASSERT_TRUE(Eventually([this] { return server_->stopping(); }, 10000));
  // The request in progress is finished and answered.
  HttpTestResponse finished = Exchange(writing, "done");
  EXPECT_EQ(finished.status, 200);
  EXPECT_EQ(finished.body, "POST /w? 8:halfdone");
  EXPECT_EQ(finished.Header("connection"), "close");
  // A request that begins during the stop gets 503, not a closed connection.
  Result<HttpTestResponse> late = idle.Request("POST", "/w", {}, "late");
  ASSERT_TRUE(late.ok()) << late.status().ToString();
  EXPECT_EQ(late->status, 503);
  EXPECT_EQ(late->Header("retry-after"), "5");
  EXPECT_EQ(late->Header("connection"), "close");
  stopper.join();
  EXPECT_EQ(handled_, 2);
  // Nothing listens any more.
  EXPECT_FALSE(HttpTestClient::Connect("127.0.0.1", server_->port()).ok());
}

TEST_F(HttpServerTest, StopEndsWaitingConnectionsAndFinishesRunningRequests) {
  HttpServerOptions options;
  options.drain_timeout_ms = 300;
  StartServer(options);
  HttpTestClient idle = Client();
  ASSERT_TRUE(idle.Request("GET", "/x").ok());
  HttpTestClient busy = Client();
  ASSERT_TRUE(busy.Send("GET /gate HTTP/1.1\r\nHost: x\r\n\r\n").ok());
  ASSERT_TRUE(Eventually([this] { return at_gate_ == 1; }, 10000));
  std::thread stopper([this] { server_->Stop(); });
  // Past the drain, the waiting connection is closed; the handler still runs.
  EXPECT_TRUE(idle.ServerClosed(10000));
  OpenGate();
  HttpTestResponse finished = Read(busy);
  EXPECT_EQ(finished.status, 200);
  EXPECT_EQ(finished.Header("connection"), "close");
  stopper.join();
}

TEST_F(HttpServerTest, RequestsStillArrivingWhenTheDrainEndsGet503) {
  HttpServerOptions options;
  options.drain_timeout_ms = 200;
  StartServer(options);
  HttpTestClient slow = Client();
  ASSERT_TRUE(slow.Send("POST /w HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nfirst bytes").ok());
  ASSERT_TRUE(Eventually([this] { return server_->stats().open_connections == 1; }, 10000));
  server_->Stop();
  HttpTestResponse refused = Read(slow);
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(server_->stats().requests_refused_stopping, 1u);
  EXPECT_EQ(handled_, 0);
}

}  // namespace
}  // namespace cairn
