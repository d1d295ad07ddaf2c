#include "cairn/http/api_metrics.h"

#include <cstdio>

#include "metrics_text.h"

namespace cairn {

std::string PrometheusLabelValue(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

namespace {

std::string Number(double value) {
  char text[40];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

void Header(std::string* out, std::string_view name, std::string_view type, std::string_view help) {
  *out += "# HELP ";
  *out += name;
  *out += ' ';
  *out += help;
  *out += "\n# TYPE ";
  *out += name;
  *out += ' ';
  *out += type;
  *out += '\n';
}

void Sample(std::string* out, std::string_view name, uint64_t value) {
  *out += name;
  *out += ' ';
  *out += std::to_string(value);
  *out += '\n';
}

void Single(std::string* out, std::string_view name, std::string_view type, std::string_view help,
            uint64_t value) {
  Header(out, name, type, help);
  Sample(out, name, value);
}

}  // namespace

void ApiMetrics::RecordRequest(std::string_view route, int status, int64_t duration_nanos) {
  const double seconds = static_cast<double>(duration_nanos) / 1e9;
  MutexLock lock(&mutex_);
  ++requests_[{std::string(route), status}];
  auto it = latencies_.find(route);
  if (it == latencies_.end()) it = latencies_.emplace(std::string(route), Latency()).first;
  Latency& latency = it->second;
  for (size_t i = 0; i < kLatencyBounds.size(); ++i) {
    if (seconds <= kLatencyBounds[i]) {
      ++latency.buckets[i];
      break;
    }
  }
  ++latency.count;
  latency.sum_seconds += seconds;
}

void ApiMetrics::RecordWrite(const WriteResult& result, uint64_t lines_rejected) {
  records_stored_.fetch_add(result.stored, std::memory_order_relaxed);
  records_duplicate_.fetch_add(result.duplicates, std::memory_order_relaxed);
  records_rejected_.fetch_add(result.rejected, std::memory_order_relaxed);
  records_invalid_.fetch_add(result.invalid, std::memory_order_relaxed);
  records_conflict_.fetch_add(result.conflicts, std::memory_order_relaxed);
  lines_rejected_.fetch_add(lines_rejected, std::memory_order_relaxed);
}

void ApiMetrics::RecordQuery(std::string_view kind) {
  MutexLock lock(&mutex_);
  auto it = queries_.find(kind);
  if (it == queries_.end()) it = queries_.emplace(std::string(kind), 0).first;
  ++it->second;
}

namespace {

// One counter or gauge taken from a statistics struct.
template <typename Stats>
struct MetricDescriptor {
  std::string_view name;
  std::string_view type;
  std::string_view help;
  uint64_t Stats::*value;
};

// The server's connection and request counts, in the order /metrics lists them.
constexpr MetricDescriptor<HttpServerStats> kServerMetrics[] = {
    {"cairn_http_connections_accepted_total", "counter", "Connections accepted.",
     &HttpServerStats::connections_accepted},
    {"cairn_http_connections_refused_total", "counter", "Connections refused over the limit.",
     &HttpServerStats::connections_refused},
    {"cairn_http_connections_evicted_total", "counter",
     "Connections waiting for a request closed to make room for new ones.",
     &HttpServerStats::connections_evicted},
    {"cairn_http_connections_failed_total", "counter", "Connections whose TLS handshake failed.",
     &HttpServerStats::connections_failed},
    {"cairn_http_requests_timed_out_total", "counter", "Requests that were too slow to arrive (408).",
     &HttpServerStats::requests_timed_out},
    {"cairn_http_requests_malformed_total", "counter", "Requests the parser refused.",
     &HttpServerStats::requests_malformed},
    {"cairn_http_requests_refused_at_head_total", "counter",
     "Requests refused once their head was in, before their body (authentication).",
     &HttpServerStats::requests_refused_at_head},
    {"cairn_http_requests_refused_stopping_total", "counter",
     "Requests answered 503 because cairnd was stopping.", &HttpServerStats::requests_refused_stopping},
    {"cairn_http_open_connections", "gauge", "Connections open now.", &HttpServerStats::open_connections},
    {"cairn_http_waiting_connections", "gauge",
     "Open connections waiting for a request (the ones a newcomer may displace).",
     &HttpServerStats::waiting_connections},
};

// The engine's statistics, in the order /metrics lists them.
constexpr MetricDescriptor<EngineStats> kEngineMetrics[] = {
    {"cairn_engine_records_written_total", "counter", "Records stored by the engine since it opened.",
     &EngineStats::records_written},
    {"cairn_engine_last_lsn", "gauge", "The highest log sequence number assigned.", &EngineStats::last_lsn},
    {"cairn_engine_checkpoint_lsn", "gauge", "Every record below this LSN is in a period file.",
     &EngineStats::checkpoint_lsn},
    {"cairn_engine_head_records", "gauge", "Records in memory not yet sealed into chunks.",
     &EngineStats::head_records},
    {"cairn_engine_head_bytes", "gauge", "Memory held by unsealed records.", &EngineStats::head_bytes},
    {"cairn_engine_seal_copies_peak_bytes", "gauge",
     "The most bytes of head copies one seal batch has held at once since the engine opened.",
     &EngineStats::seal_copies_peak_bytes},
    {"cairn_engine_head_budget_bytes", "gauge",
     "What the heads may hold before the largest are sealed early (half the memory budget when one is set).",
     &EngineStats::head_budget_bytes},
    {"cairn_engine_memory_budget_bytes", "gauge", "The engine's memory budget; 0 when none is set.",
     &EngineStats::memory_budget_bytes},
    {"cairn_engine_page_cache_budget_bytes", "gauge",
     "What the SQLite page caches of the open period files may hold together.",
     &EngineStats::page_cache_budget_bytes},
    {"cairn_engine_sqlite_memory_bytes", "gauge", "Memory SQLite holds: page caches, schemas, statements.",
     &EngineStats::sqlite_memory_bytes},
    {"cairn_engine_chunks_sealed_total", "counter", "Chunks sealed since the engine opened.",
     &EngineStats::chunks_sealed},
    {"cairn_engine_chunks_decoded_total", "counter",
     "Sealed chunks decoded to answer queries since the engine opened.", &EngineStats::chunks_decoded},
    {"cairn_engine_period_file_opens_total", "counter",
     "Period files opened since the engine opened (misses of the open-file cache).",
     &EngineStats::period_file_opens},
    {"cairn_engine_log_bytes", "gauge", "Write-ahead log bytes on disk.", &EngineStats::log_bytes},
    {"cairn_engine_period_file_bytes", "gauge", "Period file bytes on disk.",
     &EngineStats::period_file_bytes},
    {"cairn_engine_series", "gauge", "Series known to the engine.", &EngineStats::series},
    {"cairn_engine_series_bytes", "gauge", "Memory held by the series themselves, beside their heads.",
     &EngineStats::series_bytes},
    {"cairn_engine_records_over_series_limit_total", "counter",
     "Records refused because they would have started a series beyond their table's max_series.",
     &EngineStats::records_over_series_limit},
    {"cairn_engine_records_conflict_total", "counter",
     "Records refused since the engine opened because their point is stored with the same version and "
     "other values (on_conflict reject).",
     &EngineStats::records_conflict},
    {"cairn_engine_records_overwritten_total", "counter",
     "Records merged since the engine opened into a stored point of the same version (on_conflict "
     "overwrite).",
     &EngineStats::records_overwritten},
};

template <typename Stats, size_t N>
void RenderDescribed(std::string* out, const MetricDescriptor<Stats> (&metrics)[N], const Stats& stats) {
  for (const MetricDescriptor<Stats>& metric : metrics) {
    Single(out, metric.name, metric.type, metric.help, stats.*metric.value);
  }
}

}  // namespace

std::string ApiMetrics::RenderPrometheus(const EngineStats& engine, const HttpServerStats& server,
                                         uint64_t disk_free_bytes, std::optional<uint64_t> resident_bytes) const {
  std::string out;
  {
    MutexLock lock(&mutex_);
    RenderRequestsLocked(&out);
    RenderLatenciesLocked(&out);
    RenderQueriesLocked(&out);
  }
  RenderWritesAndAuth(&out);
  RenderDescribed(&out, kServerMetrics, server);
  RenderDescribed(&out, kEngineMetrics, engine);
  Single(&out, "cairn_disk_free_bytes", "gauge", "Free bytes on the data directory's filesystem.",
         disk_free_bytes);
  // The name Prometheus' own client libraries give it, so dashboards that
  // watch any process's memory watch cairnd's too.
  if (resident_bytes) {
    Single(&out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", *resident_bytes);
  }
  return out;
}

void ApiMetrics::RenderRequestsLocked(std::string* out) const {
  Header(out, "cairn_http_requests_total", "counter", "HTTP requests answered, by route and status code.");
  for (const auto& [key, count] : requests_) {
    *out += "cairn_http_requests_total{route=\"" + PrometheusLabelValue(key.first) + "\",code=\"" +
            std::to_string(key.second) + "\"} " + std::to_string(count) + "\n";
  }
}

void ApiMetrics::RenderLatenciesLocked(std::string* out) const {
  Header(out, "cairn_http_request_duration_seconds", "histogram",
         "Time from a complete request to its response, by route.");
  for (const auto& [route, latency] : latencies_) {
    const std::string label = "route=\"" + PrometheusLabelValue(route) + "\"";
    uint64_t cumulative = 0;
    for (size_t i = 0; i < kLatencyBounds.size(); ++i) {
      cumulative += latency.buckets[i];
      *out += "cairn_http_request_duration_seconds_bucket{" + label + ",le=\"" + Number(kLatencyBounds[i]) +
              "\"} " + std::to_string(cumulative) + "\n";
    }
    *out += "cairn_http_request_duration_seconds_bucket{" + label + ",le=\"+Inf\"} " +
            std::to_string(latency.count) + "\n";
    *out += "cairn_http_request_duration_seconds_sum{" + label + "} " + Number(latency.sum_seconds) + "\n";
    *out +=
        "cairn_http_request_duration_seconds_count{" + label + "} " + std::to_string(latency.count) + "\n";
  }
}

void ApiMetrics::RenderQueriesLocked(std::string* out) const {
  Header(out, "cairn_queries_total", "counter", "Queries answered, by kind.");
  for (const auto& [kind, count] : queries_) {
    *out +=
        "cairn_queries_total{kind=\"" + PrometheusLabelValue(kind) + "\"} " + std::to_string(count) + "\n";
  }
}

void ApiMetrics::RenderWritesAndAuth(std::string* out) const {
  Header(out, "cairn_write_records_total", "counter", "Records received by writes, by outcome.");
  const std::pair<std::string_view, const std::atomic<uint64_t>*> outcomes[] = {
      {"stored", &records_stored_},   {"duplicate", &records_duplicate_}, {"rejected", &records_rejected_},
      {"invalid", &records_invalid_}, {"conflict", &records_conflict_},
  };
  for (const auto& [outcome, count] : outcomes) {
    *out += "cairn_write_records_total{outcome=\"" + std::string(outcome) + "\"} " +
            std::to_string(count->load()) + "\n";
  }
  Single(out, "cairn_write_lines_rejected_total", "counter", "Line-protocol lines refused by writes.",
         lines_rejected_.load());
  Single(out, "cairn_auth_failures_total", "counter", "Requests with a missing or invalid token.",
         auth_failures_.load());
  Single(out, "cairn_auth_rate_limited_total", "counter",
         "Requests refused (429) because their credential or address failed authentication too often.",
         rate_limited_.load());
}

}  // namespace cairn
