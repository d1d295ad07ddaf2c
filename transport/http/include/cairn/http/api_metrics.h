// ApiMetrics: what cairnd counts about its API, rendered for Prometheus
// (text exposition format 0.0.4) at GET /metrics together with the storage
// engine's own figures.
//
//   cairn_http_requests_total{route,code}           counter
//   cairn_http_request_duration_seconds{route}      histogram
//   cairn_write_records_total{outcome}              counter: stored, duplicate, rejected, invalid
//   cairn_write_lines_rejected_total                counter: line-protocol lines refused
//   cairn_auth_failures_total                       counter
//   cairn_auth_rate_limited_total                   counter: requests answered 429 (AuthThrottle)
//   cairn_queries_total{kind}                       counter: latest, range, aggregate, ...
//   cairn_http_connections_* , cairn_engine_*, cairn_disk_free_bytes   gauges/counters
//
// Routes are the API's patterns ("/v1/tables/{table}/devices"), never raw
// paths, so the number of series stays bounded whatever clients send.
//
// Thread-safety: every method may be called concurrently.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "cairn/core/engine.h"
#include "cairn/http/http_server.h"
#include "cairn/platform/mutex.h"

namespace cairn {

class ApiMetrics {
 public:
  // Upper bounds of the latency histogram's buckets, in seconds.
  static constexpr std::array<double, 12> kLatencyBounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                            0.05,   0.1,   0.25,   0.5,   1.0,  2.5};

  void RecordRequest(std::string_view route, int status, int64_t duration_nanos);
  void RecordWrite(const WriteResult& result, uint64_t lines_rejected);
  void RecordQuery(std::string_view kind);
  void RecordAuthFailure() { auth_failures_.fetch_add(1, std::memory_order_relaxed); }
  void RecordRateLimited() { rate_limited_.fetch_add(1, std::memory_order_relaxed); }

  // Everything above plus the engine's statistics, the server's connection
  // counts, the data directory's free bytes and cairnd's resident memory
  // (process_resident_memory_bytes, left out when unknown).
  std::string RenderPrometheus(const EngineStats& engine, const HttpServerStats& server,
                               uint64_t disk_free_bytes, std::optional<uint64_t> resident_bytes) const;

 private:
  struct Latency {
    std::array<uint64_t, kLatencyBounds.size()> buckets = {};  // not cumulative
    uint64_t count = 0;
    double sum_seconds = 0;
  };

  // The families of RenderPrometheus, each appended to `out`: the three
  // kept under mutex_, then the write and authentication counters.
  void RenderRequestsLocked(std::string* out) const REQUIRES(mutex_);
  void RenderLatenciesLocked(std::string* out) const REQUIRES(mutex_);
  void RenderQueriesLocked(std::string* out) const REQUIRES(mutex_);
  void RenderWritesAndAuth(std::string* out) const;

  mutable Mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_ GUARDED_BY(mutex_);
  std::map<std::string, Latency, std::less<>> latencies_ GUARDED_BY(mutex_);
  std::map<std::string, uint64_t, std::less<>> queries_ GUARDED_BY(mutex_);
  std::atomic<uint64_t> records_stored_{0}, records_duplicate_{0}, records_rejected_{0}, records_invalid_{0};
  std::atomic<uint64_t> records_conflict_{0};
  std::atomic<uint64_t> lines_rejected_{0};
  std::atomic<uint64_t> auth_failures_{0}, rate_limited_{0};
};

}  // namespace cairn
