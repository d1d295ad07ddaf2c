#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/core/engine.h"
#include "cairn/core/sqlite_database.h"
#include "cairn/ingest/ingest_sink.h"
#include "cairn/text/line_protocol.h"
#include "cairn/mqtt/mqtt_input.h"

#include "ingest_batches.h"
#include "manual_clock_env.h"
#include "test_dirs.h"

namespace cairn::ingest_test {
namespace {

class SqliteSinkTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }

  void Open() {
    sink_.reset();
    Result<std::unique_ptr<IngestSink>> sink = OpenSqliteSink(Env::Default(), dir_.path() + "/ingest.db");
    ASSERT_TRUE(sink.ok()) << sink.status().ToString();
    sink_ = std::move(sink).value();
  }

  SinkCounts Apply(const DecodedEnvelope& batch, int64_t received_at = 5) {
    Result<SinkCounts> counts = sink_->ApplyBatch(batch, received_at);
    EXPECT_TRUE(counts.ok()) << counts.status().ToString();
    return counts.ok() ? *counts : SinkCounts{};
  }

  std::vector<StoredReading> Readings() { return StoredReadings(sink_.get()); }

  ScopedTempDir dir_;
  std::unique_ptr<IngestSink> sink_;
};

TEST_F(SqliteSinkTest, StoresEveryFieldTypeBitExactlyAcrossReopen) {
  const std::vector<RecordRow> rows = AllTypesRows();
  for (EnvelopeEncoding encoding : {EnvelopeEncoding::kBinary, EnvelopeEncoding::kJson}) {
    Result<DecodedEnvelope> batch = MakeBatch(HeaderFor(1, rows.size()), rows, encoding);
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    const SinkCounts counts = Apply(*batch);
    if (encoding == EnvelopeEncoding::kBinary) {
      EXPECT_EQ(counts, (SinkCounts{rows.size(), 0, 0, 0}));
    } else {
      // The same batch in the other encoding: the same records again.
      EXPECT_EQ(counts, (SinkCounts{0, 0, rows.size(), 0}));
    }
  }
  EXPECT_EQ(CompareReadings(Expected("sensors", rows), Readings()), "");
  Open();
  EXPECT_EQ(CompareReadings(Expected("sensors", rows), Readings()), "");
}

// The ttl, version and timestamp fields a client sets through line protocol
// (HTTP writes, MQTT, the shell's put) or an MQTT JSON reading go through the
// engine, the sync envelope in both encodings and the sink unchanged.
TEST_F(SqliteSinkTest, TtlVersionAndTimestampFieldsFromTheEntryPointsReachTheCloud) {
  ManualClockEnv clock(Env::Default());
  ScopedTempDir engine_dir{"sync-round-trip"};
  EngineOptions engine_options;
  engine_options.maintenance_interval_ms = 0;
  Result<std::unique_ptr<Engine>> engine = Engine::Open(&clock, engine_dir.path(), engine_options);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  ASSERT_TRUE((*engine)->CreateTable("sensors", TableOptions{}).ok());

  LineProtocolOptions options;
  options.default_timestamp = clock.NowUnixNanos();
  std::vector<Record> records;
  std::vector<std::string> errors;
  ASSERT_TRUE(MqttInput::ParsePayload("env,device=lp v=1,_ttl=4000000000i,_version=18446744073709551615u,"
                                      "at=1690000000000000000t 1700000000000000000",
                                      options, &records, &errors)
                  .ok());
  ASSERT_TRUE(
      MqttInput::ParsePayload("{\"device\": \"json\", \"measure\": \"env\", \"time\": 1700000000000000000,"
                              " \"ttl\": 4000000001, \"version\": 9,"
                              " \"fields\": {\"v\": 2, \"at\": {\"timestamp\": -5}}}",
                              options, &records, &errors)
          .ok());
  ASSERT_TRUE(errors.empty()) << errors[0];
  ASSERT_EQ(records.size(), 2u);
  Result<WriteResult> written = (*engine)->Write("sensors", records);
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  Result<ChangeBatch> changes =
      (*engine)->ReadChanges("sensors", 0, std::numeric_limits<uint64_t>::max(), 100);
  ASSERT_TRUE(changes.ok()) << changes.status().ToString();
  ASSERT_EQ(changes->records.size(), 2u);
  EXPECT_TRUE((*engine)->Close().ok());

  uint64_t sequence = 1;
  for (EnvelopeEncoding encoding : {EnvelopeEncoding::kBinary, EnvelopeEncoding::kJson}) {
    Result<DecodedEnvelope> batch = MakeBatch(HeaderFor(sequence++, changes->records.size()),
                                              changes->records, encoding);
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    Apply(*batch);
  }
  const std::vector<StoredReading> readings = Readings();
  ASSERT_EQ(readings.size(), 2u);
  const RecordRow& json = readings[0].row.device_id == "json" ? readings[0].row : readings[1].row;
  const RecordRow& lp = readings[0].row.device_id == "lp" ? readings[0].row : readings[1].row;
  EXPECT_EQ(lp.ttl, 4'000'000'000);
  EXPECT_EQ(lp.version, std::numeric_limits<uint64_t>::max());
  ASSERT_EQ(lp.fields.size(), 2u);  // sorted by name; _ttl and _version are not fields
  EXPECT_EQ(lp.fields[0].name, "at");
  EXPECT_EQ(lp.fields[0].value, Value(Timestamp{1'690'000'000'000'000'000}));
  EXPECT_EQ(json.ttl, 4'000'000'001);
  EXPECT_EQ(json.version, 9u);
  ASSERT_EQ(json.fields.size(), 2u);
  EXPECT_EQ(json.fields[0].value, Value(Timestamp{-5}));
}

TEST_F(SqliteSinkTest, SameBatchTwiceIsStoredOnceAndCountedAsDuplicates) {
  const std::vector<RecordRow> rows = {Row("pump-7", "env", kStart, {{"t", 1.5}}),
                                       Row("pump-7", "env", kStart + kSecond, {{"t", 2.5}})};
  Result<DecodedEnvelope> batch = MakeBatch(HeaderFor(3, rows.size()), rows);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_EQ(Apply(*batch, 100), (SinkCounts{2, 0, 0, 0}));
  EXPECT_EQ(Apply(*batch, 200), (SinkCounts{0, 0, 2, 0}));
  EXPECT_EQ(CompareReadings(Expected("sensors", rows), Readings()), "");

  Result<std::vector<StoredBatch>> batches = sink_->ReadBatches();
  ASSERT_TRUE(batches.ok()) << batches.status().ToString();
  ASSERT_EQ(batches->size(), 1u);
  const StoredBatch& stored = (*batches)[0];
  EXPECT_EQ(stored.header, batch->header);
  EXPECT_EQ(stored.records, 2u);
  EXPECT_EQ(stored.counts, (SinkCounts{2, 0, 0, 0}));
  EXPECT_EQ(stored.received_at_unix_nanos, 100);
  EXPECT_EQ(stored.last_received_at_unix_nanos, 200);
  EXPECT_EQ(stored.deliveries, 2u);
}

TEST_F(SqliteSinkTest, HigherVersionReplacesLowerIsIgnoredAndCounted) {
  const auto [first, second] = VersionRuleRows();
  Result<DecodedEnvelope> batch = MakeBatch(HeaderFor(1, first.size()), first);
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(Apply(*batch), (SinkCounts{2, 0, 0, 0}));

  // One identity rewritten with a higher version, one with a lower one, one
  // new; the batch also rewrites its own new record with versions 1 and 3.
  batch = MakeBatch(HeaderFor(2, second.size()), second);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_EQ(Apply(*batch), (SinkCounts{1, 1, 1, 2}));

  std::vector<RecordRow> all = first;
  all.insert(all.end(), second.begin(), second.end());
  const std::vector<StoredReading> readings = Readings();
  EXPECT_EQ(CompareReadings(Expected("sensors", all), readings), "");
  ASSERT_EQ(readings.size(), 3u);
  EXPECT_EQ(std::get<double>(readings[0].row.fields[0].value), 10.0);
  EXPECT_EQ(std::get<double>(readings[1].row.fields[0].value), 2.0);
  // Of two records with the winning version, the first one in the batch.
  EXPECT_EQ(std::get<double>(readings[2].row.fields[0].value), 31.0);
}

// A table whose on_conflict is overwrite stores a rewrite of the same version
// as a new record under a later LSN; the sink must keep the later one
// whichever batch arrives first, as the gateway's reads do.
TEST_F(SqliteSinkTest, EqualVersionsAreOrderedByTheGatewaysLsnWhateverOrderBatchesArriveIn) {
  const auto at = [](RecordRow row, uint64_t lsn) {
    row.lsn = lsn;
    return row;
  };
  const RecordRow original = at(Row("pump-7", "env", kStart, {{"t", 1.0}}), 1000);
  const RecordRow merged = at(Row("pump-7", "env", kStart, {{"h", int64_t{40}}, {"t", 2.0}}), 2000);
  for (EnvelopeEncoding encoding : {EnvelopeEncoding::kBinary, EnvelopeEncoding::kJson}) {
    SCOPED_TRACE(encoding == EnvelopeEncoding::kBinary ? "binary" : "json");
    const int64_t ts = kStart + (encoding == EnvelopeEncoding::kBinary ? 0 : kSecond);
    RecordRow first = original, second = merged;
    first.timestamp = second.timestamp = ts;
    // The later batch arrives first, then the earlier one, then the later again.
    Result<DecodedEnvelope> later = MakeBatch(HeaderFor(2, 1), {second}, encoding);
    Result<DecodedEnvelope> earlier = MakeBatch(HeaderFor(1, 1), {first}, encoding);
    ASSERT_TRUE(later.ok() && earlier.ok()) << later.status().ToString() << earlier.status().ToString();
    ASSERT_EQ(later->records[0].lsn, 2000u);
    EXPECT_EQ(Apply(*later), (SinkCounts{1, 0, 0, 0}));
    EXPECT_EQ(Apply(*earlier), (SinkCounts{0, 0, 0, 1}));
    EXPECT_EQ(Apply(*later), (SinkCounts{0, 0, 1, 0}));
  }
  std::vector<StoredReading> readings = Readings();
  ASSERT_EQ(readings.size(), 2u);
  for (const StoredReading& reading : readings) {
    EXPECT_EQ(reading.row.lsn, 2000u);
    ASSERT_EQ(reading.row.fields.size(), 2u);
    EXPECT_EQ(std::get<double>(reading.row.fields[1].value), 2.0);
  }
  // In order, and both within one batch: the later LSN replaces.
  const RecordRow third = at(Row("pump-7", "env", kStart + 2 * kSecond, {{"t", 3.0}}), 3000);
  const RecordRow fourth = at(Row("pump-7", "env", kStart + 2 * kSecond, {{"t", 4.0}}), 3001);
  Result<DecodedEnvelope> one = MakeBatch(HeaderFor(3, 1), {third});
  Result<DecodedEnvelope> both = MakeBatch(HeaderFor(4, 2), {fourth, third});
  ASSERT_TRUE(one.ok() && both.ok());
  EXPECT_EQ(Apply(*one), (SinkCounts{1, 0, 0, 0}));
  EXPECT_EQ(Apply(*both), (SinkCounts{0, 1, 0, 1}));
  readings = Readings();
  ASSERT_EQ(readings.size(), 3u);
  EXPECT_EQ(std::get<double>(readings[2].row.fields[0].value), 4.0);
  EXPECT_EQ(readings[2].row.lsn, 3001u);
}

TEST_F(SqliteSinkTest, KeepsShardDimensionsAndLatestAttributes) {
  const std::vector<RecordRow> rows = {Tagged(Row("pump-7", "env", kStart, {{"t", 1.0}}, 0, 0, 13),
                                              {{"rack", "4"}, {"site", "north"}}, {{"firmware", "1.0"}}),
                                       Row("pump-8", "env", kStart, {{"t", 1.0}})};
  Result<DecodedEnvelope> batch = MakeBatch(HeaderFor(1, rows.size()), rows);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  Apply(*batch);
  // Later: new attributes for pump-7's series; one without attributes
  // leaves them alone.
  const std::vector<RecordRow> later = {Tagged(Row("pump-7", "env", kStart + kSecond, {{"t", 2.0}}, 0, 0, 13),
                                               {{"rack", "4"}, {"site", "north"}}, {{"firmware", "1.1"}})};
  batch = MakeBatch(HeaderFor(2, later.size()), later);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  Apply(*batch);
  const std::vector<RecordRow> untagged = {
      Tagged(Row("pump-7", "env", kStart + 2 * kSecond, {{"t", 3.0}}, 0, 0, 13),
             {{"rack", "4"}, {"site", "north"}})};
  batch = MakeBatch(HeaderFor(3, untagged.size()), untagged);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  Apply(*batch);

  Result<std::vector<StoredSeries>> series = sink_->ReadSeries();
  ASSERT_TRUE(series.ok()) << series.status().ToString();
  ASSERT_EQ(series->size(), 2u);
  EXPECT_EQ((*series)[0],
            (StoredSeries{
                "sensors", "pump-7", "env", {{"rack", "4"}, {"site", "north"}}, 13, {{"firmware", "1.1"}}}));
  EXPECT_EQ((*series)[1], (StoredSeries{"sensors", "pump-8", "env", {}, 0, {}}));

  std::vector<RecordRow> all = rows;
  all.insert(all.end(), later.begin(), later.end());
  all.insert(all.end(), untagged.begin(), untagged.end());
  const std::vector<StoredReading> readings = Readings();
  EXPECT_EQ(CompareReadings(Expected("sensors", all), readings), "");
  ASSERT_EQ(readings.size(), 4u);
  EXPECT_EQ(readings[0].row.shard, 13);
  EXPECT_EQ(readings[0].row.attributes, (TagMap{{"firmware", "1.1"}}));
  EXPECT_EQ(readings[3].row.shard, 0);
}

TEST_F(SqliteSinkTest, ReadingsToldApartByADimensionAreTwoRows) {
  for (EnvelopeEncoding encoding : {EnvelopeEncoding::kBinary, EnvelopeEncoding::kJson}) {
    SCOPED_TRACE(encoding == EnvelopeEncoding::kJson ? "json" : "binary");
    Open();
    // One device, measure and timestamp; two sensors. In one batch, then
    // again in two batches: each is its own identity, neither replaces or
    // shadows the other.
    const std::vector<RecordRow> rows = {Tagged(Row("gw1", "env", kStart, {{"t", 1.0}}), {{"sensor", "a"}}),
                                         Tagged(Row("gw1", "env", kStart, {{"t", 2.0}}), {{"sensor", "b"}}),
                                         Row("gw1", "env", kStart, {{"t", 3.0}})};
    const uint64_t sequence = encoding == EnvelopeEncoding::kJson ? 10 : 1;
    Result<DecodedEnvelope> batch = MakeBatch(HeaderFor(sequence, rows.size()), rows, encoding);
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    const SinkCounts counts = Apply(*batch);
    if (encoding == EnvelopeEncoding::kBinary) {
      EXPECT_EQ(counts, (SinkCounts{3, 0, 0, 0}));
    } else {
      // Stored by the binary round, sensor b since rewritten with version 1.
      EXPECT_EQ(counts, (SinkCounts{0, 0, 2, 1}));
    }
    const std::vector<RecordRow> rewrite = {
        Tagged(Row("gw1", "env", kStart, {{"t", 20.0}}, 1), {{"sensor", "b"}})};
    batch = MakeBatch(HeaderFor(sequence + 1, rewrite.size()), rewrite, encoding);
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    Apply(*batch);

    std::vector<RecordRow> all = rows;
    all.insert(all.end(), rewrite.begin(), rewrite.end());
    const std::vector<StoredReading> readings = Readings();
    EXPECT_EQ(CompareReadings(Expected("sensors", all), readings), "");
    ASSERT_EQ(readings.size(), 3u);
    EXPECT_EQ(readings[0].row.dimensions, (TagMap{{"sensor", "a"}}));
    EXPECT_EQ(std::get<double>(readings[0].row.fields[0].value), 1.0);
    EXPECT_EQ(readings[1].row.dimensions, (TagMap{{"sensor", "b"}}));
    EXPECT_EQ(std::get<double>(readings[1].row.fields[0].value), 20.0);
    EXPECT_TRUE(readings[2].row.dimensions.empty());
    Result<std::vector<StoredSeries>> series = sink_->ReadSeries();
    ASSERT_TRUE(series.ok()) << series.status().ToString();
    EXPECT_EQ(series->size(), 3u);
  }
}

// A database of schema version 1 (ingest_schema.md §5), its changed tables
// made with that version's own CREATE statements
// (tests/fixtures/ingest_schema_v1_sqlite.sql), is migrated when the sink
// opens it: a series' dimensions become the identity of it and its readings.
TEST_F(SqliteSinkTest, MigratesASchemaVersion1Database) {
  sink_.reset();
  const std::string path = dir_.path() + "/old.db";
  ASSERT_TRUE(OpenSqliteSink(Env::Default(), path).ok());  // the tables version 1 shares with today's
  {
    Result<std::unique_ptr<SqliteDb>> db = OpenSqliteDatabase(Env::Default(), path, /*cache_kib=*/256);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    Result<std::string> fixture =
        Env::Default()->ReadFileToString(std::string(CAIRN_TEST_FIXTURES) + "/ingest_schema_v1_sqlite.sql");
    ASSERT_TRUE(fixture.ok()) << fixture.status().ToString();
    const Status created = (*db)->Exec(*fixture);
    ASSERT_TRUE(created.ok()) << created.ToString();
    ASSERT_TRUE((*db)->Close().ok());
  }
  for (int round = 0; round < 2; ++round) {  // the second open finds version 2 and changes nothing
    Result<std::unique_ptr<IngestSink>> sink = OpenSqliteSink(Env::Default(), path);
    ASSERT_TRUE(sink.ok()) << sink.status().ToString();
    sink_ = std::move(sink).value();
    const TagMap north = {{"rack", "4"}, {"site", "north"}};
    std::vector<RecordRow> old = {Tagged(Row("pump-7", "env", kStart, {{"t", 1.5}}, 3), north),
                                  Tagged(Row("pump-7", "env", kStart + kSecond, {{"t", 2.5}}), north),
                                  Row("pump-8", "env", kStart, {{"n", int64_t{7}}})};
    if (round == 0) {
      EXPECT_EQ(CompareReadings(Expected("sensors", old), Readings()), "");
      // A gateway re-sending the old reading with its dimensions (now
      // identity) meets the migrated row; another sensor is a new row.
      const std::vector<RecordRow> again = {
          Tagged(Row("pump-7", "env", kStart, {{"t", 1.5}}, 3), north),
          Tagged(Row("pump-7", "env", kStart, {{"t", 9.5}}), {{"site", "south"}})};
      Result<DecodedEnvelope> batch = MakeBatch(HeaderFor(2, again.size()), again);
      ASSERT_TRUE(batch.ok()) << batch.status().ToString();
      EXPECT_EQ(Apply(*batch), (SinkCounts{1, 0, 1, 0}));
    }
    old.push_back(Tagged(Row("pump-7", "env", kStart, {{"t", 9.5}}), {{"site", "south"}}));
    EXPECT_EQ(CompareReadings(Expected("sensors", old), Readings()), "");
    Result<std::vector<StoredSeries>> series = sink_->ReadSeries();
    ASSERT_TRUE(series.ok()) << series.status().ToString();
    ASSERT_EQ(series->size(), 3u);
    EXPECT_EQ((*series)[0], (StoredSeries{"sensors", "pump-7", "env", north, 0, {}}));
    EXPECT_EQ((*series)[1], (StoredSeries{"sensors", "pump-7", "env", {{"site", "south"}}, 0, {}}));
    EXPECT_EQ((*series)[2], (StoredSeries{"sensors", "pump-8", "env", {}, 0, {}}));
    Result<std::vector<StoredBatch>> batches = sink_->ReadBatches();
    ASSERT_TRUE(batches.ok()) << batches.status().ToString();
    ASSERT_EQ(batches->size(), 2u);
    EXPECT_EQ((*batches)[0].counts, (SinkCounts{3, 0, 0, 0}));
    sink_.reset();
  }
}

TEST_F(SqliteSinkTest, SecondSinkOnTheSameFileIsRefused) {
  Result<std::unique_ptr<IngestSink>> second = OpenSqliteSink(Env::Default(), dir_.path() + "/ingest.db");
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kBusy) << second.status().ToString();
}

}  // namespace
}  // namespace cairn::ingest_test
