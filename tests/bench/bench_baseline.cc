#include "bench_baseline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace cairn::bench {

namespace {

// The members of a run that must match for its ratios to be comparable: the
// ratios move with the size of the data (fixed costs weigh more in a small
// run), so a full run checked against a --quick baseline would fail or pass
// by accident.
constexpr std::string_view kRunKeys[] = {"devices", "hours", "seed"};

std::string_view BetterName(Better better) { return better == Better::kHigher ? "higher" : "lower"; }

// How much worse `measured` is than `baseline`, as a fraction of the
// baseline; negative when it is better.
double WorseBy(Better better, double baseline, double measured) {
  const double change = (measured - baseline) / baseline;
  return better == Better::kHigher ? -change : change;
}

std::string FormatFigure(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.4g", value);
  return text;
}

Result<JsonValue> ReadJsonFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  Result<JsonValue> parsed = JsonValue::Parse(text.str());
  if (!parsed.ok()) return parsed.status().WithContext(path);
  return parsed;
}

// Writes through a temporary file and a rename, so that an interrupted
// write leaves the old baseline rather than half a file.
Status WriteTextFile(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << text;
    if (!out.flush()) return Status::IOError("cannot write " + temporary);
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) return Status::IOError("cannot rename " + temporary + " to " + path + ": " + error.message());
  return Status::Ok();
}

// Objects down to `depth` levels open one member a line; below, compact.
void AppendIndented(const JsonValue& value, int depth, int indent, std::string* out) {
  if (!value.is_object() || depth == 0 || value.members().empty()) {
    *out += value.Serialize();
    return;
  }
  const std::string inner(static_cast<size_t>(indent + 2), ' ');
  *out += "{\n";
  for (size_t i = 0; i < value.members().size(); ++i) {
    const auto& [key, member] = value.members()[i];
    *out += inner + JsonValue::String(key).Serialize() + ": ";
    AppendIndented(member, depth - 1, indent + 2, out);
    *out += i + 1 < value.members().size() ? ",\n" : "\n";
  }
  *out += std::string(static_cast<size_t>(indent), ' ') + "}";
}

// Why `report` is not a run of the kind `baseline` was taken from, or empty.
std::string RunMismatch(const Baseline& baseline, const JsonValue& report) {
  std::string mismatch;
  for (std::string_view key : kRunKeys) {
    const JsonValue* expected = baseline.run.Find(key);
    const std::optional<double> measured = NumberAt(report, {key});
    if (expected == nullptr || !expected->is_number()) continue;
    if (measured && *measured == expected->number()) continue;
    mismatch += (mismatch.empty() ? "" : ", ") + std::string(key) + " " +
                (measured ? FormatFigure(*measured) : "missing") + " instead of " + expected->text();
  }
  return mismatch;
}

}  // namespace

std::vector<FigureComparison> CompareWithBaseline(const Baseline& baseline,
                                                  const JsonValue& measured_ratios) {
  std::vector<FigureComparison> comparisons;
  for (const BaselineFigure& figure : baseline.figures) {
    FigureComparison comparison;
    comparison.name = figure.name;
    comparison.better = figure.better;
    comparison.baseline = figure.ratio;
    const double tolerance = figure.tolerance.value_or(baseline.tolerance);
    comparison.bound = figure.better == Better::kHigher ? figure.ratio * (1 - tolerance)
                                                        : figure.ratio * (1 + tolerance);
    if (const JsonValue* value = measured_ratios.Find(figure.name); value != nullptr && value->is_number()) {
      comparison.measured = value->number();
    }
    if (!comparison.measured) {
      comparison.verdict = Verdict::kMissing;
    } else {
      const double worse = WorseBy(figure.better, figure.ratio, *comparison.measured);
      comparison.verdict = worse > tolerance    ? Verdict::kRegressed
                           : -worse > tolerance ? Verdict::kImproved
                                                : Verdict::kWithin;
    }
    comparisons.push_back(std::move(comparison));
  }
  return comparisons;
}

bool BaselineHolds(const std::vector<FigureComparison>& comparisons) {
  for (const FigureComparison& comparison : comparisons) {
    if (comparison.verdict == Verdict::kRegressed || comparison.verdict == Verdict::kMissing) return false;
  }
  return true;
}

std::string DescribeComparison(const FigureComparison& c) {
  static constexpr std::string_view kWords[] = {"ok", "improved", "REGRESSED", "MISSING"};
  std::string line = std::string(kWords[static_cast<int>(c.verdict)]) + " " + c.name + ": baseline " +
                     FormatFigure(c.baseline) + ", measured " +
                     (c.measured ? FormatFigure(*c.measured) : "none") + ", allowed " +
                     (c.better == Better::kHigher ? ">= " : "<= ") + FormatFigure(c.bound) + " (" +
                     std::string(BetterName(c.better)) + " is better";
  if (c.measured) {
    const double worse = WorseBy(c.better, c.baseline, *c.measured);
    char change[48];
    std::snprintf(change, sizeof(change), ", %.1f %% %s", std::fabs(worse) * 100,
                  worse > 0 ? "worse" : "better");
    line += std::fabs(worse) < 0.0005 ? ", unchanged" : change;
  }
  return line + ")";
}

Result<Baseline> BaselineFromFile(const JsonValue& file, std::string_view benchmark) {
  Baseline baseline;
  if (const JsonValue* tolerance = file.Find("tolerance")) {
    if (!tolerance->is_number() || !(tolerance->number() > 0 && tolerance->number() < 1)) {
      return Status::InvalidArgument("tolerance must be a number between 0 and 1");
    }
    baseline.tolerance = tolerance->number();
  }
  const JsonValue* part = file.Find(benchmark);
  if (part == nullptr || !part->is_object()) {
    return Status::InvalidArgument("no baseline for \"" + std::string(benchmark) + "\"");
  }
  if (const JsonValue* run = part->Find("run"); run != nullptr && run->is_object()) baseline.run = *run;
  const JsonValue* ratios = part->Find("ratios");
  if (ratios == nullptr || !ratios->is_object() || ratios->members().empty()) {
    return Status::InvalidArgument(std::string(benchmark) + ".ratios is missing or empty");
  }
  for (const auto& [name, entry] : ratios->members()) {
    const JsonValue* ratio = entry.Find("ratio");
    const JsonValue* better = entry.Find("better");
    if (ratio == nullptr || !ratio->is_number() || !(ratio->number() > 0)) {
      return Status::InvalidArgument(std::string(benchmark) + "." + name +
                                     ".ratio must be a positive number");
    }
    if (better == nullptr || !better->is_string() ||
        (better->text() != "higher" && better->text() != "lower")) {
      return Status::InvalidArgument(std::string(benchmark) + "." + name +
                                     ".better must be \"higher\" or \"lower\"");
    }
    std::optional<double> own_tolerance;
    if (const JsonValue* tolerance = entry.Find("tolerance")) {
      // Above 1 only matters for lower-is-better figures: up to that many
      // times the baseline's worth of slack.
      if (!tolerance->is_number() || !(tolerance->number() > 0 && tolerance->number() <= 5)) {
        return Status::InvalidArgument(std::string(benchmark) + "." + name +
                                       ".tolerance must be a number in (0, 5]");
      }
      own_tolerance = tolerance->number();
    }
    baseline.figures.push_back(
        {name, ratio->number(), better->text() == "higher" ? Better::kHigher : Better::kLower, own_tolerance});
  }
  return baseline;
}

Result<Baseline> BaselineFromReport(const JsonValue& report, std::span<const BaselineFigureSpec> figures) {
  Baseline baseline;
  for (std::string_view key : kRunKeys) {
    if (const JsonValue* value = report.Find(key)) baseline.run.Set(key, *value);
  }
  for (const BaselineFigureSpec& spec : figures) {
    const std::optional<double> ratio = NumberAt(RatiosToCheck(report), {spec.name});
    if (!ratio || !(*ratio > 0)) {
      return Status::InvalidArgument("the run has no ratio " + std::string(spec.name));
    }
    baseline.figures.push_back({std::string(spec.name), *ratio, spec.better, spec.tolerance});
  }
  return baseline;
}

std::string BaselineFileText(const JsonValue& file, std::string_view benchmark, const Baseline& baseline) {
  JsonValue ratios = JsonValue::Object();
  for (const BaselineFigure& figure : baseline.figures) {
    JsonValue entry = JsonValue::Object();
    entry.Set("ratio", JsonValue::Number(figure.ratio));
    entry.Set("better", JsonValue::String(std::string(BetterName(figure.better))));
    if (figure.tolerance) entry.Set("tolerance", JsonValue::Number(*figure.tolerance));
    ratios.Set(figure.name, std::move(entry));
  }
  JsonValue part = JsonValue::Object();
  part.Set("run", baseline.run);
  part.Set("ratios", std::move(ratios));

  JsonValue out = file.is_object() ? file : JsonValue::Object();
  if (out.Find("about") == nullptr) {
    out.Set("about", JsonValue::String("Ratios cairn/peer of cairn-bench <benchmark> --quick, the figures "
                                       "--baseline checks; rewrite with --write-baseline "
                                       "(tests/bench/BENCHMARK.md, Baseline)."));
  }
  if (out.Find("tolerance") == nullptr) out.Set("tolerance", JsonValue::Number(baseline.tolerance));
  out.Set(benchmark, std::move(part));
  std::string text;
  AppendIndented(out, 3, 0, &text);
  return text + "\n";
}

std::optional<std::string> ParseBaselineFlag(std::string_view flag, const TakeFlagValue& take_value,
                                             BaselineOptions* options) {
  if (flag == "--repeat") {
    std::string_view value;
    if (!take_value(&value) || !ParseInteger(value, &options->repeat) || options->repeat < 1 ||
        options->repeat > 99) {
      return "--repeat takes an integer in [1, 99]";
    }
    options->repeat_given = true;
    return "";
  }
  std::string* target = flag == "--baseline"         ? &options->check_file
                        : flag == "--write-baseline" ? &options->write_file
                                                     : nullptr;
  if (target == nullptr) return std::nullopt;
  std::string_view value;
  if (!take_value(&value) || value.empty()) return std::string(flag) + " takes a file";
  *target = std::string(value);
  return "";
}

void ResolveRepeat(BaselineOptions* options) {
  if (options->repeat_given) return;
  if (!options->write_file.empty()) {
    options->repeat = kBaselineWriteRepeat;
  } else if (!options->check_file.empty()) {
    options->repeat = kBaselineCheckRepeat;
  }
}

Result<JsonValue> RunRepeated(size_t repeat, const std::function<Result<JsonValue>()>& run_once) {
  std::vector<JsonValue> ratios;
  JsonValue report;
  for (size_t run = 0; run < repeat; ++run) {
    CAIRN_ASSIGN_OR_RETURN(report, run_once());
    if (!IsTrue(FindPath(report, {"checks", "results_match"}))) return report;
    const JsonValue* run_ratios = report.Find("ratios");
    ratios.push_back(run_ratios != nullptr ? *run_ratios : JsonValue::Object());
  }
  if (repeat == 1) return report;
  JsonValue medians = JsonValue::Object();
  for (const auto& [name, ignored] : ratios.back().members()) {
    std::vector<double> values;
    for (const JsonValue& run : ratios) {
      if (const JsonValue* value = run.Find(name); value != nullptr && value->is_number()) {
        values.push_back(value->number());
      }
    }
    // A figure some run could not measure has no median (null), so that the
    // check reports it missing rather than trusting fewer runs.
    if (values.size() != ratios.size()) {
      medians.Set(name, JsonValue());
      continue;
    }
    std::sort(values.begin(), values.end());
    const size_t middle = values.size() / 2;
    const double median = values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
    medians.Set(name, JsonValue::Number(RoundSignificant(median, 4)));
  }
  JsonValue runs = JsonValue::Array();
  for (JsonValue& run : ratios) runs.Append(std::move(run));
  JsonValue repeats = JsonValue::Object();
  repeats.Set("runs", JsonValue::Unsigned(repeat));
  repeats.Set("ratios", std::move(runs));
  repeats.Set("median_ratios", std::move(medians));
  report.Set("repeats", std::move(repeats));
  return report;
}

const JsonValue& RatiosToCheck(const JsonValue& report) {
  if (const JsonValue* medians = FindPath(report, {"repeats", "median_ratios"})) return *medians;
  static const JsonValue kNone = JsonValue::Object();
  const JsonValue* ratios = report.Find("ratios");
  return ratios != nullptr ? *ratios : kNone;
}

void PrintMedianRatios(const JsonValue& report, std::ostream& out) {
  const JsonValue* repeats = report.Find("repeats");
  if (repeats == nullptr) return;
  out << "median ratios over " << repeats->Find("runs")->text() << " runs (the table shows the last run):";
  const char* separator = " ";
  for (const auto& [name, value] : repeats->Find("median_ratios")->members()) {
    out << separator << name << " " << FormatRatio(&value);
    separator = ", ";
  }
  out << "\n";
}

namespace {

// The --baseline half of ApplyBaseline.
int CheckBaseline(const std::string& path, const JsonValue& report, std::ostream& out) {
  const std::string benchmark = report.Find("benchmark")->text();
  Result<JsonValue> file = ReadJsonFile(path);
  Result<Baseline> baseline =
      file.ok() ? BaselineFromFile(*file, benchmark) : Result<Baseline>(file.status());
  if (!baseline.ok()) {
    out << "baseline: " << baseline.status().ToString() << "\n";
    return 1;
  }
  if (const std::string mismatch = RunMismatch(*baseline, report); !mismatch.empty()) {
    out << "baseline: " << path << " holds a run of other options (" << mismatch
        << "); run as it names, e.g. with --quick\n";
    return 2;
  }
  const std::vector<FigureComparison> comparisons = CompareWithBaseline(*baseline, RatiosToCheck(report));
  size_t improved = 0;
  for (const FigureComparison& comparison : comparisons) {
    out << "baseline: " << DescribeComparison(comparison) << "\n";
    if (comparison.verdict == Verdict::kImproved) ++improved;
  }
  if (improved > 0) {
    out << "baseline: " << improved << " figure(s) better than " << path
        << " by more than the tolerance; if that holds over a few runs, raise the baseline with "
           "--write-baseline\n";
  }
  const bool held = BaselineHolds(comparisons);
  const JsonValue* runs = FindPath(report, {"repeats", "runs"});
  out << "baseline: " << benchmark << (held ? " within " : " NOT within ")
      << FormatFigure(baseline->tolerance * 100) << " % of " << path
      << (runs != nullptr ? " (medians of " + runs->text() + " runs)" : std::string()) << "\n";
  return held ? 0 : 1;
}

// The --write-baseline half of ApplyBaseline.
int WriteBaseline(const std::string& path, const JsonValue& report,
                  std::span<const BaselineFigureSpec> figures, std::ostream& out) {
  const std::string benchmark = report.Find("benchmark")->text();
  Result<Baseline> baseline = BaselineFromReport(report, figures);
  Result<JsonValue> existing = ReadJsonFile(path);
  Status written = baseline.status();
  // A file that exists but does not parse is not overwritten: it may hold
  // another benchmark's baseline that a hand edit broke.
  if (written.ok() && !existing.ok() && existing.status().code() != StatusCode::kNotFound) {
    written = existing.status();
  }
  if (written.ok()) {
    written =
        WriteTextFile(path, BaselineFileText(existing.ok() ? *existing : JsonValue(), benchmark, *baseline));
  }
  if (!written.ok()) {
    out << "baseline: " << written.ToString() << "\n";
    return 1;
  }
  out << "baseline: wrote " << baseline->figures.size() << " ratios of " << benchmark << " to " << path
      << "\n";
  return 0;
}

}  // namespace

int ApplyBaseline(const BaselineOptions& options, const JsonValue& report,
                  std::span<const BaselineFigureSpec> figures, std::ostream& out) {
  // Checked first, so that a rewrite can be compared with what it replaces.
  const int checked = options.check_file.empty() ? 0 : CheckBaseline(options.check_file, report, out);
  if (checked == 2) return checked;
  const int written =
      options.write_file.empty() ? 0 : WriteBaseline(options.write_file, report, figures, out);
  return checked != 0 ? checked : written;
}

}  // namespace cairn::bench
