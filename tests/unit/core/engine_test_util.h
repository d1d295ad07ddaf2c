// Shared helpers of the engine unit tests.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/core/engine.h"

#include "manual_clock_env.h"
#include "test_dirs.h"

namespace cairn::testing {

constexpr int64_t kSecond = 1'000'000'000;

inline Record MakeRecord(const std::string& device, const std::string& measure, int64_t ts,
                         std::vector<Field> fields, uint64_t version = 0, int64_t ttl = 0) {
  Record r;
  r.device_id = device;
  r.measure_name = measure;
  r.timestamp = ts;
  r.fields = std::move(fields);
  r.version = version;
  r.ttl = ttl;
  return r;
}

inline Record Temperature(const std::string& device, int64_t ts, double celsius, uint64_t version = 0) {
  return MakeRecord(device, "env", ts, {{"temperature", celsius}}, version);
}

// An engine over a temp dir with a manual clock and no background thread,
// so tests decide when sealing and maintenance happen.
class EngineFixture : public ::testing::Test {
 protected:
  EngineFixture() : clock_(Env::Default()) { options_.maintenance_interval_ms = 0; }

  void SetUp() override { Open(); }

  void Open() {
    engine_.reset();
    auto opened = Engine::Open(&clock_, dir_.path(), options_, &recovery_);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    engine_ = std::move(opened).value();
  }

  void Reopen() {
    ASSERT_TRUE(engine_->Close().ok());
    Open();
  }

  void CreateTable(const std::string& name = "t", TableOptions options = {}) {
    Status s = engine_->CreateTable(name, options);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  WriteResult WriteOk(const std::vector<Record>& records, const std::string& table = "t") {
    auto result = engine_->Write(table, records);
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    return result.ok() ? std::move(result).value() : WriteResult{};
  }

  int64_t Now() { return clock_.NowUnixNanos(); }

  ScopedTempDir dir_;
  ManualClockEnv clock_;
  EngineOptions options_;
  RecoveryReport recovery_;
  std::unique_ptr<Engine> engine_;
};

}  // namespace cairn::testing
