#include "cairn/platform/process_signals.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

namespace cairn {
namespace {

// Blocking lasts for the rest of the test binary; that is harmless because
// nothing else in it relies on these signals' default actions.
class TerminationSignalsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(TerminationSignals::Block().ok());
    // Leftovers from a failed earlier test must not leak into this one.
    for (;;) {
      auto drained = TerminationSignals::Wait(0);
      ASSERT_TRUE(drained.ok());
      if (*drained == ProcessSignal::kNone) break;
    }
  }
};

TEST_F(TerminationSignalsTest, WaitTimesOutWithNone) {
  auto waited = TerminationSignals::Wait(30);
  ASSERT_TRUE(waited.ok()) << waited.status().ToString();
  EXPECT_EQ(*waited, ProcessSignal::kNone);
  auto polled = TerminationSignals::Wait(0);
  ASSERT_TRUE(polled.ok());
  EXPECT_EQ(*polled, ProcessSignal::kNone);
  auto negative = TerminationSignals::Wait(-1);
  ASSERT_TRUE(negative.ok());
  EXPECT_EQ(*negative, ProcessSignal::kNone);
}

TEST_F(TerminationSignalsTest, SigtermAndSigintAskForTermination) {
  ASSERT_EQ(raise(SIGTERM), 0);
  auto first = TerminationSignals::Wait(5000);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, ProcessSignal::kTerminate);

  ASSERT_EQ(raise(SIGINT), 0);
  auto second = TerminationSignals::Wait(5000);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, ProcessSignal::kTerminate);

  // Consumed: nothing is left pending.
  EXPECT_EQ(*TerminationSignals::Wait(0), ProcessSignal::kNone);
}

TEST_F(TerminationSignalsTest, SighupAsksForReload) {
  ASSERT_EQ(raise(SIGHUP), 0);
  auto waited = TerminationSignals::Wait(5000);
  ASSERT_TRUE(waited.ok());
  EXPECT_EQ(*waited, ProcessSignal::kReload);
}

TEST_F(TerminationSignalsTest, SendToSelfDeliversThroughTheSamePath) {
  ASSERT_TRUE(TerminationSignals::SendToSelf(ProcessSignal::kReload).ok());
  EXPECT_EQ(*TerminationSignals::Wait(5000), ProcessSignal::kReload);
  ASSERT_TRUE(TerminationSignals::SendToSelf(ProcessSignal::kTerminate).ok());
  EXPECT_EQ(*TerminationSignals::Wait(5000), ProcessSignal::kTerminate);
  EXPECT_TRUE(TerminationSignals::SendToSelf(ProcessSignal::kNone).Is(StatusCode::kInvalidArgument));
}

TEST_F(TerminationSignalsTest, SignalArrivingBeforeWaitIsKept) {
  ASSERT_EQ(raise(SIGTERM), 0);
  ASSERT_EQ(raise(SIGHUP), 0);
  // Both are pending; each Wait consumes one.
  ProcessSignal a = *TerminationSignals::Wait(5000);
  ProcessSignal b = *TerminationSignals::Wait(5000);
  EXPECT_NE(a, b);
  EXPECT_TRUE(a == ProcessSignal::kTerminate || a == ProcessSignal::kReload);
  EXPECT_TRUE(b == ProcessSignal::kTerminate || b == ProcessSignal::kReload);
}

TEST_F(TerminationSignalsTest, BlockedSignalsReachNewThreadsBlockedToo) {
  // A thread started after Block inherits the mask: a signal raised inside
  // it stays pending for that thread instead of killing the process.
  bool survived = false;
  std::thread worker([&] {
    raise(SIGTERM);
    auto waited = TerminationSignals::Wait(5000);
    survived = waited.ok() && *waited == ProcessSignal::kTerminate;
  });
  worker.join();
  EXPECT_TRUE(survived);
}

TEST_F(TerminationSignalsTest, BrokenPipeIsAnErrorNotDeath) {
  int pipe_ends[2];
  ASSERT_EQ(pipe(pipe_ends), 0);
  close(pipe_ends[0]);
  errno = 0;
  EXPECT_EQ(write(pipe_ends[1], "x", 1), -1);
  EXPECT_EQ(errno, EPIPE);
  close(pipe_ends[1]);
}

TEST(ProcessSignalTest, Names) {
  EXPECT_EQ(ProcessSignalName(ProcessSignal::kNone), "none");
  EXPECT_EQ(ProcessSignalName(ProcessSignal::kTerminate), "terminate");
  EXPECT_EQ(ProcessSignalName(ProcessSignal::kReload), "reload");
}

}  // namespace
}  // namespace cairn
