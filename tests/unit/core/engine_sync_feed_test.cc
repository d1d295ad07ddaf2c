// The sync feed (Engine::ReadChanges, SummarizeUnsynced), the ledger in the
// catalog, and the retention hold for unsynced period files.
#include <set>

#include "engine_test_util.h"

namespace cairn::testing {
namespace {

using EngineSyncFeedTest = EngineFixture;

// Reads every change of table `t` after `after` in batches of `batch`,
// checking that each batch is ascending and continues the previous one.
std::vector<std::pair<uint64_t, RecordRow>> ReadAll(Engine* engine, uint64_t after, size_t batch,
                                                    const std::string& table = "t") {
  std::vector<std::pair<uint64_t, RecordRow>> all;
  for (int rounds = 0; rounds < 100000; ++rounds) {
    auto changes = engine->ReadChanges(table, after, UINT64_MAX, batch);
    EXPECT_TRUE(changes.ok()) << changes.status().ToString();
    if (!changes.ok()) break;
    EXPECT_LE(changes->records.size(), batch);
    EXPECT_EQ(changes->records.size(), changes->lsns.size());
    for (size_t i = 0; i < changes->records.size(); ++i) {
      EXPECT_GT(changes->lsns[i], after);
      EXPECT_LE(changes->lsns[i], changes->covered_through);
      if (i > 0) {
        EXPECT_LT(changes->lsns[i - 1], changes->lsns[i]);
      }
      all.emplace_back(changes->lsns[i], changes->records[i]);
    }
    if (changes->covered_through == after) break;
    after = changes->covered_through;
  }
  return all;
}

TEST_F(EngineSyncFeedTest, ReadsEveryRecordOnceFromHeadAndChunksInLsnOrder) {
  options_.seal_records = 64;
  Reopen();
  CreateTable();
  CreateTable("other");
  // Ten interleaved series, sealed part way through, so that chunks of
  // different series overlap in LSN and the head holds the rest.
  for (int i = 0; i < 500; ++i) {
    WriteOk({Temperature("d" + std::to_string(i % 10), Now() - (1000 - i) * kSecond, i)});
    if (i % 7 == 0) WriteOk({Temperature("x", Now() - (1000 - i) * kSecond, i)}, "other");
    if (i == 300) {
      ASSERT_TRUE(engine_->SealAll().ok());
    }
  }
  for (size_t batch : {size_t{1}, size_t{7}, size_t{64}, size_t{1000}}) {
    auto all = ReadAll(engine_.get(), 0, batch);
    ASSERT_EQ(all.size(), 500u) << "batch " << batch;
    std::set<uint64_t> lsns;
    for (size_t i = 0; i < all.size(); ++i) {
      lsns.insert(all[i].first);
      const RecordRow& row = all[i].second;
      // Written in order, so LSN order is write order.
      EXPECT_EQ(row.device_id, "d" + std::to_string(i % 10));
      ASSERT_EQ(row.fields.size(), 1u);
      EXPECT_EQ(std::get<double>(row.fields[0].value), static_cast<double>(i));
    }
    EXPECT_EQ(lsns.size(), 500u);
  }
  EXPECT_EQ(ReadAll(engine_.get(), 0, 50, "other").size(), 72u);
  // Reading from the middle returns exactly the later records.
  auto all = ReadAll(engine_.get(), 0, 1000);
  auto tail = ReadAll(engine_.get(), all[249].first, 1000);
  ASSERT_EQ(tail.size(), 250u);
  EXPECT_EQ(tail.front().first, all[250].first);
}

TEST_F(EngineSyncFeedTest, SealedChunksKeepEachRecordsLsnThroughCompaction) {
  TableOptions options;
  options.period = Period::kHour;
  CreateTable("t", options);
  const int64_t hour_ago = PeriodStart(Period::kHour, Now()) - 3600 * kSecond;
  for (int i = 0; i < 200; ++i)
    WriteOk({Temperature("d" + std::to_string(i % 3), hour_ago + i * kSecond, i)});
  auto before = ReadAll(engine_.get(), 0, 1000);
  ASSERT_TRUE(engine_->SealAll().ok());
  clock_.AdvanceSeconds(3 * 3600);
  ASSERT_TRUE(engine_->Maintain().ok());  // compacts the closed hour
  Reopen();
  auto after = ReadAll(engine_.get(), 0, 1000);
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(after[i].first, before[i].first);
    EXPECT_EQ(after[i].second.timestamp, before[i].second.timestamp);
  }
}

TEST_F(EngineSyncFeedTest, EmptyRangesAreCoveredAndUnknownTablesRefused) {
  CreateTable();
  CreateTable("other");
  WriteOk({Temperature("x", Now(), 1)}, "other");
  WriteOk({Temperature("d", Now(), 2)});
  auto changes = engine_->ReadChanges("t", 0, 1, 10);
  ASSERT_TRUE(changes.ok());
  EXPECT_TRUE(changes->records.empty());
  EXPECT_EQ(changes->covered_through, 1u);
  // Nothing beyond the last acknowledged LSN is ever covered.
  changes = engine_->ReadChanges("t", 0, 1'000'000, 10);
  ASSERT_TRUE(changes.ok());
  EXPECT_EQ(changes->records.size(), 1u);
  EXPECT_EQ(changes->covered_through, engine_->Stats().last_lsn);
  EXPECT_TRUE(engine_->ReadChanges("missing", 0, 10, 10).status().Is(StatusCode::kNotFound));
  EXPECT_TRUE(engine_->ReadChanges("t", 0, 10, 0).status().Is(StatusCode::kInvalidArgument));
}

TEST_F(EngineSyncFeedTest, LedgerRoundTripsAndGoesWithItsTable) {
  CreateTable();
  SyncLedger ledger;
  ledger.table = "t";
  ledger.confirmed = LsnRangeSet({{1, 10}, {20, 30}});
  ledger.next_sequence = {{SyncLane::kLive, 7}, {SyncLane::kBackfill, 3}};
  SyncBatchState batch;
  batch.lane = SyncLane::kBackfill;
  batch.sequence = 2;
  batch.first_lsn = 11;
  batch.last_lsn = 19;
  batch.records = 9;
  batch.bytes = 123;
  batch.first_sent_unix_ns = 42;
  batch.attempts = 3;
  batch.last_error = "no receipt within 30000 ms";
  ledger.in_flight = {batch};
  ASSERT_TRUE(engine_->SaveSyncLedger(ledger).ok());
  Reopen();
  auto loaded = engine_->LoadSyncLedgers();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0], ledger);
  // LSNs the ledger names are never handed out again.
  EXPECT_GE(engine_->Stats().last_lsn, 30u);
  EXPECT_TRUE(engine_->SaveSyncLedger(SyncLedger{"missing", {}, {}, {}}).Is(StatusCode::kNotFound));
  ASSERT_TRUE(engine_->DropTable("t").ok());
  loaded = engine_->LoadSyncLedgers();
  ASSERT_TRUE(loaded.ok());
  EXPECT_TRUE(loaded->empty());
}

TEST_F(EngineSyncFeedTest, SummarizeCountsWhatIsOutsideTheConfirmedSet) {
  options_.seal_records = 32;
  Reopen();
  CreateTable();
  for (int i = 0; i < 100; ++i)
    WriteOk({Temperature("d" + std::to_string(i % 4), Now() - (200 - i) * kSecond, i)});
  ASSERT_TRUE(engine_->SealAll().ok());
  for (int i = 100; i < 150; ++i) WriteOk({Temperature("d0", Now() - (200 - i) * kSecond, i)});
  auto all = ReadAll(engine_.get(), 0, 1000);
  ASSERT_EQ(all.size(), 150u);
  auto summary = engine_->SummarizeUnsynced("t", LsnRangeSet());
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->records, 150u);
  EXPECT_GT(summary->bytes, 0u);
  EXPECT_EQ(summary->oldest_timestamp, all[0].second.timestamp);
  // Confirm the first 40 and the last 10 written.
  LsnRangeSet confirmed({{1, all[39].first}, {all[140].first, all[149].first}});
  summary = engine_->SummarizeUnsynced("t", confirmed);
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->records, 100u);
  confirmed.Add(1, engine_->Stats().last_lsn);
  summary = engine_->SummarizeUnsynced("t", confirmed);
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->records, 0u);
  EXPECT_EQ(summary->bytes, 0u);
}

TEST_F(EngineSyncFeedTest, RetentionWaitsForSyncWhenAsked) {
  options_.retention_waits_for_sync = true;
  Reopen();
  TableOptions options;
  options.period = Period::kHour;
  options.retention_seconds = 3600;
  CreateTable("t", options);
  WriteOk({Temperature("d", Now() - kSecond, 1)});
  ASSERT_TRUE(engine_->SealAll().ok());
  clock_.AdvanceSeconds(3 * 3600);
  ASSERT_TRUE(engine_->Maintain().ok());
  // Unsynced: the file stays, the record is readable and held for archive.
  auto all = ReadAll(engine_.get(), 0, 10);
  ASSERT_EQ(all.size(), 1u);
  auto summary = engine_->SummarizeUnsynced("t", LsnRangeSet());
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->held_for_archive, 1u);
  // Confirmed: the next round drops it.
  SyncLedger ledger;
  ledger.table = "t";
  ledger.confirmed = LsnRangeSet({{1, engine_->Stats().last_lsn}});
  ASSERT_TRUE(engine_->SaveSyncLedger(ledger).ok());
  ASSERT_TRUE(engine_->Maintain().ok());
  EXPECT_TRUE(ReadAll(engine_.get(), 0, 10).empty());
}

}  // namespace
}  // namespace cairn::testing
