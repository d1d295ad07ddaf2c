// TLS over real loopback TCP connections through the POSIX Env, with a PKI
// generated for the test suite: handshakes, certificate checks both ways,
// application data, timeouts, closing and shutting down.
#include "cairn/platform/tls.h"

#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/platform/env.h"

#include "test_dirs.h"
#include "test_pki.h"

namespace cairn {
namespace {

// Generous bounds for a loaded machine or qemu; no test measures time.
constexpr int kTimeoutMs = 30000;

// Every byte distinct from its neighbours, so a lost, repeated or reordered
// record shows in a comparison.
std::string Pattern(size_t size, int seed) {
  std::string bytes(size, '\0');
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((i * 7 + static_cast<size_t>(seed)) % 251);
  return bytes;
}

// Reads exactly `size` bytes in reads of at most `chunk` bytes.
Result<std::string> ReadExactly(TcpConnection& connection, size_t size, size_t chunk = 4096) {
  std::string data;
  std::vector<char> buffer(chunk);
  while (data.size() < size) {
    CAIRN_ASSIGN_OR_RETURN(size_t got,
                           connection.Read(buffer.data(), std::min(chunk, size - data.size()), kTimeoutMs));
    if (got == 0) return Status::Unavailable("end of stream after " + std::to_string(data.size()) + " bytes");
    data.append(buffer.data(), got);
  }
  return data;
}

// `created` failed with `code`, and its message names `part`.
template <typename T>
void ExpectCreateFailed(const Result<T>& created, StatusCode code, const std::string& part) {
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status().code(), code) << created.status().ToString();
  EXPECT_NE(created.status().message().find(part), std::string::npos) << created.status().ToString();
}

// The next Read on `connection` reports the end of the stream (0 bytes).
void ExpectEndOfStream(TcpConnection& connection) {
  char buffer[16];
  Result<size_t> end = connection.Read(buffer, sizeof(buffer), kTimeoutMs);
  ASSERT_TRUE(end.ok()) << end.status().ToString();
  EXPECT_EQ(*end, 0u);
}

// Both ends of one handshake.
struct HandshakeOutcome {
  Result<std::unique_ptr<TcpConnection>> server = Status::Internal("server side did not run");
  Result<std::unique_ptr<TcpConnection>> client = Status::Internal("client side did not run");
};

class TlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pki_dir_ = new ScopedTempDir("cairn-tls-pki");
    Result<TestPki> pki = GenerateTestPki(pki_dir_->path());
    ASSERT_TRUE(pki.ok()) << pki.status().ToString();
    pki_ = new TestPki(*pki);
  }

  static void TearDownTestSuite() {
    delete pki_;
    pki_ = nullptr;
    delete pki_dir_;
    pki_dir_ = nullptr;
  }

  void SetUp() override { ASSERT_NE(pki_, nullptr) << "the test PKI could not be generated"; }

  const TestPki& pki() const { return *pki_; }

  TlsServerOptions ServerOptions() const {
    TlsServerOptions options;
    options.certificate_path = pki().server_certificate_path;
    options.private_key_path = pki().server_key_path;
    options.handshake_timeout_ms = kTimeoutMs;
    return options;
  }

  TlsClientOptions ClientOptions(const std::string& server_name = "localhost") const {
    TlsClientOptions options;
    options.ca_path = pki().ca_certificate_path;
    options.server_name = server_name;
    options.handshake_timeout_ms = kTimeoutMs;
    return options;
  }

  std::unique_ptr<TlsServerContext> Server(const TlsServerOptions& options) {
    Result<std::unique_ptr<TlsServerContext>> server = TlsServerContext::Create(env_, options);
    EXPECT_TRUE(server.ok()) << server.status().ToString();
    return server.ok() ? std::move(server).value() : nullptr;
  }

  std::unique_ptr<TlsClientContext> Client(const TlsClientOptions& options) {
    Result<std::unique_ptr<TlsClientContext>> client = TlsClientContext::Create(env_, options);
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    return client.ok() ? std::move(client).value() : nullptr;
  }

  // A loopback listener on a free port.
  std::unique_ptr<TcpListener> Listen() {
    Result<std::unique_ptr<TcpListener>> listener = env_->ListenTcp("127.0.0.1", 0);
    EXPECT_TRUE(listener.ok()) << listener.status().ToString();
    return listener.ok() ? std::move(listener).value() : nullptr;
  }

  Result<std::unique_ptr<TcpConnection>> AcceptPlain(TcpListener& listener) {
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<TcpConnection> accepted, listener.Accept(kTimeoutMs));
    if (accepted == nullptr) return Status::TimedOut("no connection arrived");
    return accepted;
  }

  // Connects a client to a server over loopback and runs both handshakes at
  // once, the client's on its own thread.
  HandshakeOutcome Handshake(const TlsServerContext& server, const TlsClientContext& client) {
    HandshakeOutcome outcome;
    std::unique_ptr<TcpListener> listener = Listen();
    if (listener == nullptr) return outcome;
    const uint16_t port = listener->port();
    std::thread client_thread = env_->StartThread([&] {
      Result<std::unique_ptr<TcpConnection>> transport = env_->ConnectTcp("127.0.0.1", port, kTimeoutMs);
      outcome.client = transport.ok() ? client.Connect(std::move(transport).value()) : transport.status();
    });
    Result<std::unique_ptr<TcpConnection>> transport = AcceptPlain(*listener);
    outcome.server = transport.ok() ? server.Accept(std::move(transport).value()) : transport.status();
    client_thread.join();
    return outcome;
  }

  // One handshake between contexts built from these options. Both sides
  // failed ("did not run") when a context could not be built, which
  // Server() or Client() reported already.
  HandshakeOutcome HandshakeWith(const TlsServerOptions& server_options, const TlsClientOptions& client_options) {
    std::unique_ptr<TlsServerContext> server = Server(server_options);
    std::unique_ptr<TlsClientContext> client = Client(client_options);
    if (server == nullptr || client == nullptr) return {};
    return Handshake(*server, *client);
  }

  // One handshake with `server` of a client that expects it to be `name`.
  HandshakeOutcome HandshakeAs(const TlsServerContext& server, const std::string& name) {
    std::unique_ptr<TlsClientContext> client = Client(ClientOptions(name));
    if (client == nullptr) return {};
    return Handshake(server, *client);
  }

  // A handshake in which the server asks for a client certificate signed by
  // `client_ca_path` and the client presents `certificate_path` with
  // `private_key_path` (none when empty).
  HandshakeOutcome MutualHandshake(const std::string& client_ca_path, const std::string& certificate_path,
                                   const std::string& private_key_path) {
    TlsServerOptions server_options = ServerOptions();
    server_options.client_ca_path = client_ca_path;
    TlsClientOptions client_options = ClientOptions();
    client_options.certificate_path = certificate_path;
    client_options.private_key_path = private_key_path;
    return HandshakeWith(server_options, client_options);
  }

  // One side refused the other's certificate (PermissionDenied) and the
  // other side's handshake failed with it.
  static void ExpectRefused(const Result<std::unique_ptr<TcpConnection>>& refusing,
                            const Result<std::unique_ptr<TcpConnection>>& refused) {
    ASSERT_FALSE(refusing.ok());
    EXPECT_EQ(refusing.status().code(), StatusCode::kPermissionDenied) << refusing.status().ToString();
    EXPECT_FALSE(refused.ok());
  }

  // A connected pair with the default options; null on failure.
  struct Pair {
    std::unique_ptr<TcpConnection> server;
    std::unique_ptr<TcpConnection> client;
  };
  Pair Connected() {
    // The contexts are gone when HandshakeWith returns: the connections
    // must not depend on them.
    HandshakeOutcome outcome = HandshakeWith(ServerOptions(), ClientOptions());
    EXPECT_TRUE(outcome.server.ok()) << outcome.server.status().ToString();
    EXPECT_TRUE(outcome.client.ok()) << outcome.client.status().ToString();
    if (!outcome.server.ok() || !outcome.client.ok()) return {};
    return {std::move(outcome.server).value(), std::move(outcome.client).value()};
  }

  void ExpectEcho(TcpConnection& from, TcpConnection& to, const std::string& message) {
    ASSERT_TRUE(from.Write(message, kTimeoutMs).ok());
    Result<std::string> got = ReadExactly(to, message.size());
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, message);
  }

  void WriteFile(const std::string& path, const std::string& contents) {
    ASSERT_TRUE(env_->WriteFileAtomically(path, contents).ok());
  }

  Env* env_ = Env::Default();
  ScopedTempDir dir_{"cairn-tls"};

 private:
  static ScopedTempDir* pki_dir_;
  static TestPki* pki_;
};

ScopedTempDir* TlsTest::pki_dir_ = nullptr;
TestPki* TlsTest::pki_ = nullptr;

// ---- handshakes and data ----------------------------------------------------

TEST_F(TlsTest, HandshakeThenDataFlowsBothWays) {
  Pair pair = Connected();
  ASSERT_NE(pair.server, nullptr);
  EXPECT_EQ(pair.server->peer_address(), "127.0.0.1");
  EXPECT_EQ(pair.client->peer_address(), "127.0.0.1");
  ExpectEcho(*pair.client, *pair.server, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n");
  ExpectEcho(*pair.server, *pair.client, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
  ExpectEcho(*pair.client, *pair.server, "second request");
}

TEST_F(TlsTest, OneMebibyteEachWayArrivesIntact) {
  Pair pair = Connected();
  ASSERT_NE(pair.server, nullptr);
  const std::string upload = Pattern(1 << 20, 1);
  const std::string download = Pattern(1 << 20, 2);

  Status client_write;
  Result<std::string> client_read = Status::Internal("not run");
  std::thread client_thread = env_->StartThread([&] {
    client_write = pair.client->Write(upload, kTimeoutMs);
    // Reads of an odd size split records: the rest must wait for the next Read.
    if (client_write.ok()) client_read = ReadExactly(*pair.client, download.size(), 5000);
  });
  Result<std::string> server_read = ReadExactly(*pair.server, upload.size(), 3001);
  Status server_write = server_read.ok() ? pair.server->Write(download, kTimeoutMs) : server_read.status();
  client_thread.join();

  ASSERT_TRUE(client_write.ok()) << client_write.ToString();
  ASSERT_TRUE(server_read.ok()) << server_read.status().ToString();
  EXPECT_TRUE(*server_read == upload);
  ASSERT_TRUE(server_write.ok()) << server_write.ToString();
  ASSERT_TRUE(client_read.ok()) << client_read.status().ToString();
  EXPECT_TRUE(*client_read == download);
}

TEST_F(TlsTest, ServerIsVerifiedByDnsNameAndByAddress) {
  std::unique_ptr<TlsServerContext> server = Server(ServerOptions());
  ASSERT_NE(server, nullptr);
  // The connection always runs over 127.0.0.1; the name is what the client
  // looks for in the certificate.
  for (const std::string name : {"localhost", "127.0.0.1", "::1"}) {
    SCOPED_TRACE(name);
    HandshakeOutcome outcome = HandshakeAs(*server, name);
    ASSERT_TRUE(outcome.client.ok()) << outcome.client.status().ToString();
    ASSERT_TRUE(outcome.server.ok()) << outcome.server.status().ToString();
    ExpectEcho(**outcome.client, **outcome.server, "hello " + name);
  }
}

TEST_F(TlsTest, ManyHandshakesRunConcurrentlyOnOneContext) {
  constexpr int kClients = 4;
  std::unique_ptr<TlsServerContext> server = Server(ServerOptions());
  std::unique_ptr<TlsClientContext> client = Client(ClientOptions());
  std::unique_ptr<TcpListener> listener = Listen();
  ASSERT_TRUE(server != nullptr && client != nullptr && listener != nullptr);
  const uint16_t port = listener->port();

  std::vector<Status> client_results(kClients);
  std::vector<Status> server_results(kClients);
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i) {
    threads.push_back(env_->StartThread([&, i] {
      client_results[i] = [&]() -> Status {
        CAIRN_ASSIGN_OR_RETURN(auto transport, env_->ConnectTcp("127.0.0.1", port, kTimeoutMs));
        CAIRN_ASSIGN_OR_RETURN(auto connection, client->Connect(std::move(transport)));
        const std::string message = "client " + std::to_string(i);
        CAIRN_RETURN_IF_ERROR(connection->Write(message, kTimeoutMs));
        CAIRN_ASSIGN_OR_RETURN(std::string echoed, ReadExactly(*connection, message.size()));
        if (echoed != message) return Status::Internal("echo mismatch: " + echoed);
        return Status::Ok();
      }();
    }));
  }
  std::vector<std::unique_ptr<TcpConnection>> transports(kClients);
  for (int i = 0; i < kClients; ++i) {
    Result<std::unique_ptr<TcpConnection>> transport = AcceptPlain(*listener);
    if (!transport.ok()) {
      server_results[i] = transport.status();
      continue;
    }
    transports[i] = std::move(transport).value();
    threads.push_back(env_->StartThread([&, i] {
      server_results[i] = [&]() -> Status {
        CAIRN_ASSIGN_OR_RETURN(auto connection, server->Accept(std::move(transports[i])));
        CAIRN_ASSIGN_OR_RETURN(std::string message, ReadExactly(*connection, std::string("client 0").size()));
        return connection->Write(message, kTimeoutMs);
      }();
    }));
  }
  for (std::thread& thread : threads) thread.join();
  for (int i = 0; i < kClients; ++i) {
    EXPECT_TRUE(client_results[i].ok()) << client_results[i].ToString();
    EXPECT_TRUE(server_results[i].ok()) << server_results[i].ToString();
  }
}

// ---- the client checks the server --------------------------------------------

TEST_F(TlsTest, ClientTrustingAnotherAuthorityRejectsTheServer) {
  TlsClientOptions options = ClientOptions();
  options.ca_path = pki().other_ca_certificate_path;
  HandshakeOutcome outcome = HandshakeWith(ServerOptions(), options);
  ASSERT_NO_FATAL_FAILURE(ExpectRefused(outcome.client, outcome.server));
  EXPECT_NE(outcome.client.status().message().find("server certificate rejected"), std::string::npos)
      << outcome.client.status().ToString();
}

TEST_F(TlsTest, ClientRejectsAServerCertificateForAnotherName) {
  std::unique_ptr<TlsServerContext> server = Server(ServerOptions());
  ASSERT_NE(server, nullptr);
  for (const std::string name : {"gateway.example", "127.0.0.2", "::2"}) {
    SCOPED_TRACE(name);
    HandshakeOutcome outcome = HandshakeAs(*server, name);
    ASSERT_NO_FATAL_FAILURE(ExpectRefused(outcome.client, outcome.server));
  }
}

// ---- mutual TLS ----------------------------------------------------------------

TEST_F(TlsTest, MutualTlsRefusesAClientWithoutCertificate) {
  HandshakeOutcome outcome = MutualHandshake(pki().ca_certificate_path, "", "");
  ASSERT_NO_FATAL_FAILURE(ExpectRefused(outcome.server, outcome.client));
}

TEST_F(TlsTest, MutualTlsAcceptsAClientCertificateFromTheConfiguredAuthority) {
  HandshakeOutcome outcome =
      MutualHandshake(pki().ca_certificate_path, pki().client_certificate_path, pki().client_key_path);
  ASSERT_TRUE(outcome.server.ok()) << outcome.server.status().ToString();
  ASSERT_TRUE(outcome.client.ok()) << outcome.client.status().ToString();
  ExpectEcho(**outcome.client, **outcome.server, "authenticated");
  ExpectEcho(**outcome.server, **outcome.client, "welcome");
  // The server side knows who the client is; the client side has no peer
  // certificate to report (it verified the server's against its CA).
  const PeerCertificate* names = (*outcome.server)->peer_certificate();
  ASSERT_NE(names, nullptr);
  EXPECT_EQ(names->common_name, "cairn-test-client");
  EXPECT_EQ(names->alternative_names, std::vector<std::string>{"gateway-7.example"});
  EXPECT_EQ((*outcome.client)->peer_certificate(), nullptr);
}

TEST_F(TlsTest, WithoutClientCertificatesThereAreNoPeerNames) {
  Pair pair = Connected();
  ASSERT_TRUE(pair.server != nullptr);
  EXPECT_EQ(pair.server->peer_certificate(), nullptr);
}

TEST_F(TlsTest, MutualTlsRejectsAClientCertificateFromAnotherAuthority) {
  HandshakeOutcome outcome =
      MutualHandshake(pki().other_ca_certificate_path, pki().client_certificate_path, pki().client_key_path);
  ASSERT_NO_FATAL_FAILURE(ExpectRefused(outcome.server, outcome.client));
  EXPECT_NE(outcome.server.status().message().find("client certificate rejected"), std::string::npos)
      << outcome.server.status().ToString();
}

TEST_F(TlsTest, MutualTlsRejectsACertificateNotMeantForClients) {
  // Signed by the trusted CA, but its extended key usage is serverAuth only.
  HandshakeOutcome outcome =
      MutualHandshake(pki().ca_certificate_path, pki().server_certificate_path, pki().server_key_path);
  ASSERT_NO_FATAL_FAILURE(ExpectRefused(outcome.server, outcome.client));
}

// ---- peers that do not speak TLS -------------------------------------------------

TEST_F(TlsTest, PlainHttpToTheTlsServerFailsAtOnce) {
  std::unique_ptr<TlsServerContext> server = Server(ServerOptions());
  std::unique_ptr<TcpListener> listener = Listen();
  ASSERT_TRUE(server != nullptr && listener != nullptr);
  const uint16_t port = listener->port();
  Status client_end = Status::Internal("not run");
  std::thread client_thread = env_->StartThread([&] {
    Result<std::unique_ptr<TcpConnection>> plain = env_->ConnectTcp("127.0.0.1", port, kTimeoutMs);
    if (!plain.ok()) {
      client_end = plain.status();
      return;
    }
    client_end = (*plain)->Write("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n", kTimeoutMs);
    // Whatever the server answers, it must then close the connection.
    char buffer[256];
    while (client_end.ok()) {
      Result<size_t> got = (*plain)->Read(buffer, sizeof(buffer), kTimeoutMs);
      if (!got.ok()) {
        client_end = got.status();
      } else if (*got == 0) {
        break;
      }
    }
  });
  Result<std::unique_ptr<TcpConnection>> transport = AcceptPlain(*listener);
  ASSERT_TRUE(transport.ok()) << transport.status().ToString();
  Result<std::unique_ptr<TcpConnection>> accepted = server->Accept(std::move(transport).value());
  client_thread.join();
  ASSERT_FALSE(accepted.ok());
  // Rejected for what it is, long before the 30 s handshake budget ran out.
  EXPECT_EQ(accepted.status().code(), StatusCode::kInvalidArgument) << accepted.status().ToString();
  EXPECT_FALSE(client_end.Is(StatusCode::kTimedOut)) << client_end.ToString();
}

TEST_F(TlsTest, SilentClientTimesOutTheHandshake) {
  TlsServerOptions options = ServerOptions();
  options.handshake_timeout_ms = 100;
  std::unique_ptr<TlsServerContext> server = Server(options);
  std::unique_ptr<TcpListener> listener = Listen();
  ASSERT_TRUE(server != nullptr && listener != nullptr);
  Result<std::unique_ptr<TcpConnection>> silent = env_->ConnectTcp("127.0.0.1", listener->port(), kTimeoutMs);
  ASSERT_TRUE(silent.ok()) << silent.status().ToString();
  Result<std::unique_ptr<TcpConnection>> transport = AcceptPlain(*listener);
  ASSERT_TRUE(transport.ok()) << transport.status().ToString();
  Result<std::unique_ptr<TcpConnection>> accepted = server->Accept(std::move(transport).value());
  ASSERT_FALSE(accepted.ok());
  EXPECT_EQ(accepted.status().code(), StatusCode::kTimedOut) << accepted.status().ToString();
}

TEST_F(TlsTest, ShuttingTheTransportDownAbortsAHandshake) {
  std::unique_ptr<TlsServerContext> server = Server(ServerOptions());
  std::unique_ptr<TcpListener> listener = Listen();
  ASSERT_TRUE(server != nullptr && listener != nullptr);
  Result<std::unique_ptr<TcpConnection>> silent = env_->ConnectTcp("127.0.0.1", listener->port(), kTimeoutMs);
  ASSERT_TRUE(silent.ok()) << silent.status().ToString();
  Result<std::unique_ptr<TcpConnection>> transport = AcceptPlain(*listener);
  ASSERT_TRUE(transport.ok()) << transport.status().ToString();
  TcpConnection* raw_transport = transport->get();
  Result<std::unique_ptr<TcpConnection>> accepted = Status::Internal("not run");
  std::thread handshake = env_->StartThread([&] { accepted = server->Accept(std::move(transport).value()); });
  env_->SleepForMicros(50'000);  // most likely waiting for the ClientHello by now; correct either way
  // The client never speaks, so Accept cannot have returned: the transport is alive.
  raw_transport->Shutdown();
  handshake.join();
  ASSERT_FALSE(accepted.ok());
  EXPECT_EQ(accepted.status().code(), StatusCode::kUnavailable) << accepted.status().ToString();
}

TEST_F(TlsTest, ClientGivesUpOnAServerThatClosesAtOnce) {
  std::unique_ptr<TlsClientContext> client = Client(ClientOptions());
  std::unique_ptr<TcpListener> listener = Listen();
  ASSERT_TRUE(client != nullptr && listener != nullptr);
  Result<std::unique_ptr<TcpConnection>> transport =
      env_->ConnectTcp("127.0.0.1", listener->port(), kTimeoutMs);
  ASSERT_TRUE(transport.ok()) << transport.status().ToString();
  Result<std::unique_ptr<TcpConnection>> accepted = AcceptPlain(*listener);
  ASSERT_TRUE(accepted.ok()) << accepted.status().ToString();
  accepted.value().reset();  // the server closes without a word
  Result<std::unique_ptr<TcpConnection>> connected = client->Connect(std::move(transport).value());
  ASSERT_FALSE(connected.ok());
  EXPECT_EQ(connected.status().code(), StatusCode::kUnavailable) << connected.status().ToString();
}

// ---- reading, closing, shutting down ----------------------------------------------

TEST_F(TlsTest, ReadTimesOutAndTheConnectionStaysUsable) {
  Pair pair = Connected();
  ASSERT_NE(pair.server, nullptr);
  char buffer[16];
  Result<size_t> nothing = pair.server->Read(buffer, sizeof(buffer), 50);
  ASSERT_FALSE(nothing.ok());
  EXPECT_EQ(nothing.status().code(), StatusCode::kTimedOut) << nothing.status().ToString();
  Result<size_t> immediately = pair.server->Read(buffer, sizeof(buffer), 0);
  ASSERT_FALSE(immediately.ok());
  EXPECT_EQ(immediately.status().code(), StatusCode::kTimedOut);
  ExpectEcho(*pair.client, *pair.server, "late but fine");
  ExpectEcho(*pair.server, *pair.client, "still talking");
}

TEST_F(TlsTest, CloseNotifyEndsTheStreamAfterTheLastData) {
  Pair pair = Connected();
  ASSERT_NE(pair.server, nullptr);
  ASSERT_TRUE(pair.client->Write("last words", kTimeoutMs).ok());
  pair.client.reset();  // sends close_notify, then closes
  Result<std::string> got = ReadExactly(*pair.server, 10);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, "last words");
  // Every read after the end reports it again.
  for (int i = 0; i < 2; ++i) ASSERT_NO_FATAL_FAILURE(ExpectEndOfStream(*pair.server));
}

TEST_F(TlsTest, TcpCloseWithoutCloseNotifyAlsoEndsTheStream) {
  Pair pair = Connected();
  ASSERT_NE(pair.server, nullptr);
  // A shut-down connection sends no close_notify: the server sees only FIN.
  pair.client->Shutdown();
  pair.client.reset();
  ExpectEndOfStream(*pair.server);
}

TEST_F(TlsTest, ShutdownFromAnotherThreadWakesABlockedRead) {
  Pair pair = Connected();
  ASSERT_NE(pair.server, nullptr);
  Result<size_t> read = Status::Internal("not run");
  std::thread reader = env_->StartThread([&] {
    char buffer[16];
    read = pair.server->Read(buffer, sizeof(buffer), -1);  // no limit: only Shutdown ends it
  });
  env_->SleepForMicros(50'000);  // most likely blocked by now; correct either way
  pair.server->Shutdown();
  reader.join();
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kUnavailable) << read.status().ToString();
  Status write = pair.server->Write("too late", kTimeoutMs);
  EXPECT_EQ(write.code(), StatusCode::kUnavailable) << write.ToString();
  pair.server->Shutdown();  // idempotent
}

// ---- configuration errors -------------------------------------------------------

TEST_F(TlsTest, MissingCertificateFileIsNotFound) {
  TlsServerOptions options = ServerOptions();
  options.certificate_path = dir_.PathOf("absent.pem");
  Result<std::unique_ptr<TlsServerContext>> server = TlsServerContext::Create(env_, options);
  ASSERT_NO_FATAL_FAILURE(ExpectCreateFailed(server, StatusCode::kNotFound, "absent.pem"));
}

TEST_F(TlsTest, GarbageCertificateIsNamedInTheError) {
  const std::string garbage = dir_.PathOf("garbage.pem");
  WriteFile(garbage, "-----BEGIN CERTIFICATE-----\nnot base64 at all!\n-----END CERTIFICATE-----\n");
  TlsServerOptions options = ServerOptions();
  options.certificate_path = garbage;
  Result<std::unique_ptr<TlsServerContext>> server = TlsServerContext::Create(env_, options);
  ASSERT_NO_FATAL_FAILURE(ExpectCreateFailed(server, StatusCode::kInvalidArgument, garbage));

  TlsClientOptions client_options = ClientOptions();
  client_options.ca_path = garbage;
  Result<std::unique_ptr<TlsClientContext>> client = TlsClientContext::Create(env_, client_options);
  ASSERT_NO_FATAL_FAILURE(ExpectCreateFailed(client, StatusCode::kInvalidArgument, garbage));
}

TEST_F(TlsTest, GarbageKeyIsNamedInTheError) {
  const std::string garbage = dir_.PathOf("garbage.key");
  WriteFile(garbage, "this is no key\n");
  TlsServerOptions options = ServerOptions();
  options.private_key_path = garbage;
  Result<std::unique_ptr<TlsServerContext>> server = TlsServerContext::Create(env_, options);
  ASSERT_NO_FATAL_FAILURE(ExpectCreateFailed(server, StatusCode::kInvalidArgument, garbage));
}

TEST_F(TlsTest, KeyOfAnotherCertificateIsRejected) {
  TlsServerOptions options = ServerOptions();
  options.private_key_path = pki().client_key_path;
  Result<std::unique_ptr<TlsServerContext>> server = TlsServerContext::Create(env_, options);
  ASSERT_NO_FATAL_FAILURE(ExpectCreateFailed(server, StatusCode::kInvalidArgument, "does not belong"));

  TlsClientOptions client_options = ClientOptions();
  client_options.certificate_path = pki().client_certificate_path;
  client_options.private_key_path = pki().server_key_path;
  Result<std::unique_ptr<TlsClientContext>> client = TlsClientContext::Create(env_, client_options);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), StatusCode::kInvalidArgument) << client.status().ToString();
}

TEST_F(TlsTest, IncompleteOptionsAreRejected) {
  TlsServerOptions server_options = ServerOptions();
  server_options.private_key_path.clear();
  EXPECT_EQ(TlsServerContext::Create(env_, server_options).status().code(), StatusCode::kInvalidArgument);

  TlsClientOptions no_ca = ClientOptions();
  no_ca.ca_path.clear();
  EXPECT_EQ(TlsClientContext::Create(env_, no_ca).status().code(), StatusCode::kInvalidArgument);

  TlsClientOptions no_name = ClientOptions("");
  EXPECT_EQ(TlsClientContext::Create(env_, no_name).status().code(), StatusCode::kInvalidArgument);

  TlsClientOptions certificate_without_key = ClientOptions();
  certificate_without_key.certificate_path = pki().client_certificate_path;
  EXPECT_EQ(TlsClientContext::Create(env_, certificate_without_key).status().code(),
            StatusCode::kInvalidArgument);

  TlsClientOptions missing_ca = ClientOptions();
  missing_ca.ca_path = dir_.PathOf("absent-ca.pem");
  EXPECT_EQ(TlsClientContext::Create(env_, missing_ca).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace cairn
