// Flash-wear telemetry from the outside: a real cairnd on loopback takes
// readings over HTTP, and /metrics, `stats` (/v1/stats) and `health`
// (/v1/health, /healthz) report the bytes it wrote, the bytes of readings it
// stored and the ratio of the two, consistent with each other and with what
// the test wrote, and kept across a restart.
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "cairn/platform/env.h"
#include "cairn/text/json_value.h"

#include "cairnd_http_fixture.h"

namespace cairn {
namespace {

// 50 writes of 1 000 lines, three double fields each: 50 000 readings of
// 8 + 3 x 8 = 32 reading bytes (flash_wear.h), 1.6 MB: past the 1 MiB the
// amplification warning waits for.
constexpr int kBatches = 50;
constexpr int kLinesPerBatch = 1000;
constexpr uint64_t kReadingBytes = uint64_t{kBatches} * kLinesPerBatch * 32;

// The value of the sample `name_and_labels` ("metric{a=\"b\"}" or
// "metric") in a Prometheus text answer.
std::optional<double> MetricValue(const std::string& text, const std::string& name_and_labels) {
  const std::string prefix = "\n" + name_and_labels + " ";
  const size_t at = text.find(prefix);
  if (at == std::string::npos) return std::nullopt;
  return std::strtod(text.c_str() + at + prefix.size(), nullptr);
}

class CairndFlashWearTest : public CairndHttpTest {
 protected:
  void WriteReadings(const std::string& token) {
    const int64_t now_seconds = Env::Default()->NowUnixNanos() / 1'000'000'000;
    for (int batch = 0; batch < kBatches; ++batch) {
      std::string body;
      for (int i = 0; i < kLinesPerBatch; ++i) {
        const int n = batch * kLinesPerBatch + i;
        // Device and measure names are long on purpose: they are not counted
        // as reading bytes.
        body += "environment,device=greenhouse-sensor-" + std::to_string(i % 20) +
                " temperature=" + std::to_string(20 + n % 7) + ".25,humidity=" + std::to_string(40 + n % 11) +
                ".5,pressure=1013." + std::to_string(n % 10) + " " +
                std::to_string(now_seconds - 40'000 + n / 20) + "\n";
      }
      Result<HttpTestClient> client = HttpTestClient::Connect("127.0.0.1", port_);
      ASSERT_TRUE(client.ok());
      Result<HttpTestResponse> response = client->Request("POST", "/write?db=sensors&precision=s",
                                                          {{"Authorization", "Token " + token}}, body);
      ASSERT_TRUE(response.ok());
      ASSERT_EQ(response->status, 204) << response->body;
    }
  }

  // /metrics once its reading-bytes total reaches `at_least` (the counters
  // are sampled every --wear-sample-interval-ms).
  std::string MetricsOnceCounted(const std::string& token, uint64_t at_least) {
    std::string text;
    for (int attempt = 0; attempt < 200; ++attempt) {
      Result<HttpTestResponse> metrics = Get("/metrics", token);
      if (metrics.ok() && metrics->status == 200) {
        text = metrics->body;
        const std::optional<double> counted = MetricValue(text, "cairn_flash_reading_bytes_total");
        if (counted && *counted >= static_cast<double>(at_least)) return text;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "cairn_flash_reading_bytes_total never reached " << at_least << ":\n" << text;
    return text;
  }

  static double Number(const JsonValue& json, const char* key) {
    const JsonValue* value = json.Find(key);
    EXPECT_TRUE(value != nullptr && value->is_number()) << key << " in " << json.Serialize();
    return value != nullptr && value->is_number() ? value->number() : -1;
  }
};

TEST_F(CairndFlashWearTest, MetricsStatsAndHealthReportBytesWrittenAndAmplification) {
  StartDaemon({"--http-plain", "--wear-sample-interval-ms", "100", "--card-endurance-tbw", "0.5",
               "--wear-warn-amplification", "0.01"});
  const std::string admin = FirstAdminToken();
  ASSERT_FALSE(admin.empty()) << daemon_->Stderr();
  WriteReadings(admin);

  const std::string metrics = MetricsOnceCounted(admin, kReadingBytes);
  // Exactly what the test handed over: duplicates none, names not counted.
  EXPECT_EQ(MetricValue(metrics, "cairn_flash_reading_bytes_total"), static_cast<double>(kReadingBytes));
  const std::optional<double> process =
      MetricValue(metrics, "cairn_flash_bytes_written_total{source=\"process\"}");
  ASSERT_TRUE(process) << metrics;
  if (*process == 0) {
    // The kernel counts no writes for a filesystem without a device.
    Result<BlockDeviceWrites> device = Env::Default()->BlockDeviceWritesOf(dir_.path());
    ASSERT_FALSE(device.ok()) << "process bytes 0 on a real device " << device->name;
    GTEST_SKIP() << "the test directory is on tmpfs: " << device.status().ToString();
  }

  // What cairnd must at least have written: the log holding every reading
  // (every page of it was dirtied at least once). What it may at most have
  // written: 50 group commits with their syncs, the catalog, a period file,
  // the tokens, a generous 200 bytes per reading byte.
  Result<HttpTestResponse> stats_response = Get("/v1/stats", admin);
  ASSERT_TRUE(stats_response.ok());
  ASSERT_EQ(stats_response->status, 200) << stats_response->body;
  Result<JsonValue> stats = JsonValue::Parse(stats_response->body);
  ASSERT_TRUE(stats.ok()) << stats_response->body;
  const double log_bytes = Number(*stats, "log_bytes");
  EXPECT_GT(log_bytes, 0);
  EXPECT_GE(*process, log_bytes) << metrics;
  EXPECT_LT(*process, 200.0 * kReadingBytes) << metrics;
  std::printf("cairnd wrote %.0f bytes for %llu reading bytes (log %.0f bytes): amplification %.2f\n",
              *process, static_cast<unsigned long long>(kReadingBytes), log_bytes, *process / kReadingBytes);

  // /metrics' ratio is its two counters divided.
  const std::optional<double> ratio =
      MetricValue(metrics, "cairn_flash_write_amplification_ratio{over=\"install\"}");
  ASSERT_TRUE(ratio) << metrics;
  EXPECT_NEAR(*ratio, *process / static_cast<double>(kReadingBytes), 1e-9 * *ratio);
  EXPECT_EQ(MetricValue(metrics, "cairn_flash_endurance_bytes"), 0.5e12);

  // `stats` agrees with /metrics (sampled at least as late).
  EXPECT_EQ(Number(*stats, "flash_reading_bytes"), static_cast<double>(kReadingBytes));
  EXPECT_GE(Number(*stats, "flash_process_bytes_written"), *process);
  const double stats_ratio = Number(*stats, "flash_write_amplification_since_install");
  EXPECT_NEAR(stats_ratio, Number(*stats, "flash_process_bytes_written") / kReadingBytes, 0.01);
  EXPECT_EQ(Number(*stats, "flash_endurance_bytes"), 0.5e12);

  // `health`: the device (or why it is unknown) and the amplification
  // warning the test's low threshold raises; /healthz says degraded.
  Result<HttpTestResponse> health_response = Get("/v1/health", admin);
  ASSERT_TRUE(health_response.ok());
  Result<JsonValue> health = JsonValue::Parse(health_response->body);
  ASSERT_TRUE(health.ok()) << health_response->body;
  const JsonValue* device = health->Find("flash_device");
  ASSERT_TRUE(device != nullptr && device->is_string()) << health_response->body;
  Result<BlockDeviceWrites> real_device = Env::Default()->BlockDeviceWritesOf(dir_.path());
  if (real_device.ok()) {
    EXPECT_EQ(device->text(), real_device->name) << health_response->body;
    EXPECT_TRUE(MetricValue(
        metrics, "cairn_flash_bytes_written_total{source=\"device\",device=\"" + real_device->name + "\"}"))
        << metrics;
  } else {
    EXPECT_EQ(device->text().rfind("unknown: ", 0), 0u) << health_response->body;
  }
  EXPECT_GT(Number(*health, "flash_write_amplification"), 0.01) << health_response->body;
  const JsonValue* problem = health->Find("problem.flash.amplification");
  ASSERT_TRUE(problem != nullptr) << health_response->body;
  EXPECT_NE(problem->text().find("above the threshold of 0.01"), std::string::npos) << problem->text();
  EXPECT_EQ(health->Find("status")->text(), "degraded");
  Result<HttpTestClient> anonymous = HttpTestClient::Connect("127.0.0.1", port_);
  ASSERT_TRUE(anonymous.ok());
  Result<HttpTestResponse> healthz = anonymous->Request("GET", "/healthz", {});
  ASSERT_TRUE(healthz.ok());
  EXPECT_EQ(healthz->body, "{\"status\":\"degraded\"}\n");

  // A restart goes on from the saved totals: the new process's counter
  // starts at 0, the totals do not.
  const double process_before = Number(*stats, "flash_process_bytes_written");
  StopDaemon();
  StartDaemon({"--http-plain", "--wear-sample-interval-ms", "100"});
  const std::string after = MetricsOnceCounted(admin, kReadingBytes);
  EXPECT_EQ(MetricValue(after, "cairn_flash_reading_bytes_total"), static_cast<double>(kReadingBytes));
  const std::optional<double> process_after =
      MetricValue(after, "cairn_flash_bytes_written_total{source=\"process\"}");
  ASSERT_TRUE(process_after);
  EXPECT_GE(*process_after, process_before);
  // Without the threshold the warning is gone.
  Result<HttpTestResponse> calm = Get("/v1/health", admin);
  ASSERT_TRUE(calm.ok());
  EXPECT_EQ(calm->body.find("problem.flash.amplification"), std::string::npos) << calm->body;
  StopDaemon();
}

TEST_F(CairndFlashWearTest, FlagsAreCheckedAndDocumented) {
  auto [help_status, help] = RunCommand(CairndCommandLine() + " --help");
  EXPECT_EQ(help_status, 0);
  for (const char* flag : {"--card-endurance-tbw", "--card-pe-cycles", "--card-size", "--wear-warn-days",
                           "--wear-warn-amplification"}) {
    EXPECT_NE(help.find(flag), std::string::npos) << flag;
  }
  auto [both_status, both] =
      RunCommand(CairndCommandLine() + " --http-plain --card-endurance-tbw 40 --card-pe-cycles 3000");
  EXPECT_EQ(both_status, 2) << both;
  EXPECT_NE(both.find("give one"), std::string::npos) << both;
  auto [size_status, size] = RunCommand(CairndCommandLine() + " --http-plain --card-size 32G");
  EXPECT_EQ(size_status, 2) << size;
  EXPECT_NE(size.find("--card-size goes with --card-pe-cycles"), std::string::npos) << size;
  auto [bad_status, bad] = RunCommand(CairndCommandLine() + " --http-plain --card-endurance-tbw forty");
  EXPECT_EQ(bad_status, 2) << bad;
  EXPECT_NE(bad.find("--card-endurance-tbw"), std::string::npos) << bad;
}

}  // namespace
}  // namespace cairn
