// The PostgreSQL sink against a cluster made by the test: bit-exact round
// trips, the version rule, dimensions, schema migration, large batches and
// values PostgreSQL cannot hold.
//
// Every wait is bounded. The cluster and the broker are shared by the tests
// of IngestTest; each test starts from empty tables.
#include "cairn/ingest/postgres_sink.h"

#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/platform/env.h"

#include "ingest_test_util.h"

namespace cairn::ingest_test {
namespace {

TEST_F(IngestTest, PostgresStoresEveryFieldTypeBitExactly) {
  std::unique_ptr<IngestSink> sink = OpenSink();
  ASSERT_NE(sink, nullptr);
  const std::vector<RecordRow> rows = AllTypesRows();
  Result<DecodedEnvelope> binary = MakeBatch(HeaderFor(1, rows.size()), rows);
  ASSERT_TRUE(binary.ok()) << binary.status().ToString();
  EXPECT_EQ(Apply(sink.get(), *binary), (SinkCounts{rows.size(), 0, 0, 0}));
  // The JSON encoding of the same records changes nothing.
  Result<DecodedEnvelope> json = MakeBatch(HeaderFor(2, rows.size()), rows, EnvelopeEncoding::kJson);
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  EXPECT_EQ(Apply(sink.get(), *json), (SinkCounts{0, 0, rows.size(), 0}));

  // Read back through a new connection.
  EXPECT_EQ(CompareReadings(Expected("sensors", rows), Readings()), "");
  // The stored columns are what ingest_schema.md says.
  Result<QueryRows> stored = cluster_->Query(
      "SELECT partition_key, version::text, fields->'negative_zero'->>'double', (fields->'count'->>'int64') "
      "FROM cairn_readings WHERE device_id = 'pump-7' ORDER BY timestamp_ns LIMIT 3");
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  ASSERT_EQ(stored->size(), 3u);
  EXPECT_EQ((*stored)[0], (std::vector<std::string>{"pump-7#00", "0", "-0", "-3"}));
  EXPECT_EQ((*stored)[1][3], "-9223372036854775808");
  EXPECT_EQ((*stored)[2][1], "18446744073709551615");
  stored = cluster_->Query("SELECT partition_key FROM cairn_readings WHERE device_id = 'valve-3' LIMIT 1");
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ((*stored)[0][0], "valve-3#13");
}

TEST_F(IngestTest, PostgresSameBatchTwiceIsOneCopyAndVersionsDecide) {
  std::unique_ptr<IngestSink> sink = OpenSink();
  ASSERT_NE(sink, nullptr);
  const auto [first, second] = VersionRuleRows();
  Result<DecodedEnvelope> batch = MakeBatch(HeaderFor(1, first.size()), first);
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(Apply(sink.get(), *batch), (SinkCounts{2, 0, 0, 0}));
  EXPECT_EQ(Apply(sink.get(), *batch), (SinkCounts{0, 0, 2, 0}));
  Result<std::vector<StoredBatch>> batches = sink->ReadBatches();
  ASSERT_TRUE(batches.ok()) << batches.status().ToString();
  ASSERT_EQ(batches->size(), 1u);
  EXPECT_EQ((*batches)[0].header, batch->header);
  EXPECT_EQ((*batches)[0].deliveries, 2u);
  EXPECT_EQ((*batches)[0].counts, (SinkCounts{2, 0, 0, 0}));

  batch = MakeBatch(HeaderFor(2, second.size()), second);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_EQ(Apply(sink.get(), *batch), (SinkCounts{1, 1, 1, 2}));
  std::vector<RecordRow> all = first;
  all.insert(all.end(), second.begin(), second.end());
  const std::vector<StoredReading> readings = Readings();
  EXPECT_EQ(CompareReadings(Expected("sensors", all), readings), "");
  ASSERT_EQ(readings.size(), 3u);
  EXPECT_EQ(std::get<double>(readings[2].row.fields[0].value), 31.0);

  // Attributes: latest wins; a batch without them leaves them alone.
  batch = MakeBatch(HeaderFor(3, 1),
                    {Tagged(Row("pump-7", "env", kStart + 3 * kSecond, {{"t", 4.0}}), {}, {{"fw", "1.0"}})});
  ASSERT_TRUE(batch.ok());
  Apply(sink.get(), *batch);
  batch = MakeBatch(HeaderFor(4, 1),
                    {Tagged(Row("pump-7", "env", kStart + 4 * kSecond, {{"t", 5.0}}), {}, {{"fw", "1.1"}})});
  ASSERT_TRUE(batch.ok());
  Apply(sink.get(), *batch);
  batch = MakeBatch(HeaderFor(5, 1), {Row("pump-7", "env", kStart + 5 * kSecond, {{"t", 6.0}})});
  ASSERT_TRUE(batch.ok());
  Apply(sink.get(), *batch);
  Result<std::vector<StoredSeries>> series = sink->ReadSeries();
  ASSERT_TRUE(series.ok()) << series.status().ToString();
  ASSERT_EQ(series->size(), 1u);
  EXPECT_EQ((*series)[0], (StoredSeries{"sensors", "pump-7", "env", {}, 0, {{"fw", "1.1"}}}));
  Result<QueryRows> stored = cluster_->Query("SELECT attributes->>'fw' FROM cairn_series");
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ((*stored)[0][0], "1.1");
}

TEST_F(IngestTest, PostgresReadingsToldApartByADimensionAreTwoRows) {
  std::unique_ptr<IngestSink> sink = OpenSink();
  ASSERT_NE(sink, nullptr);
  // One device, measure and timestamp, three sensors, across encodings; then
  // a rewrite of one sensor's reading leaves the others alone.
  const std::vector<RecordRow> rows = {
      Tagged(Row("gw1", "env", kStart, {{"t", 1.0}}), {{"sensor", "a"}, {"site", "x"}}, {{"fw", "1"}}),
      Tagged(Row("gw1", "env", kStart, {{"t", 2.0}}), {{"sensor", "b"}, {"site", "x"}}),
      Row("gw1", "env", kStart, {{"t", 3.0}})};
  Result<DecodedEnvelope> batch = MakeBatch(HeaderFor(1, rows.size()), rows);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_EQ(Apply(sink.get(), *batch), (SinkCounts{3, 0, 0, 0}));
  batch = MakeBatch(HeaderFor(2, rows.size()), rows, EnvelopeEncoding::kJson);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_EQ(Apply(sink.get(), *batch), (SinkCounts{0, 0, 3, 0}));
  const std::vector<RecordRow> rewrite = {
      Tagged(Row("gw1", "env", kStart, {{"t", 20.0}}, 1), {{"sensor", "b"}, {"site", "x"}})};
  batch = MakeBatch(HeaderFor(3, rewrite.size()), rewrite);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_EQ(Apply(sink.get(), *batch), (SinkCounts{0, 1, 0, 0}));

  std::vector<RecordRow> all = rows;
  all.insert(all.end(), rewrite.begin(), rewrite.end());
  EXPECT_EQ(CompareReadings(Expected("sensors", all), Readings()), "");
  Result<QueryRows> stored = cluster_->Query(
      "SELECT dimensions, dimensions::jsonb->>'sensor', fields->'t'->>'double' FROM cairn_readings "
      "ORDER BY dimensions COLLATE \"C\"");
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  ASSERT_EQ(stored->size(), 3u);
  EXPECT_EQ((*stored)[0], (std::vector<std::string>{"{\"sensor\":\"a\",\"site\":\"x\"}", "a", "1"}));
  EXPECT_EQ((*stored)[1], (std::vector<std::string>{"{\"sensor\":\"b\",\"site\":\"x\"}", "b", "20"}));
  EXPECT_EQ((*stored)[2][0], "{}");
}

// A database of schema version 1 (ingest_schema.md §5), its changed tables
// made with that version's own CREATE statements
// (tests/fixtures/ingest_schema_v1_postgres.sql), is migrated when the sink
// connects.
TEST_F(IngestTest, PostgresMigratesASchemaVersion1Database) {
  ASSERT_NE(OpenSink(), nullptr);  // the tables version 1 shares with today's
  Result<std::string> fixture =
      Env::Default()->ReadFileToString(std::string(CAIRN_TEST_FIXTURES) + "/ingest_schema_v1_postgres.sql");
  ASSERT_TRUE(fixture.ok()) << fixture.status().ToString();
  Result<QueryRows> created = cluster_->Query(*fixture);
  ASSERT_TRUE(created.ok()) << created.status().ToString();

  const TagMap old_dimensions = {{"ort", "Zürich"}, {"q", "a\"b\\c"}, {"site", "north"}};
  std::vector<RecordRow> old = {
      Tagged(Row("pump-7", "env", kStart, {{"t", 1.5}}, std::numeric_limits<uint64_t>::max()),
             old_dimensions),
      Tagged(Row("pump-7", "env", kStart + kSecond, {{"t", 2.5}}), old_dimensions),
      Row("pump-8", "env", kStart, {{"n", int64_t{7}}})};
  {
    std::unique_ptr<IngestSink> sink = OpenSink();
    ASSERT_NE(sink, nullptr);
    EXPECT_EQ(CompareReadings(Expected("sensors", old), Readings()), "");
    // The text the sink itself would key this series by: a re-sent reading
    // meets the migrated row, another sensor's is a new row.
    const std::vector<RecordRow> again = {
        Tagged(Row("pump-7", "env", kStart, {{"t", 1.5}}, std::numeric_limits<uint64_t>::max()),
               old_dimensions),
        Tagged(Row("pump-7", "env", kStart, {{"t", 9.5}}), {{"site", "south"}}, {{"fw", "2"}})};
    Result<DecodedEnvelope> batch = MakeBatch(HeaderFor(2, again.size()), again);
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    EXPECT_EQ(Apply(sink.get(), *batch), (SinkCounts{1, 0, 1, 0}));
  }
  old.push_back(Tagged(Row("pump-7", "env", kStart, {{"t", 9.5}}), {{"site", "south"}}, {{"fw", "2"}}));
  // A second start finds version 2 and changes nothing.
  std::unique_ptr<IngestSink> sink = OpenSink();
  ASSERT_NE(sink, nullptr);
  EXPECT_EQ(CompareReadings(Expected("sensors", old), Readings()), "");
  Result<std::vector<StoredSeries>> series = sink->ReadSeries();
  ASSERT_TRUE(series.ok()) << series.status().ToString();
  ASSERT_EQ(series->size(), 3u);
  EXPECT_EQ((*series)[0], (StoredSeries{"sensors", "pump-7", "env", old_dimensions, 0, {}}));
  EXPECT_EQ((*series)[1], (StoredSeries{"sensors", "pump-7", "env", {{"site", "south"}}, 0, {{"fw", "2"}}}));
  EXPECT_EQ((*series)[2], (StoredSeries{"sensors", "pump-8", "env", {}, 0, {}}));
  Result<std::vector<StoredBatch>> batches = sink->ReadBatches();
  ASSERT_TRUE(batches.ok()) << batches.status().ToString();
  ASSERT_EQ(batches->size(), 2u);
  EXPECT_EQ((*batches)[0].counts, (SinkCounts{3, 0, 0, 0}));
  // The canonical text, and the schema of a new database, primary keys by
  // their usual names.
  Result<QueryRows> stored = cluster_->Query(
      "SELECT DISTINCT dimensions FROM cairn_readings WHERE device_id = "
      "'pump-7' AND dimensions LIKE '%ort%'");
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_EQ((*stored)[0][0], "{\"ort\":\"Zürich\",\"q\":\"a\\\"b\\\\c\",\"site\":\"north\"}");
  stored = cluster_->Query(
      "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
      "WHERE contype = 'p' AND conrelid::regclass::text IN ('cairn_readings', 'cairn_series') ORDER BY 1");
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  ASSERT_EQ(stored->size(), 2u);
  EXPECT_EQ((*stored)[0],
            (std::vector<std::string>{
                "cairn_readings", "cairn_readings_pkey",
                "PRIMARY KEY (table_name, device_id, measure_name, dimensions, timestamp_ns)"}));
  EXPECT_EQ((*stored)[1], (std::vector<std::string>{"cairn_series", "cairn_series_pkey",
                                                    "PRIMARY KEY (table_name, device_id, measure_name, "
                                                    "dimensions, shard)"}));
  stored = cluster_->Query(
      "SELECT string_agg(column_name || ' ' || data_type, ', ' ORDER BY ordinal_position) FROM "
      "information_schema.columns WHERE table_name = 'cairn_readings'");
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ((*stored)[0][0],
            "table_name text, device_id text, measure_name text, dimensions text, timestamp_ns bigint, "
            "shard integer, partition_key text, version numeric, ttl bigint, fields jsonb, lsn numeric");
}

// Equal versions are ordered by the gateway's LSN (on_conflict overwrite
// stores a merged rewrite under a later LSN), whatever order batches arrive in.
TEST_F(IngestTest, PostgresKeepsTheLaterLsnOfEqualVersions) {
  std::unique_ptr<IngestSink> sink = OpenSink();
  ASSERT_NE(sink, nullptr);
  RecordRow original = Row("pump-7", "env", kStart, {{"t", 1.0}});
  RecordRow merged = Row("pump-7", "env", kStart, {{"h", int64_t{40}}, {"t", 2.0}});
  original.lsn = 1000;
  merged.lsn = 2000;
  Result<DecodedEnvelope> later = MakeBatch(HeaderFor(2, 1), {merged});
  Result<DecodedEnvelope> earlier = MakeBatch(HeaderFor(1, 1), {original});
  Result<DecodedEnvelope> both = MakeBatch(HeaderFor(3, 2), {merged, original}, EnvelopeEncoding::kJson);
  ASSERT_TRUE(later.ok() && earlier.ok() && both.ok());
  EXPECT_EQ(Apply(sink.get(), *later), (SinkCounts{1, 0, 0, 0}));
  EXPECT_EQ(Apply(sink.get(), *earlier), (SinkCounts{0, 0, 0, 1}));
  EXPECT_EQ(Apply(sink.get(), *both), (SinkCounts{0, 0, 1, 1}));
  merged.lsn = 2001;  // the same version merged once more
  Result<DecodedEnvelope> again = MakeBatch(HeaderFor(4, 1), {merged});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(Apply(sink.get(), *again), (SinkCounts{0, 1, 0, 0}));
  const std::vector<StoredReading> readings = Readings();
  ASSERT_EQ(readings.size(), 1u);
  EXPECT_EQ(readings[0].row.lsn, 2001u);
  EXPECT_EQ(CompareReadings(Expected("sensors", {merged}), readings), "");
}

TEST_F(IngestTest, PostgresManyRecordsSpanSeveralStatements) {
  std::unique_ptr<IngestSink> sink = OpenSink();
  ASSERT_NE(sink, nullptr);
  std::vector<RecordRow> rows;
  for (int i = 0; i < 1234; ++i) {
    // 7 devices x 5 sensors, whose readings of one timestamp are told apart
    // by their sensor alone; attributes alternate, the last sent wins.
    rows.push_back(Tagged(
        Row("dev-" + std::to_string(i % 7), "env", kStart + (i / 5) * kSecond, {{"n", int64_t{i}}}, i % 3),
        {{"sensor", std::to_string(i % 5)}}, {{"fw", std::to_string(i % 2)}}));
  }
  Result<DecodedEnvelope> batch = MakeBatch(HeaderFor(1, rows.size()), rows);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_EQ(Apply(sink.get(), *batch), (SinkCounts{rows.size(), 0, 0, 0}));
  EXPECT_EQ(Apply(sink.get(), *batch), (SinkCounts{0, 0, rows.size(), 0}));
  EXPECT_EQ(CompareReadings(Expected("sensors", rows), Readings()), "");
}

TEST_F(IngestTest, ValuePostgresCannotHoldIsRejectedWithReasonAndNothingStored) {
  std::unique_ptr<IngestSink> sink = OpenSink();
  ASSERT_NE(sink, nullptr);
  IngestHandlerOptions options;
  options.keys = Keys();
  IngestHandler handler(Env::Default(), options, sink.get());
  // jsonb cannot hold U+0000, which a cairn string field may contain.
  const std::vector<RecordRow> rows = {
      Row("pump-7", "env", kStart, {{"t", 1.0}}),
      Row("pump-7", "env", kStart + kSecond, {{"s", std::string("a\0b", 3)}})};
  const EnvelopeHeader header = HeaderFor(1, rows.size());
  HandledMessage handled = handler.Handle(Topic(header), Envelope(header, rows));
  ASSERT_EQ(handled.outcome, IngestOutcome::kRejected) << handled.detail;
  ASSERT_TRUE(handled.receipt.has_value());
  Result<SyncReceipt> receipt = DecodeReceipt(handled.receipt->payload, kGatewayKey);
  ASSERT_TRUE(receipt.ok()) << receipt.status().ToString();
  EXPECT_EQ(receipt->status, ReceiptStatus::kRejected);
  EXPECT_NE(receipt->reason.find("SQLSTATE 22"), std::string::npos) << receipt->reason;
  EXPECT_TRUE(Readings().empty());
  // The sink is still usable.
  Result<DecodedEnvelope> good = MakeBatch(HeaderFor(2, 1), {rows[0]});
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(Apply(sink.get(), *good), (SinkCounts{1, 0, 0, 0}));
}

}  // namespace
}  // namespace cairn::ingest_test
