// The clock hold's file (clock_format.md): what survives a torn append and
// what a damaged frame does.
#include <gtest/gtest.h>

#include "engine/clock/held_readings.h"

#include "engine_test_util.h"

namespace cairn::testing {
namespace {

HeldReading Held(const std::string& device, int64_t monotonic) {
  HeldReading r;
  r.table = "t";
  r.record = Temperature(device, 7 * kSecond, 21.5);
  r.record.receiver_time = true;
  r.boot_id = "boot-a";
  r.monotonic_ns = monotonic;
  r.last_trusted_ns = 1'700'000'000 * kSecond;
  return r;
}

class HeldReadingsTest : public ::testing::Test {
 protected:
  std::unique_ptr<HeldReadings> OpenOk() {
    auto held = HeldReadings::Open(Env::Default(), dir_.path());
    EXPECT_TRUE(held.ok()) << held.status().ToString();
    return held.ok() ? std::move(held).value() : nullptr;
  }
  std::string Path() { return dir_.path() + "/held.log"; }

  ScopedTempDir dir_;
};

TEST_F(HeldReadingsTest, ReadingsAndResolutionsSurviveAReopen) {
  auto held = OpenOk();
  ASSERT_TRUE(held->Append({Held("a", 5), Held("b", 6)}).ok());
  ASSERT_TRUE(held->Resolve("boot-a", BootResolution{1000, true}).ok());
  held = OpenOk();
  ASSERT_EQ(held->readings().size(), 2u);
  EXPECT_EQ(held->readings()[1].record.device_id, "b");
  EXPECT_EQ(held->readings()[1].monotonic_ns, 6);
  EXPECT_TRUE(held->readings()[1].record.receiver_time);
  ASSERT_EQ(held->resolutions().count("boot-a"), 1u);
  EXPECT_EQ(held->resolutions().at("boot-a").offset_ns, 1000);
  EXPECT_TRUE(held->resolutions().at("boot-a").estimated);

  ASSERT_TRUE(held->Rewrite({held->readings()[0]}).ok());
  held = OpenOk();
  ASSERT_EQ(held->readings().size(), 1u);
  EXPECT_EQ(held->readings()[0].record.device_id, "a");
  EXPECT_EQ(held->resolutions().count("boot-a"), 1u);  // kept: a reading of that boot remains

  ASSERT_TRUE(held->Rewrite({}).ok());
  EXPECT_FALSE(Env::Default()->FileExists(Path()));
}

TEST_F(HeldReadingsTest, ATornLastAppendIsDroppedAndTheFileCut) {
  auto held = OpenOk();
  ASSERT_TRUE(held->Append({Held("a", 5)}).ok());
  const uint64_t first_frame = *Env::Default()->FileSize(Path());
  ASSERT_TRUE(held->Append({Held("b", 6)}).ok());
  held.reset();
  auto file = Env::Default()->OpenFile(Path(), OpenMode::kReadWrite);
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Truncate(*Env::Default()->FileSize(Path()) - 3).ok());
  file->reset();

  held = OpenOk();
  ASSERT_EQ(held->readings().size(), 1u);
  EXPECT_EQ(held->readings()[0].record.device_id, "a");
  EXPECT_EQ(*Env::Default()->FileSize(Path()), first_frame);
  // The next append follows the last whole frame.
  ASSERT_TRUE(held->Append({Held("c", 7)}).ok());
  held = OpenOk();
  ASSERT_EQ(held->readings().size(), 2u);
  EXPECT_EQ(held->readings()[1].record.device_id, "c");
}

TEST_F(HeldReadingsTest, DamageBeforeTheLastFrameIsCorruptionNamingTheFile) {
  auto held = OpenOk();
  ASSERT_TRUE(held->Append({Held("a", 5)}).ok());
  ASSERT_TRUE(held->Append({Held("b", 6)}).ok());
  held.reset();
  auto file = Env::Default()->OpenFile(Path(), OpenMode::kReadWrite);
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->WriteAt(12, "\xff").ok());
  file->reset();
  auto reopened = HeldReadings::Open(Env::Default(), dir_.path());
  ASSERT_FALSE(reopened.ok());
  EXPECT_TRUE(reopened.status().Is(StatusCode::kCorruption));
  EXPECT_NE(reopened.status().message().find("held.log"), std::string::npos);
}

}  // namespace
}  // namespace cairn::testing
