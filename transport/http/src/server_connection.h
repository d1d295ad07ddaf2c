// An HttpServer connection as the server and its request loop share it
// (http_server.cc, request_loop.cc).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "cairn/http/http_server.h"
#include "cairn/platform/mutex.h"

namespace cairn {

// Decides whether a connection may be displaced (only while it waits for a
// request) and how Stop() treats it.
enum class HttpServer::Phase : uint8_t {
  kHandshake,  // TLS handshake: no request yet
  kWaiting,    // waiting for the first byte of a request
  kReading,    // reading a request
  kHandling,   // the handler runs: never cut
  kWriting,    // writing a response
  kDone,
};

struct HttpServer::Connection {
  std::thread thread;
  std::string address;
  Mutex mutex ACQUIRED_AFTER(HttpServer::mutex_);
  // The TCP stream under any wrapper, shared by the connection's thread and
  // Stop() and displacement, which shut it down; released when the
  // connection ends.
  std::shared_ptr<TcpConnection> transport GUARDED_BY(mutex);
  Phase phase GUARDED_BY(mutex) = Phase::kHandshake;
  int64_t waiting_since_nanos GUARDED_BY(mutex) = 0;
  // Guarded by HttpServer::mutex_: displaced; its slot is free already.
  bool evicted = false;
  std::atomic<bool> finished{false};
};

}  // namespace cairn
