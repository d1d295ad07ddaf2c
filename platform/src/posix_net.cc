#include "posix_net.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cairn/platform/mutex.h"
#include "posix_error.h"

namespace cairn::platform_internal {
namespace {

int64_t MonotonicMillis() {
  struct timespec now = {};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return int64_t{now.tv_sec} * 1000 + now.tv_nsec / 1000000;
}

// Milliseconds left until `deadline` for poll(): -1 without a deadline.
int RemainingMillis(int64_t deadline) {
  if (deadline < 0) return -1;
  return static_cast<int>(std::clamp<int64_t>(deadline - MonotonicMillis(), 0, 1 << 30));
}

int64_t DeadlineAfter(int timeout_ms) { return timeout_ms < 0 ? -1 : MonotonicMillis() + timeout_ms; }

void CloseSocket(int fd) {
  // close() must not be retried on EINTR on Linux: the descriptor is gone.
  if (fd >= 0) ::close(fd);
}

Status SocketError(std::string_view operation, const std::string& subject, int error_number) {
  switch (error_number) {
    case ECONNRESET:
    case ECONNREFUSED:
    case ECONNABORTED:
    case EPIPE:
    case ENETUNREACH:
    case EHOSTUNREACH:
    case ENOTCONN:
      return Status::Unavailable(std::string(operation) + " " + subject + ": " + std::strerror(error_number));
    case EADDRINUSE:
      return Status::AlreadyExists(std::string(operation) + " " + subject + ": " +
                                   std::strerror(error_number));
    default:
      return PosixError(operation, subject, error_number);
  }
}

// A numeric address and port as a socket address.
struct SocketAddress {
  sockaddr_storage storage = {};
  socklen_t length = 0;
  int family = AF_UNSPEC;
};

Result<SocketAddress> ParseAddress(const std::string& address, uint16_t port) {
  SocketAddress result;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&result.storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&result.storage);
  if (::inet_pton(AF_INET, address.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    result.length = sizeof(sockaddr_in);
    result.family = AF_INET;
    return result;
  }
  if (::inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    result.length = sizeof(sockaddr_in6);
    result.family = AF_INET6;
    return result;
  }
  return Status::InvalidArgument("'" + address +
                                 "' is not a numeric IPv4 or IPv6 address (e.g. 0.0.0.0, 127.0.0.1, ::)");
}

std::string AddressText(const sockaddr_storage& storage) {
  char text[INET6_ADDRSTRLEN] = {};
  if (storage.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, text, sizeof(text));
  } else if (storage.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr;
    // An IPv4 client on a dual-stack socket: show it as IPv4.
    if (IN6_IS_ADDR_V4MAPPED(&v6)) {
      ::inet_ntop(AF_INET, &v6.s6_addr[12], text, sizeof(text));
    } else {
      ::inet_ntop(AF_INET6, &v6, text, sizeof(text));
    }
  }
  return text;
}

class PosixTcpConnection final : public TcpConnection {
 public:
  PosixTcpConnection(int fd, std::string peer) : fd_(fd), peer_(std::move(peer)) {}
  ~PosixTcpConnection() override {
    // Waits for a Shutdown() another thread is still inside: the thread that
    // owns a connection may destroy it as soon as a blocked call returns
    // because of that Shutdown (tls.h's Accept), and the descriptor must not
    // be closed, and perhaps reused, before ::shutdown has run on it.
    MutexLock lock(&shutdown_mutex_);
    CloseSocket(fd_);
  }

  PosixTcpConnection(const PosixTcpConnection&) = delete;
  PosixTcpConnection& operator=(const PosixTcpConnection&) = delete;

  Result<size_t> Read(char* dst, size_t n, int timeout_ms) override {
    if (n == 0) return size_t{0};
    const int64_t deadline = DeadlineAfter(timeout_ms);
    for (;;) {
      if (shut_down_.load(std::memory_order_acquire)) return ShutDownError();
      ssize_t got = ::recv(fd_, dst, n, 0);
      if (got >= 0) {
        if (got == 0 && shut_down_.load(std::memory_order_acquire)) return ShutDownError();
        return static_cast<size_t>(got);
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return SocketError("recv from", peer_, errno);
      CAIRN_RETURN_IF_ERROR(Wait(POLLIN, deadline, "recv from"));
    }
  }

  Status Write(std::string_view data, int timeout_ms) override {
    const int64_t deadline = DeadlineAfter(timeout_ms);
    while (!data.empty()) {
      if (shut_down_.load(std::memory_order_acquire)) return ShutDownError();
      ssize_t sent = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (sent >= 0) {
        data.remove_prefix(static_cast<size_t>(sent));
        continue;
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return SocketError("send to", peer_, errno);
      CAIRN_RETURN_IF_ERROR(Wait(POLLOUT, deadline, "send to"));
    }
    return Status::Ok();
  }

  void Shutdown() override {
    MutexLock lock(&shutdown_mutex_);
    if (!shut_down_.exchange(true, std::memory_order_acq_rel)) ::shutdown(fd_, SHUT_RDWR);
  }

  const std::string& peer_address() const override { return peer_; }

 private:
  Status ShutDownError() const { return Status::Unavailable("connection to " + peer_ + " was shut down"); }

  // Waits until the socket is ready for `events` or the deadline passes.
  Status Wait(short events, int64_t deadline, std::string_view operation) {
    for (;;) {
      struct pollfd request = {};
      request.fd = fd_;
      request.events = events;
      int ready = ::poll(&request, 1, RemainingMillis(deadline));
      if (ready > 0) return Status::Ok();  // errors and hang-ups show in the next call
      if (ready == 0) {
        return Status::TimedOut(std::string(operation) + " " + peer_ + ": no progress before the deadline");
      }
      if (errno != EINTR) return SocketError("poll", peer_, errno);
    }
  }

  const int fd_;
  const std::string peer_;
  std::atomic<bool> shut_down_{false};
  // Held by Shutdown() and the destructor (see there).
  Mutex shutdown_mutex_;
};

// Non-blocking and close-on-exec; small writes go out at once (an HTTP
// response is written in one piece, so Nagle's delay would only add latency).
Status PrepareStreamSocket(int fd, const std::string& subject) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) return PosixError("fcntl", subject, errno);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return Status::Ok();
}

class PosixTcpListener final : public TcpListener {
 public:
  PosixTcpListener(int fd, std::string subject, uint16_t port)
      : fd_(fd), subject_(std::move(subject)), port_(port) {}
  ~PosixTcpListener() override { CloseSocket(fd_); }

  PosixTcpListener(const PosixTcpListener&) = delete;
  PosixTcpListener& operator=(const PosixTcpListener&) = delete;

  Result<std::unique_ptr<TcpConnection>> Accept(int timeout_ms) override {
    const int64_t deadline = DeadlineAfter(timeout_ms);
    for (;;) {
      sockaddr_storage peer = {};
      socklen_t peer_length = sizeof(peer);
      int fd = ::accept4(fd_, reinterpret_cast<sockaddr*>(&peer), &peer_length, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd >= 0) {
        std::string peer_text = AddressText(peer);
        Status prepared = PrepareStreamSocket(fd, peer_text);
        if (!prepared.ok()) {
          CloseSocket(fd);
          return prepared;
        }
        return std::unique_ptr<TcpConnection>(std::make_unique<PosixTcpConnection>(fd, std::move(peer_text)));
      }
      switch (errno) {
        case EINTR:
        case ECONNABORTED:
        case EPROTO:
          continue;  // the client gave up before we accepted it
        case EAGAIN: {
          struct pollfd request = {};
          request.fd = fd_;
          request.events = POLLIN;
          int ready = ::poll(&request, 1, RemainingMillis(deadline));
          if (ready == 0) return std::unique_ptr<TcpConnection>();
          if (ready < 0 && errno != EINTR) return PosixError("poll", subject_, errno);
          continue;
        }
        default:
          // Out of descriptors or memory: the caller decides whether to retry.
          return PosixError("accept on", subject_, errno);
      }
    }
  }

  uint16_t port() const override { return port_; }

 private:
  const int fd_;
  const std::string subject_;
  const uint16_t port_;
};

}  // namespace

Result<std::unique_ptr<TcpListener>> PosixListenTcp(const std::string& address, uint16_t port) {
  CAIRN_ASSIGN_OR_RETURN(SocketAddress bind_address, ParseAddress(address, port));
  const std::string subject = "tcp " + address + " port " + std::to_string(port);
  int fd = ::socket(bind_address.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return PosixError("socket", subject, errno);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind_address.family == AF_INET6) {
    // "::" serves IPv4 too; "::1" is IPv6 only either way.
    int zero = 0;
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
  }
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&bind_address.storage), bind_address.length) != 0 ||
      ::listen(fd, 128) != 0) {
    Status error = SocketError("listen on", subject, errno);
    CloseSocket(fd);
    return error;
  }
  sockaddr_storage bound = {};
  socklen_t bound_length = sizeof(bound);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_length) != 0) {
    Status error = PosixError("getsockname", subject, errno);
    CloseSocket(fd);
    return error;
  }
  uint16_t bound_port = bound.ss_family == AF_INET
                            ? ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port)
                            : ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
  return std::unique_ptr<TcpListener>(std::make_unique<PosixTcpListener>(
      fd, "tcp " + address + " port " + std::to_string(bound_port), bound_port));
}

Result<std::unique_ptr<TcpConnection>> PosixConnectTcp(const std::string& address, uint16_t port,
                                                       int timeout_ms) {
  CAIRN_ASSIGN_OR_RETURN(SocketAddress peer, ParseAddress(address, port));
  const std::string subject = address + " port " + std::to_string(port);
  int fd = ::socket(peer.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return PosixError("socket", subject, errno);
  auto fail = [fd](Status status) {
    CloseSocket(fd);
    return status;
  };
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&peer.storage), peer.length) != 0) {
    if (errno != EINPROGRESS) return fail(SocketError("connect to", subject, errno));
    const int64_t deadline = DeadlineAfter(timeout_ms);
    for (;;) {
      struct pollfd request = {};
      request.fd = fd;
      request.events = POLLOUT;
      int ready = ::poll(&request, 1, RemainingMillis(deadline));
      if (ready == 0)
        return fail(Status::TimedOut("connect to " + subject + ": no answer before the deadline"));
      if (ready > 0) break;
      if (errno != EINTR) return fail(PosixError("poll", subject, errno));
    }
    int error_number = 0;
    socklen_t length = sizeof(error_number);
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error_number, &length);
    if (error_number != 0) return fail(SocketError("connect to", subject, error_number));
  }
  Status prepared = PrepareStreamSocket(fd, subject);
  if (!prepared.ok()) return fail(prepared);
  return std::unique_ptr<TcpConnection>(std::make_unique<PosixTcpConnection>(fd, address));
}

}  // namespace cairn::platform_internal
