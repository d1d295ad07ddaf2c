// A TCP connection to a loopback server that never sends a byte, opened from
// a chosen source address (all of 127.0.0.0/8 is loopback on Linux, so a
// test can play clients on different addresses): the silent or idle client
// of the connection-limit tests.
#pragma once

#include <cstdint>
#include <string>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace cairn {

class SilentTcpClient {
 public:
  SilentTcpClient(const std::string& source_address, uint16_t port, const std::string& server = "127.0.0.1") {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in local = {};
    local.sin_family = AF_INET;
    ::inet_pton(AF_INET, source_address.c_str(), &local.sin_addr);
    sockaddr_in remote = {};
    remote.sin_family = AF_INET;
    remote.sin_port = htons(port);
    ::inet_pton(AF_INET, server.c_str(), &remote.sin_addr);
    connected_ = fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof(local)) == 0 &&
                 ::connect(fd_, reinterpret_cast<sockaddr*>(&remote), sizeof(remote)) == 0;
  }
  ~SilentTcpClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  SilentTcpClient(const SilentTcpClient&) = delete;
  SilentTcpClient& operator=(const SilentTcpClient&) = delete;

  bool connected() const { return connected_; }

  // Whether the server closed the connection (end of stream or reset)
  // within `timeout_ms`; bytes the server sent first are read and dropped.
  bool ClosedByServer(int timeout_ms) {
    pollfd request = {fd_, POLLIN, 0};
    for (;;) {
      if (::poll(&request, 1, timeout_ms) <= 0) return false;
      char buffer[4096];
      if (::recv(fd_, buffer, sizeof(buffer), MSG_DONTWAIT) <= 0) return true;
    }
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

}  // namespace cairn
