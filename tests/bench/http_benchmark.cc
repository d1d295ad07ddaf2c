#include "http_benchmark.h"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench_baseline.h"
#include "bench_common.h"
#include "http_peers.h"
#include "http_test_client.h"
#include "http_workload.h"
#include "system_probe.h"

namespace cairn::bench {

namespace {

constexpr char kUsage[] =
    "usage: cairn-bench http [--json] [--self-check] [--quick] [--devices N] [--hours H] [--seed N]\n"
    "                        [--connections N] [--lines N] [--stores cairn,influxdb] [--dir PATH] [--keep]\n"
    "                        [--cairnd PATH] [--influxd PATH]\n"
    "                        [--baseline FILE] [--write-baseline FILE] [--repeat N]\n"
    "\n"
    "cairnd and InfluxDB 1.x (influxd, when installed) on loopback, fresh directories, equally\n"
    "durable (cairn durability full; influxd wal-fsync-delay 0s). Both get the same line-protocol\n"
    "bodies from the same client: N devices (default 1000) every 1, 5 or 10 s for H hours (1.5),\n"
    "with jitter, late and repeated lines; --connections (2) at once, --lines (5000) per request.\n"
    "Then, after each settled (cairnd stopped, which seals; influxd stopped once its compaction\n"
    "left the files alone): bytes on disk, latest of a random device, one hour of a device that\n"
    "reports every second, that hour in 5-minute means, peak resident memory. --quick: 200\n"
    "devices, 0.5 h (for CI).\n"
    "\n"
    "--baseline FILE compares the ratios with FILE's and exits 1 when one is more than its\n"
    "tolerance (30 %) worse; --write-baseline FILE puts them in FILE; both run --repeat N times\n"
    "(default 3 with --baseline, 5 with --write-baseline, else 1) and take each ratio's median.\n";

// --quick: 200 devices for half an hour, 470 000 readings. Most of a run is
// starting the servers and waiting for influxd to settle, which a smaller
// data set does not shorten; this size makes each store's ingest last about
// a third of a second (50 devices for 6 minutes: two requests, whose rate
// moved by 30 % from run to run). The queries keep their full counts (1 000
// and 50): under a second more, and p50s of many samples.
constexpr uint32_t kQuickDevices = 200;
constexpr double kQuickHours = 0.5;

struct HttpOptions {
  CommonOptions common{.devices = 1000, .hours = 1.5};
  size_t connections = 2;
  size_t lines = 5000;
  bool quick = false;
  bool run_cairn = true, run_influx = true;
  std::string cairnd = CAIRN_CAIRND_PATH;
  std::string influxd = "/usr/bin/influxd";
  size_t latest_queries = 1000, range_queries = 50;
  BaselineOptions baseline;
};

constexpr std::string_view kMetrics[] = {"ingest_readings_per_s", "bytes_per_reading", "latest_ms_p50",
                                         "latest_ms_p99",         "range_1h_ms_p50",   "range_1h_ms_p99",
                                         "agg_1h_5m_ms_p50",      "peak_rss_mb"};

// The ratios --baseline checks (BENCHMARK.md, "Baseline"). Not the p99s,
// one or two slow answers each; not the aggregate p50, cairnd's quarter of a
// millisecond, which moved by up to 35 % between medians of three --quick
// runs on a shared 2-core machine: more than the tolerance, so it would fail
// runs where nothing changed.
// cairn answers latest in about 0.03 ms over loopback, InfluxDB in 0.22 to
// 0.35 ms from one run to the next on the same machine: that ratio moves by
// half with the peer alone, so it fails only past twice its baseline.
constexpr BaselineFigureSpec kBaselineFigures[] = {
    {"ingest_readings_per_s", Better::kHigher}, {"bytes_per_reading", Better::kLower},
    {"latest_ms_p50", Better::kLower, 2.0},     {"range_1h_ms_p50", Better::kLower},
    {"peak_rss_mb", Better::kLower},
};

std::string UrlEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// The rows an answer holds: cairn's "records" or "buckets", InfluxDB's
// values of its first series.
size_t AnswerRows(PeerKind kind, const std::string& body) {
  Result<JsonValue> json = JsonValue::Parse(body);
  if (!json.ok()) return 0;
  if (kind == PeerKind::kCairn) {
    for (const char* member : {"records", "buckets"}) {
      if (const JsonValue* rows = json->Find(member)) return rows->elements().size();
    }
    return 0;
  }
  const JsonValue* series = FindPath(*json, {"results"});
  if (series == nullptr || series->elements().empty()) return 0;
  const JsonValue* first = series->elements()[0].Find("series");
  if (first == nullptr || first->elements().empty()) return 0;
  const JsonValue* values = first->elements()[0].Find("values");
  return values == nullptr ? 0 : values->elements().size();
}

// What one store measured, and the answers the other must agree with.
struct StoreRun {
  JsonValue metrics = JsonValue::Object();
  size_t range_rows = 0, aggregate_rows = 0;
};

// Sends every body over `connections` keep-alive connections; returns
// the seconds from the first request to the last answer.
Result<double> Ingest(const HttpPeer& peer, const HttpWorkload& workload, size_t connections) {
  const std::string target = "/write?db=bench";
  std::atomic<size_t> next{0};
  std::vector<std::string> errors(connections);
  const auto started = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (size_t c = 0; c < connections; ++c) {
    threads.emplace_back([&, c] {
      Result<HttpTestClient> client = HttpTestClient::Connect("127.0.0.1", peer.port());
      if (!client.ok()) {
        errors[c] = client.status().ToString();
        return;
      }
      for (size_t i = next++; i < workload.bodies.size(); i = next++) {
        Result<HttpTestResponse> answer = client->Request("POST", target, peer.headers(), workload.bodies[i]);
        if (!answer.ok() || answer->status != 204) {
          errors[c] = answer.ok() ? std::to_string(answer->status) + " " + answer->body : answer.status().ToString();
          return;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  for (const std::string& error : errors) {
    if (!error.empty()) return Status::Internal("a write failed: " + error);
  }
  return seconds;
}

// Milliseconds of each request to `targets`, in order; `rows` gets the
// rows of the last answer to each.
Result<std::vector<int64_t>> Time(const HttpPeer& peer, const std::vector<std::string>& targets, size_t* rows) {
  CAIRN_ASSIGN_OR_RETURN(HttpTestClient client, HttpTestClient::Connect("127.0.0.1", peer.port()));
  std::vector<int64_t> nanos;
  for (const std::string& target : targets) {
    const auto started = std::chrono::steady_clock::now();
    CAIRN_ASSIGN_OR_RETURN(HttpTestResponse answer, client.Request("GET", target, peer.headers()));
    nanos.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started)
                        .count());
    if (answer.status != 200) return Status::Internal(target + " answered " + std::to_string(answer.status) + " " + answer.body);
    if (rows != nullptr) *rows += AnswerRows(peer.kind(), answer.body);
  }
  return nanos;
}

// The request targets of one store's queries.
struct QueryTargets {
  std::vector<std::string> latest, range, aggregate;
};

QueryTargets Targets(PeerKind kind, const HttpOptions& options, const HttpWorkload& workload, int64_t from, int64_t to) {
  QueryTargets t;
  DeterministicRandom random(options.common.seed + 7);
  const auto influx = [](const std::string& statement) { return "/query?db=bench&epoch=ns&q=" + UrlEncode(statement); };
  const std::string window = " AND time >= " + std::to_string(from) + " AND time < " + std::to_string(to);
  for (size_t i = 0; i < options.latest_queries; ++i) {
    const std::string& device = workload.all_devices[random.Uniform(workload.all_devices.size())];
    t.latest.push_back(kind == PeerKind::kCairn
                           ? "/v1/tables/bench/devices/" + device + "/latest"
                           : influx("SELECT * FROM env WHERE device='" + device + "' ORDER BY time DESC LIMIT 1"));
  }
  for (size_t i = 0; i < options.range_queries; ++i) {
    const std::string& device = workload.every_second_devices[i % workload.every_second_devices.size()];
    const std::string span = "&from=" + std::to_string(from) + "&to=" + std::to_string(to);
    t.range.push_back(kind == PeerKind::kCairn
                          ? "/v1/tables/bench/devices/" + device + "/readings?measure=env&limit=10000" + span
                          : influx("SELECT * FROM env WHERE device='" + device + "'" + window));
    t.aggregate.push_back(kind == PeerKind::kCairn
                              ? "/v1/tables/bench/devices/" + device +
                                    "/aggregate?measure=env&field=temperature&step=5m&fn=avg" + span
                              : influx("SELECT mean(temperature) FROM env WHERE device='" + device + "'" + window +
                                       " GROUP BY time(5m) fill(none)"));
  }
  return t;
}

// Waits until the files under `dir` stop changing size for 5 s in a row
// (at most 3 minutes): influxd compacts in the background.
void WaitForQuietFiles(const std::string& dir) {
  uint64_t last = 0;
  int quiet = 0;
  for (int i = 0; i < 180 && quiet < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    Result<uint64_t> bytes = DirectoryBytes(dir);
    const uint64_t now = bytes.ok() ? *bytes : 0;
    quiet = now == last ? quiet + 1 : 0;
    last = now;
  }
}

// Four decimals: cairnd answers a latest-reading request in about 15 µs on
// loopback, and whole microseconds would make its ratio jump by 7 %.
double Ms(int64_t nanos) { return Round(static_cast<double>(nanos) / 1e6, 4); }

Result<StoreRun> MeasureStore(PeerKind kind, const HttpOptions& options, const HttpWorkload& workload,
                              const std::string& dir, const DataPlan& plan) {
  const char* name = kind == PeerKind::kCairn ? "cairn" : "influxdb";
  Progress(plan, name, "start");
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<HttpPeer> peer,
                         HttpPeer::Start(kind, kind == PeerKind::kCairn ? options.cairnd : options.influxd, dir));
  Progress(plan, name, "ingest");
  CAIRN_ASSIGN_OR_RETURN(double seconds, Ingest(*peer, workload, options.connections));
  StoreRun run;
  run.metrics.Set("ingest_readings_per_s", JsonValue::Number(Round(static_cast<double>(workload.readings) / seconds, 0)));
  CAIRN_ASSIGN_OR_RETURN(double peak, peer->PeakResidentMib());
  run.metrics.Set("peak_rss_mb", JsonValue::Number(Round(peak, 1)));
  Progress(plan, name, "settle");
  if (kind == PeerKind::kInfluxdb) WaitForQuietFiles(dir);
  CAIRN_RETURN_IF_ERROR(peer->Stop());
  CAIRN_ASSIGN_OR_RETURN(uint64_t bytes, DirectoryBytes(dir));
  run.metrics.Set("bytes_per_reading", JsonValue::Number(Round(static_cast<double>(bytes) / workload.readings, 3)));
  CAIRN_RETURN_IF_ERROR(peer->Restart());
  Progress(plan, name, "queries");
  const int64_t end = plan.start + static_cast<int64_t>(plan.seconds) * kNanosPerSecond;
  const int64_t from = std::max(plan.start, end - 3600 * kNanosPerSecond);
  const QueryTargets targets = Targets(kind, options, workload, from, end);
  CAIRN_ASSIGN_OR_RETURN(std::vector<int64_t> latest, Time(*peer, targets.latest, nullptr));
  CAIRN_ASSIGN_OR_RETURN(std::vector<int64_t> range, Time(*peer, targets.range, &run.range_rows));
  CAIRN_ASSIGN_OR_RETURN(std::vector<int64_t> aggregate, Time(*peer, targets.aggregate, &run.aggregate_rows));
  run.metrics.Set("latest_ms_p50", JsonValue::Number(Ms(Percentile(latest, 0.5))));
  run.metrics.Set("latest_ms_p99", JsonValue::Number(Ms(Percentile(latest, 0.99))));
  run.metrics.Set("range_1h_ms_p50", JsonValue::Number(Ms(Percentile(range, 0.5))));
  run.metrics.Set("range_1h_ms_p99", JsonValue::Number(Ms(Percentile(range, 0.99))));
  run.metrics.Set("agg_1h_5m_ms_p50", JsonValue::Number(Ms(Percentile(aggregate, 0.5))));
  run.metrics.Set("range_rows", JsonValue::Unsigned(run.range_rows));
  CAIRN_RETURN_IF_ERROR(peer->Stop());
  Progress(plan, name, "done");
  return run;
}

std::string ParseOptions(int argc, char** argv, HttpOptions* options) {
  const std::string error = ParseCommonOptions(
      argc, argv, &options->common,
      [&](std::string_view flag, const TakeFlagValue& take) -> std::optional<std::string> {
        std::string_view value;
        if (flag == "--quick") {
          options->quick = true;
          return "";
        }
        if (std::optional<std::string> error = ParseBaselineFlag(flag, take, &options->baseline)) return error;
        const bool known = flag == "--connections" || flag == "--lines" || flag == "--stores" || flag == "--cairnd" ||
                           flag == "--influxd";
        if (!known) return std::nullopt;
        if (!take(&value)) return std::string(flag) + " needs a value";
        if (flag == "--connections") {
          return ParseInteger(value, &options->connections) && options->connections >= 1 && options->connections <= 64
                     ? "" : "--connections must be from 1 to 64";
        }
        if (flag == "--lines") {
          return ParseInteger(value, &options->lines) && options->lines >= 1 ? "" : "--lines must be positive";
        }
        if (flag == "--cairnd") options->cairnd = std::string(value);
        if (flag == "--influxd") options->influxd = std::string(value);
        if (flag == "--stores") {
          options->run_cairn = value.find("cairn") != std::string_view::npos;
          options->run_influx = value.find("influxdb") != std::string_view::npos;
          if (!options->run_cairn && !options->run_influx) return "--stores names cairn and/or influxdb";
        }
        return "";
      });
  if (!error.empty()) return error;
  if (options->quick) {
    options->common.devices = kQuickDevices;
    options->common.hours = kQuickHours;
  }
  ResolveRepeat(&options->baseline);
  return CheckHoursCoverASecond(options->common);
}

void PrintTable(const JsonValue& report) {
  const JsonValue& machine = *report.Find("machine");
  std::cout << "cairn-bench http: " << report.Find("devices")->text() << " devices x " << report.Find("hours")->text()
            << " h every 1, 5 or 10 s = " << report.Find("records")->text() << " records = "
            << report.Find("readings")->text() << " readings in " << report.Find("lines")->text() << " lines, "
            << report.Find("connections")->text() << " connections x " << report.Find("lines_per_request")->text()
            << " lines per request, seed " << report.Find("seed")->text() << "\n";
  std::cout << "machine: " << machine.Find("nproc")->text() << " CPUs, " << machine.Find("cpu_model")->text() << " ("
            << machine.Find("arch")->text() << ", Linux " << machine.Find("kernel")->text() << "), data on "
            << report.Find("data_filesystem")->text() << "\n\n";
  std::printf("%-24s %14s %14s %9s\n", "metric", "cairn", "influxdb", "ratio");
  for (std::string_view metric : kMetrics) {
    const int decimals = metric.find("_ms_") != std::string_view::npos || metric == "bytes_per_reading" ? 3 : 0;
    std::printf("%-24s %14s %14s %9s\n", std::string(metric).c_str(),
                FormatNumber(FindPath(report, {"cairn", metric}), decimals).c_str(),
                FormatNumber(FindPath(report, {"influxdb", metric}), decimals).c_str(),
                FormatRatio(FindPath(report, {"ratios", metric})).c_str());
  }
  std::cout << "\n" << (IsTrue(FindPath(report, {"checks", "results_match"}))
                            ? "results: both stores returned the same number of range rows and aggregate buckets\n"
                            : "results: the stores' answers DIFFER\n");
  PrintMedianRatios(report, std::cout);
}

std::vector<std::string> SelfCheck(const std::string& printed, const HttpOptions& options) {
  std::vector<std::string> problems;
  const std::optional<JsonValue> report = ParseReport(printed, "http", &problems);
  if (!report) return problems;
  for (const char* store : {"cairn", "influxdb"}) {
    if ((store == std::string_view("cairn") ? !options.run_cairn : !options.run_influx)) continue;
    const JsonValue* metrics = report->Find(store);
    if (metrics == nullptr || metrics->is_null()) continue;  // influxd not installed
    for (std::string_view metric : kMetrics) {
      const JsonValue* value = metrics->Find(metric);
      if (value == nullptr || !value->is_number() || !(value->number() > 0))
        problems.push_back(std::string(store) + "." + std::string(metric) + " is missing or not positive");
    }
  }
  if (!IsTrue(FindPath(*report, {"checks", "results_match"}))) problems.push_back("checks.results_match is not true");
  return problems;
}

// One run: each store started on a fresh directory, measured, stopped; then
// the report.
Result<JsonValue> RunOnce(const HttpOptions& options, const DataPlan& plan, const HttpWorkload& workload) {
  const bool have_influx = options.run_influx && std::filesystem::exists(options.influxd);
  CAIRN_ASSIGN_OR_RETURN(ScratchDirectory scratch, CreateScratchDirectory(options.common, "cairn-bench-http-"));
  JsonValue report = ReportHead("http", plan, options.common.hours, workload.readings);
  report.Set("records", JsonValue::Unsigned(workload.records));  // not 1 Hz: devices every 1, 5 or 10 s
  report.Set("lines", JsonValue::Unsigned(workload.lines));
  report.Set("connections", JsonValue::Unsigned(options.connections));
  report.Set("lines_per_request", JsonValue::Unsigned(options.lines));
  report.Set("durability", JsonValue::String("cairn full (fdatasync before the answer); influxd wal-fsync-delay 0s"));
  report.Set("machine", MachineJson());
  report.Set("data_filesystem", JsonValue::String(FilesystemName(scratch.path())));
  std::vector<std::string> problems;
  std::optional<StoreRun> runs[2];
  const PeerKind kinds[2] = {PeerKind::kCairn, PeerKind::kInfluxdb};
  const bool wanted[2] = {options.run_cairn, have_influx};
  for (int i = 0; i < 2; ++i) {
    if (!wanted[i]) continue;
    const std::string dir = scratch.path() + (i == 0 ? "/cairn" : "/influxdb");
    std::filesystem::create_directories(dir);
    Result<StoreRun> run = MeasureStore(kinds[i], options, workload, dir, plan);
    if (!run.ok()) return run.status().WithContext(i == 0 ? "cairn" : "influxdb");
    runs[i] = std::move(run).value();
  }
  report.Set("cairn", runs[0] ? runs[0]->metrics : JsonValue());
  report.Set("influxdb", runs[1] ? runs[1]->metrics : JsonValue());
  JsonValue ratios = JsonValue::Object();
  if (runs[0] && runs[1]) {
    for (std::string_view metric : kMetrics) {
      const double a = runs[0]->metrics.Find(metric)->number(), b = runs[1]->metrics.Find(metric)->number();
      if (b > 0) ratios.Set(metric, JsonValue::Number(RoundSignificant(a / b, 4)));
    }
    if (runs[0]->range_rows != runs[1]->range_rows) {
      problems.push_back("range rows: cairn " + std::to_string(runs[0]->range_rows) + ", influxdb " +
                         std::to_string(runs[1]->range_rows));
    }
    if (runs[0]->aggregate_rows != runs[1]->aggregate_rows) {
      problems.push_back("aggregate buckets: cairn " + std::to_string(runs[0]->aggregate_rows) + ", influxdb " +
                         std::to_string(runs[1]->aggregate_rows));
    }
  }
  report.Set("ratios", std::move(ratios));
  JsonValue checks = JsonValue::Object();
  SetResults(problems, &checks);
  report.Set("checks", std::move(checks));
  return report;
}

}  // namespace

int RunHttpBenchmark(int argc, char** argv) {
  if (WantsHelp(argc, argv)) {
    std::cout << kUsage;
    return 0;
  }
  HttpOptions options;
  if (const std::string error = ParseOptions(argc, argv, &options); !error.empty()) {
    std::cerr << "cairn-bench http: " << error << "\n\n" << kUsage;
    return 2;
  }
  DataPlan plan = PlanData(options.common);
  plan.progress = !options.common.json;
  HttpWorkloadOptions workload_options{.devices = options.common.devices, .seconds = plan.seconds,
                                       .seed = options.common.seed, .start = plan.start,
                                       .lines_per_request = options.lines};
  Progress(plan, "workload", "generate");
  const HttpWorkload workload = BuildHttpWorkload(workload_options);
  Result<JsonValue> report =
      RunRepeated(options.baseline.repeat, [&] { return RunOnce(options, plan, workload); });
  if (!report.ok()) {
    std::cerr << "cairn-bench http: " << report.status().ToString() << "\n";
    return 1;
  }
  const std::string printed = report->Serialize();
  if (options.common.json) {
    std::cout << printed << "\n";
  } else {
    PrintTable(*report);
  }
  if (options.common.self_check) {
    const std::vector<std::string> failures = SelfCheck(printed, options);
    for (const std::string& failure : failures) std::cerr << "self-check: " << failure << "\n";
    if (!failures.empty()) return 1;
  }
  if (!IsTrue(FindPath(*report, {"checks", "results_match"}))) return 1;
  return ApplyBaseline(options.baseline, *report, kBaselineFigures, std::cerr);
}

}  // namespace cairn::bench
