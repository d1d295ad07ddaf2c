// The regression check of cairn-bench: the ratios of a run (cairn ÷ its peer
// in the same run) against a committed baseline file of ratios, with a
// tolerance. Ratios rather than absolute times because the machines CI runs
// on are shared and noisy: both stores of one run see the same machine, so
// their ratio moves far less than either number (BENCHMARK.md, "Baseline").
//
// The file (tests/bench/baseline.json) holds, per benchmark, the run it was
// taken from and one entry per figure:
//   {"about":"...","tolerance":0.3,
//    "core":{"run":{"devices":200,"hours":0.25,"seed":1},
//            "ratios":{"ingest_readings_per_s":{"ratio":3.07,"better":"higher"},...}},
//    "http":{...}}
//
// Thread-safety: plain functions and values.
#pragma once

#include <cstddef>
#include <functional>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/platform/status.h"
#include "cairn/text/json_value.h"

#include "bench_common.h"

namespace cairn::bench {

// The tolerance a new baseline file gets: a figure fails when it is more
// than 30 % worse than its baseline ratio.
constexpr double kDefaultBaselineTolerance = 0.30;

// Which way a ratio improves: ingest rate up, sizes, latencies and memory down.
enum class Better { kHigher, kLower };

// A figure a benchmark puts in its baseline: the name of one of its `ratios`,
// and its own tolerance where the file's would be noise (a latency of tens of
// microseconds against a peer's that moves by half between runs), written
// beside its ratio.
struct BaselineFigureSpec {
  std::string_view name;
  Better better;
  std::optional<double> tolerance = std::nullopt;
};

// One figure of a baseline file; `tolerance`, when set, replaces the file's.
struct BaselineFigure {
  std::string name;
  double ratio = 0;
  Better better = Better::kHigher;
  std::optional<double> tolerance = std::nullopt;
};

// One benchmark's part of a baseline file.
struct Baseline {
  double tolerance = kDefaultBaselineTolerance;
  // The run the ratios come from: "devices", "hours", "seed" of its report.
  JsonValue run = JsonValue::Object();
  std::vector<BaselineFigure> figures;
};

enum class Verdict {
  kWithin,     // no more than the tolerance worse, and not beyond it better
  kImproved,   // better than the baseline by more than the tolerance
  kRegressed,  // worse than the baseline by more than the tolerance
  kMissing,    // the run has no number for this figure
};

// A figure of the run set against its baseline.
struct FigureComparison {
  std::string name;
  Better better = Better::kHigher;
  double baseline = 0;
  std::optional<double> measured;
  // The worst measured ratio still accepted: baseline × (1 - tolerance) when
  // higher is better, baseline × (1 + tolerance) when lower is.
  double bound = 0;
  Verdict verdict = Verdict::kWithin;
};

// Compares `measured_ratios` (the report's "ratios" object) with every figure
// of `baseline`. Figures of the run that the baseline does not name are not
// looked at.
std::vector<FigureComparison> CompareWithBaseline(const Baseline& baseline, const JsonValue& measured_ratios);

// True when no figure regressed or went missing.
bool BaselineHolds(const std::vector<FigureComparison>& comparisons);

// One line for a figure, e.g. "REGRESSED ingest_readings_per_s: baseline
// 3.07, measured 1.9, allowed >= 2.149 (higher is better, 38.1 % worse)".
std::string DescribeComparison(const FigureComparison& comparison);

// The part of `file` (a parsed baseline file) for `benchmark`. InvalidArgument
// when it is missing or malformed, naming what is wrong.
Result<Baseline> BaselineFromFile(const JsonValue& file, std::string_view benchmark);

// The baseline of a finished run: each of `figures` with the run's ratio (the
// median when it was repeated: RatiosToCheck), and
// the run's devices, hours and seed. InvalidArgument naming a figure that the
// run has no positive ratio for.
Result<Baseline> BaselineFromReport(const JsonValue& report, std::span<const BaselineFigureSpec> figures);

// `file` (a parsed baseline file, or null for a new one) with the part of
// `benchmark` replaced by `baseline`, as the text to write: one figure a line
// so that a change of the baseline reads as a small diff.
std::string BaselineFileText(const JsonValue& file, std::string_view benchmark, const Baseline& baseline);

// How a benchmark with ratios is measured for its baseline and checked
// against it: --repeat N, --baseline FILE, --write-baseline FILE.
struct BaselineOptions {
  // --repeat: whole runs, each figure their median. Without it 1, or more
  // with --baseline or --write-baseline (ResolveRepeat).
  size_t repeat = 1;
  bool repeat_given = false;
  std::string check_file{};  // --baseline: compare the run with this file
  std::string write_file{};  // --write-baseline: put the run's ratios in this file
};

// Runs a baseline is checked from when --repeat does not say: the median of
// three is what keeps the check quiet on a shared machine (BENCHMARK.md,
// "Baseline").
constexpr size_t kBaselineCheckRepeat = 3;

// Runs a baseline is written from when --repeat does not say: a written
// ratio is the centre every later check is measured from, so it gets the
// steadier median of five.
constexpr size_t kBaselineWriteRepeat = 5;

// Sets options->repeat, unless --repeat was given, to kBaselineWriteRepeat
// with --write-baseline, else to kBaselineCheckRepeat with --baseline.
void ResolveRepeat(BaselineOptions* options);

// An OwnFlagParser step for the three flags: std::nullopt when `flag` is
// none of them, else the error message (empty when fine).
std::optional<std::string> ParseBaselineFlag(std::string_view flag, const TakeFlagValue& take_value,
                                             BaselineOptions* options);

// Runs `run_once` (one whole benchmark run, returning its report) `repeat`
// times and returns the last report. With more than one run it also holds
// "repeats": {"runs": N, "ratios": [each run's ratios], "median_ratios":
// {each ratio's median over the runs}}, which the baseline check and
// --write-baseline use instead of "ratios": on a shared machine one run in a
// few can land a figure far from the rest, and the median of three leaves it
// out. A run whose stores disagree (checks.results_match false) ends the
// repetition and is returned as it is; a failed run fails the whole.
Result<JsonValue> RunRepeated(size_t repeat, const std::function<Result<JsonValue>()>& run_once);

// The ratios the baseline check reads from `report`: repeats.median_ratios
// when the run was repeated, else ratios.
const JsonValue& RatiosToCheck(const JsonValue& report);

// With the table (no --json): one line naming each median ratio when the
// run was repeated; nothing otherwise.
void PrintMedianRatios(const JsonValue& report, std::ostream& out);

// After a run whose stores agreed: with --baseline, compares the report's
// ratios with the file's part for the report's benchmark and prints one line
// per figure to `out`; with --write-baseline, rewrites that part of the file
// from the run. Returns the exit status: 0 when the check held (or there was
// none), 1 when a figure regressed or a file could not be read or written, 2
// when the run is not the one the baseline was taken from (other devices,
// hours or seed: use the options the file names).
int ApplyBaseline(const BaselineOptions& options, const JsonValue& report,
                  std::span<const BaselineFigureSpec> figures, std::ostream& out);

}  // namespace cairn::bench
