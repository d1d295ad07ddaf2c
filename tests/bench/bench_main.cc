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
//   cairn-bench core [--json] [--self-check] [--devices N] [--hours H] [--batch N]
//                    [--seed N] [--dir PATH] [--keep] [--stores cairn,naive_sqlite]
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
//
// Exit status: 0 success, 1 failed run / stores disagree / self-check failed,
// 2 bad usage.
#include <iostream>
#include <string_view>

#include "core_benchmark.h"

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
