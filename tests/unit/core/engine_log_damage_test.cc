// A flipped byte in the log, from the outside (the segment file on disk), and
// what the engine makes of it: damage among records already sealed into
// period files costs nothing and needs no repair; damage among unsealed
// records stops the start until the repair, which loses only the damaged
// record's readings, keeps the intact ones after it, and says which of the
// lost readings the cloud already holds.
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/core/engine.h"

#include "engine_test_util.h"
#include "log/log_format.h"

namespace cairn::testing {
namespace {

class EngineLogDamageTest : public EngineFixture {
 protected:
  void SetUp() override {
    options_.seal_records = 30;
    EngineFixture::SetUp();
    CreateTable();
    // LSNs 1-30 device a, 31-35 device b, 36-65 device a, one write each:
    // one log record per LSN.
    for (int i = 0; i < 65; ++i) {
      const std::string device = i >= 30 && i < 35 ? "b" : "a";
      WriteOk({Temperature(device, Now() - (1000 - i) * kSecond, i)});
    }
    // Device a's head is full and sealed; b's five readings hold the
    // checkpoint at LSN 31, so the sealed LSNs 1-30 are still in the log.
    ASSERT_TRUE(engine_->Maintain().ok());
    ASSERT_EQ(engine_->Stats().checkpoint_lsn, 31u);
    ASSERT_EQ(engine_->Stats().head_records, 5u);
    ASSERT_TRUE(engine_->Close().ok());
    engine_.reset();
  }

  // Flips one payload byte of the log record holding `lsn` (every record
  // holds one LSN here), in the segment file on disk.
  void FlipRecordOf(uint64_t lsn) {
    auto names = clock_.ListDir(dir_.PathOf("log"));
    ASSERT_TRUE(names.ok());
    for (const std::string& name : *names) {
      const std::string path = dir_.PathOf("log/" + name);
      auto contents = clock_.ReadFileToString(path);
      ASSERT_TRUE(contents.ok());
      const log_format::SegmentHeader header = log_format::DecodeSegmentHeader(*contents);
      ASSERT_EQ(header.state, log_format::SegmentHeader::State::kValid) << name;
      for (size_t offset = header.size; offset + log_format::kRecordHeaderSize <= contents->size();) {
        const log_format::RecordHeader record =
            log_format::DecodeRecordHeader(std::string_view(*contents).substr(offset));
        if (record.first_lsn == lsn) {
          std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
          const auto at = static_cast<std::streamoff>(offset + log_format::kRecordHeaderSize + 3);
          file.seekp(at);
          file.put(static_cast<char>((*contents)[static_cast<size_t>(at)] ^ 0x21));
          ASSERT_TRUE(file.good());
          return;
        }
        offset += log_format::kRecordHeaderSize + record.payload_length;
      }
    }
    FAIL() << "no log record holds LSN " << lsn;
  }

  size_t Rows(const std::string& device) {
    RangeQuery query;
    query.table = "t";
    query.device_id = device;
    query.limit = 0;
    auto rows = engine_->Range(query);
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    return rows.ok() ? rows->rows.size() : 0;
  }
};

TEST_F(EngineLogDamageTest, DamageAmongSealedRecordsIsSteppedOverWithoutLoss) {
  FlipRecordOf(5);
  Open();
  EXPECT_GT(recovery_.sealed_damage_bytes_skipped, 0u);
  EXPECT_EQ(Rows("a"), 60u);
  EXPECT_EQ(Rows("b"), 5u);
  // Once everything is sealed, the damaged segment leaves the log.
  ASSERT_TRUE(engine_->SealAll().ok());
  ASSERT_TRUE(engine_->Close().ok());
  Open();
  EXPECT_EQ(recovery_.sealed_damage_bytes_skipped, 0u);
  EXPECT_EQ(Rows("a"), 60u);
  EXPECT_EQ(Rows("b"), 5u);
}

TEST_F(EngineLogDamageTest, RepairLosesOnlyTheDamagedReadingAndKeepsTheIntactOnesAfterIt) {
  // The cloud confirmed LSNs 1-32 before the damage.
  {
    Open();
    SyncLedger ledger;
    ledger.table = "t";
    ledger.confirmed.Add(1, 32);
    ASSERT_TRUE(engine_->SaveSyncLedger(ledger).ok());
    ASSERT_TRUE(engine_->Close().ok());
    engine_.reset();
  }
  FlipRecordOf(33);  // device b's third reading: not sealed
  auto refused = Engine::Open(&clock_, dir_.path(), options_);
  ASSERT_TRUE(refused.status().Is(StatusCode::kCorruption)) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find(dir_.PathOf("log") + "/"), std::string::npos)
      << refused.status().message();

  Result<LogRepairReport> report = Engine::RepairLog(&clock_, dir_.path());
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->readings_lost, 1u);
  ASSERT_EQ(report->lost_lsns.size(), 1u);
  EXPECT_EQ(report->lost_lsns[0], (LsnRange{33, 33}));
  EXPECT_EQ(report->readings_lost_already_synced, 0u);
  EXPECT_EQ(report->readings_kept_after_damage, 65u - 33u);
  EXPECT_FALSE(report->actions.empty());
  EXPECT_TRUE(report->note.empty()) << report->note;

  Open();
  EXPECT_EQ(Rows("a"), 60u);
  EXPECT_EQ(Rows("b"), 4u);
  WriteOk({Temperature("b", Now(), 1.0)});
  ASSERT_TRUE(engine_->Close().ok());
  engine_.reset();
  Result<LogRepairReport> again = Engine::RepairLog(&clock_, dir_.path());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->readings_lost, 0u);
  EXPECT_TRUE(again->actions.empty());
}

TEST_F(EngineLogDamageTest, RepairSaysWhichLostReadingsTheCloudAlreadyHolds) {
  {
    Open();
    SyncLedger ledger;
    ledger.table = "t";
    ledger.confirmed.Add(1, 34);
    ASSERT_TRUE(engine_->SaveSyncLedger(ledger).ok());
    ASSERT_TRUE(engine_->Close().ok());
    engine_.reset();
  }
  FlipRecordOf(32);
  FlipRecordOf(35);
  Result<LogRepairReport> report = Engine::RepairLog(&clock_, dir_.path());
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->readings_lost, 2u);
  EXPECT_EQ(report->readings_lost_already_synced, 1u);
}

// A segment holding unsealed readings deleted from the outside: the start
// refuses rather than coming up without them.
TEST_F(EngineLogDamageTest, AMissingSegmentAboveTheCheckpointStopsTheStart) {
  Open();
  WriteOk({Temperature("b", Now(), 1.0)});
  ASSERT_TRUE(engine_->Close().ok());
  engine_.reset();
  ASSERT_TRUE(clock_.RemoveFile(dir_.PathOf("log/" + log_format::SegmentFileName(1))).ok());
  auto refused = Engine::Open(&clock_, dir_.path(), options_);
  ASSERT_TRUE(refused.status().Is(StatusCode::kCorruption)) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("missing"), std::string::npos) << refused.status().message();
}

TEST_F(EngineLogDamageTest, RepairRefusesWhileTheEngineIsOpen) {
  Open();
  EXPECT_TRUE(Engine::RepairLog(&clock_, dir_.path()).status().Is(StatusCode::kBusy));
}

}  // namespace
}  // namespace cairn::testing
