// Damaged period files, from the outside (the bytes on disk), and what the
// engine makes of them: a damaged chunk is stepped over by queries, which
// say so, and raised in health; a file that cannot be opened is moved into
// the quarantine at open while the rest is served; Engine::Verify finds
// both, its repair takes the damage out without deleting anything and
// counts the readings lost.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/core/engine.h"

#include "engine_test_util.h"

namespace cairn::testing {
namespace {

namespace fs = std::filesystem;

constexpr int kReadings = 10;

class EngineDamageTest : public EngineFixture {
 protected:
  void SetUp() override {
    EngineFixture::SetUp();
    CreateTable();
    old_ = Now() - 2 * 86400 * kSecond;
    for (int i = 0; i < kReadings; ++i) WriteOk({Temperature("a", old_ + i * kSecond, i)});
    for (int i = 0; i < kReadings; ++i) WriteOk({Temperature("a", Now() - (100 - i) * kSecond, 100 + i)});
    ASSERT_TRUE(engine_->SealAll().ok());
    ASSERT_TRUE(engine_->Close().ok());
    engine_.reset();
    old_file_ = dir_.PathOf("t/" + PeriodFileStem(Period::kDay, PeriodStart(Period::kDay, old_)) + ".db");
    ASSERT_TRUE(fs::exists(old_file_));
  }

  // XORs 8 bytes of `path` at `offset` (or inside the first chunk's bytes
  // when offset is negative: magic "CK", version 1).
  void Flip(const std::string& path, long offset) {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    size_t at = static_cast<size_t>(offset);
    if (offset < 0) {
      at = bytes.find(std::string("CK\x01", 3));
      ASSERT_NE(at, std::string::npos);
      at += 24;
    }
    for (size_t i = at; i < at + 8; ++i) bytes[i] = static_cast<char>(bytes[i] ^ 0x5a);
    file.seekp(0);
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  RangeResult RangeAll() {
    RangeQuery query;
    query.table = "t";
    query.device_id = "a";
    query.limit = 0;
    auto result = engine_->Range(query);
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    return result.ok() ? std::move(result).value() : RangeResult{};
  }

  bool HealthHas(const std::string& key_prefix) {
    for (const HealthProblem& problem : engine_->Health().problems) {
      if (problem.key.starts_with(key_prefix)) return true;
    }
    return false;
  }

  int64_t old_ = 0;
  std::string old_file_;
};

TEST_F(EngineDamageTest, ADamagedChunkIsSkippedFlaggedAndRaisedInHealth) {
  Flip(old_file_, -1);
  Open();
  const RangeResult range = RangeAll();
  ASSERT_EQ(range.rows.size(), static_cast<size_t>(kReadings));  // the intact period
  EXPECT_EQ(std::get<double>(range.rows.front().fields.front().value), 100.0);
  ASSERT_EQ(range.skipped.size(), 1u);
  EXPECT_EQ(range.skipped[0].file, old_file_);
  EXPECT_EQ(range.skipped[0].readings, static_cast<uint64_t>(kReadings));
  EXPECT_TRUE(range.skipped[0].where.starts_with("chunk of series ")) << range.skipped[0].where;
  EXPECT_EQ(engine_->Health().level, HealthLevel::kDegraded);
  EXPECT_TRUE(HealthHas("period.damaged:t/" + fs::path(old_file_).filename().string()));

  // A limited read goes through the period in windows: the damaged chunk is
  // still named once.
  RangeQuery page;
  page.table = "t";
  page.device_id = "a";
  page.limit = 5;
  auto limited = engine_->Range(page);
  ASSERT_TRUE(limited.ok()) << limited.status().ToString();
  EXPECT_EQ(limited->rows.size(), 5u);
  EXPECT_EQ(limited->skipped.size(), 1u);

  // An aggregate across buckets reads the records and says what it missed.
  AggregateQuery agg;
  agg.table = "t";
  agg.device_id = "a";
  agg.measure_name = "env";
  agg.field = "temperature";
  agg.from = old_;
  agg.to = Now();
  agg.step = kSecond;
  agg.functions = {AggregateFunction::kCount};
  auto buckets = engine_->Aggregate(agg);
  ASSERT_TRUE(buckets.ok()) << buckets.status().ToString();
  EXPECT_EQ(buckets->buckets.size(), static_cast<size_t>(kReadings));
  EXPECT_FALSE(buckets->skipped.empty());
}

TEST_F(EngineDamageTest, AFileThatCannotBeOpenedIsQuarantinedAndTheRestServed) {
  Flip(old_file_, 0);  // the SQLite header's magic
  Open();
  ASSERT_EQ(recovery_.quarantined.size(), 1u);
  EXPECT_EQ(recovery_.quarantined[0].path, old_file_);
  const std::string moved = dir_.PathOf("quarantine/t/" + fs::path(old_file_).filename().string());
  EXPECT_EQ(recovery_.quarantined[0].moved_to, moved);
  EXPECT_TRUE(fs::exists(moved));
  EXPECT_FALSE(fs::exists(old_file_));
  EXPECT_EQ(RangeAll().rows.size(), static_cast<size_t>(kReadings));
  const std::string key = "period.quarantined:t/" + fs::path(old_file_).filename().string();
  EXPECT_TRUE(HealthHas(key));
  // Still reported after a restart, until an operator empties the quarantine.
  Reopen();
  EXPECT_TRUE(recovery_.quarantined.empty());
  EXPECT_TRUE(HealthHas(key));
  ASSERT_TRUE(engine_->Close().ok());
  fs::remove(moved);
  Open();
  EXPECT_EQ(engine_->Health().level, HealthLevel::kOk);
}

TEST_F(EngineDamageTest, VerifyFindsADamagedChunkAndItsRepairCountsTheLoss) {
  auto clean = Engine::Verify(&clock_, dir_.path(), /*repair=*/false);
  ASSERT_TRUE(clean.ok()) << clean.status().ToString();
  EXPECT_FALSE(clean->damaged());

  Flip(old_file_, -1);
  auto found = Engine::Verify(&clock_, dir_.path(), /*repair=*/false);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  ASSERT_TRUE(found->damaged());
  for (const VerifiedFile& file : found->files) {
    if (file.path != old_file_) {
      EXPECT_FALSE(file.damaged()) << file.path;
      continue;
    }
    ASSERT_EQ(file.problems.size(), 1u);
    EXPECT_EQ(file.readings_affected, std::optional<uint64_t>(kReadings));
    EXPECT_TRUE(file.actions.empty());
  }

  auto repaired = Engine::Verify(&clock_, dir_.path(), /*repair=*/true);
  ASSERT_TRUE(repaired.ok()) << repaired.status().ToString();
  bool unknown = false;
  EXPECT_EQ(repaired->ReadingsLost(&unknown), static_cast<uint64_t>(kReadings));
  EXPECT_FALSE(unknown);
  const std::string copy = dir_.PathOf("quarantine/t/" + fs::path(old_file_).stem().string() +
                                       ".before-repair.db");
  EXPECT_TRUE(fs::exists(copy)) << "the file as it was is kept";

  auto after = Engine::Verify(&clock_, dir_.path(), /*repair=*/false);
  ASSERT_TRUE(after.ok());
  EXPECT_FALSE(after->damaged());
  Open();
  const RangeResult range = RangeAll();
  EXPECT_EQ(range.rows.size(), static_cast<size_t>(kReadings));
  EXPECT_TRUE(range.skipped.empty());
}

TEST_F(EngineDamageTest, VerifyRefusesWhileTheEngineHasTheDirectory) {
  Open();
  auto refused = Engine::Verify(&clock_, dir_.path(), /*repair=*/true);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(refused.status().Is(StatusCode::kBusy)) << refused.status().ToString();
}

}  // namespace
}  // namespace cairn::testing
