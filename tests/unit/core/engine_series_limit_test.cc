// The series limit of a table (TableOptions::max_series): records that would
// start a series beyond it are refused one by one, existing series go on,
// the limit survives a reopen and can be raised, replay ignores it, and the
// series' memory is counted.
#include "engine_test_util.h"

namespace cairn::testing {
namespace {

using EngineSeriesLimitTest = EngineFixture;

std::vector<Record> Devices(int first, int count, int64_t ts) {
  std::vector<Record> records;
  for (int i = first; i < first + count; ++i)
    records.push_back(Temperature("dev-" + std::to_string(i), ts, i));
  return records;
}

TEST_F(EngineSeriesLimitTest, RecordsBeyondTheLimitAreRefusedOneByOne) {
  TableOptions options;
  options.max_series = 3;
  CreateTable("t", options);
  const int64_t ts = Now() - kSecond;
  WriteResult w = WriteOk(Devices(0, 5, ts));
  EXPECT_EQ(w.stored, 3u);
  EXPECT_EQ(w.invalid, 2u);
  EXPECT_EQ(w.records[3].outcome, WriteOutcome::kInvalid);
  const std::string& reason = w.records[3].reason;
  EXPECT_NE(reason.find("table 't' holds its limit of 3 series (max_series)"), std::string::npos) << reason;
  EXPECT_NE(reason.find("device 'dev-3'"), std::string::npos) << reason;
  EXPECT_NE(reason.find("alter-table t --max-series N"), std::string::npos) << reason;
  EXPECT_NE(reason.find("PATCH /v1/tables/t?max_series=N"), std::string::npos) << reason;

  // Existing series take new records; a new measure of a known device is a
  // new series and is refused too.
  WriteResult more =
      WriteOk({Temperature("dev-0", ts + 1, 1.0), MakeRecord("dev-0", "power", ts, {{"w", 1.0}})});
  EXPECT_EQ(more.records[0].outcome, WriteOutcome::kStored);
  EXPECT_EQ(more.records[1].outcome, WriteOutcome::kInvalid);

  const EngineStats stats = engine_->Stats();
  EXPECT_EQ(stats.series, 3u);
  EXPECT_EQ(stats.records_over_series_limit, 3u);
  EXPECT_GT(stats.series_bytes, 3 * sizeof(void*));
}

TEST_F(EngineSeriesLimitTest, TheEngineDefaultAppliesAndTheLimitCanBeRaisedAndPersists) {
  options_.default_max_series = 2;
  Open();
  CreateTable();
  const int64_t ts = Now() - kSecond;
  EXPECT_EQ(WriteOk(Devices(0, 4, ts)).stored, 2u);

  Result<TableInfo> info = engine_->GetTable("t");
  ASSERT_TRUE(info.ok());
  TableOptions raised = info->options;
  raised.max_series = 4;
  ASSERT_TRUE(engine_->AlterTable("t", raised).ok());
  EXPECT_EQ(WriteOk(Devices(0, 4, ts)).stored, 2u) << "the two refused before";

  Reopen();
  info = engine_->GetTable("t");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->options.max_series, 4u);
  WriteResult beyond = WriteOk(Devices(4, 1, ts));
  EXPECT_EQ(beyond.invalid, 1u);
  EXPECT_EQ(engine_->Stats().series, 4u) << "replay restored every series";
}

TEST_F(EngineSeriesLimitTest, LoweringTheLimitKeepsWhatIsStored) {
  CreateTable();
  const int64_t ts = Now() - kSecond;
  EXPECT_EQ(WriteOk(Devices(0, 5, ts)).stored, 5u);
  TableOptions lowered;
  lowered.max_series = 2;
  ASSERT_TRUE(engine_->AlterTable("t", lowered).ok());
  Reopen();  // replay of acknowledged records never applies the limit
  EXPECT_EQ(engine_->Stats().series, 5u);
  EXPECT_EQ(WriteOk({Temperature("dev-1", ts + 1, 2.0)}).stored, 1u);
  EXPECT_EQ(WriteOk(Devices(9, 1, ts)).invalid, 1u);
}

TEST_F(EngineSeriesLimitTest, AbsurdLimitsAreRefused) {
  TableOptions options;
  options.max_series = kMaxSeriesLimit + 1;
  Status created = engine_->CreateTable("t", options);
  EXPECT_EQ(created.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(created.message().find("max_series"), std::string::npos);
}

}  // namespace
}  // namespace cairn::testing
