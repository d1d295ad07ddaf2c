#include "sync_benchmark.h"

#include <csignal>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "sync_bench_common.h"
#include "system_probe.h"

namespace cairn::bench {

namespace sync_bench {
namespace {

// ---- self-check --------------------------------------------------------------

// The keys every cairn run and the peer report; all positive but the
// downlink, which rounds to 0 when a few PUBACKs answer millions of readings.
constexpr std::string_view kRunMetrics[] = {"seconds",
                                            "readings_per_s",
                                            "messages",
                                            "messages_per_s",
                                            "records_per_message",
                                            "payload_bytes_per_reading",
                                            "mqtt_uplink_bytes_per_reading",
                                            "mqtt_downlink_bytes_per_reading"};

constexpr std::pair<std::string_view, std::string_view> kExpectedRuns[] = {
    {"backfill", "receipt"}, {"backfill", "broker"}, {"backfill", "receipt_json"},
    {"live", "receipt"},     {"live", "broker"},     {"live", "receipt_paced"},
};

std::vector<std::string> SelfCheck(const std::string& printed) {
  std::vector<std::string> problems;
  const std::optional<JsonValue> parsed = ParseReport(printed, "sync", &problems);
  if (!parsed) return problems;
  const JsonValue& report = *parsed;
  auto require_positive = [&](const JsonValue* node, const std::string& where, std::string_view key) {
    const JsonValue* value = node != nullptr ? node->Find(key) : nullptr;
    const bool may_be_zero = key == "mqtt_downlink_bytes_per_reading";
    if (value == nullptr || !value->is_number()) {
      problems.push_back(where + "." + std::string(key) + " is missing or not a number");
    } else if (!(value->number() > 0) && !(may_be_zero && value->number() == 0)) {
      problems.push_back(where + "." + std::string(key) + " = " + value->text() + " is not positive");
    }
  };
  for (std::string_view key : {"readings", "records", "devices", "hours"})
    require_positive(&report, "report", key);
  require_positive(report.Find("machine"), "machine", "nproc");
  const JsonValue* version = FindPath(report, {"broker", "version"});
  if (version == nullptr || !version->is_string() || version->text().empty()) {
    problems.push_back("broker.version is missing");
  }
  for (const auto& expected : kExpectedRuns) {
    const std::string where = "cairn." + std::string(expected.first) + "." + std::string(expected.second);
    const JsonValue* run = FindPath(report, {"cairn", expected.first, expected.second});
    if (run == nullptr || !run->is_object()) {
      problems.push_back(where + " is missing");
      continue;
    }
    for (std::string_view metric : kRunMetrics) require_positive(run, where, metric);
    if (!IsTrue(FindPath(*run, {"checks", "values_match"}))) {
      problems.push_back(where + ".checks.values_match is not true");
    }
    if (expected.first == std::string_view("live")) {
      require_positive(run, where, "write_readings_per_s");
      const JsonValue* delivery = run->Find("delivery_latency_ms_p50");
      if (delivery == nullptr || !delivery->is_number())
        problems.push_back(where + ".delivery_latency_ms_p50");
      if (expected.second == std::string_view("receipt")) {
        const JsonValue* confirm = run->Find("confirm_latency_ms_p99");
        if (confirm == nullptr || !confirm->is_number())
          problems.push_back(where + ".confirm_latency_ms_p99");
      }
    }
  }
  const JsonValue* peer = report.Find("peer");
  if (peer == nullptr || !peer->is_object()) {
    problems.push_back("peer is missing");
  } else {
    for (std::string_view metric : kRunMetrics) require_positive(peer, "peer", metric);
    require_positive(peer, "peer", "records_published");
  }
  for (std::string_view lane : {"backfill", "live"}) {
    for (std::string_view metric : kRatioMetrics) {
      require_positive(FindPath(report, {"ratios", lane}), "ratios." + std::string(lane), metric);
    }
  }
  const JsonValue* met = report.Find("targets_met");
  if (met == nullptr || !met->is_object() || met->members().size() != 3) {
    problems.push_back("targets_met is missing");
  } else {
    for (const auto& member : met->members()) {
      if (member.second.kind() != JsonValue::Kind::kBool) problems.push_back("targets_met." + member.first);
    }
  }
  if (!IsTrue(FindPath(report, {"checks", "results_match"}))) {
    problems.push_back("checks.results_match is not true");
  }
  return problems;
}

// ---- options ----------------------------------------------------------------

constexpr char kUsage[] =
    "usage: cairn-bench sync [--json] [--self-check] [--devices N] [--hours H] [--batch N]\n"
    "                        [--seed N] [--dir PATH] [--keep] [--peer-records N] [--live-rate R]\n"
    "\n"
    "  --devices N       devices sending one multi-measure record per second (default 200)\n"
    "  --hours H         hours of data per device, fractions allowed, at most 648 (default 1)\n"
    "  --batch N         records per engine write call (default 1000)\n"
    "  --seed N          seed of the generated data and of the gateway's key (default 1)\n"
    "  --dir PATH        where to create the scratch data directory (default $TMPDIR or /tmp)\n"
    "  --keep            keep the data directory instead of removing it at exit\n"
    "  --peer-records N  records the naive peer publishes, from the start of the data\n"
    "                    (default 100000; capped at the data's size)\n"
    "  --live-rate R     readings/s the writer of the paced live run keeps to (default\n"
    "                    300000); the other live runs write as fast as writes return\n"
    "  --json            print one JSON object instead of the table\n"
    "  --self-check      validate the printed JSON (keys, types, checks); exit 1 if not\n";

// Returns an error message, empty on success.
std::string ParseOptions(int argc, char** argv, SyncOptions* options) {
  auto own_flags = [options](std::string_view flag,
                             const TakeFlagValue& take_value) -> std::optional<std::string> {
    std::string_view value;
    if (flag == "--peer-records") {
      if (!take_value(&value) || !ParseInteger(value, &options->peer_records) || options->peer_records < 1) {
        return "--peer-records takes a positive integer";
      }
      return "";
    }
    if (flag == "--live-rate") {
      if (!take_value(&value) || !ParseFiniteDouble(value, &options->live_rate) || options->live_rate <= 0) {
        return "--live-rate takes a positive number of readings per second";
      }
      return "";
    }
    return std::nullopt;
  };
  if (std::string error = ParseCommonOptions(argc, argv, &options->common, own_flags); !error.empty()) {
    return error;
  }
  return CheckHoursCoverASecond(options->common);
}

std::string KeyFromSeed(uint64_t seed) {
  DeterministicRandom random(seed ^ kKeyStream);
  std::string key;
  while (key.size() < 32) {
    const uint64_t word = random.Next();
    for (int i = 0; i < 8; ++i) key.push_back(static_cast<char>((word >> (8 * i)) & 0xff));
  }
  return key;
}

struct RunAll {
  std::vector<std::pair<RunSpec, RunResult>> runs;
  std::optional<PeerResult> peer;
};

}  // namespace
}  // namespace sync_bench

namespace {

// Everything the benchmark measures: the cairn runs of every lane, mode
// and encoding, then the naive peer, through one broker and receiver.
Status MeasureAll(const sync_bench::SyncOptions& options, const sync_bench::Plan& plan, const std::string& scratch,
                  MosquittoBroker& broker, sync_bench::Receiver& receiver, sync_bench::RunAll& all,
                  sync_bench::DataSummary& data, sync_bench::DataSummary& peer_data) {
  using namespace sync_bench;
  Progress(plan, "broker", "start mosquitto");
  CAIRN_RETURN_IF_ERROR(broker.Start(MosquittoBrokerOptions()).WithContext("mosquitto"));
  CAIRN_RETURN_IF_ERROR(receiver.Start(broker.server_uri()).WithContext("receiver"));
  data = SummarizeData(plan, UINT64_MAX);
  peer_data = SummarizeData(plan, options.peer_records);

  const std::string source = scratch + "/stored";
  uint64_t source_last_lsn = 0;
  Progress(plan, "backfill", "write and seal the data once");
  CAIRN_RETURN_IF_ERROR(
      WriteBackfillSource(plan, source, &source_last_lsn).WithContext("writing the data"));

  const RunSpec specs[] = {
      {"receipt", SyncLane::kBackfill, SyncConfirmation::kReceipt, EnvelopeEncoding::kBinary},
      {"broker", SyncLane::kBackfill, SyncConfirmation::kBroker, EnvelopeEncoding::kBinary},
      {"receipt_json", SyncLane::kBackfill, SyncConfirmation::kReceipt, EnvelopeEncoding::kJson},
      {"receipt", SyncLane::kLive, SyncConfirmation::kReceipt, EnvelopeEncoding::kBinary},
      {"broker", SyncLane::kLive, SyncConfirmation::kBroker, EnvelopeEncoding::kBinary},
      {"receipt_paced", SyncLane::kLive, SyncConfirmation::kReceipt, EnvelopeEncoding::kBinary,
       plan.live_rate},
  };
  for (const RunSpec& spec : specs) {
    const std::string label = RunLabel(spec);
    const std::string directory =
        scratch + "/" + std::string(SyncLaneName(spec.lane)) + "-" + spec.name;
    Result<RunResult> result = spec.lane == SyncLane::kBackfill
                                   ? RunBackfill(plan, spec, source, source_last_lsn, directory,
                                                 broker.server_uri(), data, &receiver)
                                   : RunLive(plan, spec, directory, broker.server_uri(), data, &receiver);
    if (!result.ok()) return result.status().WithContext(label);
    all.runs.emplace_back(spec, std::move(*result));
    // Each run's data directory goes as soon as it is measured.
    std::error_code ignored;
    std::filesystem::remove_all(directory, ignored);
  }
  Result<PeerResult> peer = RunPeer(plan, broker.server_uri(), peer_data, &receiver);
  if (!peer.ok()) return peer.status().WithContext("peer");
  all.peer = std::move(*peer);
  return Status::Ok();
}

// The JSON report of what MeasureAll measured; what fails its checks is
// appended to `problems`.
JsonValue SyncReport(const sync_bench::SyncOptions& options, const sync_bench::Plan& plan, const std::string& scratch,
                     MosquittoBroker& broker, const sync_bench::RunAll& all, const sync_bench::DataSummary& data,
                     const sync_bench::DataSummary& peer_data, std::vector<std::string>& problems) {
  using namespace sync_bench;
  JsonValue report = ReportHead("sync", plan, options.common.hours, data.distinct_readings);
  report.Set("live_rate", JsonValue::Number(plan.live_rate));
  report.Set("machine", MachineJson());
  JsonValue broker_json = JsonValue::Object();
  broker_json.Set("version", JsonValue::String(MosquittoVersion(broker)));
  broker_json.Set("transport", JsonValue::String("tcp 127.0.0.1"));
  broker_json.Set("persistence", JsonValue::Bool(false));
  report.Set("broker", std::move(broker_json));
  report.Set("data_filesystem", JsonValue::String(FilesystemName(scratch)));
  report.Set(
      "wire_bytes",
      JsonValue::String("payload: envelope (or peer JSON) bytes; mqtt_uplink: MQTT 3.1.1 PUBLISH packets "
                        "gateway->broker (header, topic, packet id, payload) plus its PUBACKs of receipts; "
                        "mqtt_downlink: PUBACKs and receipt PUBLISH packets broker->gateway; TCP/IP "
                        "headers excluded"));

  JsonValue cairn = JsonValue::Object();
  for (std::string_view lane : {"backfill", "live"}) {
    JsonValue runs = JsonValue::Object();
    for (const auto& entry : all.runs) {
      if (SyncLaneName(entry.first.lane) != lane) continue;
      runs.Set(entry.first.name, RunJson(entry.second, data));
      const std::vector<std::string> found = CheckRun(RunLabel(entry.first), entry.second, data);
      problems.insert(problems.end(), found.begin(), found.end());
    }
    cairn.Set(lane, std::move(runs));
  }
  report.Set("cairn", std::move(cairn));
  report.Set("peer", PeerJson(*all.peer, peer_data));
  const std::vector<std::string> peer_problems = CheckPeer(*all.peer, peer_data);
  problems.insert(problems.end(), peer_problems.begin(), peer_problems.end());
  JsonValue ratios = JsonValue::Object();
  ratios.Set("backfill", Ratios(report, "backfill"));
  ratios.Set("live", Ratios(report, "live"));
  report.Set("ratios", std::move(ratios));
  report.Set("targets", TargetsJson());
  report.Set("targets_met", TargetsMet(report));
  JsonValue checks = JsonValue::Object();
  checks.Set("expected_distinct_readings", JsonValue::Unsigned(data.distinct_readings));
  checks.Set("duplicates_delivered", JsonValue::Unsigned(data.delivered - data.distinct_records));
  SetResults(problems, &checks);
  report.Set("checks", std::move(checks));

  return report;
}

}  // namespace

int RunSyncBenchmark(int argc, char** argv) {
  using namespace sync_bench;
  if (WantsHelp(argc, argv)) {
    std::cout << kUsage;
    return 0;
  }
  SyncOptions options;
  if (const std::string error = ParseOptions(argc, argv, &options); !error.empty()) {
    std::cerr << "cairn-bench sync: " << error << "\n\n" << kUsage;
    return 2;
  }

  const Plan plan{PlanData(options.common), options.live_rate, KeyFromSeed(options.common.seed)};
  Result<ScratchDirectory> scratch = CreateScratchDirectory(options.common, "cairn-bench-sync-");
  if (!scratch.ok()) {
    std::cerr << "cairn-bench sync: " << scratch.status().ToString() << "\n";
    return 1;
  }

  std::signal(SIGINT, OnInterruptSignal);
  std::signal(SIGTERM, OnInterruptSignal);

  MosquittoBroker broker;
  Receiver receiver;
  RunAll all;
  DataSummary data;
  DataSummary peer_data;
  const Status status = MeasureAll(options, plan, scratch->path(), broker, receiver, all, data, peer_data);
  receiver.Stop();
  if (!status.ok()) {
    std::cerr << "cairn-bench sync: " << status.ToString() << "\n";
    return 1;
  }

  std::vector<std::string> problems;
  const JsonValue report = SyncReport(options, plan, scratch->path(), broker, all, data, peer_data, problems);
  if (!PrintReport(options.common, report, scratch->path(), PrintTable, SelfCheck)) return 1;
  return problems.empty() ? 0 : 1;
}

}  // namespace cairn::bench
