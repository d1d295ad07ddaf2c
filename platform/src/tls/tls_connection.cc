#include "tls/tls_connection.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <mbedtls/net_sockets.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>

#include "tls/tls_errors.h"
#include "tls/tls_names.h"

namespace cairn::tls_internal {
namespace {

// How long destruction waits to hand close_notify to the transport. The
// alert is a few dozen bytes that normally fit in the socket buffer at once;
// the bound only matters for a peer that stopped reading.
constexpr int kCloseNotifyTimeoutMs = 200;

// Transport failures travel through Mbed TLS as this code; the Status itself
// waits in TlsConnection::transport_status_.
constexpr int kTransportFailed = MBEDTLS_ERR_NET_RECV_FAILED;

bool WantsMoreIo(int result) {
  return result == MBEDTLS_ERR_SSL_WANT_READ || result == MBEDTLS_ERR_SSL_WANT_WRITE;
}

// "unknown CA; expired" from Mbed TLS's multi-line verification report.
std::string VerifyFlagsText(uint32_t flags) {
  char report[512] = {};
  if (mbedtls_x509_crt_verify_info(report, sizeof(report), "", flags) < 0) return "verification failed";
  std::string text;
  std::string_view rest(report);
  while (!rest.empty()) {
    size_t line_end = rest.find('\n');
    std::string_view line = rest.substr(0, line_end);
    if (!line.empty()) {
      if (!text.empty()) text += "; ";
      text += line;
    }
    if (line_end == std::string_view::npos) break;
    rest.remove_prefix(line_end + 1);
  }
  return text.empty() ? "verification failed" : text;
}

class TlsConnection final : public TcpConnection {
 public:
  TlsConnection(std::shared_ptr<const TlsEndpoint> endpoint, std::unique_ptr<TcpConnection> transport)
      : endpoint_(std::move(endpoint)), transport_(std::move(transport)) {
    mbedtls_ssl_init(&ssl_);
  }

  ~TlsConnection() override {
    if (handshake_done_ && broken_.ok() && !shut_down_.load(std::memory_order_acquire)) {
      // Best effort: the peer learns that the data ended here and was not
      // cut off; a failure changes nothing for us.
      SetDeadline(kCloseNotifyTimeoutMs);
      transport_status_ = Status::Ok();
      (void)mbedtls_ssl_close_notify(&ssl_);
    }
    mbedtls_ssl_free(&ssl_);
  }

  TlsConnection(const TlsConnection&) = delete;
  TlsConnection& operator=(const TlsConnection&) = delete;

  Status Handshake() {
    int result = mbedtls_ssl_setup(&ssl_, endpoint_->config());
    if (result != 0) return Status::ResourceExhausted("TLS session setup: " + MbedTlsErrorText(result));
    if (!endpoint_->dns_server_name().empty()) {
      result = mbedtls_ssl_set_hostname(&ssl_, endpoint_->dns_server_name().c_str());
      if (result != 0) {
        return Status::InvalidArgument("TLS server name '" + endpoint_->dns_server_name() +
                                       "': " + MbedTlsErrorText(result));
      }
    }
    mbedtls_ssl_set_bio(&ssl_, this, &TlsConnection::SendToTransport, &TlsConnection::ReceiveFromTransport,
                        nullptr);
    SetDeadline(endpoint_->handshake_timeout_ms());
    for (;;) {
      transport_status_ = Status::Ok();
      result = mbedtls_ssl_handshake(&ssl_);
      if (result == 0) break;
      if (WantsMoreIo(result) && transport_status_.ok()) continue;
      return HandshakeError(result);
    }
    handshake_done_ = true;
    // With client certificates required, a certificate present here has
    // verified: the handshake fails otherwise.
    if (endpoint_->role() == TlsRole::kServer) {
      if (const mbedtls_x509_crt* certificate = mbedtls_ssl_get_peer_cert(&ssl_)) {
        peer_certificate_ = NamesOf(*certificate);
      }
    }
    return Status::Ok();
  }

  Result<size_t> Read(char* dst, size_t n, int timeout_ms) override {
    if (!broken_.ok()) return broken_;
    if (shut_down_.load(std::memory_order_acquire)) return ShutDownError();
    if (peer_closed_ || n == 0) return size_t{0};
    SetDeadline(timeout_ms);
    for (;;) {
      transport_status_ = Status::Ok();
      int result = mbedtls_ssl_read(&ssl_, reinterpret_cast<unsigned char*>(dst), n);
      if (result > 0) return static_cast<size_t>(result);
      if (result == 0 || result == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY || result == MBEDTLS_ERR_SSL_CONN_EOF) {
        // An orderly TCP close without close_notify reads as the end too:
        // the protocols carried here delimit their own messages, so a
        // truncated one shows there.
        peer_closed_ = true;
        return size_t{0};
      }
      if (WantsMoreIo(result)) {
        // A timeout leaves Mbed TLS's state intact (a partly received record
        // stays buffered), so the caller may read again.
        if (transport_status_.Is(StatusCode::kTimedOut)) return transport_status_.WithContext("TLS read");
        if (transport_status_.ok()) continue;
      }
      return Break(StreamError(result, "TLS read from "));
    }
  }

  Status Write(std::string_view data, int timeout_ms) override {
    if (!broken_.ok()) return broken_;
    if (shut_down_.load(std::memory_order_acquire)) return ShutDownError();
    SetDeadline(timeout_ms);
    while (!data.empty()) {
      transport_status_ = Status::Ok();
      int result = mbedtls_ssl_write(&ssl_, reinterpret_cast<const unsigned char*>(data.data()), data.size());
      if (result > 0) {
        data.remove_prefix(std::min(static_cast<size_t>(result), data.size()));
        continue;
      }
      if (WantsMoreIo(result) && transport_status_.ok()) continue;
      // The transport may have sent part of a record: the stream cannot be
      // resumed, whatever the reason (a timeout included).
      return Break(StreamError(result, "TLS write to "));
    }
    return Status::Ok();
  }

  void Shutdown() override {
    shut_down_.store(true, std::memory_order_release);
    transport_->Shutdown();
  }

  const std::string& peer_address() const override { return transport_->peer_address(); }

  const PeerCertificate* peer_certificate() const override {
    return peer_certificate_ ? &*peer_certificate_ : nullptr;
  }

 private:
  static int SendToTransport(void* self, const unsigned char* data, size_t length) {
    auto* connection = static_cast<TlsConnection*>(self);
    // Mbed TLS hands over at most one record (~16 KiB) at a time.
    const size_t chunk = std::min<size_t>(length, INT_MAX);
    Status status = connection->transport_->Write(
        std::string_view(reinterpret_cast<const char*>(data), chunk), connection->RemainingMillis());
    if (!status.ok()) {
      connection->transport_status_ = std::move(status);
      return kTransportFailed;
    }
    return static_cast<int>(chunk);
  }

  static int ReceiveFromTransport(void* self, unsigned char* buffer, size_t length) {
    auto* connection = static_cast<TlsConnection*>(self);
    const size_t chunk = std::min<size_t>(length, INT_MAX);
    Result<size_t> got =
        connection->transport_->Read(reinterpret_cast<char*>(buffer), chunk, connection->RemainingMillis());
    if (!got.ok()) {
      connection->transport_status_ = got.status();
      return got.status().Is(StatusCode::kTimedOut) ? MBEDTLS_ERR_SSL_WANT_READ : kTransportFailed;
    }
    return static_cast<int>(*got);  // 0: the peer closed its side
  }

  // Starts the time budget that the transport calls of one operation share.
  void SetDeadline(int timeout_ms) {
    deadline_nanos_ =
        timeout_ms < 0 ? -1 : endpoint_->env()->MonotonicNanos() + int64_t{timeout_ms} * 1'000'000;
  }

  // What is left of the budget, rounded up, as a transport timeout.
  int RemainingMillis() const {
    if (deadline_nanos_ < 0) return -1;
    const int64_t left = deadline_nanos_ - endpoint_->env()->MonotonicNanos();
    if (left <= 0) return 0;
    return static_cast<int>(std::min<int64_t>((left + 999'999) / 1'000'000, INT_MAX));
  }

  Status ShutDownError() const {
    return Status::Unavailable("TLS connection to " + transport_->peer_address() + " was shut down");
  }

  // Remembers a failure that leaves the stream unusable and returns it.
  Status Break(Status status) {
    broken_ = status;
    return status;
  }

  Status StreamError(int result, std::string_view operation) const {
    const std::string subject = std::string(operation) + transport_->peer_address();
    if (!transport_status_.ok()) return transport_status_.WithContext(subject);
    switch (result) {
      case MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE:
        return Status::Unavailable(subject + ": the peer ended the connection with a fatal alert");
      case MBEDTLS_ERR_SSL_ALLOC_FAILED:
        return Status::ResourceExhausted(subject + ": " + MbedTlsErrorText(result));
      default:
        return Status::InvalidArgument(subject + ": " + MbedTlsErrorText(result));
    }
  }

  Status HandshakeError(int result) const {
    const bool server = endpoint_->role() == TlsRole::kServer;
    const std::string subject = "TLS handshake with " + transport_->peer_address();
    if (!transport_status_.ok()) return transport_status_.WithContext(subject);
    switch (result) {
      case MBEDTLS_ERR_SSL_CONN_EOF:
      case MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY:
        return Status::Unavailable(subject + ": the peer closed the connection");
      case MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE:
        return Status::Unavailable(subject + ": the peer aborted the handshake with a fatal alert" +
                                   (server ? " (it may not trust this server's certificate)"
                                           : " (it may require a client certificate)"));
      case MBEDTLS_ERR_SSL_NO_CLIENT_CERTIFICATE:
        return Status::PermissionDenied(subject +
                                        ": the client sent no certificate; this server requires one");
      case MBEDTLS_ERR_X509_CERT_VERIFY_FAILED:
      case MBEDTLS_ERR_SSL_BAD_HS_CERTIFICATE: {
        const uint32_t flags = mbedtls_ssl_get_verify_result(&ssl_);
        std::string reason =
            flags != 0 && flags != UINT32_MAX ? VerifyFlagsText(flags) : MbedTlsErrorText(result);
        if (!server && flags != UINT32_MAX && (flags & MBEDTLS_X509_BADCERT_CN_MISMATCH) != 0) {
          reason += " (it is not issued for '" + endpoint_->server_name() + "')";
        }
        return Status::PermissionDenied(subject + ": " + (server ? "client" : "server") +
                                        " certificate rejected: " + reason);
      }
      case MBEDTLS_ERR_SSL_ALLOC_FAILED:
        return Status::ResourceExhausted(subject + ": " + MbedTlsErrorText(result));
      default:
        return Status::InvalidArgument(subject + ": " + MbedTlsErrorText(result));
    }
  }

  const std::shared_ptr<const TlsEndpoint> endpoint_;
  const std::unique_ptr<TcpConnection> transport_;
  mbedtls_ssl_context ssl_;

  // Monotonic time at which the current operation's budget ends; -1: none.
  int64_t deadline_nanos_ = -1;
  // The transport's failure seen by a callback during the current Mbed TLS
  // call; Mbed TLS itself only learns an error code.
  Status transport_status_;
  bool handshake_done_ = false;
  // Server side of mutual TLS: the names of the client's certificate.
  std::optional<PeerCertificate> peer_certificate_;
  bool peer_closed_ = false;
  // Set once the stream is unusable; every later Read and Write returns it.
  Status broken_;
  std::atomic<bool> shut_down_{false};
};

}  // namespace

Result<std::unique_ptr<TcpConnection>> EstablishTlsConnection(std::shared_ptr<const TlsEndpoint> endpoint,
                                                              std::unique_ptr<TcpConnection> transport) {
  if (transport == nullptr) return Status::InvalidArgument("TLS handshake: no transport connection");
  auto connection = std::make_unique<TlsConnection>(std::move(endpoint), std::move(transport));
  CAIRN_RETURN_IF_ERROR(connection->Handshake());
  return std::unique_ptr<TcpConnection>(std::move(connection));
}

}  // namespace cairn::tls_internal
