#include "bench_common.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "cairn/platform/env.h"

namespace cairn::bench {

// ---- options ------------------------------------------------------------------

bool WantsHelp(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) return true;
  }
  return false;
}

std::string ParseCommonOptions(int argc, char** argv, CommonOptions* options,
                               const OwnFlagParser& own_flags) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::string_view value;
    bool has_value = false;
    if (const size_t equals = arg.find('='); arg.starts_with("--") && equals != std::string_view::npos) {
      value = arg.substr(equals + 1);
      arg = arg.substr(0, equals);
      has_value = true;
    }
    auto take_value = [&]() -> bool {
      if (has_value) return true;
      if (i + 1 >= argc) return false;
      value = argv[++i];
      return true;
    };
    if (arg == "--json") {
      options->json = true;
    } else if (arg == "--self-check") {
      options->self_check = true;
    } else if (arg == "--keep") {
      options->keep = true;
    } else if (arg == "--devices") {
      if (!take_value() || !ParseInteger(value, &options->devices) || options->devices < 1 ||
          options->devices > 1'000'000) {
        return "--devices takes an integer in [1, 1000000]";
      }
    } else if (arg == "--hours") {
      if (!take_value() || !ParseFiniteDouble(value, &options->hours) || options->hours <= 0 ||
          options->hours > kMaxHours) {
        return "--hours takes a number in (0, 648] (the data must stay inside the 30-day retention)";
      }
    } else if (arg == "--batch") {
      if (!take_value() || !ParseInteger(value, &options->batch) || options->batch < 1 ||
          options->batch > 1'000'000) {
        return "--batch takes an integer in [1, 1000000]";
      }
    } else if (arg == "--seed") {
      if (!take_value() || !ParseInteger(value, &options->seed)) return "--seed takes an unsigned integer";
    } else if (arg == "--dir") {
      if (!take_value() || value.empty()) return "--dir takes a directory";
      options->dir = std::string(value);
    } else {
      const TakeFlagValue take_own_value = [&](std::string_view* own_value) {
        if (!take_value()) return false;
        *own_value = value;
        return true;
      };
      std::optional<std::string> error = own_flags(arg, take_own_value);
      if (!error) return "unknown argument \"" + std::string(arg) + "\"";
      if (!error->empty()) return *error;
    }
  }
  return "";
}

std::string CheckHoursCoverASecond(const CommonOptions& options) {
  const double seconds = std::round(options.hours * 3600);
  if (seconds < 1) return "--hours must cover at least one second";
  return "";
}

bool ParseFiniteDouble(std::string_view text, double* out) {
  const std::from_chars_result result = std::from_chars(text.data(), text.data() + text.size(), *out);
  return result.ec == std::errc() && result.ptr == text.data() + text.size() && std::isfinite(*out);
}

// ---- the generated data ----------------------------------------------------------

DataPlan PlanData(const CommonOptions& options) {
  DataPlan plan;
  plan.devices = options.devices;
  plan.seconds = static_cast<uint64_t>(std::llround(options.hours * 3600));
  plan.batch = options.batch;
  plan.seed = options.seed;
  plan.progress = !options.json;
  const int64_t today = Env::Default()->NowUnixNanos() / kNanosPerDay;
  const auto days_of_data = static_cast<int64_t>((plan.seconds + kSecondsPerDay - 1) / kSecondsPerDay);
  plan.start = (today - days_of_data - 1) * kNanosPerDay;
  return plan;
}

uint64_t PlannedRecords(const DataPlan& plan) { return static_cast<uint64_t>(plan.devices) * plan.seconds; }

SensorGeneratorOptions GeneratorOptions(const DataPlan& plan) {
  SensorGeneratorOptions options;
  options.devices = plan.devices;
  options.device_id_prefix = kDeviceIdPrefix;
  options.start_unix_nanos = plan.start;
  options.seconds = plan.seconds;
  options.seed = plan.seed;
  return options;
}

void Progress(const DataPlan& plan, std::string_view who, std::string_view step) {
  using Clock = std::chrono::steady_clock;
  static const Clock::time_point origin = Clock::now();
  if (!plan.progress) return;
  const std::chrono::duration<double> elapsed = Clock::now() - origin;
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%8.2f s", elapsed.count());
  std::cerr << seconds << "  " << who << ": " << step << std::endl;
}

void ToEnvRecords(const std::vector<SensorRecord>& batch, std::vector<Record>* records) {
  if (records->size() < batch.size()) {
    records->resize(batch.size());
    for (Record& record : *records) {
      if (record.fields.size() == kReadingsPerRecord) continue;
      record.measure_name = kEnvMeasure;
      record.fields = {Field{"temperature", 0.0}, Field{"humidity", 0.0}, Field{"pressure", 0.0}};
    }
  }
  records->resize(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    const SensorRecord& in = batch[i];
    Record& out = (*records)[i];
    out.device_id.assign(in.device_id);
    out.timestamp = in.timestamp;
    out.fields[0].value = in.temperature_celsius();
    out.fields[1].value = in.humidity_percent();
    out.fields[2].value = in.pressure_hectopascals();
  }
}

// ---- numbers -----------------------------------------------------------------------

double Round(double value, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(value * scale) / scale;
}

double RoundSignificant(double value, int digits) {
  if (value == 0 || !std::isfinite(value)) return value;
  const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(value))));
  return Round(value, digits - 1 - magnitude);
}

int64_t Percentile(std::vector<int64_t> samples, double fraction) {
  std::sort(samples.begin(), samples.end());
  auto rank = static_cast<size_t>(std::ceil(fraction * static_cast<double>(samples.size())));
  rank = std::clamp<size_t>(rank, 1, samples.size());
  return samples[rank - 1];
}

// ---- the JSON report -------------------------------------------------------------

const JsonValue* FindPath(const JsonValue& root, std::initializer_list<std::string_view> path) {
  const JsonValue* node = &root;
  for (std::string_view key : path) {
    node = node->Find(key);
    if (node == nullptr) return nullptr;
  }
  return node;
}

std::optional<double> NumberAt(const JsonValue& root, std::initializer_list<std::string_view> path) {
  const JsonValue* node = FindPath(root, path);
  if (node == nullptr || !node->is_number()) return std::nullopt;
  return node->number();
}

bool IsTrue(const JsonValue* value) {
  return value != nullptr && value->kind() == JsonValue::Kind::kBool && value->boolean();
}

JsonValue ReportHead(std::string_view benchmark, const DataPlan& plan, double hours, uint64_t readings) {
  JsonValue report = JsonValue::Object();
  report.Set("benchmark", JsonValue::String(std::string(benchmark)));
  report.Set("readings", JsonValue::Unsigned(readings));
  report.Set("records", JsonValue::Unsigned(PlannedRecords(plan)));
  report.Set("devices", JsonValue::Unsigned(plan.devices));
  report.Set("hours", JsonValue::Number(hours));
  report.Set("batch", JsonValue::Unsigned(plan.batch));
  report.Set("seed", JsonValue::Unsigned(plan.seed));
  return report;
}

JsonValue MachineJson() {
  const MachineDescription machine = DescribeMachine();
  JsonValue json = JsonValue::Object();
  json.Set("nproc", JsonValue::Integer(machine.cpus));
  json.Set("cpu_model", JsonValue::String(machine.cpu_model));
  json.Set("arch", JsonValue::String(machine.architecture));
  json.Set("kernel", JsonValue::String(machine.kernel));
  return json;
}

void SetResults(const std::vector<std::string>& problems, JsonValue* checks) {
  checks->Set("results_match", JsonValue::Bool(problems.empty()));
  JsonValue mismatches = JsonValue::Array();
  for (const std::string& problem : problems) mismatches.Append(JsonValue::String(problem));
  checks->Set("mismatches", std::move(mismatches));
}

Result<ScratchDirectory> CreateScratchDirectory(const CommonOptions& options, const std::string& prefix) {
  std::string parent = options.dir;
  if (parent.empty()) {
    const char* tmpdir = std::getenv("TMPDIR");
    parent = tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
  }
  CAIRN_ASSIGN_OR_RETURN(ScratchDirectory scratch, ScratchDirectory::Create(parent, prefix));
  if (options.keep) scratch.Keep();
  return scratch;
}

std::optional<JsonValue> ParseReport(const std::string& printed, std::string_view benchmark,
                                     std::vector<std::string>* problems) {
  Result<JsonValue> parsed = JsonValue::Parse(printed);
  if (!parsed.ok()) {
    problems->push_back("output is not valid JSON: " + parsed.status().ToString());
    return std::nullopt;
  }
  const JsonValue* name = parsed->Find("benchmark");
  if (name == nullptr || !name->is_string() || name->text() != benchmark) {
    problems->push_back("benchmark is not \"" + std::string(benchmark) + "\"");
  }
  return std::move(*parsed);
}

// ---- the table -----------------------------------------------------------------------

std::string FormatNumber(const JsonValue* value, int decimals) {
  if (value == nullptr || !value->is_number()) return "-";
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", decimals, value->number());
  return buffer;
}

std::string FormatRatio(const JsonValue* value) {
  if (value == nullptr || !value->is_number()) return "-";
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.3g", value->number());
  return buffer;
}

void PrintHeading(const JsonValue& report, std::ostream& out) {
  const JsonValue& machine = *report.Find("machine");
  out << "cairn-bench " << report.Find("benchmark")->text() << ": " << report.Find("devices")->text()
      << " devices x " << report.Find("hours")->text() << " h at 1 Hz = " << report.Find("records")->text()
      << " records = " << report.Find("readings")->text() << " readings, batch "
      << report.Find("batch")->text() << ", seed " << report.Find("seed")->text() << "\n";
  out << "machine: " << machine.Find("nproc")->text() << " CPUs, " << machine.Find("cpu_model")->text()
      << " (" << machine.Find("arch")->text() << ", Linux " << machine.Find("kernel")->text() << ")";
}

void PrintResults(const JsonValue& report, std::string_view passed, std::string_view failed_heading,
                  std::ostream& out) {
  const JsonValue& checks = *report.Find("checks");
  if (checks.Find("results_match")->boolean()) {
    out << passed << "\n";
    return;
  }
  out << failed_heading << "\n";
  for (const JsonValue& problem : checks.Find("mismatches")->elements())
    out << "  " << problem.text() << "\n";
}

bool PrintReport(const CommonOptions& options, const JsonValue& report, const std::string& data_directory,
                 const std::function<void(const JsonValue& report, std::ostream& out)>& print_table,
                 const std::function<std::vector<std::string>(const std::string& printed)>& self_check) {
  const std::string printed = report.Serialize();
  if (options.json) {
    std::cout << printed << "\n";
  } else {
    print_table(report, std::cout);
  }
  if (options.keep) std::cerr << "data kept in " << data_directory << "\n";
  if (!options.self_check) return true;
  const std::vector<std::string> problems = self_check(printed);
  for (const std::string& problem : problems) std::cerr << "self-check: " << problem << "\n";
  if (!problems.empty()) return false;
  std::cerr << "self-check: OK\n";
  return true;
}

}  // namespace cairn::bench
