// What every cairn-bench benchmark shares beyond the generator and the
// probes: the options they all take and their parser, number parsing, the
// plan of the generated data, the cairn records that data becomes, and the
// parts of the JSON report (and of the table printed from it) that every
// benchmark has.
//
// Thread-safety: Progress writes to stderr and keeps its start time in a
// static; call it from one thread at a time. Everything else is safe to call
// from any thread.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "cairn/core/record.h"
#include "cairn/platform/status.h"
#include "cairn/text/json_value.h"

#include "sensor_generator.h"
#include "system_probe.h"

namespace cairn::bench {

constexpr int64_t kNanosPerSecond = 1'000'000'000;
constexpr int64_t kSecondsPerDay = 86'400;
constexpr int64_t kNanosPerDay = kSecondsPerDay * kNanosPerSecond;

// Readings of one generated record: temperature, humidity, pressure.
constexpr uint64_t kReadingsPerRecord = 3;

// Hours of data stay inside the default 30-day table retention, so that no
// record is expired on write and sync sends them on the backfill lane, not
// the archive lane.
constexpr double kMaxHours = 27 * 24;

// ---- options ------------------------------------------------------------------

// The flags every benchmark takes. A benchmark keeps these in its own
// options struct, next to the flags only it has. Every member has an
// initializer so that a benchmark names only the defaults it changes:
// `CommonOptions common{.hours = 4.0};`.
struct CommonOptions {
  uint32_t devices = 200;   // --devices
  double hours = 1.0;       // --hours
  size_t batch = 1000;      // --batch
  std::string dir{};        // --dir: parent of the scratch directory; empty: $TMPDIR or /tmp
  uint64_t seed = 1;        // --seed
  bool json = false;        // --json
  bool self_check = false;  // --self-check
  bool keep = false;        // --keep
};

// True when any argument is --help or -h: help wins over every other flag,
// even one whose value is missing or wrong.
bool WantsHelp(int argc, char** argv);

// Takes the value of the flag being parsed into *value: the text after '='
// in "--flag=value", else the next argument (which is then consumed).
// Returns false when there is none.
using TakeFlagValue = std::function<bool(std::string_view* value)>;

// A benchmark's own flags, tried for every argument that is not a common
// flag. Returns std::nullopt when `flag` (the argument up to any '=') is not
// one of them; otherwise the error message, empty when the flag and its
// value are fine.
using OwnFlagParser =
    std::function<std::optional<std::string>(std::string_view flag, const TakeFlagValue& take_value)>;

// Parses argv[1, argc) into `options` and, through `own_flags`, into the
// benchmark's own options, in argument order. Returns the first error
// message ("unknown argument ..." for a flag nobody knows), empty on
// success. Checks no relation between flags: see CheckHoursCoverASecond.
std::string ParseCommonOptions(int argc, char** argv, CommonOptions* options, const OwnFlagParser& own_flags);

// The error message when --hours rounds to less than one second of data,
// else empty.
std::string CheckHoursCoverASecond(const CommonOptions& options);

// The whole of `text` as a decimal integer that fits `Integer`.
template <typename Integer>
bool ParseInteger(std::string_view text, Integer* out) {
  const std::from_chars_result result = std::from_chars(text.data(), text.data() + text.size(), *out);
  return result.ec == std::errc() && result.ptr == text.data() + text.size();
}

// The whole of `text` as a finite number (no inf, no nan).
bool ParseFiniteDouble(std::string_view text, double* out);

// ---- the generated data ----------------------------------------------------------

// Device ids of the generated data: this prefix and the zero-padded index.
constexpr std::string_view kDeviceIdPrefix = "sensor-";

// The data a benchmark generates, and how it hands it out: `devices`
// sensors sending one record per second for `seconds` from `start`, in
// batches of `batch` records.
struct DataPlan {
  uint32_t devices = 0;
  uint64_t seconds = 0;
  size_t batch = 0;
  uint64_t seed = 0;
  int64_t start = 0;      // ns since the Unix epoch of the first second, a UTC midnight
  bool progress = false;  // whether Progress prints (not with --json)
};

// The plan of the options. The data ends before yesterday's UTC midnight of
// Env::Default()'s clock: inside the table's retention, never in the
// future, and with at least one whole UTC day after `start`.
// Precondition: CheckHoursCoverASecond(options) is empty.
DataPlan PlanData(const CommonOptions& options);

// Records of the plan's data: one per device and second (retransmissions
// not counted).
uint64_t PlannedRecords(const DataPlan& plan);

// The generator of the plan's data, device ids prefixed kDeviceIdPrefix.
SensorGeneratorOptions GeneratorOptions(const DataPlan& plan);

// Prints "<seconds since the first call>  <who>: <step>" to stderr when
// plan.progress is set.
void Progress(const DataPlan& plan, std::string_view who, std::string_view step);

// The table and the measure cairn stores the generated data in.
constexpr char kBenchTable[] = "bench";
constexpr char kEnvMeasure[] = "env";

// Turns a batch of generated records into cairn records: each device's three
// readings at one instant are ONE multi-measure record kEnvMeasure with the
// fields temperature, humidity and pressure. `records` is reused from batch
// to batch and overwritten in place, as a gateway's input loop would; it
// ends with one record per element of `batch`, whose device ids are copies.
void ToEnvRecords(const std::vector<SensorRecord>& batch, std::vector<Record>* records);

// ---- numbers -----------------------------------------------------------------------

// `value` rounded to `decimals` decimal places.
double Round(double value, int decimals);

// `value` rounded to `digits` significant digits: ratios span 0.004 to
// hundreds, and a fixed number of decimals would blur the small ones.
double RoundSignificant(double value, int digits);

// Nearest-rank percentile, `fraction` in [0, 1]. Precondition:
// !samples.empty().
int64_t Percentile(std::vector<int64_t> samples, double fraction);

// ---- the JSON report -------------------------------------------------------------

// The member at `path` below `root`, or nullptr when a step is missing.
// The returned pointer lives as long as `root`.
const JsonValue* FindPath(const JsonValue& root, std::initializer_list<std::string_view> path);

// The number at `path`, or nothing when it is missing or not a number.
std::optional<double> NumberAt(const JsonValue& root, std::initializer_list<std::string_view> path);

// True when `value` is the JSON literal true.
bool IsTrue(const JsonValue* value);

// A new report object opening with the members every report starts with,
// in this order: benchmark, readings, records (PlannedRecords), devices,
// hours (as given on the command line), batch, seed.
JsonValue ReportHead(std::string_view benchmark, const DataPlan& plan, double hours, uint64_t readings);

// The report's "machine" member from DescribeMachine: nproc, cpu_model,
// arch, kernel.
JsonValue MachineJson();

// Sets checks.results_match (whether `problems` is empty) and
// checks.mismatches (the problems, in order).
void SetResults(const std::vector<std::string>& problems, JsonValue* checks);

// Creates the run's scratch directory "<parent>/<prefix>XXXXXX", the parent
// being --dir, else $TMPDIR, else /tmp; with --keep it stays at exit.
Result<ScratchDirectory> CreateScratchDirectory(const CommonOptions& options, const std::string& prefix);

// The start of a self-check: the printed report parsed, with "benchmark"
// being `benchmark`. Problems found are appended to `problems`; nothing is
// returned when the text is not JSON at all.
std::optional<JsonValue> ParseReport(const std::string& printed, std::string_view benchmark,
                                     std::vector<std::string>* problems);

// ---- the table -----------------------------------------------------------------------

// A number with `decimals` decimals, or "-" when `value` is missing or not a
// number.
std::string FormatNumber(const JsonValue* value, int decimals);

// A ratio to three significant digits, or "-".
std::string FormatRatio(const JsonValue* value);

// The table's first line ("cairn-bench <benchmark>: <devices> devices x ...")
// and the start of the second, up to the closing parenthesis after the
// kernel: "machine: <nproc> CPUs, <model> (<arch>, Linux <kernel>)". The
// caller finishes the line with what its benchmark runs on.
// Precondition: `report` holds ReportHead's members and "machine".
void PrintHeading(const JsonValue& report, std::ostream& out);

// `passed` (a whole line) when checks.results_match holds, else
// `failed_heading` followed by checks.mismatches, one per line.
// Precondition: `report` holds "checks" as SetResults leaves it.
void PrintResults(const JsonValue& report, std::string_view passed, std::string_view failed_heading,
                  std::ostream& out);

// Prints the report (one line of JSON with --json, else the table through
// `print_table`), says where --keep left the data, and with --self-check
// runs `self_check` on the printed JSON and prints its findings. Returns
// false when the self-check found problems.
bool PrintReport(const CommonOptions& options, const JsonValue& report, const std::string& data_directory,
                 const std::function<void(const JsonValue& report, std::ostream& out)>& print_table,
                 const std::function<std::vector<std::string>(const std::string& printed)>& self_check);

}  // namespace cairn::bench
