// Clock trust in the engine (cairn/core/clock.h), driven by the manual clock:
// a gateway booting at 1970, trust arriving, reboots before trust, clock
// steps of a year either way, wild client timestamps.
#include <algorithm>

#include <gtest/gtest.h>

#include "engine_test_util.h"

namespace cairn::testing {
namespace {

constexpr int64_t kDay = 86400 * kSecond;
constexpr int64_t kYear = 365 * kDay;
// 2027-01-15T08:00:00Z: the true time once a time source answers.
constexpr int64_t kTrueTime = int64_t{1'799'913'600} * kSecond;

// A reading as a receiver makes it for a line without a timestamp: stamped
// with the gateway's clock at arrival, marked as such.
Record Unstamped(const std::string& device, double celsius, int64_t receiver_clock) {
  Record r = Temperature(device, receiver_clock, celsius);
  r.receiver_time = true;
  return r;
}

bool HasProblem(const EngineHealth& health, std::string_view key) {
  return std::any_of(health.problems.begin(), health.problems.end(),
                     [&](const HealthProblem& p) { return p.key == key; });
}

std::vector<RecordRow> All(Engine& engine, const std::string& table = "t") {
  RangeQuery q;
  q.table = table;
  q.device_id = "d";
  q.limit = 0;
  auto rows = engine.Range(q);
  EXPECT_TRUE(rows.ok()) << rows.status().ToString();
  return rows.ok() ? rows->rows : std::vector<RecordRow>{};
}

const Value* FieldOf(const RecordRow& row, std::string_view name) {
  for (const Field& f : row.fields) {
    if (f.name == name) return &f.value;
  }
  return nullptr;
}

// Starts the engine as a gateway without RTC starts: at 1970 plus a few
// seconds, the kernel not synchronised.
class EngineClockTest : public EngineFixture {
 protected:
  void SetUp() override {
    clock_.SetUnixNanos(7 * kSecond);
    clock_.SetWallClockSynchronized(false);
    Open();
  }

  // A time source answers: the wall clock jumps to the true time and the
  // kernel reports it synchronised; the monotonic clock does not move.
  void TrustArrives(int64_t true_time = kTrueTime) {
    clock_.SetUnixNanos(true_time);
    clock_.SetWallClockSynchronized(true);
  }

  // The machine reboots: a new boot id, the monotonic clock restarts.
  void Reboot(const std::string& boot_id, int64_t wall, bool synchronized) {
    ASSERT_TRUE(engine_->Close().ok());
    clock_.SetBootId(boot_id);
    clock_.SetMonotonicNanos(3 * kSecond);
    clock_.SetUnixNanos(wall);
    clock_.SetWallClockSynchronized(synchronized);
    Open();
  }
};

TEST_F(EngineClockTest, BootAt1970HoldsUnstampedReadingsAndStampsThemExactlyWhenTrustArrives) {
  CreateTable();
  ClockStatus clock = engine_->Clock();
  EXPECT_FALSE(clock.trusted);
  EXPECT_NE(clock.reason.find("before the plausible floor"), std::string::npos) << clock.reason;

  const int64_t first_monotonic = clock_.MonotonicNanos();
  WriteResult first = WriteOk({Unstamped("d", 20.5, Now())});
  EXPECT_EQ(first.stored, 1u);
  clock_.AdvanceSeconds(10);
  const int64_t second_monotonic = clock_.MonotonicNanos();
  WriteOk({Unstamped("d", 21.0, Now())});

  // Held, not stored at a 1970 time; counted and reported.
  EXPECT_TRUE(All(*engine_).empty());
  EXPECT_EQ(engine_->Clock().held_readings, 2u);
  EXPECT_TRUE(HasProblem(engine_->Health(), "clock.untrusted"));
  EXPECT_TRUE(clock_.FileExists(dir_.path() + "/held.log"));

  // A restart in the same boot keeps them held.
  Reopen();
  EXPECT_EQ(engine_->Clock().held_readings, 2u);
  EXPECT_TRUE(All(*engine_).empty());

  clock_.AdvanceSeconds(30);
  TrustArrives();
  const int64_t offset = kTrueTime - clock_.MonotonicNanos();
  ASSERT_TRUE(engine_->Maintain().ok());

  std::vector<RecordRow> rows = All(*engine_);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].timestamp, first_monotonic + offset);
  EXPECT_EQ(rows[1].timestamp, second_monotonic + offset);
  EXPECT_EQ(rows[1].timestamp - rows[0].timestamp, 10 * kSecond);
  EXPECT_EQ(FieldOf(rows[0], kClockEstimatedField), nullptr);
  clock = engine_->Clock();
  EXPECT_TRUE(clock.trusted);
  EXPECT_EQ(clock.held_readings, 0u);
  EXPECT_EQ(clock.readings_restamped, 2u);
  EXPECT_EQ(clock.readings_estimated, 0u);
  EXPECT_FALSE(HasProblem(engine_->Health(), "clock.untrusted"));
  EXPECT_FALSE(clock_.FileExists(dir_.path() + "/held.log"));

  // Nothing is stamped twice across a restart.
  Reopen();
  EXPECT_EQ(All(*engine_).size(), 2u);

  // With trust, a reading without a timestamp is stamped at once.
  WriteOk({Unstamped("d", 22.0, Now())});
  rows = All(*engine_);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2].timestamp, Now());
}

TEST_F(EngineClockTest, ReadingsOfABootThatNeverSawTrustGetTheLastTrustedTimeAndStayFlagged) {
  // First boot: the clock is synchronised and the engine saves it at close.
  Reboot("boot-1", kTrueTime, /*synchronized=*/true);
  CreateTable();
  ASSERT_TRUE(engine_->Clock().trusted);
  const int64_t last_trusted = Now();

  // Second boot: no time source; a reading arrives 40 s after boot.
  Reboot("boot-2", 5 * kSecond, /*synchronized=*/false);
  EXPECT_FALSE(engine_->Clock().trusted);
  EXPECT_EQ(engine_->Clock().last_trusted_unix_nanos, last_trusted);
  clock_.AdvanceSeconds(37);
  const int64_t reading_monotonic = clock_.MonotonicNanos();
  WriteOk({Unstamped("d", 19.0, Now())});
  EXPECT_EQ(engine_->Clock().held_readings, 1u);

  // Third boot, a day later, synchronised: the second boot's reading can
  // only be estimated (it happened after the last trusted time).
  Reboot("boot-3", kTrueTime + kDay, /*synchronized=*/true);
  std::vector<RecordRow> rows = All(*engine_);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].timestamp, last_trusted + reading_monotonic);
  const Value* flag = FieldOf(rows[0], kClockEstimatedField);
  ASSERT_NE(flag, nullptr);
  EXPECT_EQ(*flag, Value(true));
  ClockStatus clock = engine_->Clock();
  EXPECT_EQ(clock.readings_estimated, 1u);
  EXPECT_EQ(clock.held_readings, 0u);
}

TEST_F(EngineClockTest, ARestartBeforeTrustWithoutAnyTrustedTimeKeepsWaitingThenEstimates) {
  CreateTable();
  WriteOk({Unstamped("d", 18.0, Now())});
  // Another boot, still no time source and no trusted time ever seen: there
  // is nothing to estimate from, so the reading stays held.
  Reboot("boot-2", 4 * kSecond, /*synchronized=*/false);
  EXPECT_EQ(engine_->Clock().held_readings, 1u);
  EXPECT_TRUE(All(*engine_).empty());
  // Trust in this boot: the earlier boot ended before this one started.
  clock_.AdvanceSeconds(60);
  TrustArrives();
  ASSERT_TRUE(engine_->Maintain().ok());
  std::vector<RecordRow> rows = All(*engine_);
  ASSERT_EQ(rows.size(), 1u);
  const int64_t this_boot_start = kTrueTime - clock_.MonotonicNanos();
  EXPECT_LE(rows[0].timestamp, this_boot_start);
  EXPECT_NE(FieldOf(rows[0], kClockEstimatedField), nullptr);
}

TEST_F(EngineClockTest, ClientTimestampsAreAcceptedWhileUntrustedAndJudgedOnceTrusted) {
  CreateTable();
  // Untrusted at 1970: a client's 2027 timestamp is believed.
  WriteResult untrusted = WriteOk({Temperature("d", kTrueTime, 20.0)});
  EXPECT_EQ(untrusted.stored, 1u);

  TrustArrives();
  ASSERT_TRUE(engine_->Maintain().ok());
  WriteResult far = WriteOk({Temperature("d", kTrueTime + 2 * kDay, 20.0), Temperature("d", kTrueTime + kSecond, 1)});
  ASSERT_EQ(far.records.size(), 2u);
  EXPECT_EQ(far.records[0].outcome, WriteOutcome::kInvalid);
  EXPECT_NE(far.records[0].reason.find("ahead of the gateway's trusted clock"), std::string::npos)
      << far.records[0].reason;
  EXPECT_EQ(far.records[1].outcome, WriteOutcome::kStored);
  EXPECT_EQ(engine_->Clock().timestamps_refused, 1u);
}

TEST_F(EngineClockTest, TimestampsBeforeTheHorizonAreRefusedWhateverTheClock) {
  options_.clock.horizon_unix_seconds = kTrueTime / kSecond - 3600;
  Reopen();
  CreateTable();
  WriteResult result = WriteOk({Temperature("d", kTrueTime - 2 * 3600 * kSecond, 1), Temperature("d", kTrueTime, 2)});
  EXPECT_EQ(result.records[0].outcome, WriteOutcome::kInvalid);
  EXPECT_NE(result.records[0].reason.find("before the clock horizon"), std::string::npos);
  EXPECT_EQ(result.records[1].outcome, WriteOutcome::kStored);
}

TEST_F(EngineClockTest, TheHoldIsBoundedAndSaysWhy) {
  options_.clock.max_held_readings = 2;
  Reopen();
  CreateTable();
  WriteOk({Unstamped("d", 1, Now()), Unstamped("e", 1, Now())});
  WriteResult over = WriteOk({Unstamped("f", 1, Now())});
  EXPECT_EQ(over.records[0].outcome, WriteOutcome::kInvalid);
  EXPECT_NE(over.records[0].reason.find("already wait for it"), std::string::npos) << over.records[0].reason;
  EXPECT_EQ(engine_->Clock().held_readings, 2u);
}

TEST_F(EngineClockTest, AClockBehindTheLastTrustedTimeIsNotTrusted) {
  Reboot("boot-1", kTrueTime, /*synchronized=*/true);
  // A later boot whose clock was restored to a day before what was known.
  Reboot("boot-2", kTrueTime - kDay, /*synchronized=*/false);
  ClockStatus clock = engine_->Clock();
  EXPECT_FALSE(clock.trusted);
  EXPECT_NE(clock.reason.find("behind the last trusted time"), std::string::npos) << clock.reason;
}

// The clock steps: none of them deletes data by retention or ttl wrongly, and
// period files follow the data's timestamps.
class EngineClockStepTest : public EngineFixture {
 protected:
  void SetUp() override {
    clock_.SetUnixNanos(kTrueTime);
    clock_.SetWallClockSynchronized(false);  // plausible clock, trusted by kAuto
    Open();
    TableOptions options;
    options.period = Period::kDay;
    options.retention_seconds = 7 * 86400;
    CreateTable("t", options);
    // A week of readings, one a day, each to expire in 30 days.
    for (int day = 6; day >= 0; --day) {
      Record r = Temperature("d", kTrueTime - day * kDay, 20.0 + day);
      r.ttl = (kTrueTime + 30 * kDay) / kSecond;
      WriteOk({r});
    }
    ASSERT_TRUE(engine_->SealAll().ok());
    ASSERT_TRUE(engine_->Maintain().ok());
    ASSERT_EQ(All(*engine_).size(), 7u);
  }

  size_t PeriodFiles() {
    auto files = clock_.ListDir(dir_.path() + "/t");
    EXPECT_TRUE(files.ok());
    return files.ok() ? static_cast<size_t>(std::count_if(files->begin(), files->end(),
                                                          [](const std::string& f) { return f.ends_with(".db"); }))
                      : 0;
  }
};

TEST_F(EngineClockStepTest, AYearForwardStepDeletesNothingByRetentionOrTtl) {
  ASSERT_TRUE(engine_->Clock().trusted);
  const size_t files_before = PeriodFiles();
  clock_.SetUnixNanos(kTrueTime + kYear);  // a bad RTC or operator; the kernel does not vouch
  clock_.AdvanceSeconds(60);
  ASSERT_TRUE(engine_->Maintain().ok());
  EXPECT_EQ(All(*engine_).size(), 7u);  // ttl did not hide them
  EXPECT_EQ(PeriodFiles(), files_before);
  // No file a year ahead was created for a clock nobody vouched for.
  auto files = clock_.ListDir(dir_.path() + "/t");
  ASSERT_TRUE(files.ok());
  const std::string year_ahead = PeriodFileStem(Period::kDay, kTrueTime + kYear) + ".db";
  EXPECT_EQ(std::count(files->begin(), files->end(), year_ahead), 0);
  // Readings of the real present are still accepted (retention is judged by
  // the capped clock, not the stepped one).
  WriteResult now = WriteOk({Temperature("d", kTrueTime + 90 * kSecond, 1.0)});
  EXPECT_EQ(now.stored, 1u);
  // Compaction of every closed period keeps them too.
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(engine_->Maintain().ok());
  EXPECT_EQ(All(*engine_).size(), 8u);
  // A restart on the stepped clock keeps everything: without the kernel's
  // word, deletions resume from the deletion clock saved at the stop.
  Reopen();
  EXPECT_EQ(All(*engine_).size(), 8u);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(engine_->Maintain().ok());
  EXPECT_EQ(All(*engine_).size(), 8u);
}

TEST_F(EngineClockStepTest, AYearBackwardStepDeletesNothingAndNewDataGetsItsOwnPeriods) {
  clock_.SetUnixNanos(kTrueTime - kYear);
  clock_.AdvanceSeconds(60);
  ASSERT_TRUE(engine_->Maintain().ok());
  EXPECT_EQ(All(*engine_).size(), 7u);
  // A sensor that follows the gateway's stepped clock: its readings land in
  // periods of their own timestamps, beside the existing ones.
  WriteOk({Temperature("d", kTrueTime - kYear + 60 * kSecond, 5.0)});
  ASSERT_TRUE(engine_->SealAll().ok());
  ASSERT_TRUE(engine_->Maintain().ok());
  EXPECT_EQ(All(*engine_).size(), 8u);
  EXPECT_TRUE(clock_.FileExists(dir_.path() + "/t/" + PeriodFileStem(Period::kDay, kTrueTime - kYear) + ".db"));
  // The clock comes back: retention acts on the week-old data only when due.
  clock_.SetUnixNanos(kTrueTime + 60 * kSecond);
  clock_.SetWallClockSynchronized(true);
  ASSERT_TRUE(engine_->Maintain().ok());
  std::vector<RecordRow> rows = All(*engine_);
  // The reading stamped a year back is past retention by the true clock and
  // goes; the week of real readings stays.
  EXPECT_EQ(rows.size(), 7u);
}

// Queries judge expiry by a clock that asks the kernel about its
// synchronisation at most once a second; a step of the wall clock in that
// second must not hide readings that have not expired.
TEST_F(EngineClockStepTest, AStepRightAfterAQueryDoesNotHideReadingsFromTheNextOne) {
  clock_.SetWallClockSynchronized(true);
  ASSERT_TRUE(engine_->Maintain().ok());
  ASSERT_EQ(All(*engine_).size(), 7u);  // the kernel was asked: synchronised
  ASSERT_EQ(engine_->Latest("t", "d", "env")->size(), 1u);
  clock_.SetUnixNanos(kTrueTime + kYear);  // stepped, and no longer vouched for
  clock_.SetWallClockSynchronized(false);
  EXPECT_EQ(engine_->Latest("t", "d", "env")->size(), 1u) << "the cached state let the step through";
  EXPECT_EQ(All(*engine_).size(), 7u);
  clock_.AdvanceSeconds(2);  // the next query asks the kernel again
  EXPECT_EQ(engine_->Latest("t", "d", "env")->size(), 1u);
  EXPECT_EQ(All(*engine_).size(), 7u);
  // Expiry itself still comes on time by the capped clock.
  clock_.AdvanceSeconds(31 * 86400);
  EXPECT_TRUE(engine_->Latest("t", "d", "env")->empty());
}

TEST_F(EngineClockStepTest, AnUntrustedClockDeletesNothingEvenFarAhead) {
  options_.clock.policy = ClockTrustPolicy::kNtp;
  Reopen();
  ASSERT_FALSE(engine_->Clock().trusted);
  clock_.SetUnixNanos(kTrueTime + kYear);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(engine_->Maintain().ok());
  EXPECT_EQ(All(*engine_).size(), 7u);
  EXPECT_FALSE(engine_->Clock().deletions_allowed);
}

TEST_F(EngineClockStepTest, ASynchronisedClockDeletesOnTime) {
  // The counter-check: when the kernel vouches for the clock, retention and
  // ttl act on it.
  clock_.SetWallClockSynchronized(true);
  clock_.SetUnixNanos(kTrueTime + 40 * kDay);
  ASSERT_TRUE(engine_->Maintain().ok());
  EXPECT_TRUE(All(*engine_).empty());
}

}  // namespace
}  // namespace cairn::testing
