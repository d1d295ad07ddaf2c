// HttpServer over real loopback sockets: keep-alive, pipelining, framing,
// and every limit (slow clients, sizes, connection cap).

#include "cairn/transport/http_server.h"

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "http_test_client.h"

namespace cairn {
namespace {

class HttpServerTest : public ::testing::Test {
 protected:
  void StartServer(HttpServerOptions options = {}) {
    options.listen_address = "127.0.0.1";
    options.port = 0;
    Result<std::unique_ptr<HttpServer>> server =
        HttpServer::Start(Env::Default(), options,
                          [this](const HttpRequest& request) {
                            ++handled_;
                            if (request.path == "/slow")
                              std::this_thread::sleep_for(std::chrono::milliseconds(300));
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

  std::atomic<int> handled_{0};
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
    Result<HttpTestResponse> response = client.ReadResponse();
    ASSERT_TRUE(response.ok()) << response.status().ToString();
    EXPECT_EQ(response->body, expected);
  }
}

TEST_F(HttpServerTest, DecodesChunkedBodies) {
  StartServer();
  HttpTestClient client = Client();
  ASSERT_TRUE(client
                  .Send("POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                        "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
                  .ok());
  Result<HttpTestResponse> response = client.ReadResponse();
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(response->body, "POST /c? 11:hello world");
}

TEST_F(HttpServerTest, Http10AndConnectionCloseEndTheConnection) {
  StartServer();
  {
    HttpTestClient client = Client();
    ASSERT_TRUE(client.Send("GET /old HTTP/1.0\r\n\r\n").ok());
    Result<HttpTestResponse> response = client.ReadResponse();
    ASSERT_TRUE(response.ok());
    EXPECT_EQ(response->Header("connection"), "close");
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
  ASSERT_TRUE(client.Send("POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n").ok());
  Result<HttpTestResponse> response = client.ReadResponse();
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->status, 413);
  EXPECT_NE(
      response->body.find("\"message\":\"request body of 1000000 bytes is larger than the limit of 1000"),
      std::string::npos)
      << response->body;
  EXPECT_TRUE(client.ServerClosed(5000));
  EXPECT_EQ(handled_, 0);
}

TEST_F(HttpServerTest, RefusesAChunkedBodyThatGrowsOverTheLimit) {
  HttpServerOptions options;
  options.max_body_bytes = 10;
  StartServer(options);
  HttpTestClient client = Client();
  ASSERT_TRUE(client
                  .Send("POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n12345678\r\n"
                        "8\r\n12345678\r\n0\r\n\r\n")
                  .ok());
  Result<HttpTestResponse> response = client.ReadResponse();
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(response->status, 413);
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
  ASSERT_TRUE(client.Send("GET /x HTTP/1.1\r\nHost x\r\n\r\n").ok());
  Result<HttpTestResponse> response = client.ReadResponse();
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(response->status, 400);
  EXPECT_NE(response->body.find("malformed HTTP request"), std::string::npos) << response->body;
  EXPECT_EQ(server_->stats().requests_malformed, 1u);
}

TEST_F(HttpServerTest, SlowHeadsGet408) {
  HttpServerOptions options;
  options.header_timeout_ms = 300;
  StartServer(options);
  HttpTestClient client = Client();
  // A slowloris client: a few bytes, then nothing more.
  ASSERT_TRUE(client.Send("GET /slow-head HTTP/1.1\r\nHost: x\r\n").ok());
  Result<HttpTestResponse> response = client.ReadResponse();
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->status, 408);
  EXPECT_TRUE(client.ServerClosed(5000));
  EXPECT_EQ(server_->stats().requests_timed_out, 1u);
}

TEST_F(HttpServerTest, SlowBodiesGet408) {
  HttpServerOptions options;
  options.body_timeout_ms = 300;
  StartServer(options);
  HttpTestClient client = Client();
  ASSERT_TRUE(client.Send("POST /w HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc").ok());
  Result<HttpTestResponse> response = client.ReadResponse();
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(response->status, 408);
  EXPECT_NE(response->body.find("body did not arrive in time"), std::string::npos);
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
  Result<HttpTestResponse> interim = client.ReadResponse();
  ASSERT_TRUE(interim.ok());
  EXPECT_EQ(interim->status, 100);
  ASSERT_TRUE(client.Send("data").ok());
  Result<HttpTestResponse> response = client.ReadResponse();
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(response->body, "POST /e? 4:data");
}

TEST_F(HttpServerTest, ConnectionsOverTheCapGet503) {
  HttpServerOptions options;
  options.max_connections = 2;
  StartServer(options);
  HttpTestClient first = Client();
  HttpTestClient second = Client();
  ASSERT_TRUE(first.Request("GET", "/1").ok());
  ASSERT_TRUE(second.Request("GET", "/2").ok());
  HttpTestClient third = Client();
  Result<HttpTestResponse> refused = third.ReadResponse();
  ASSERT_TRUE(refused.ok()) << refused.status().ToString();
  EXPECT_EQ(refused->status, 503);
  EXPECT_EQ(refused->Header("retry-after"), "1");
  EXPECT_EQ(server_->stats().connections_refused, 1u);
  // The open connections still work, and a closed one frees its place.
  ASSERT_TRUE(first.Request("GET", "/again").ok());
  { HttpTestClient closing = std::move(second); }
  bool served = false;
  for (int attempt = 0; attempt < 100 && !served; ++attempt) {
    HttpTestClient fourth = Client();
    Result<HttpTestResponse> response = fourth.Request("GET", "/4");
    served = response.ok() && response->status == 200;
    if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(served);
}

TEST_F(HttpServerTest, StopEndsOpenConnectionsAndFinishesRunningRequests) {
  StartServer();
  HttpTestClient idle = Client();
  ASSERT_TRUE(idle.Request("GET", "/x").ok());
  HttpTestClient busy = Client();
  ASSERT_TRUE(busy.Send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n").ok());
  while (handled_ < 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  server_->Stop();
  Result<HttpTestResponse> finished = busy.ReadResponse();
  ASSERT_TRUE(finished.ok()) << finished.status().ToString();
  EXPECT_EQ(finished->status, 200);
  EXPECT_EQ(finished->Header("connection"), "close");
  EXPECT_TRUE(idle.ServerClosed(5000));
}

}  // namespace
}  // namespace cairn
