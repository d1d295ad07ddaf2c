// The stores `cairn-bench http` measures, each a real server on loopback:
// cairnd (durability full: a write is answered after fdatasync) and, when
// installed, InfluxDB 1.x's influxd (wal-fsync-delay 0s: the WAL is synced
// before every write is answered). Those two settings make the
// acknowledgements equally durable.
//
// Thread-safety: one thread drives a peer; port() and headers() may be read
// from any thread while it runs.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cairn/platform/status.h"

namespace cairn::bench {

enum class PeerKind { kCairn, kInfluxdb };

class HttpPeer {
 public:
  // Starts `binary` on the fresh directory `dir` and waits until it answers
  // /ping. cairnd gets an admin token made with `cairnd token create`
  // first; influxd a database "bench".
  static Result<std::unique_ptr<HttpPeer>> Start(PeerKind kind, const std::string& binary, const std::string& dir);
  ~HttpPeer();  // kills the server if it still runs
  HttpPeer(const HttpPeer&) = delete;
  HttpPeer& operator=(const HttpPeer&) = delete;

  PeerKind kind() const { return kind_; }
  uint16_t port() const { return port_; }
  // Authorization for cairnd; none for influxd (auth is off on loopback).
  const std::vector<std::pair<std::string, std::string>>& headers() const { return headers_; }
  // Where its files are: what "bytes on disk" sums.
  const std::string& dir() const { return dir_; }

  // SIGTERM, then waits for the exit (a graceful stop: cairnd seals its
  // heads, influxd closes its shards).
  Status Stop();
  // Starts it again on the same directory and port.
  Status Restart();
  // The server's peak resident memory so far (VmHWM), MiB.
  Result<double> PeakResidentMib() const;

 private:
  HttpPeer(PeerKind kind, std::string binary, std::string dir) : kind_(kind), binary_(std::move(binary)), dir_(std::move(dir)) {}
  Status Launch();
  Status WaitUntilAnswering();

  PeerKind kind_;
  std::string binary_, dir_;
  uint16_t port_ = 0;
  pid_t pid_ = -1;
  std::vector<std::string> argv_;
  std::vector<std::pair<std::string, std::string>> headers_;
};

}  // namespace cairn::bench
