// The POSIX Env's TCP sockets, over real loopback connections.

#include <atomic>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "cairn/platform/env.h"

namespace cairn {
namespace {

class PosixNetTest : public ::testing::Test {
 protected:
  // A listener on a free loopback port and a client connected to it.
  void Connect(const std::string& address = "127.0.0.1") {
    Result<std::unique_ptr<TcpListener>> listener = env_->ListenTcp(address, 0);
    ASSERT_TRUE(listener.ok()) << listener.status().ToString();
    listener_ = std::move(*listener);
    ASSERT_NE(listener_->port(), 0);
    Result<std::unique_ptr<TcpConnection>> client = env_->ConnectTcp(address, listener_->port(), 5000);
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(*client);
    Result<std::unique_ptr<TcpConnection>> server = listener_->Accept(5000);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    ASSERT_NE(*server, nullptr);
    server_ = std::move(*server);
  }

  std::string ReadExactly(TcpConnection* connection, size_t n) {
    std::string data;
    char buffer[4096];
    while (data.size() < n) {
      Result<size_t> got = connection->Read(buffer, std::min(sizeof(buffer), n - data.size()), 5000);
      if (!got.ok() || *got == 0) break;
      data.append(buffer, *got);
    }
    return data;
  }

  Env* env_ = Env::Default();
  std::unique_ptr<TcpListener> listener_;
  std::unique_ptr<TcpConnection> client_, server_;
};

TEST_F(PosixNetTest, CarriesBytesBothWays) {
  Connect();
  ASSERT_TRUE(client_->Write("hello", 1000).ok());
  EXPECT_EQ(ReadExactly(server_.get(), 5), "hello");
  ASSERT_TRUE(server_->Write("world!", 1000).ok());
  EXPECT_EQ(ReadExactly(client_.get(), 6), "world!");
  EXPECT_EQ(server_->peer_address(), "127.0.0.1");
}

TEST_F(PosixNetTest, IPv6LoopbackWorks) {
  Result<std::unique_ptr<TcpListener>> probe = env_->ListenTcp("::1", 0);
  if (!probe.ok()) GTEST_SKIP() << "no IPv6 loopback here: " << probe.status().ToString();
  probe->reset();
  Connect("::1");
  ASSERT_TRUE(client_->Write("six", 1000).ok());
  EXPECT_EQ(ReadExactly(server_.get(), 3), "six");
  EXPECT_EQ(server_->peer_address(), "::1");
}

TEST_F(PosixNetTest, LargeWriteCompletesWhileThePeerReads) {
  Connect();
  const std::string payload(4 << 20, 'x');
  std::thread writer([&] { EXPECT_TRUE(client_->Write(payload, 30000).ok()); });
  EXPECT_EQ(ReadExactly(server_.get(), payload.size()).size(), payload.size());
  writer.join();
}

TEST_F(PosixNetTest, ReadTimesOutWhenNothingArrives) {
  Connect();
  char byte;
  Result<size_t> got = server_->Read(&byte, 1, 50);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kTimedOut);
}

TEST_F(PosixNetTest, OrderlyCloseReadsAsZero) {
  Connect();
  client_.reset();
  char byte;
  Result<size_t> got = server_->Read(&byte, 1, 5000);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, 0u);
}

TEST_F(PosixNetTest, WriteToAClosedPeerFailsWithoutSignal) {
  Connect();
  client_.reset();
  // The first write may still be buffered; a later one sees the reset.
  Status status;
  for (int i = 0; i < 100 && status.ok(); ++i) status = server_->Write(std::string(65536, 'y'), 1000);
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
}

TEST_F(PosixNetTest, WriteTimesOutWhenThePeerDoesNotRead) {
  Connect();
  Status status;
  for (int i = 0; i < 10000 && status.ok(); ++i) status = server_->Write(std::string(65536, 'z'), 50);
  EXPECT_EQ(status.code(), StatusCode::kTimedOut) << status.ToString();
}

TEST_F(PosixNetTest, ShutdownWakesABlockedRead) {
  Connect();
  std::atomic<bool> woke{false};
  std::thread reader([&] {
    char byte;
    Result<size_t> got = server_->Read(&byte, 1, -1);
    EXPECT_FALSE(got.ok() && *got > 0);
    woke = true;
  });
  server_->Shutdown();
  reader.join();
  EXPECT_TRUE(woke);
  char byte;
  EXPECT_EQ(server_->Read(&byte, 1, 10).status().code(), StatusCode::kUnavailable);
}

TEST_F(PosixNetTest, AcceptReturnsNullAfterTimeout) {
  Result<std::unique_ptr<TcpListener>> listener = env_->ListenTcp("127.0.0.1", 0);
  ASSERT_TRUE(listener.ok());
  Result<std::unique_ptr<TcpConnection>> accepted = (*listener)->Accept(20);
  ASSERT_TRUE(accepted.ok()) << accepted.status().ToString();
  EXPECT_EQ(*accepted, nullptr);
}

TEST_F(PosixNetTest, PortInUseIsAlreadyExists) {
  Result<std::unique_ptr<TcpListener>> first = env_->ListenTcp("127.0.0.1", 0);
  ASSERT_TRUE(first.ok());
  Result<std::unique_ptr<TcpListener>> second = env_->ListenTcp("127.0.0.1", (*first)->port());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kAlreadyExists) << second.status().ToString();
}

TEST_F(PosixNetTest, NonNumericAddressIsInvalid) {
  Result<std::unique_ptr<TcpListener>> listener = env_->ListenTcp("localhost", 0);
  ASSERT_FALSE(listener.ok());
  EXPECT_EQ(listener.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(listener.status().message().find("numeric"), std::string::npos);
}

TEST_F(PosixNetTest, ConnectToAClosedPortIsUnavailable) {
  uint16_t port;
  {
    Result<std::unique_ptr<TcpListener>> listener = env_->ListenTcp("127.0.0.1", 0);
    ASSERT_TRUE(listener.ok());
    port = (*listener)->port();
  }
  Result<std::unique_ptr<TcpConnection>> client = env_->ConnectTcp("127.0.0.1", port, 5000);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), StatusCode::kUnavailable) << client.status().ToString();
}

}  // namespace
}  // namespace cairn
