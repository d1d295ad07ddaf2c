#include "manual_clock_env.h"

#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "test_dirs.h"

namespace cairn {
namespace {

TEST(ManualClockEnvTest, StartsAtTheChosenInstantAndStandsStill) {
  ManualClockEnv env(Env::Default(), 123'456'789);
  EXPECT_EQ(env.NowUnixNanos(), 123'456'789);
  EXPECT_EQ(env.NowUnixNanos(), 123'456'789);
  EXPECT_EQ(env.MonotonicNanos(), ManualClockEnv::kDefaultStartMonotonicNanos);

  ManualClockEnv default_start(Env::Default());
  EXPECT_EQ(default_start.NowUnixNanos(), ManualClockEnv::kDefaultStartUnixNanos);
}

TEST(ManualClockEnvTest, AdvanceMovesBothClocks) {
  ManualClockEnv env(Env::Default());
  const int64_t wall = env.NowUnixNanos();
  const int64_t mono = env.MonotonicNanos();
  env.AdvanceNanos(1500);
  EXPECT_EQ(env.NowUnixNanos(), wall + 1500);
  EXPECT_EQ(env.MonotonicNanos(), mono + 1500);
  env.AdvanceSeconds(2);
  EXPECT_EQ(env.NowUnixNanos(), wall + 1500 + 2'000'000'000);
  EXPECT_EQ(env.MonotonicNanos(), mono + 1500 + 2'000'000'000);
}

TEST(ManualClockEnvTest, SetUnixNanosJumpsTheWallClockOnly) {
  ManualClockEnv env(Env::Default());
  const int64_t mono = env.MonotonicNanos();
  env.SetUnixNanos(0);  // a gateway booting without RTC
  EXPECT_EQ(env.NowUnixNanos(), 0);
  EXPECT_EQ(env.MonotonicNanos(), mono);
  env.SetUnixNanos(ManualClockEnv::kDefaultStartUnixNanos + 86'400'000'000'000);
  EXPECT_EQ(env.NowUnixNanos(), ManualClockEnv::kDefaultStartUnixNanos + 86'400'000'000'000);
  EXPECT_EQ(env.MonotonicNanos(), mono);
}

TEST(ManualClockEnvTest, SynchronisationAndBootAreTheTestsToSet) {
  ManualClockEnv env(Env::Default());
  EXPECT_TRUE(env.WallClockSynchronized());
  EXPECT_EQ(env.BootId(), "manual-boot-1");
  env.SetWallClockSynchronized(false);
  env.SetBootId("boot-2");
  env.SetMonotonicNanos(3'000'000'000);
  EXPECT_FALSE(env.WallClockSynchronized());
  EXPECT_EQ(env.BootId(), "boot-2");
  EXPECT_EQ(env.MonotonicNanos(), 3'000'000'000);
  EXPECT_EQ(env.NowUnixNanos(), ManualClockEnv::kDefaultStartUnixNanos);  // the wall clock did not move
}

TEST(ManualClockEnvTest, SleepAdvancesInsteadOfWaiting) {
  ManualClockEnv env(Env::Default());
  const int64_t wall = env.NowUnixNanos();
  const int64_t mono = env.MonotonicNanos();
  // An hour of sleep returns at once: the test would time out otherwise.
  env.SleepForMicros(3'600'000'000);
  EXPECT_EQ(env.MonotonicNanos(), mono + 3'600'000'000'000);
  EXPECT_EQ(env.NowUnixNanos(), wall + 3'600'000'000'000);
  EXPECT_EQ(env.SleptMicros(), 3'600'000'000);
  env.SleepForMicros(0);
  env.SleepForMicros(-10);
  EXPECT_EQ(env.MonotonicNanos(), mono + 3'600'000'000'000);
}

TEST(ManualClockEnvTest, ConcurrentAdvancesAreNotLost) {
  ManualClockEnv env(Env::Default());
  const int64_t mono = env.MonotonicNanos();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&env] {
      for (int i = 0; i < 1000; ++i) env.SleepForMicros(1);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(env.MonotonicNanos(), mono + 4 * 1000 * 1000);
}

TEST(ManualClockEnvTest, EverythingElseReachesTheTarget) {
  ManualClockEnv env(Env::Default());
  ScopedTempDir dir("cairn-manual-clock");
  ASSERT_TRUE(env.WriteFileAtomically(dir.PathOf("f"), "data").ok());
  EXPECT_EQ(*Env::Default()->ReadFileToString(dir.PathOf("f")), "data");
  EXPECT_EQ(env.target(), Env::Default());
}

}  // namespace
}  // namespace cairn
