#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>

#include "engine_test_util.h"

namespace cairn::testing {
namespace {

using EngineWriteTest = EngineFixture;

TEST_F(EngineWriteTest, StoresAndReadsBackOneRecord) {
  CreateTable();
  const int64_t ts = Now() - 10 * kSecond;
  Record r = MakeRecord("dev-1", "env", ts,
                        {{"temperature", 21.5},
                         {"count", int64_t{7}},
                         {"ok", true},
                         {"note", std::string("a\0b", 3)},
                         {"seen", Timestamp{ts - 5}}});
  WriteResult w = WriteOk({r});
  ASSERT_EQ(w.records.size(), 1u);
  EXPECT_EQ(w.records[0].outcome, WriteOutcome::kStored);
  EXPECT_EQ(w.stored, 1u);
  EXPECT_GT(w.first_lsn, 0u);

  auto got = engine_->Get("t", "dev-1", "env", ts);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_TRUE(got->has_value());
  const RecordRow& row = **got;
  EXPECT_EQ(row.timestamp, ts);
  ASSERT_EQ(row.fields.size(), 5u);  // sorted by name
  EXPECT_EQ(row.fields[0].name, "count");
  EXPECT_EQ(std::get<int64_t>(row.fields[0].value), 7);
  EXPECT_EQ(row.fields[1].name, "note");
  EXPECT_EQ(std::get<std::string>(row.fields[1].value), std::string("a\0b", 3));
  EXPECT_EQ(std::get<bool>(row.fields[2].value), true);
  EXPECT_EQ(std::get<Timestamp>(row.fields[3].value).unix_nanos, ts - 5);
  EXPECT_EQ(std::get<double>(row.fields[4].value), 21.5);
}

TEST_F(EngineWriteTest, VersionRulesPerRecord) {
  CreateTable();
  const int64_t ts = Now() - kSecond;
  WriteOk({Temperature("d", ts, 20.0, 5)});
  WriteResult w =
      WriteOk({Temperature("d", ts, 20.0, 5), Temperature("d", ts, 19.0, 4), Temperature("d", ts, 22.0, 6)});
  EXPECT_EQ(w.records[0].outcome, WriteOutcome::kDuplicate);
  EXPECT_EQ(w.records[1].outcome, WriteOutcome::kRejectedVersion);
  EXPECT_NE(w.records[1].reason.find("lower than the stored version 5"), std::string::npos)
      << w.records[1].reason;
  EXPECT_EQ(w.records[2].outcome, WriteOutcome::kStored);
  auto got = engine_->Get("t", "d", "env", ts);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->version, 6u);
  EXPECT_EQ(std::get<double>((*got)->fields[0].value), 22.0);
}

TEST_F(EngineWriteTest, VersionRulesHoldAgainstSealedChunksAndAfterReopen) {
  CreateTable();
  const int64_t ts = Now() - kSecond;
  WriteOk({Temperature("d", ts, 20.0, 3)});
  ASSERT_TRUE(engine_->SealAll().ok());
  WriteResult w = WriteOk({Temperature("d", ts, 20.0, 3), Temperature("d", ts, 1.0, 2)});
  EXPECT_EQ(w.records[0].outcome, WriteOutcome::kDuplicate);
  EXPECT_EQ(w.records[1].outcome, WriteOutcome::kRejectedVersion);
  Reopen();
  w = WriteOk({Temperature("d", ts, 20.0, 3), Temperature("d", ts, 30.0, 4)});
  EXPECT_EQ(w.records[0].outcome, WriteOutcome::kDuplicate);
  EXPECT_EQ(w.records[1].outcome, WriteOutcome::kStored);
  RangeQuery q;
  q.table = "t";
  q.device_id = "d";
  auto range = engine_->Range(q);
  ASSERT_TRUE(range.ok());
  ASSERT_EQ(range->rows.size(), 1u);  // one identity, the highest version
  EXPECT_EQ(range->rows[0].version, 4u);
}

TEST_F(EngineWriteTest, InvalidRecordsGetReasonsAndValidOnesAreStored) {
  CreateTable();
  const int64_t ts = Now();
  std::vector<Record> batch = {
      Temperature("ok", ts, 1.0),
      Temperature("nan", ts, NAN),
      Temperature("inf", ts, -INFINITY),
      Temperature("", ts, 1.0),
      Temperature("ctl\x01", ts, 1.0),
      Temperature(std::string(129, 'x'), ts, 1.0),
      Temperature("bad-utf8-\xC0\xAF", ts, 1.0),
      Temperature("old", ts - 31 * 86400 * kSecond, 1.0),
      Temperature("future", ts + 2 * 86400 * kSecond, 1.0),
      MakeRecord("nofields", "env", ts, {}),
      MakeRecord("dupfield", "env", ts, {{"a", 1.0}, {"a", 2.0}}),
      MakeRecord("bigstring", "env", ts, {{"s", std::string(4097, 'x')}}),
  };
  WriteResult w = WriteOk(batch);
  EXPECT_EQ(w.stored, 1u);
  EXPECT_EQ(w.invalid, batch.size() - 1);
  EXPECT_EQ(w.records[0].outcome, WriteOutcome::kStored);
  for (size_t i = 1; i < batch.size(); ++i) {
    EXPECT_EQ(w.records[i].outcome, WriteOutcome::kInvalid) << i;
    EXPECT_FALSE(w.records[i].reason.empty()) << i;
  }
  EXPECT_NE(w.records[1].reason.find("NaN"), std::string::npos);
  EXPECT_NE(w.records[2].reason.find("infinite"), std::string::npos);
  EXPECT_NE(w.records[7].reason.find("retention"), std::string::npos);
  auto devices = engine_->ListDevices("t");
  ASSERT_TRUE(devices.ok());
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].device_id, "ok");
}

TEST_F(EngineWriteTest, FieldTypeConflictIsRejectedPerRecord) {
  CreateTable();
  WriteOk({MakeRecord("d", "m", Now() - 2 * kSecond, {{"x", 1.0}})});
  WriteResult w = WriteOk({MakeRecord("d", "m", Now() - kSecond, {{"x", std::string("text")}})});
  EXPECT_EQ(w.records[0].outcome, WriteOutcome::kInvalid);
  EXPECT_NE(w.records[0].reason.find("field 'x' is double"), std::string::npos) << w.records[0].reason;
}

TEST_F(EngineWriteTest, UnknownTableFailsTheCall) {
  auto w = engine_->Write("missing", {Temperature("d", Now(), 1.0)});
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kNotFound);
}

TEST_F(EngineWriteTest, TablesCreateAlterListDrop) {
  TableOptions options;
  options.period = Period::kHour;
  options.retention_seconds = 7200;
  CreateTable("a", options);
  CreateTable("b");
  EXPECT_EQ(engine_->CreateTable("a", {}).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(engine_->CreateTable("bad/name", {}).code(), StatusCode::kInvalidArgument);
  TableOptions sharded;
  sharded.shards = 4;
  EXPECT_EQ(engine_->CreateTable("c", sharded).code(), StatusCode::kInvalidArgument);
  options.retention_seconds = 3600 * 5;
  ASSERT_TRUE(engine_->AlterTable("a", options).ok());
  WriteOk({Temperature("d", Now(), 1.0)}, "a");
  TableOptions daily = options;
  daily.period = Period::kDay;
  EXPECT_EQ(engine_->AlterTable("a", daily).code(), StatusCode::kInvalidArgument);
  Reopen();
  auto tables = engine_->ListTables();
  ASSERT_TRUE(tables.ok());
  ASSERT_EQ(tables->size(), 2u);
  EXPECT_EQ((*tables)[0].name, "a");
  EXPECT_EQ((*tables)[0].options.retention_seconds, 3600 * 5);
  EXPECT_EQ((*tables)[0].options.period, Period::kHour);
  ASSERT_TRUE(engine_->SealAll().ok());
  ASSERT_TRUE(engine_->DropTable("a").ok());
  EXPECT_FALSE(clock_.FileExists(dir_.PathOf("a")));
  EXPECT_EQ(engine_->GetTable("a").status().code(), StatusCode::kNotFound);
  Reopen();  // the log still holds a's records: replay must skip them
  EXPECT_EQ(engine_->GetTable("a").status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(engine_->GetTable("b").ok());
}

TEST_F(EngineWriteTest, ConcurrentWritersAllLand) {
  CreateTable();
  constexpr int kThreads = 4, kBatches = 50, kPerBatch = 20;
  const int64_t base = Now() - 3600 * kSecond;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int b = 0; b < kBatches; ++b) {
        std::vector<Record> batch;
        for (int i = 0; i < kPerBatch; ++i) {
          batch.push_back(
              Temperature("dev-" + std::to_string(t), base + (b * kPerBatch + i) * kSecond, b + i * 0.5));
        }
        auto w = engine_->Write("t", batch);
        ASSERT_TRUE(w.ok());
        ASSERT_EQ(w->stored, static_cast<size_t>(kPerBatch));
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(engine_->Stats().records_written, static_cast<uint64_t>(kThreads * kBatches * kPerBatch));
  Reopen();
  for (int t = 0; t < kThreads; ++t) {
    RangeQuery q;
    q.table = "t";
    q.device_id = "dev-" + std::to_string(t);
    q.limit = 0;
    auto range = engine_->Range(q);
    ASSERT_TRUE(range.ok());
    EXPECT_EQ(range->rows.size(), static_cast<size_t>(kBatches * kPerBatch));
  }
}

TEST_F(EngineWriteTest, SecondOpenOfTheSameDirectoryIsBusy) {
  auto second = Engine::Open(&clock_, dir_.path(), options_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kBusy);
  EXPECT_NE(second.status().message().find("in use"), std::string::npos);
}

TEST_F(EngineWriteTest, DurabilityModesAcknowledgeAndRecover) {
  for (Durability mode : {Durability::kInterval, Durability::kOff}) {
    ASSERT_TRUE(engine_->Close().ok());
    engine_.reset();
    ScopedTempDir other;
    EngineOptions options = options_;
    options.durability = mode;
    options.sync_interval_ms = 5;
    auto opened = Engine::Open(&clock_, other.path(), options);
    ASSERT_TRUE(opened.ok());
    ASSERT_TRUE((*opened)->CreateTable("t", {}).ok());
    auto w = (*opened)->Write("t", {Temperature("d", Now(), 1.5)});
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*opened)->Close().ok());
    opened = Engine::Open(&clock_, other.path(), options);
    ASSERT_TRUE(opened.ok());
    auto latest = (*opened)->Latest("t", "d");
    ASSERT_TRUE(latest.ok());
    ASSERT_EQ(latest->size(), 1u);
    ASSERT_TRUE((*opened)->Close().ok());
    opened.value().reset();
    Open();
  }
}

}  // namespace
}  // namespace cairn::testing

namespace cairn::testing {
namespace {

TEST_F(EngineWriteTest, DroppingATableWhileOthersWriteToItIsSafe) {
  CreateTable("victim");
  CreateTable("other");
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int t = 0; t < 3; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; !stop && i < 2000; ++i) {
        auto w =
            engine_->Write(t == 0 ? "other" : "victim", {Temperature("d" + std::to_string(t), Now() - i, i)});
        // Either stored, or the table is gone: never anything else.
        if (!w.ok()) {
          ASSERT_EQ(w.status().code(), StatusCode::kNotFound) << w.status().ToString();
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(engine_->DropTable("victim").ok());
  stop = true;
  for (auto& th : writers) th.join();
  EXPECT_EQ(engine_->GetTable("victim").status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(engine_->GetTable("other").ok());
  Reopen();
  EXPECT_EQ(engine_->GetTable("victim").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace cairn::testing

namespace cairn::testing {
namespace {

// Writers, readers and the background sealer at once, on the real clock:
// every query sees only whole, correctly versioned records, and at the end
// everything written is there exactly once.
TEST(EngineConcurrencyTest, WritersReadersAndSealerShareTheEngine) {
  ScopedTempDir dir;
  EngineOptions options;
  options.seal_records = 64;  // many seals while the test runs
  options.maintenance_interval_ms = 5;
  auto opened = Engine::Open(Env::Default(), dir.path(), options);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<Engine> engine = std::move(opened).value();
  ASSERT_TRUE(engine->CreateTable("t", {}).ok());
  const int64_t base = Env::Default()->NowUnixNanos() - 3600 * kSecond;
  constexpr int kWriters = 3, kBatches = 40, kPerBatch = 25;
  std::atomic<int> writers_left{kWriters};
  std::vector<std::thread> threads;
  for (int t = 0; t < kWriters; ++t) {
    threads.emplace_back([&, t] {
      for (int b = 0; b < kBatches; ++b) {
        std::vector<Record> batch;
        for (int i = 0; i < kPerBatch; ++i) {
          const int n = b * kPerBatch + i;
          // Every record is written twice: version 0, then version 1 with value n.
          batch.push_back(Temperature("dev-" + std::to_string(t), base + n * kSecond, -1.0, 0));
          batch.push_back(Temperature("dev-" + std::to_string(t), base + n * kSecond, n, 1));
        }
        auto w = engine->Write("t", batch);
        ASSERT_TRUE(w.ok()) << w.status().ToString();
      }
      --writers_left;
    });
  }
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      while (writers_left > 0) {
        RangeQuery q;
        q.table = "t";
        q.device_id = "dev-" + std::to_string(r);
        q.limit = 0;
        auto range = engine->Range(q);
        ASSERT_TRUE(range.ok()) << range.status().ToString();
        int64_t previous = INT64_MIN;
        for (const RecordRow& row : range->rows) {
          ASSERT_GT(row.timestamp, previous);  // ordered, one row per timestamp
          previous = row.timestamp;
          ASSERT_EQ(row.version, 1u);  // both versions are in one batch: never the old one
          ASSERT_EQ(std::get<double>(row.fields[0].value),
                    static_cast<double>((row.timestamp - base) / kSecond));
        }
        auto latest = engine->Latest("t", q.device_id);
        ASSERT_TRUE(latest.ok());
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kWriters; ++t) {
    RangeQuery q;
    q.table = "t";
    q.device_id = "dev-" + std::to_string(t);
    q.limit = 0;
    auto range = engine->Range(q);
    ASSERT_TRUE(range.ok());
    EXPECT_EQ(range->rows.size(), static_cast<size_t>(kBatches * kPerBatch));
  }
  // The background sealer runs on its own schedule (slow under qemu): the
  // data must survive a final seal whether or not it sealed meanwhile.
  ASSERT_TRUE(engine->SealAll().ok());
  EXPECT_GT(engine->Stats().chunks_sealed, 0u);
  ASSERT_TRUE(engine->Close().ok());
}

}  // namespace
}  // namespace cairn::testing

namespace cairn::testing {
namespace {

// A table named like the write-ahead log's directory once shared it, and
// dropping it deleted the log with every acknowledged record in it.
TEST_F(EngineWriteTest, TablesCannotTakeTheNamesOfTheEnginesOwnFiles) {
  CreateTable();
  const int64_t time = Now();
  WriteOk({Temperature("d1", time, 21.5)});
  for (const char* reserved : {"log", "LOCK", "tokens"}) {
    Status created = engine_->CreateTable(reserved, TableOptions());
    EXPECT_EQ(created.code(), StatusCode::kInvalidArgument) << reserved;
    EXPECT_EQ(engine_->DropTable(reserved).code(), StatusCode::kNotFound) << reserved;
  }
  Reopen();
  auto row = engine_->Get("t", "d1", "env", time);
  ASSERT_TRUE(row.ok()) << row.status().ToString();
  EXPECT_TRUE(row->has_value());
}

}  // namespace
}  // namespace cairn::testing
