// Rewrites of a stored identity (DESIGN §3): the same version with the same
// values is a duplicate, with other values a conflict handled by the table's
// on_conflict (reject or overwrite), a lower version is refused; wherever the
// stored record is: the head, a sealed chunk, a compacted period file, or
// the log or a file read back by a reopened engine.
#include <cmath>

#include "cairn/core/sqlite_database.h"

#include "engine_test_util.h"

namespace cairn::testing {
namespace {

enum class StoredIn { kHead, kSealedChunk, kCompactedFile, kReopenedFromLog, kReopenedFromFile };

constexpr StoredIn kEveryPlace[] = {StoredIn::kHead, StoredIn::kSealedChunk, StoredIn::kCompactedFile,
                                    StoredIn::kReopenedFromLog, StoredIn::kReopenedFromFile};

const char* PlaceName(StoredIn where) {
  switch (where) {
    case StoredIn::kHead:
      return "head";
    case StoredIn::kSealedChunk:
      return "sealed chunk";
    case StoredIn::kCompactedFile:
      return "compacted period file";
    case StoredIn::kReopenedFromLog:
      return "reopened, from the log";
    case StoredIn::kReopenedFromFile:
      return "reopened, from the period file";
  }
  return "?";
}

class EngineConflictTest : public EngineFixture {
 protected:
  void CreateTableWith(ConflictPolicy policy) {
    TableOptions options;
    options.period = Period::kHour;  // so that a closed hour can be compacted
    options.on_conflict = policy;
    CreateTable("t", options);
  }

  // A timestamp in the hour before the current one: compaction may run on
  // it once the clock moves on.
  int64_t LastHour() { return PeriodStart(Period::kHour, Now()) - 3600 * kSecond + 10 * kSecond; }

  void Place(StoredIn where) {
    switch (where) {
      case StoredIn::kHead:
        break;
      case StoredIn::kSealedChunk:
        ASSERT_TRUE(engine_->SealAll().ok());
        break;
      case StoredIn::kCompactedFile:
        ASSERT_TRUE(engine_->SealAll().ok());
        clock_.AdvanceSeconds(3600);
        ASSERT_TRUE(engine_->Maintain().ok());
        break;
      case StoredIn::kReopenedFromLog:
        Reopen();
        break;
      case StoredIn::kReopenedFromFile:
        ASSERT_TRUE(engine_->SealAll().ok());
        Reopen();
        break;
    }
  }

  RecordResult WriteOne(const Record& record) {
    WriteResult w = WriteOk({record});
    return w.records.empty() ? RecordResult{} : w.records[0];
  }

  // The fields stored at (device, ts), sorted by name, and their version.
  std::vector<Field> Stored(const std::string& device, int64_t ts, uint64_t* version = nullptr) {
    auto got = engine_->Get("t", device, "env", ts);
    EXPECT_TRUE(got.ok() && got->has_value());
    if (!got.ok() || !got->has_value()) return {};
    if (version != nullptr) *version = (*got)->version;
    return (*got)->fields;
  }
};

Record Env(const std::string& device, int64_t ts, std::vector<Field> fields, uint64_t version = 0) {
  return MakeRecord(device, "env", ts, std::move(fields), version);
}

TEST_F(EngineConflictTest, RejectReportsOtherValuesAndDropsRetriesWhereverTheRecordIs) {
  CreateTableWith(ConflictPolicy::kReject);
  uint64_t conflicts = 0;
  for (StoredIn where : kEveryPlace) {
    SCOPED_TRACE(PlaceName(where));
    const std::string device = std::string("d-") + PlaceName(where);
    const int64_t ts = LastHour();
    ASSERT_EQ(WriteOne(Env(device, ts, {{"temp", 20.5}, {"hum", int64_t{40}}}, 3)).outcome, WriteOutcome::kStored);
    Place(where);
    // A retry: the same fields in another order, the same bits.
    EXPECT_EQ(WriteOne(Env(device, ts, {{"hum", int64_t{40}}, {"temp", 20.5}}, 3)).outcome,
              WriteOutcome::kDuplicate);
    RecordResult other = WriteOne(Env(device, ts, {{"temp", 21.0}, {"hum", int64_t{40}}}, 3));
    EXPECT_EQ(other.outcome, WriteOutcome::kConflict);
    EXPECT_NE(other.reason.find("field 'temp' is 21 here, 20.5 stored"), std::string::npos) << other.reason;
    RecordResult added = WriteOne(Env(device, ts, {{"temp", 20.5}, {"hum", int64_t{40}}, {"co2", int64_t{400}}}, 3));
    EXPECT_EQ(added.outcome, WriteOutcome::kConflict);
    EXPECT_NE(added.reason.find("field 'co2' is 400i here and absent from the stored record"), std::string::npos)
        << added.reason;
    RecordResult fewer = WriteOne(Env(device, ts, {{"temp", 20.5}}, 3));
    EXPECT_EQ(fewer.outcome, WriteOutcome::kConflict);
    EXPECT_NE(fewer.reason.find("field 'hum' is stored (40i) and absent here"), std::string::npos) << fewer.reason;
    RecordResult lower = WriteOne(Env(device, ts, {{"temp", 1.0}}, 2));
    EXPECT_EQ(lower.outcome, WriteOutcome::kRejectedVersion);
    EXPECT_NE(lower.reason.find("lower than the stored version 3"), std::string::npos) << lower.reason;
    conflicts += 3;
    uint64_t version = 0;
    std::vector<Field> fields = Stored(device, ts, &version);
    ASSERT_EQ(fields.size(), 2u);
    EXPECT_EQ(std::get<int64_t>(fields[0].value), 40);
    EXPECT_EQ(std::get<double>(fields[1].value), 20.5);
    EXPECT_EQ(version, 3u);
    // A higher version still replaces.
    EXPECT_EQ(WriteOne(Env(device, ts, {{"temp", 22.0}}, 4)).outcome, WriteOutcome::kStored);
    fields = Stored(device, ts);
    ASSERT_EQ(fields.size(), 1u);
    EXPECT_EQ(std::get<double>(fields[0].value), 22.0);
  }
  // A reopened engine counts from its start.
  EXPECT_GT(engine_->Stats().records_conflict, 0u);
  EXPECT_LE(engine_->Stats().records_conflict, conflicts);
}

TEST_F(EngineConflictTest, DoublesCompareByTheirBits) {
  CreateTableWith(ConflictPolicy::kReject);
  const int64_t ts = Now() - kSecond;
  WriteOne(Env("d", ts, {{"a", 0.0}, {"b", 0.1 + 0.2}}));
  EXPECT_EQ(WriteOne(Env("d", ts, {{"a", 0.0}, {"b", 0.1 + 0.2}})).outcome, WriteOutcome::kDuplicate);
  RecordResult signed_zero = WriteOne(Env("d", ts, {{"a", -0.0}, {"b", 0.1 + 0.2}}));
  EXPECT_EQ(signed_zero.outcome, WriteOutcome::kConflict);
  EXPECT_NE(signed_zero.reason.find("field 'a' is -0 here, 0 stored"), std::string::npos) << signed_zero.reason;
  EXPECT_EQ(WriteOne(Env("d", ts, {{"a", 0.0}, {"b", 0.3}})).outcome, WriteOutcome::kConflict);
}

TEST_F(EngineConflictTest, WithinOneBatchTheEarlierRecordIsTheStoredOne) {
  CreateTableWith(ConflictPolicy::kReject);
  const int64_t ts = Now() - kSecond;
  WriteResult w = WriteOk({Env("d", ts, {{"x", int64_t{1}}}), Env("d", ts, {{"x", int64_t{1}}}),
                           Env("d", ts, {{"x", int64_t{2}}})});
  EXPECT_EQ(w.records[0].outcome, WriteOutcome::kStored);
  EXPECT_EQ(w.records[1].outcome, WriteOutcome::kDuplicate);
  EXPECT_EQ(w.records[2].outcome, WriteOutcome::kConflict);
  EXPECT_EQ(w.conflicts, 1u);
  EXPECT_EQ(w.duplicates, 1u);
  EXPECT_EQ(engine_->Stats().records_conflict, 1u);
  EXPECT_EQ(std::get<int64_t>(Stored("d", ts)[0].value), 1);
}

TEST_F(EngineConflictTest, OverwriteMergesTheFieldsAndTheLaterWriteWinsWhereverTheRecordIs) {
  CreateTableWith(ConflictPolicy::kOverwrite);
  for (StoredIn where : kEveryPlace) {
    SCOPED_TRACE(PlaceName(where));
    const std::string device = std::string("d-") + PlaceName(where);
    const int64_t ts = LastHour();
    ASSERT_EQ(WriteOne(Env(device, ts, {{"temp", 20.5}, {"hum", int64_t{40}}}, 1)).outcome, WriteOutcome::kStored);
    Place(where);
    EXPECT_EQ(WriteOne(Env(device, ts, {{"temp", 21.0}, {"co2", int64_t{400}}}, 1)).outcome, WriteOutcome::kStored);
    // A write that adds nothing to the stored record is a duplicate.
    EXPECT_EQ(WriteOne(Env(device, ts, {{"co2", int64_t{400}}}, 1)).outcome, WriteOutcome::kDuplicate);
    EXPECT_EQ(WriteOne(Env(device, ts, {{"temp", 9.0}}, 0)).outcome, WriteOutcome::kRejectedVersion);
    for (int round = 0; round < 2; ++round) {
      uint64_t version = 0;
      std::vector<Field> fields = Stored(device, ts, &version);
      ASSERT_EQ(fields.size(), 3u);  // co2, hum, temp
      EXPECT_EQ(std::get<int64_t>(fields[0].value), 400);
      EXPECT_EQ(std::get<int64_t>(fields[1].value), 40);
      EXPECT_EQ(std::get<double>(fields[2].value), 21.0);
      EXPECT_EQ(version, 1u);
      Place(where);  // and once more, wherever the merged record now is
    }
  }
}

// Reads merge the head, every chunk holding a timestamp and the period
// files; of equal versions the later LSN must win whatever order they are
// read in. Here the older record lies in the chunk read first (it starts
// earlier), the newer one in a later chunk of the same file.
TEST_F(EngineConflictTest, ReadsOrderEqualVersionsByArrival) {
  CreateTableWith(ConflictPolicy::kOverwrite);
  const int64_t ts = LastHour();
  WriteOk({Env("d", ts - 5 * kSecond, {{"temp", 1.0}}), Env("d", ts, {{"temp", 20.0}})});
  ASSERT_TRUE(engine_->SealAll().ok());
  ASSERT_EQ(WriteOne(Env("d", ts, {{"temp", 21.0}})).outcome, WriteOutcome::kStored);
  EXPECT_EQ(engine_->Stats().records_overwritten, 1u);
  const auto check = [&](double want) {
    RangeQuery q;
    q.table = "t";
    q.device_id = "d";
    q.limit = 0;
    auto range = engine_->Range(q);
    ASSERT_TRUE(range.ok()) << range.status().ToString();
    ASSERT_EQ(range->rows.size(), 2u);
    EXPECT_EQ(std::get<double>(range->rows[1].fields.back().value), want);  // temp sorts last
    EXPECT_EQ(std::get<double>(Stored("d", ts).back().value), want);
  };
  check(21.0);  // head over chunk
  ASSERT_TRUE(engine_->SealAll().ok());
  check(21.0);  // two chunks
  // The next merge starts from the newest of the two chunks.
  ASSERT_EQ(WriteOne(Env("d", ts, {{"temp", 22.0}, {"hum", int64_t{3}}})).outcome, WriteOutcome::kStored);
  ASSERT_TRUE(engine_->SealAll().ok());
  check(22.0);
  Reopen();
  check(22.0);
  clock_.AdvanceSeconds(3600);
  ASSERT_TRUE(engine_->Maintain().ok());  // compaction keeps the newest
  check(22.0);
  EXPECT_EQ(Stored("d", ts).size(), 2u);
}

TEST_F(EngineConflictTest, TheOptionPersistsAndCanChange) {
  CreateTableWith(ConflictPolicy::kOverwrite);
  Reopen();
  auto info = engine_->GetTable("t");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->options.on_conflict, ConflictPolicy::kOverwrite);
  TableOptions options = info->options;
  options.on_conflict = ConflictPolicy::kReject;
  ASSERT_TRUE(engine_->AlterTable("t", options).ok());
  const int64_t ts = Now() - kSecond;
  WriteOne(Env("d", ts, {{"x", int64_t{1}}}));
  EXPECT_EQ(WriteOne(Env("d", ts, {{"x", int64_t{2}}})).outcome, WriteOutcome::kConflict);
  Reopen();
  EXPECT_EQ(engine_->GetTable("t")->options.on_conflict, ConflictPolicy::kReject);
  EXPECT_EQ(ParseConflictPolicy("overwrite").value(), ConflictPolicy::kOverwrite);
  EXPECT_FALSE(ParseConflictPolicy("merge").ok());
}

TEST_F(EngineConflictTest, ACatalogFromBeforeTheOptionOpensWithReject) {
  CreateTableWith(ConflictPolicy::kOverwrite);
  ASSERT_TRUE(engine_->Close().ok());
  engine_.reset();
  {
    auto db = SqliteDb::Open(dir_.PathOf("catalog.db"), "unix", /*read_only=*/false, 64);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    ASSERT_TRUE((*db)->Exec("ALTER TABLE tables DROP COLUMN on_conflict").ok());
  }
  Open();
  EXPECT_EQ(engine_->GetTable("t")->options.on_conflict, ConflictPolicy::kReject);
  TableOptions options = engine_->GetTable("t")->options;
  options.on_conflict = ConflictPolicy::kOverwrite;
  ASSERT_TRUE(engine_->AlterTable("t", options).ok());
  Reopen();
  EXPECT_EQ(engine_->GetTable("t")->options.on_conflict, ConflictPolicy::kOverwrite);
}

}  // namespace
}  // namespace cairn::testing
