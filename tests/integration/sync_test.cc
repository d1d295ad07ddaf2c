// Sync end to end with every part real: cairnd (a child process) writes to
// its engine over HTTP and syncs over MQTT with TLS and a client certificate
// to a mosquitto started by the test; cairn-ingest (a child process)
// verifies the envelopes, stores them in a PostgreSQL cluster started by the
// test and publishes receipts. Each test compares what PostgreSQL holds with
// what cairnd acknowledged: every reading, exactly once, equal.
//
// Every wait is bounded; every child is killed and reaped by its guard.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sync_test_util.h"

namespace cairn::sync_test {
namespace {

TEST_F(SyncTest, WrittenReadingsReachPostgresExactlyOnceAndSyncShowsIt) {
  StartIngest();
  StartDaemon();
  ASSERT_FALSE(token_.empty());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(Write(200));
  ExpectPostgresHoldsEveryAcknowledgedReading();
  // `sync` over HTTP: connected, nothing unsynced once the ledger caught up.
  std::string body;
  for (int attempt = 0; attempt < 300; ++attempt) {
    Result<HttpTestResponse> sync = Get("/v1/sync");
    ASSERT_TRUE(sync.ok());
    ASSERT_EQ(sync->status, 200) << sync->body;
    body = sync->body;
    if (body.find("\"unsynced_records\":0") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(body.find("\"connected\":true"), std::string::npos) << body;
  EXPECT_NE(body.find("\"unsynced_records\":0"), std::string::npos) << body;
  EXPECT_EQ(body.find("\"unsynced_records\":2000"), std::string::npos) << body;
  Result<HttpTestResponse> metrics = Get("/metrics");
  ASSERT_TRUE(metrics.ok());
  EXPECT_NE(metrics->body.find("cairn_sync_connected 1"), std::string::npos);
  EXPECT_NE(metrics->body.find("cairn_sync_confirmed_records_total{table=\"sensors\",lane=\"live\"} 2000"),
            std::string::npos)
      << metrics->body;
  StopDaemon();
}

// Readings of one device, measure and timestamp told apart by a tag are
// series of their own on the gateway and rows of their own in the cloud:
// none replaces another on the way.
TEST_F(SyncTest, ReadingsToldApartByATagAllReachPostgres) {
  StartIngest();
  StartDaemon();
  const std::string t = std::to_string(base_ns_);
  const std::string body = "env,device=gw1,sensor=a temperature=1.5 " + t + "\n" +
                           "env,device=gw1,sensor=b temperature=2.5 " + t + "\n" +
                           "env,device=gw1,sensor=a,site=north temperature=3.5 " + t + "\n" +
                           "env,device=gw1 temperature=4.5 " + t + "\n";
  Result<HttpTestClient> client = HttpTestClient::Connect("127.0.0.1", port_);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  Result<HttpTestResponse> response =
      client->Request("POST", "/write?db=sensors", {{"Authorization", "Bearer " + token_}}, body);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  ASSERT_EQ(response->status, 204) << response->body;

  Result<std::unique_ptr<IngestSink>> sink = OpenPostgresSink(postgres_.connection_string());
  ASSERT_TRUE(sink.ok()) << sink.status().ToString();
  std::vector<StoredReading> stored;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTimeoutMs);
  while (std::chrono::steady_clock::now() < deadline && stored.size() < 4) {
    Result<std::vector<StoredReading>> readings = (*sink)->ReadReadings();
    ASSERT_TRUE(readings.ok()) << readings.status().ToString();
    stored = std::move(readings).value();
    if (stored.size() < 4) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_EQ(stored.size(), 4u) << "cairnd log:\n"
                               << daemon_->Stderr() << "\ningest log:\n"
                               << ReadFileFrom(ingest_log_, 0);
  // ReadReadings order: by the dimensions' canonical text, bytewise (","
  // sorts before "}", and "{}" last).
  const std::vector<std::pair<TagMap, double>> expected = {{{{"sensor", "a"}, {"site", "north"}}, 3.5},
                                                           {{{"sensor", "a"}}, 1.5},
                                                           {{{"sensor", "b"}}, 2.5},
                                                           {{}, 4.5}};
  for (size_t i = 0; i < expected.size(); ++i) {
    const RecordRow& row = stored[i].row;
    EXPECT_EQ(row.device_id, "gw1");
    EXPECT_EQ(row.measure_name, "env");
    EXPECT_EQ(row.timestamp, base_ns_);
    EXPECT_EQ(row.dimensions, expected[i].first) << "reading " << i;
    ASSERT_EQ(row.fields.size(), 1u);
    EXPECT_EQ(std::get<double>(row.fields[0].value), expected[i].second) << "reading " << i;
  }
  Result<std::vector<StoredSeries>> series = (*sink)->ReadSeries();
  ASSERT_TRUE(series.ok()) << series.status().ToString();
  EXPECT_EQ(series->size(), 4u);
  StopDaemon();
}

TEST_F(SyncTest, ABrokerOutageLosesNothing) {
  StartIngest();
  StartDaemon();
  ASSERT_TRUE(Write(300));
  ExpectPostgresHoldsEveryAcknowledgedReading();
  ASSERT_TRUE(broker_.Stop().ok());
  // Writes go on while the cloud is unreachable.
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(Write(400));
  Result<HttpTestResponse> sync = Get("/v1/sync");
  ASSERT_TRUE(sync.ok());
  EXPECT_NE(sync->body.find("\"connected\":false"), std::string::npos) << sync->body;
  ASSERT_TRUE(broker_.Restart().ok());
  ExpectPostgresHoldsEveryAcknowledgedReading();
  StopDaemon();
}

TEST_F(SyncTest, KillNineAtRandomMomentsNeverLosesOrDuplicatesAReading) {
  StartIngest();
  std::mt19937 random(20261121);
  for (int round = 0; round < 20; ++round) {
    StartDaemon();
    if (round == 0) {
      ASSERT_FALSE(token_.empty());
    }
    ASSERT_TRUE(Write(150));
    std::this_thread::sleep_for(std::chrono::milliseconds(random() % 400));
    ASSERT_TRUE(Write(50));
    std::this_thread::sleep_for(std::chrono::milliseconds(random() % 200));
    KillDaemon();
    // Now and then the ingest side dies too, between its commit and its
    // receipt or anywhere else: the batch comes again and is deduplicated.
    if (round % 5 == 4) {
      StopIngest(SIGKILL);
      StartIngest();
    }
  }
  StartDaemon();
  ExpectPostgresHoldsEveryAcknowledgedReading();
  StopDaemon();
}

TEST_F(SyncTest, LiveBatchesKeepFlowingWhileABacklogDrainsOldestFirst) {
  // A backlog builds up while the ingest side is away.
  StartDaemon({"--sync-backfill-rate", "4000"});
  for (int i = 0; i < 12; ++i) ASSERT_TRUE(Write(2000));
  StopDaemon();
  StartIngest();
  StartDaemon({"--sync-backfill-rate", "4000"});
  const size_t backlog = acknowledged_.size();
  // Live writes while the backlog (24000 readings at 4000/s) drains.
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(Write(10));
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  ExpectPostgresHoldsEveryAcknowledgedReading();
  StopDaemon();
  Result<std::unique_ptr<IngestSink>> sink = OpenPostgresSink(postgres_.connection_string());
  ASSERT_TRUE(sink.ok());
  Result<std::vector<StoredBatch>> batches = (*sink)->ReadBatches();
  ASSERT_TRUE(batches.ok()) << batches.status().ToString();
  std::sort(batches->begin(), batches->end(), [](const StoredBatch& a, const StoredBatch& b) {
    return a.received_at_unix_nanos < b.received_at_unix_nanos;
  });
  int64_t last_backfill_received = 0, first_live_received = 0;
  uint64_t previous_backfill_first_lsn = 0;
  size_t backfill_records = 0;
  for (const StoredBatch& batch : *batches) {
    if (batch.header.lane == SyncLane::kBackfill) {
      // Oldest first.
      EXPECT_GT(batch.header.first_lsn, previous_backfill_first_lsn);
      previous_backfill_first_lsn = batch.header.first_lsn;
      last_backfill_received = batch.received_at_unix_nanos;
      backfill_records += batch.records;
    } else if (batch.header.lane == SyncLane::kLive && first_live_received == 0) {
      first_live_received = batch.received_at_unix_nanos;
    }
  }
  std::string lanes;
  for (const StoredBatch& batch : *batches) {
    lanes += std::string(SyncLaneName(batch.header.lane)) + " " + std::to_string(batch.header.first_lsn) +
             ".." + std::to_string(batch.header.last_lsn) + " " + std::to_string(batch.records) + "\n";
  }
  EXPECT_EQ(backfill_records, backlog) << lanes;
  // Fresh data did not wait for the backlog.
  ASSERT_NE(first_live_received, 0);
  EXPECT_LT(first_live_received, last_backfill_received);
}

}  // namespace
}  // namespace cairn::sync_test
