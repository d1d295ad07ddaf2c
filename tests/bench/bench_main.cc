// cairn-bench: cairn's benchmarks. Speed and memory goals live here, never in
// timed tests (DESIGN §9). Each benchmark runs cairn and its peers on the same
// generated data in the same run and reports the ratios; methodology in
// tests/bench/BENCHMARK.md.
//
// Usage:
//   cairn-bench <benchmark> [options]
//   cairn-bench <benchmark> --help
//
// Benchmarks:
//   core   storage engine vs. the naive SQLite table of seed 000: ingest rate,
//          bytes on disk and bytes written per reading, latest-reading latency,
//          one-day range and hourly-aggregate latency, resident memory.
//
//   cairn-bench core [--json] [--self-check] [--quick] [--devices N] [--hours H] [--batch N]
//                    [--seed N] [--dir PATH] [--keep] [--stores cairn,naive_sqlite]
//                    [--baseline FILE] [--write-baseline FILE] [--repeat N]
//
//   Defaults: 200 devices x 4 hours at 1 Hz = 2.88 M records = 8.64 M
//   readings, batches of 1000 records (a gateway flushing every few seconds),
//   seed 1, data in a scratch directory under $TMPDIR (or /tmp) removed at
//   exit. That takes about 1.5 minutes on a 2-core x86 host, most of it in the
//   naive SQLite peer; on a Raspberry Pi use fewer --hours. For numbers that
//   mean something on a gateway, put --dir on its SD card or eMMC, not tmpfs.
//
//   Without --json it prints a table (metric, cairn, naive_sqlite, ratio, the
//   issue's target). With --json it prints one JSON object:
//     {"benchmark":"core","readings":...,"records":...,"devices":...,"hours":...,
//      "batch":...,"seed":...,"machine":{"nproc":...,"cpu_model":...,...},
//      "sqlite_version":...,"data_filesystem":...,"flash_counter":...,
//      "cairn":{<metrics>...},"naive_sqlite":{<metrics>...},
//      "ratios":{<metric>: cairn/naive_sqlite,...},"targets":{...},
//      "targets_met":{...},"checks":{"results_match":true,...}}
//   where <metrics> are ingest_readings_per_s, bytes_per_reading,
//   flash_bytes_written_per_reading, latest_ns_p50, latest_ns_p99,
//   range_1d_ms_p50, agg_1d_1h_ms_p50 and rss_mb.
//   --self-check re-parses the printed JSON and fails (exit 1) unless every key
//   is present with a sane value and both stores returned the same answers.
//   --quick is 200 devices x 0.25 h, a few seconds.
//
//   core and http take the regression check (BENCHMARK.md, "Baseline"):
//   --baseline FILE compares the run's ratios with FILE's (tests/bench/
//   baseline.json) and exits 1 when one is more than 30 % worse, one line per
//   figure on stderr; --write-baseline FILE rewrites the benchmark's part of
//   FILE from the run. Both run the benchmark --repeat N times (3 to check, 5
//   to write, unless given) and use each ratio's median, which the JSON adds
//   as "repeats":{"runs":N,"ratios":[...],"median_ratios":{...}}.
//
//   sync   store-and-forward sync (SyncAgent) through a local mosquitto vs.
//          the naive forwarder (one MQTT QoS 1 JSON message per record):
//          readings/s and messages/s synced, bytes per reading on the wire,
//          records per message, live write-to-receipt latency.
//
//   cairn-bench sync [--json] [--self-check] [--devices N] [--hours H] [--batch N]
//                    [--seed N] [--dir PATH] [--keep] [--peer-records N]
//                    [--live-rate R]
//
//   Defaults: 200 devices x 1 hour at 1 Hz = 720 000 records = 2.16 M
//   readings, stored and sealed once, then synced by six cairn runs through
//   mosquitto 2 (started on loopback, plain TCP, persistence off) to a
//   receiver in the same process that verifies, decodes and counts every
//   envelope and, in receipt mode, publishes the signed receipts: backfill
//   with receipts, with broker PUBACKs and with JSON envelopes; live (the
//   data written while the agent runs) as fast as writes return with
//   receipts and with PUBACKs, and paced at --live-rate (300 000 readings/s)
//   with receipts. Then the naive peer publishes the first 100 000 records
//   (--peer-records), one message each. About a minute on a 2-core x86 host.
//
//   With --json it prints one JSON object:
//     {"benchmark":"sync","readings":...,"records":...,"devices":...,
//      "hours":...,"batch":...,"seed":...,"live_rate":...,"machine":{...},
//      "broker":{"version":...,...},"data_filesystem":...,"wire_bytes":...,
//      "cairn":{"backfill":{"receipt":{<run>},"broker":{<run>},
//                           "receipt_json":{<run>}},
//               "live":{"receipt":{<run>},"broker":{<run>},
//                       "receipt_paced":{<run>}}},
//      "peer":{<run>,"records_published":...,"window":...},
//      "ratios":{"backfill":{...},"live":{...}},"targets":{...},
//      "targets_met":{...},"checks":{"results_match":true,...}}
//   where <run> holds seconds, readings_per_s, messages, messages_per_s,
//   records_per_message, payload_bytes_per_reading,
//   mqtt_uplink_bytes_per_reading, mqtt_downlink_bytes_per_reading, cpu
//   (seconds of this process, of the receiver, of the rest), ledger_lag_ms
//   and checks; live runs add write_readings_per_s and the latency percentiles
//   delivery_latency_ms_p50/p99 and (receipt) confirm_latency_ms_p50/p99.
//   The run fails (exit 1) unless the receiver decoded every distinct
//   reading written, with its values, and every ledger confirms everything.
//
// Exit status: 0 success, 1 failed run / stores disagree / self-check failed,
// 2 bad usage.
#include <iostream>
#include <string_view>

#include "core_benchmark.h"
#include "http_benchmark.h"
#include "sync_benchmark.h"

namespace {

struct Subcommand {
  std::string_view name;
  std::string_view summary;
  // argv[0] is the subcommand's name.
  int (*run)(int argc, char** argv);
};

constexpr Subcommand kSubcommands[] = {
    {"core", "storage engine vs. a naive SQLite table (ingest, size, flash writes, queries, memory)",
     cairn::bench::RunCoreBenchmark},
    {"http", "cairnd vs. InfluxDB 1.x over HTTP (ingest, size, latest, range, aggregate, memory)",
     cairn::bench::RunHttpBenchmark},
    {"sync",
     "store-and-forward sync through mosquitto vs. one MQTT message per record (rate, bytes, latency)",
     cairn::bench::RunSyncBenchmark},
};

void PrintUsage(std::ostream& out) {
  out << "usage: cairn-bench <benchmark> [options]   (cairn-bench <benchmark> --help)\n\nbenchmarks:\n";
  for (const Subcommand& subcommand : kSubcommands) {
    out << "  " << subcommand.name << std::string(8 - std::min<size_t>(7, subcommand.name.size()), ' ')
        << subcommand.summary << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    PrintUsage(std::cerr);
    return 2;
  }
  const std::string_view name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    PrintUsage(std::cout);
    return 0;
  }
  for (const Subcommand& subcommand : kSubcommands) {
    if (subcommand.name == name) return subcommand.run(argc - 1, argv + 1);
  }
  std::cerr << "cairn-bench: unknown benchmark \"" << name << "\"\n\n";
  PrintUsage(std::cerr);
  return 2;
}
