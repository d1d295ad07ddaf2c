// `cairn-bench core`: cairn's storage engine against the naive SQLite table of
// seed 000 on the same generated data in the same run (BENCHMARK.md).
#pragma once

namespace cairn::bench {

// Entry point of the subcommand; argv[0] is "core". Returns the process exit
// status: 0 on success, 1 on a failed run or self-check, 2 on bad usage.
int RunCoreBenchmark(int argc, char** argv);

}  // namespace cairn::bench
