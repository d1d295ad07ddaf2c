// `cairn-bench sync`: cairn's store-and-forward sync (SyncAgent, live and
// backfill lanes) through a real local mosquitto against the naive forwarder
// (one MQTT QoS 1 JSON message per record) on the same generated data in the
// same run (BENCHMARK.md, "## sync").
#pragma once

namespace cairn::bench {

// Entry point of the subcommand; argv[0] is "sync". Returns the process exit
// status: 0 on success, 1 on a failed run (the receiver did not get every
// distinct reading, a confirmation never came) or self-check, 2 on bad usage.
int RunSyncBenchmark(int argc, char** argv);

}  // namespace cairn::bench
