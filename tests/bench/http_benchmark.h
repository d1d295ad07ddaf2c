// cairn-bench http: cairnd against InfluxDB 1.x over HTTP, on the same
// line-protocol bodies sent by the same client (http_workload.h,
// http_peers.h): ingest rate, bytes on disk, latest, one hour of one device,
// an hour in 5-minute means, peak resident memory. Usage in bench_main.cc.
#pragma once

namespace cairn::bench {

int RunHttpBenchmark(int argc, char** argv);

}  // namespace cairn::bench
