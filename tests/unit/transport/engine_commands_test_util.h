// Shared helpers of the engine command tests: time constants, text checks,
// and the fixture that runs the shell's engine commands over a real engine.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "cairn/core/engine.h"
#include "cairn/shell/builtin_commands.h"
#include "cairn/shell/command_registry.h"
#include "cairn/shell/engine_commands.h"
#include "cairn/shell/result_renderer.h"

#include "manual_clock_env.h"
#include "test_dirs.h"

namespace cairn::engine_commands_testing {

inline constexpr int64_t kSecond = 1'000'000'000;
inline constexpr int64_t kMinute = 60 * kSecond;
inline constexpr int64_t kHour = 60 * kMinute;
inline constexpr int64_t kDay = 24 * kHour;
// ManualClockEnv's start: 2023-11-14T22:13:20Z.
inline constexpr int64_t kNow = ManualClockEnv::kDefaultStartUnixNanos;

inline bool Contains(const std::string& text, std::string_view needle) {
  return text.find(needle) != std::string::npos;
}

// True when a key/value answer in text shows `key` with `value` on one line,
// whatever width the longest key gives the column.
inline bool HasEntry(const std::string& text, const std::string& key, const std::string& value) {
  for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + 1)) {
    if (at != 0 && text[at - 1] != '\n') continue;
    size_t pos = at + key.size();
    if (pos >= text.size() || text[pos] != ' ') continue;
    while (pos < text.size() && text[pos] == ' ') ++pos;
    if (text.compare(pos, value.size() + 1, value + "\n") == 0) return true;
  }
  return false;
}

// The shell's command layer with the engine commands over a real engine in a
// temporary directory, with a manual clock and no background thread.
class EngineCommandsTest : public ::testing::Test {
 protected:
  EngineCommandsTest() : clock_(Env::Default()) {}

  void SetUp() override {
    EngineOptions options;
    options.maintenance_interval_ms = 0;
    Result<std::unique_ptr<Engine>> engine = Engine::Open(&clock_, dir_.path(), options);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    engine_ = std::move(engine).value();
    ASSERT_TRUE(RegisterBuiltinCommands(&registry_).ok());
    EngineCommandOptions command_options;
    command_options.data_dir = dir_.path();
    command_options.default_limit = 5;
    command_options.max_limit = 50;
    Status registered = RegisterEngineCommands(&registry_, engine_.get(), &clock_, command_options);
    ASSERT_TRUE(registered.ok()) << registered.ToString();
    ASSERT_TRUE(engine_->CreateTable("sensors", TableOptions{}).ok());
  }

  void TearDown() override {
    if (engine_) {
      EXPECT_TRUE(engine_->Close().ok());
    }
  }

  std::string Run(std::string_view line) { return registry_.Execute(line, RenderOptions{}); }

  // Runs a put that must store its point.
  void Put(const std::string& line_protocol) {
    const std::string out = Run("put sensors " + line_protocol);
    ASSERT_TRUE(Contains(out, "outcome  stored\n")) << line_protocol << "\n" << out;
  }

  // Twelve readings of d1, one every 5 minutes over the last hour, with
  // temperature 20, 21, ... and humidity 40, 41, ...; one of d2.
  void PutReadings() {
    for (int i = 0; i < 12; ++i) {
      const int64_t ts = kNow - kHour + i * 5 * kMinute;
      Put("env,device=d1,site=lab temperature=" + std::to_string(20 + i) +
          ",humidity=" + std::to_string(40 + i) + "i " + std::to_string(ts));
    }
    Put("power,device=d2 watts=3.5 " + std::to_string(kNow - kMinute));
  }

  ScopedTempDir dir_{"engine-commands"};
  ManualClockEnv clock_;
  std::unique_ptr<Engine> engine_;
  CommandRegistry registry_;
};

}  // namespace cairn::engine_commands_testing
