// Flash-wear telemetry: the monitor fed with chosen kernel counters, and the
// engine counting the bytes of the readings it stores.
#include <gtest/gtest.h>

#include "cairn/core/engine.h"

#include "engine/health/flash_wear_monitor.h"
#include "engine/health/health_board.h"
#include "engine_test_util.h"
#include "fed_write_counters_env.h"
#include "manual_clock_env.h"
#include "test_dirs.h"

namespace cairn {
namespace {

constexpr uint64_t kMB = 1'000'000;

BlockDeviceWrites Card(uint64_t since_boot, std::string boot_id = "boot-1") {
  BlockDeviceWrites device;
  device.name = "mmcblk0p2";
  device.major = 179;
  device.minor = 2;
  device.bytes_written_since_boot = since_boot;
  device.disk_size_bytes = 32'000 * kMB;
  device.boot_id = std::move(boot_id);
  return device;
}

class FlashWearMonitorTest : public ::testing::Test {
 protected:
  FlashWearMonitorTest() : clock_(Env::Default()), env_(&clock_) {
    options_.sample_interval_ms = 60'000;
    options_.save_interval_ms = 3'600'000;
    options_.min_observed_seconds = 3'600;
    options_.min_window_reading_bytes = 1'000;
  }

  std::unique_ptr<FlashWearMonitor> Make() {
    return std::make_unique<FlashWearMonitor>(&env_, dir_.path(), options_, &health_);
  }

  // One hour of steady load, sampled every minute.
  void RunHour(FlashWearMonitor& monitor, uint64_t process_bytes, uint64_t device_bytes,
               uint64_t reading_bytes) {
    // The last minute takes the remainder, so the hour's totals are exact.
    for (int minute = 0; minute < 60; ++minute) {
      const auto share = [&](uint64_t total) { return minute < 59 ? total / 60 : total - 59 * (total / 60); };
      clock_.AdvanceSeconds(60);
      env_.AddProcessBytesWritten(share(process_bytes));
      env_.AddDeviceBytesWritten(share(device_bytes));
      monitor.CountReadingBytes(share(reading_bytes));
      ASSERT_TRUE(monitor.Sample().ok());
    }
  }

  ScopedTempDir dir_{"cairn-flash-wear"};
  ManualClockEnv clock_;
  FedWriteCountersEnv env_;
  FlashWearOptions options_;
  HealthBoard health_;
};

TEST_F(FlashWearMonitorTest, PerDayRatesAndAmplificationFromFedCounters) {
  env_.FeedProcessBytesWritten(0);
  env_.FeedBlockDevice(Card(5'000 * kMB));  // written before cairn: not counted
  auto monitor = Make();
  ASSERT_TRUE(monitor->Sample().ok());
  RunHour(*monitor, 60 * kMB, 120 * kMB, 6 * kMB);

  const FlashWearStatus s = monitor->Report();
  EXPECT_EQ(s.observed_seconds, 3600);
  EXPECT_EQ(s.window_seconds, 3600);
  ASSERT_TRUE(s.process_bytes_written && s.device_bytes_written);
  EXPECT_EQ(*s.process_bytes_written, 60 * kMB);
  EXPECT_EQ(*s.device_bytes_written, 120 * kMB);
  EXPECT_EQ(s.reading_bytes, 6 * kMB);
  EXPECT_EQ(s.device, "mmcblk0p2");
  ASSERT_TRUE(s.process_bytes_per_day_window && s.device_bytes_per_day_window);
  EXPECT_DOUBLE_EQ(*s.process_bytes_per_day_window, 24 * 60.0 * kMB);
  EXPECT_DOUBLE_EQ(*s.device_bytes_per_day_window, 24 * 120.0 * kMB);
  EXPECT_DOUBLE_EQ(*s.device_bytes_per_day_since_install, 24 * 120.0 * kMB);
  ASSERT_TRUE(s.amplification_window && s.amplification_since_install);
  EXPECT_DOUBLE_EQ(*s.amplification_window, 10.0);
  EXPECT_DOUBLE_EQ(*s.amplification_since_install, 10.0);
  // No endurance configured: rates, but no projection.
  EXPECT_EQ(s.endurance_bytes, 0u);
  EXPECT_FALSE(s.projected_remaining_days);
}

TEST_F(FlashWearMonitorTest, RollingWindowFollowsTheRecentPaceWhileSinceInstallAverages) {
  options_.window_seconds = 3'600;
  env_.FeedProcessBytesWritten(0);
  env_.FeedBlockDevice(Card(0));
  auto monitor = Make();
  ASSERT_TRUE(monitor->Sample().ok());
  RunHour(*monitor, 0, 240 * kMB, 0);
  RunHour(*monitor, 0, 24 * kMB, 0);
  const FlashWearStatus s = monitor->Report();
  ASSERT_TRUE(s.device_bytes_per_day_window && s.device_bytes_per_day_since_install);
  // The window holds the last hour (plus the point at its start).
  EXPECT_NEAR(*s.device_bytes_per_day_window, 24 * 24.0 * kMB, 24 * 5.0 * kMB);
  EXPECT_DOUBLE_EQ(*s.device_bytes_per_day_since_install, 12 * 264.0 * kMB);
}

TEST_F(FlashWearMonitorTest, TotalsContinueAcrossARestartOfTheProcess) {
  env_.FeedProcessBytesWritten(0);
  env_.FeedBlockDevice(Card(1'000 * kMB));
  const int64_t installed = clock_.NowUnixNanos();
  {
    auto monitor = Make();
    ASSERT_TRUE(monitor->Sample().ok());
    RunHour(*monitor, 30 * kMB, 40 * kMB, 3 * kMB);
    ASSERT_TRUE(monitor->Sample(/*force=*/true).ok());  // as Engine::Close does
  }
  // A new process: its counter starts again; the device went on meanwhile.
  env_.FeedProcessBytesWritten(2 * kMB);
  env_.AddDeviceBytesWritten(5 * kMB);
  clock_.AdvanceSeconds(600);
  auto monitor = Make();
  ASSERT_TRUE(monitor->Sample().ok());
  const FlashWearStatus s = monitor->Report();
  EXPECT_EQ(*s.process_bytes_written, 32 * kMB);
  EXPECT_EQ(*s.device_bytes_written, 45 * kMB);
  EXPECT_EQ(s.reading_bytes, 3 * kMB);
  EXPECT_EQ(s.observed_seconds, 3600);  // downtime is not observed time
  EXPECT_EQ(s.installed_unix_nanos, installed);
  EXPECT_DOUBLE_EQ(*s.amplification_since_install, 32.0 / 3.0);
}

TEST_F(FlashWearMonitorTest, DeviceCounterResetByARebootIsAddedNotSubtracted) {
  env_.FeedProcessBytesWritten(0);
  env_.FeedBlockDevice(Card(900 * kMB));
  {
    auto monitor = Make();
    ASSERT_TRUE(monitor->Sample().ok());
    env_.AddDeviceBytesWritten(100 * kMB);
    ASSERT_TRUE(monitor->Sample(/*force=*/true).ok());
    EXPECT_EQ(*monitor->Report().device_bytes_written, 100 * kMB);
  }
  // Rebooted: the counter restarted and already holds 2 000 MB, more than
  // before, so only the boot id tells the reset.
  env_.RebootDevice("boot-2", 2'000 * kMB);
  {
    auto monitor = Make();
    ASSERT_TRUE(monitor->Sample().ok());
    EXPECT_EQ(*monitor->Report().device_bytes_written, 2'100 * kMB);
    ASSERT_TRUE(monitor->Sample(/*force=*/true).ok());
  }
  // A kernel without a boot id: a counter that went down is a reset.
  BlockDeviceWrites no_id = Card(50 * kMB, "");
  env_.FeedBlockDevice(no_id);
  {
    auto monitor = Make();
    ASSERT_TRUE(monitor->Sample().ok());
    EXPECT_EQ(*monitor->Report().device_bytes_written, 2'150 * kMB);
    env_.AddDeviceBytesWritten(7 * kMB);
    ASSERT_TRUE(monitor->Sample(/*force=*/true).ok());
    EXPECT_EQ(*monitor->Report().device_bytes_written, 2'157 * kMB);
  }
}

TEST_F(FlashWearMonitorTest, NoBlockDeviceIsUnknownNotZero) {
  env_.FeedProcessBytesWritten(0);
  env_.FeedBlockDevice(std::nullopt, "on tmpfs");
  options_.endurance_tbw = 1;
  auto monitor = Make();
  ASSERT_TRUE(monitor->Sample().ok());
  RunHour(*monitor, 24 * kMB, 0, 1 * kMB);
  const FlashWearStatus s = monitor->Report();
  EXPECT_FALSE(s.device_bytes_written);
  EXPECT_FALSE(s.device_bytes_per_day_window);
  EXPECT_FALSE(s.device_bytes_per_day_since_install);
  EXPECT_TRUE(s.device.empty());
  EXPECT_NE(s.device_note.find("on tmpfs"), std::string::npos);
  // The projection falls back on cairn's own writes, and says so.
  EXPECT_EQ(s.projection_basis, "process");
  ASSERT_TRUE(s.projected_remaining_days);
  EXPECT_NEAR(*s.projected_remaining_days, (1e12 - 24e6) / (24 * 24e6), 1.0);

  // Neither counter known: nothing is made up.
  env_.FeedProcessBytesWritten(std::nullopt);
  ASSERT_TRUE(env_.CreateDirs(dir_.PathOf("other")).ok());
  auto blind = std::make_unique<FlashWearMonitor>(&env_, dir_.PathOf("other"), options_, nullptr);
  ASSERT_TRUE(blind->Sample().ok());
  const FlashWearStatus b = blind->Report();
  EXPECT_FALSE(b.process_bytes_written);
  EXPECT_FALSE(b.amplification_since_install);
  EXPECT_FALSE(b.projected_remaining_days);
}

TEST_F(FlashWearMonitorTest, ProjectionFromTbwRaisesAndClearsFlashLife) {
  options_.endurance_tbw = 0.001;  // 1 GB: a card about to die
  options_.warn_remaining_days = 365;
  env_.FeedProcessBytesWritten(0);
  env_.FeedBlockDevice(Card(0));
  auto monitor = Make();
  ASSERT_TRUE(monitor->Sample().ok());
  RunHour(*monitor, 50 * kMB, 100 * kMB, 10 * kMB);
  FlashWearStatus s = monitor->Report();
  EXPECT_EQ(s.endurance_bytes, 1'000 * kMB);
  EXPECT_EQ(s.projection_basis, "device");
  ASSERT_TRUE(s.endurance_used_fraction && s.projected_remaining_days);
  EXPECT_DOUBLE_EQ(*s.endurance_used_fraction, 0.1);
  EXPECT_NEAR(*s.projected_remaining_days, 900.0 / 2'400.0, 1e-9);
  ASSERT_TRUE(health_.Has("flash.life"));
  const EngineHealth health = health_.Snapshot();
  EXPECT_EQ(health.level, HealthLevel::kDegraded);
  EXPECT_NE(health.problems[0].message.find("365-day threshold"), std::string::npos)
      << health.problems[0].message;

  // The same pace on a card rated 100 TB lasts a century: the problem goes.
  options_.endurance_tbw = 100;
  monitor = Make();
  ASSERT_TRUE(monitor->Sample().ok());
  RunHour(*monitor, 50 * kMB, 100 * kMB, 10 * kMB);
  s = monitor->Report();
  ASSERT_TRUE(s.projected_remaining_days);
  EXPECT_GT(*s.projected_remaining_days, 365.0 * 100);
  EXPECT_FALSE(health_.Has("flash.life"));
}

TEST_F(FlashWearMonitorTest, ProjectionFromPeCyclesTimesTheCardSize) {
  options_.pe_cycles = 3'000;
  env_.FeedProcessBytesWritten(0);
  env_.FeedBlockDevice(Card(0));  // the kernel says 32 GB
  auto monitor = Make();
  ASSERT_TRUE(monitor->Sample().ok());
  EXPECT_EQ(monitor->Report().endurance_bytes, 3'000 * 32'000 * kMB);
  // Nothing observed yet: no projection, no warning.
  EXPECT_FALSE(monitor->Report().projected_remaining_days);
  EXPECT_FALSE(health_.Has("flash.life"));

  options_.card_size_bytes = 8'000 * kMB;  // configured size wins over the kernel's
  monitor = Make();
  ASSERT_TRUE(monitor->Sample().ok());
  RunHour(*monitor, 0, 1'000 * kMB, 0);
  const FlashWearStatus s = monitor->Report();
  EXPECT_EQ(s.endurance_bytes, 3'000 * 8'000 * kMB);
  ASSERT_TRUE(s.projected_remaining_days);
  EXPECT_NEAR(*s.projected_remaining_days, (24e12 - 1e9) / 24e9, 1e-6);
}

TEST_F(FlashWearMonitorTest, AmplificationAboveTheBoundRaisesAProblemUntilTheWindowMovesOn) {
  options_.warn_amplification = 20;
  options_.window_seconds = 3'600;
  env_.FeedProcessBytesWritten(0);
  env_.FeedBlockDevice(Card(0));
  auto monitor = Make();
  ASSERT_TRUE(monitor->Sample().ok());
  RunHour(*monitor, 300 * kMB, 300 * kMB, 6 * kMB);  // 50x
  ASSERT_TRUE(health_.Has("flash.amplification"));
  EXPECT_EQ(health_.Snapshot().problems[0].component, "flash");
  RunHour(*monitor, 60 * kMB, 60 * kMB, 6 * kMB);  // 10x: the window forgets the bad hour
  EXPECT_LT(*monitor->Report().amplification_window, 12.0);
  EXPECT_FALSE(health_.Has("flash.amplification"));
}

TEST_F(FlashWearMonitorTest, TooFewReadingsInTheWindowGiveNoAmplificationVerdict) {
  options_.warn_amplification = 2;
  options_.min_window_reading_bytes = 10 * kMB;
  env_.FeedProcessBytesWritten(0);
  auto monitor = Make();
  ASSERT_TRUE(monitor->Sample().ok());
  RunHour(*monitor, 60 * kMB, 0, 1 * kMB);  // 60x, but from 1 MB of readings
  EXPECT_DOUBLE_EQ(*monitor->Report().amplification_window, 60.0);
  EXPECT_FALSE(health_.Has("flash.amplification"));
}

TEST_F(FlashWearMonitorTest, DamagedStateFileRestartsCountingAndSaysSo) {
  ASSERT_TRUE(env_.WriteFileAtomically(dir_.PathOf(FlashWearMonitor::kStateFileName),
                                       "cairn-flash-wear 1\nprocess_bytes twelve\n")
                  .ok());
  env_.FeedProcessBytesWritten(4 * kMB);
  auto monitor = Make();
  EXPECT_TRUE(health_.Has("flash.state"));
  ASSERT_TRUE(monitor->Sample().ok());  // the first sample saves a good file
  EXPECT_FALSE(health_.Has("flash.state"));
  EXPECT_EQ(*monitor->Report().process_bytes_written, 4 * kMB);
}

TEST(FlashWearStateTest, RoundTripsAndRefusesWhatItDidNotWrite) {
  FlashWearState state;
  state.installed_unix_nanos = 1'700'000'000'000'000'000;
  state.observed_nanos = 86'400'000'000'000;
  state.process_bytes = 123;
  state.reading_bytes = 45;
  state.device_bytes = 6'789;
  state.device_name = "sda1";
  state.device_number = "8:1";
  state.device_boot_id = "5b0a8c2e";
  state.device_since_boot = 1'000;
  const std::string text = EncodeFlashWearState(state);
  Result<FlashWearState> back = DecodeFlashWearState(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->process_bytes, state.process_bytes);
  EXPECT_EQ(back->device_bytes, state.device_bytes);
  EXPECT_EQ(back->device_since_boot, state.device_since_boot);
  EXPECT_EQ(back->device_boot_id, state.device_boot_id);
  EXPECT_EQ(back->observed_nanos, state.observed_nanos);

  FlashWearState unknown;  // nothing known yet: the optional lines are absent
  Result<FlashWearState> empty = DecodeFlashWearState(EncodeFlashWearState(unknown));
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->process_bytes);
  EXPECT_FALSE(empty->device_since_boot);

  EXPECT_EQ(DecodeFlashWearState("").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(DecodeFlashWearState("cairn-flash-wear 2\n").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(DecodeFlashWearState(text + "spare 1\n").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(DecodeFlashWearState(text.substr(0, text.size() - 1)).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(DecodeFlashWearState("cairn-flash-wear 1\nobserved_nanos -5\n").status().code(),
            StatusCode::kCorruption);
}

// ---- the engine -------------------------------------------------------------

TEST(FlashWearReadingBytesTest, CountsTimestampAndFieldPayloadNotNames) {
  Record r = testing::MakeRecord(
      "a-long-device-name", "env#temperature", 1,
      {{"t", 21.5}, {"n", int64_t{3}}, {"ok", true}, {"note", std::string("abcde")}, {"at", Timestamp{7}}});
  EXPECT_EQ(ReadingBytes(r), 8u + 8 + 8 + 1 + 5 + 8);
}

class EngineFlashWearTest : public ::testing::Test {
 protected:
  EngineFlashWearTest() : clock_(Env::Default()), env_(&clock_) {
    options_.maintenance_interval_ms = 0;
    options_.flash_wear.sample_interval_ms = 0;  // every Maintain samples
    options_.flash_wear.min_observed_seconds = 60;
    options_.flash_wear.endurance_tbw = 0.000'01;  // 10 MB
    env_.FeedProcessBytesWritten(0);
    env_.FeedBlockDevice(Card(0));
  }

  void Open() {
    engine_.reset();
    auto opened = Engine::Open(&env_, dir_.path(), options_);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    engine_ = std::move(opened).value();
  }

  ScopedTempDir dir_{"cairn-engine-wear"};
  ManualClockEnv clock_;
  FedWriteCountersEnv env_;
  EngineOptions options_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(EngineFlashWearTest, StoredReadingsCountTheirBytesAndWearReachesHealth) {
  Open();
  ASSERT_TRUE(engine_->CreateTable("t", {}).ok());
  std::vector<Record> batch;
  for (int i = 0; i < 100; ++i) {
    batch.push_back(testing::MakeRecord("gw", "env", clock_.NowUnixNanos() - (i + 1) * testing::kSecond,
                                        {{"temperature", 20.0 + i}, {"label", std::string("abc")}}));
  }
  auto written = engine_->Write("t", batch);
  ASSERT_TRUE(written.ok());
  ASSERT_EQ(written->stored, 100u);
  // A retry is a duplicate: nothing new stored, no reading bytes.
  ASSERT_EQ(engine_->Write("t", batch)->duplicates, 100u);

  clock_.AdvanceSeconds(120);
  env_.AddProcessBytesWritten(40'000);
  env_.AddDeviceBytesWritten(8 * kMB);
  ASSERT_TRUE(engine_->Maintain().ok());
  FlashWearStatus s = engine_->FlashWear();
  EXPECT_EQ(s.reading_bytes, 100u * (8 + 8 + 3));
  EXPECT_DOUBLE_EQ(*s.amplification_since_install, 40'000.0 / 1'900.0);
  EXPECT_EQ(s.observed_seconds, 120);
  ASSERT_TRUE(s.projected_remaining_days);
  EXPECT_LT(*s.projected_remaining_days, 1.0);
  EngineHealth health = engine_->Health();
  EXPECT_EQ(health.level, HealthLevel::kDegraded);
  ASSERT_EQ(health.problems.size(), 1u);
  EXPECT_EQ(health.problems[0].key, "flash.life");

  // Close saves the totals; the next open goes on from them.
  ASSERT_TRUE(engine_->Close().ok());
  env_.FeedProcessBytesWritten(1'000);
  Open();
  s = engine_->FlashWear();
  EXPECT_EQ(s.reading_bytes, 1'900u);
  EXPECT_EQ(*s.process_bytes_written, 41'000u);
  EXPECT_EQ(*s.device_bytes_written, 8 * kMB);
}

}  // namespace
}  // namespace cairn
