// The regression check of cairn-bench without running a benchmark: a figure
// 31 % worse than its baseline fails and is named, 29 % passes, in both
// directions; improvements are reported; the file round-trips; and the whole
// check (ApplyBaseline) fails on a regressed run read from a real file.
#include "bench_baseline.h"

#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "test_dirs.h"

namespace cairn::bench {
namespace {

// A baseline of two figures, one of each direction, with the default 30 %.
Baseline TwoFigures() {
  Baseline baseline;
  baseline.figures = {{"ingest_readings_per_s", 2.0, Better::kHigher}, {"range_ms_p50", 0.5, Better::kLower}};
  return baseline;
}

JsonValue Ratios(double ingest, double range) {
  JsonValue ratios = JsonValue::Object();
  ratios.Set("ingest_readings_per_s", JsonValue::Number(ingest));
  ratios.Set("range_ms_p50", JsonValue::Number(range));
  return ratios;
}

TEST(BenchBaselineTest, HigherIsBetterFailsAt31PercentWorseAndPassesAt29) {
  const std::vector<FigureComparison> failed = CompareWithBaseline(TwoFigures(), Ratios(2.0 * 0.69, 0.5));
  ASSERT_EQ(failed.size(), 2u);
  EXPECT_EQ(failed[0].verdict, Verdict::kRegressed);
  EXPECT_EQ(failed[1].verdict, Verdict::kWithin);
  EXPECT_FALSE(BaselineHolds(failed));
  EXPECT_DOUBLE_EQ(failed[0].bound, 1.4);
  EXPECT_EQ(DescribeComparison(failed[0]),
            "REGRESSED ingest_readings_per_s: baseline 2, measured 1.38, allowed >= 1.4 "
            "(higher is better, 31.0 % worse)");

  const std::vector<FigureComparison> passed = CompareWithBaseline(TwoFigures(), Ratios(2.0 * 0.71, 0.5));
  EXPECT_EQ(passed[0].verdict, Verdict::kWithin);
  EXPECT_TRUE(BaselineHolds(passed));
}

TEST(BenchBaselineTest, LowerIsBetterFailsAt31PercentWorseAndPassesAt29) {
  const std::vector<FigureComparison> failed = CompareWithBaseline(TwoFigures(), Ratios(2.0, 0.5 * 1.31));
  EXPECT_EQ(failed[0].verdict, Verdict::kWithin);
  EXPECT_EQ(failed[1].verdict, Verdict::kRegressed);
  EXPECT_FALSE(BaselineHolds(failed));
  EXPECT_DOUBLE_EQ(failed[1].bound, 0.65);
  EXPECT_EQ(DescribeComparison(failed[1]),
            "REGRESSED range_ms_p50: baseline 0.5, measured 0.655, allowed <= 0.65 (lower is better, 31.0 % "
            "worse)");

  EXPECT_TRUE(BaselineHolds(CompareWithBaseline(TwoFigures(), Ratios(2.0, 0.5 * 1.29))));
}

TEST(BenchBaselineTest, ImprovementsBeyondTheToleranceAreReportedAndPass) {
  const std::vector<FigureComparison> comparisons =
      CompareWithBaseline(TwoFigures(), Ratios(2.0 * 1.35, 0.5 * 0.6));
  EXPECT_EQ(comparisons[0].verdict, Verdict::kImproved);
  EXPECT_EQ(comparisons[1].verdict, Verdict::kImproved);
  EXPECT_TRUE(BaselineHolds(comparisons));
  EXPECT_EQ(
      DescribeComparison(comparisons[1]),
      "improved range_ms_p50: baseline 0.5, measured 0.3, allowed <= 0.65 (lower is better, 40.0 % better)");
  // Better, but within the tolerance: just ok.
  EXPECT_EQ(CompareWithBaseline(TwoFigures(), Ratios(2.4, 0.5))[0].verdict, Verdict::kWithin);
}

TEST(BenchBaselineTest, AFigureTheRunLacksFails) {
  JsonValue ratios = JsonValue::Object();
  ratios.Set("ingest_readings_per_s", JsonValue::Number(2.0));
  ratios.Set("range_ms_p50", JsonValue());  // null: the peer did not run
  const std::vector<FigureComparison> comparisons = CompareWithBaseline(TwoFigures(), ratios);
  EXPECT_EQ(comparisons[1].verdict, Verdict::kMissing);
  EXPECT_FALSE(BaselineHolds(comparisons));
  EXPECT_EQ(DescribeComparison(comparisons[1]),
            "MISSING range_ms_p50: baseline 0.5, measured none, allowed <= 0.65 (lower is better)");
}

TEST(BenchBaselineTest, TheFileTakesItsToleranceAndRejectsMalformedFigures) {
  Result<JsonValue> file = JsonValue::Parse(
      R"({"tolerance":0.1,"core":{"ratios":{"bytes_per_reading":{"ratio":0.2,"better":"lower"}}}})");
  ASSERT_TRUE(file.ok());
  Result<Baseline> baseline = BaselineFromFile(*file, "core");
  ASSERT_TRUE(baseline.ok()) << baseline.status().ToString();
  EXPECT_DOUBLE_EQ(baseline->tolerance, 0.1);
  JsonValue ratios = JsonValue::Object();
  ratios.Set("bytes_per_reading", JsonValue::Number(0.23));
  EXPECT_EQ(CompareWithBaseline(*baseline, ratios)[0].verdict, Verdict::kRegressed);

  EXPECT_FALSE(BaselineFromFile(*file, "http").ok());
  for (const char* text : {R"({"core":{"ratios":{"x":{"ratio":0,"better":"lower"}}}})",
                           R"({"core":{"ratios":{"x":{"ratio":1,"better":"up"}}}})",
                           R"({"core":{"ratios":{}}})", R"({"tolerance":2,"core":{"ratios":{}}})"}) {
    Result<JsonValue> bad = JsonValue::Parse(text);
    ASSERT_TRUE(bad.ok()) << text;
    EXPECT_FALSE(BaselineFromFile(*bad, "core").ok()) << text;
  }
}

// A figure's own tolerance replaces the file's for that figure alone, is
// written back beside its ratio, and is checked like the file's.
TEST(BenchBaselineTest, AFigureMayCarryItsOwnTolerance) {
  Result<JsonValue> file = JsonValue::Parse(
      R"({"tolerance":0.3,"http":{"ratios":{"latest_ms_p50":{"ratio":0.1,"better":"lower","tolerance":1},)"
      R"("range_ms_p50":{"ratio":0.1,"better":"lower"}}}})");
  ASSERT_TRUE(file.ok());
  Result<Baseline> baseline = BaselineFromFile(*file, "http");
  ASSERT_TRUE(baseline.ok()) << baseline.status().ToString();
  JsonValue ratios = JsonValue::Object();
  ratios.Set("latest_ms_p50", JsonValue::Number(0.19));
  ratios.Set("range_ms_p50", JsonValue::Number(0.14));
  std::vector<FigureComparison> compared = CompareWithBaseline(*baseline, ratios);
  EXPECT_EQ(compared[0].verdict, Verdict::kWithin) << DescribeComparison(compared[0]);
  EXPECT_DOUBLE_EQ(compared[0].bound, 0.2);
  EXPECT_EQ(compared[1].verdict, Verdict::kRegressed) << DescribeComparison(compared[1]);
  ratios.Set("latest_ms_p50", JsonValue::Number(0.21));
  EXPECT_EQ(CompareWithBaseline(*baseline, ratios)[0].verdict, Verdict::kRegressed);

  const std::string written = BaselineFileText(*file, "http", *baseline);
  EXPECT_NE(written.find(R"("latest_ms_p50": {"ratio":0.1,"better":"lower","tolerance":1})"), std::string::npos)
      << written;
  EXPECT_EQ(written.find(R"("range_ms_p50": {"ratio":0.1,"better":"lower","tolerance")"), std::string::npos)
      << written;

  for (const char* text : {R"({"http":{"ratios":{"x":{"ratio":1,"better":"lower","tolerance":0}}}})",
                           R"({"http":{"ratios":{"x":{"ratio":1,"better":"lower","tolerance":"wide"}}}})",
                           R"({"http":{"ratios":{"x":{"ratio":1,"better":"lower","tolerance":9}}}})"}) {
    Result<JsonValue> bad = JsonValue::Parse(text);
    ASSERT_TRUE(bad.ok()) << text;
    EXPECT_FALSE(BaselineFromFile(*bad, "http").ok()) << text;
  }
}

// A report as the benchmarks print it, reduced to what the check reads.
JsonValue Report(double ingest, double range, double hours = 0.25) {
  JsonValue report = JsonValue::Object();
  report.Set("benchmark", JsonValue::String("core"));
  report.Set("devices", JsonValue::Unsigned(200));
  report.Set("hours", JsonValue::Number(hours));
  report.Set("seed", JsonValue::Unsigned(1));
  report.Set("ratios", Ratios(ingest, range));
  return report;
}

constexpr BaselineFigureSpec kFigures[] = {{"ingest_readings_per_s", Better::kHigher},
                                           {"range_ms_p50", Better::kLower}};

TEST(BenchBaselineTest, WrittenFileKeepsOtherBenchmarksAndChecksTheNextRun) {
  ScopedTempDir dir("bench-baseline-test");
  const std::string path = dir.PathOf("baseline.json");
  {
    std::ofstream(path)
        << R"({"tolerance":0.3,"http":{"ratios":{"peak_rss_mb":{"ratio":0.6,"better":"lower"}}}})";
  }
  std::ostringstream out;
  ASSERT_EQ(ApplyBaseline({.write_file = path}, Report(2.0, 0.5), kFigures, out), 0) << out.str();

  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  Result<JsonValue> file = JsonValue::Parse(text.str());
  ASSERT_TRUE(file.ok()) << text.str();
  EXPECT_TRUE(BaselineFromFile(*file, "http").ok());
  Result<Baseline> core = BaselineFromFile(*file, "core");
  ASSERT_TRUE(core.ok());
  ASSERT_EQ(core->figures.size(), 2u);
  EXPECT_EQ(core->figures[1].better, Better::kLower);
  EXPECT_EQ(core->run.Find("devices")->text(), "200");

  out.str("");
  EXPECT_EQ(ApplyBaseline({.check_file = path}, Report(1.9, 0.6), kFigures, out), 0) << out.str();
  out.str("");
  EXPECT_EQ(ApplyBaseline({.check_file = path}, Report(2.0, 0.5 * 1.31), kFigures, out), 1);
  EXPECT_NE(out.str().find("REGRESSED range_ms_p50: baseline 0.5, measured 0.655"), std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("ok ingest_readings_per_s"), std::string::npos) << out.str();
  // A run of another size is refused rather than compared.
  out.str("");
  EXPECT_EQ(ApplyBaseline({.check_file = path}, Report(2.0, 0.5, 4.0), kFigures, out), 2);
  EXPECT_NE(out.str().find("hours 4 instead of 0.25"), std::string::npos) << out.str();
  // A missing file fails the check; it does not pass it.
  EXPECT_EQ(ApplyBaseline({.check_file = dir.PathOf("none.json")}, Report(2.0, 0.5), kFigures, out), 1);
}

}  // namespace
}  // namespace cairn::bench
