// catalog.db lost, from the outside: cairnd writes readings over HTTP into
// two tables (one with its own options), is killed (-9) with some readings
// sealed into period files and some only in the log, and catalog.db is
// deleted (or overwritten with garbage). The next start must rebuild the
// catalog from the period files and the log, serve every acknowledged
// reading under its own device, keep the tables' options, say so in health
// and in its log, and give new series ids that no period file uses.
//
// Before the fix, the start went on as if the directory were empty: none of
// the readings could be read, and new devices took the ids of the old
// period files' series, so readings came back under the wrong device.
#include <fstream>
#include <string>

#include "cairnd_damage_fixture.h"

namespace cairn {
namespace {

constexpr int kDevices = 4;
constexpr int kReadingsPerDevice = 3000;

class CairndCatalogRebuildTest : public CairndDamageTest {
 protected:
  void WriteKillAndLoseCatalog(bool garbage) {
    StartDaemon({"--http-plain", "--seal-records", "500"});
    admin_ = FirstAdminToken();
    ASSERT_FALSE(admin_.empty());
    Result<HttpTestClient> client = HttpTestClient::Connect("127.0.0.1", port_);
    ASSERT_TRUE(client.ok());
    Result<HttpTestResponse> created =
        client->Request("PUT", "/v1/tables/plant?period=hour&retention=90d&max_series=77",
                        {{"Authorization", "Bearer " + admin_}}, "");
    ASSERT_TRUE(created.ok());
    ASSERT_EQ(created->status, 201) << created->body;
    for (int d = 0; d < kDevices; ++d)
      ASSERT_TRUE(WriteReadings("dev-" + std::to_string(d), d + 1, kReadingsPerDevice));
    ASSERT_TRUE(WriteReadings("pump", 9, 1500, "plant"));
    // Full heads are sealed by the maintenance loop within a round or two;
    // then a few more readings stay in the log only.
    ASSERT_TRUE(WaitUntil([&] { return TableFiles("plant", ".db").size() > 0; }));
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    for (int d = 0; d < kDevices; ++d) ASSERT_TRUE(WriteReadings("dev-" + std::to_string(d), d + 1, 50));
    KillDaemon();
    const std::string catalog = dir_.PathOf("data") + "/catalog.db";
    for (const char* suffix : {"", "-wal"}) std::remove((catalog + suffix).c_str());
    if (garbage) {
      std::ofstream out(catalog, std::ios::binary);
      out << std::string(8192, 'x');
    }
  }

  // The JSON of GET /v1/tables.
  std::string Tables() {
    Result<HttpTestResponse> response = Get("/v1/tables", admin_);
    EXPECT_TRUE(response.ok() && response->status == 200);
    return response.ok() ? response->body : "";
  }
};

TEST_F(CairndCatalogRebuildTest, ADeletedCatalogIsRebuiltAndEveryReadingIsServedUnderItsDevice) {
  WriteKillAndLoseCatalog(/*garbage=*/false);
  StartDaemon({"--http-plain", "--seal-records", "500"});
  EXPECT_EQ(ExpectEveryAcknowledgedReading(), AcknowledgedCount());
  const std::string stderr_text = daemon_->Stderr();
  EXPECT_TRUE(Contains(stderr_text, "catalog.db was missing")) << stderr_text;
  EXPECT_TRUE(Contains(stderr_text, "rebuilt from")) << stderr_text;
  const std::string health = HealthDetails();
  EXPECT_NE(health.find("catalog.rebuilt"), std::string::npos) << health;
  EXPECT_NE(health.find("degraded"), std::string::npos) << health;
  // The options of "plant" came back from its period files.
  const std::string tables = Tables();
  EXPECT_NE(tables.find("77"), std::string::npos) << tables;
  EXPECT_NE(tables.find("hour"), std::string::npos) << tables;

  // New devices get new series ids: sealed and read back after a restart,
  // every device holds its own readings only.
  ASSERT_TRUE(WriteReadings("new-0", 7, 1200));
  ASSERT_TRUE(WriteReadings("new-1", 8, 1200));
  ASSERT_TRUE(WriteReadings("dev-0", 1, 600));
  StopDaemon();
  StartDaemon({"--http-plain", "--seal-records", "500"});
  EXPECT_EQ(ExpectEveryAcknowledgedReading(), AcknowledgedCount());
  // The catalog is whole again: the notice does not come back.
  EXPECT_EQ(HealthDetails().find("catalog.rebuilt"), std::string::npos);
  StopDaemon();
}

TEST_F(CairndCatalogRebuildTest, AnUnreadableCatalogIsMovedAsideAndRebuilt) {
  WriteKillAndLoseCatalog(/*garbage=*/true);
  StartDaemon({"--http-plain", "--seal-records", "500"});
  EXPECT_EQ(ExpectEveryAcknowledgedReading(), AcknowledgedCount());
  EXPECT_TRUE(Contains(daemon_->Stderr(), "moved to catalog.db.damaged")) << daemon_->Stderr();
  EXPECT_TRUE(Env::Default()->FileExists(dir_.PathOf("data") + "/catalog.db.damaged"));
  EXPECT_NE(HealthDetails().find("catalog.rebuilt"), std::string::npos);
  StopDaemon();
}

// Two period files that disagree about a series id cannot be trusted to
// rebuild from: cairnd refuses to open the storage, naming the file and
// what to do, and keeps its API up to say so.
TEST_F(CairndCatalogRebuildTest, ARebuildThatCannotBeTrustedRefusesNamingTheFile) {
  WriteKillAndLoseCatalog(/*garbage=*/false);
  std::vector<std::string> files = TableFiles("plant", ".db");
  ASSERT_FALSE(files.empty());
  std::string sealed;
  for (const std::string& file : files) {
    auto [status, count] = RunCommand("sqlite3 " + file + " 'select count(*) from series'", false);
    if (status == 0 && !count.empty() && std::stoi(count) > 0) sealed = file;
  }
  ASSERT_FALSE(sealed.empty());
  // The pump's id now also names a sensors device in another file.
  auto [id_status, id] = RunCommand("sqlite3 " + sealed + " 'select series_id from series limit 1'", false);
  ASSERT_EQ(id_status, 0);
  std::vector<std::string> sensors = TableFiles("sensors", ".db");
  ASSERT_FALSE(sensors.empty());
  ASSERT_EQ(RunCommand("sqlite3 " + sensors.front() +
                       " \"insert or replace into series(series_id, device_id, measure_name, shard, fields, "
                       "dimensions) values(" + id.substr(0, id.find('\n')) + ", 'intruder', 'env', 0, '{}', '{}')\"")
                .first,
            0);
  // cairnd comes up without storage and says why, in its log and health.
  StartDaemon({"--http-plain"});
  const std::string text = daemon_->Stderr();
  EXPECT_TRUE(Contains(text, "cannot be rebuilt")) << text;
  EXPECT_TRUE(Contains(text, ".db")) << text;
  EXPECT_TRUE(Contains(text, "Move that file out of the data directory")) << text;
  const std::string health = HealthDetails();
  EXPECT_TRUE(Contains(health, "\"status\":\"unavailable\"")) << health;
  EXPECT_TRUE(Contains(health, "Move that file out of the data directory")) << health;
  Result<HttpTestResponse> tables = Get("/v1/tables", admin_);
  ASSERT_TRUE(tables.ok());
  EXPECT_EQ(tables->status, 503) << "cairnd serves a catalog it could not rebuild: " << tables->body;
  StopDaemon();
  EXPECT_FALSE(Env::Default()->FileExists(dir_.PathOf("data") + "/catalog.db"));
}

}  // namespace
}  // namespace cairn
