// Bytes flipped in a period file's SQLite -wal, from the outside: cairnd is
// killed (-9) while sealed chunks may still sit in the WAL, the test damages
// the -wal on disk, and the next start must give back every acknowledged
// reading (recovered from the write-ahead log) and say what happened.
//
// Before the fix, the seal let the log go of its records as soon as the
// chunk was committed to the WAL: SQLite read the damaged WAL up to the
// first bad frame and silently dropped the commits after it, with /healthz
// ok. Now the log keeps a seal's records until the WAL is checkpointed into
// the main file.
#include <fstream>
#include <string>
#include <vector>

#include "cairnd_damage_fixture.h"

namespace cairn {
namespace {

constexpr int kDevices = 4;
constexpr int kReadingsPerDevice = 4000;

// Flips every 64th byte of `path` from `from` on; returns the bytes flipped.
size_t FlipBytes(const std::string& path, uint64_t from) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  if (!file) return 0;
  file.seekg(0, std::ios::end);
  const uint64_t size = static_cast<uint64_t>(file.tellg());
  size_t flipped = 0;
  for (uint64_t offset = from; offset < size; offset += 64) {
    file.seekg(static_cast<std::streamoff>(offset));
    char byte = 0;
    file.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x5a);
    file.seekp(static_cast<std::streamoff>(offset));
    file.write(&byte, 1);
    ++flipped;
  }
  return flipped;
}

class CairndPeriodWalDamageTest : public CairndDamageTest {
 protected:
  // Writes the readings with small seals, so that most of them are sealed
  // before the kill; returns once some period file has a WAL of sealed
  // chunks (or the writes are done and the seals have had their time).
  void WriteAndKill() {
    StartDaemon({"--http-plain", "--seal-records", "200"});
    admin_ = FirstAdminToken();
    ASSERT_FALSE(admin_.empty());
    for (int d = 0; d < kDevices; ++d)
      ASSERT_TRUE(WriteReadings("dev-" + std::to_string(d), d + 1, kReadingsPerDevice));
    // The maintenance loop seals full heads within a round or two.
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    KillDaemon();
  }
};

TEST_F(CairndPeriodWalDamageTest, FlippedBytesInAPeriodWalLoseNoAcknowledgedReading) {
  WriteAndKill();
  // Damage every -wal with frames in it, from the first frame on (the
  // 32-byte WAL header stays intact, so SQLite reads up to the damage).
  size_t flipped = 0;
  for (const std::string& wal : TableFiles("sensors", ".db-wal")) flipped += FlipBytes(wal, 32 + 24 + 4096 + 100);
  RecordProperty("bytes_flipped", static_cast<int>(flipped));

  StartDaemon({"--http-plain", "--seal-records", "200"});
  EXPECT_EQ(ExpectEveryAcknowledgedReading(), AcknowledgedCount());
  // Sealed again and stopped cleanly, the readings are in the period files.
  StopDaemon();
  StartDaemon({"--http-plain", "--seal-records", "200"});
  EXPECT_EQ(ExpectEveryAcknowledgedReading(), AcknowledgedCount());
  StopDaemon();
}

// A -wal left with commits in it (as a crash between a seal's commit and
// its checkpoint leaves one) whose first commit is damaged: SQLite ignores
// every commit after the damage. cairnd must notice before SQLite opens the
// file, say so in health and in its log, and still serve every reading. The
// commits are made with Debian's sqlite3 shell on the stopped daemon's file
// (two rows in the file's meta table, which cairn ignores), and its WAL is
// kept by copying it before the shell checkpoints it away.
TEST_F(CairndPeriodWalDamageTest, ADamagedWalIsReportedAndEveryReadingIsStillServed) {
  StartDaemon({"--http-plain", "--seal-records", "200"});
  admin_ = FirstAdminToken();
  ASSERT_FALSE(admin_.empty());
  ASSERT_TRUE(WriteReadings("dev-a", 1, 3000));
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  KillDaemon();
  std::vector<std::string> files = TableFiles("sensors", ".db");
  ASSERT_FALSE(files.empty());
  std::string db;
  for (const std::string& file : files) {
    auto [status, count] = RunCommand("sqlite3 " + file + " 'select count(*) from chunks'", false);
    if (status == 0 && std::stoi(count.empty() ? "0" : count) > 0) db = file;
  }
  ASSERT_FALSE(db.empty()) << "no period file holds chunks: nothing was sealed";
  const std::string script_path = dir_.PathOf("commits.sql");
  {
    std::ofstream script(script_path);
    script << "PRAGMA wal_autocheckpoint=0;\n"
           << "INSERT INTO meta(key, value) VALUES('test_filler_1', randomblob(9000));\n"
           << "INSERT INTO meta(key, value) VALUES('test_filler_2', randomblob(9000));\n"
           << ".shell cp " << db << "-wal " << db << "-wal.keep\n";
  }
  auto [status, output] = RunCommand("sqlite3 " + db + " < " + script_path);
  ASSERT_EQ(status, 0) << output;
  ASSERT_EQ(RunCommand("mv " + db + "-wal.keep " + db + "-wal && rm -f " + db + "-shm").first, 0);
  // The first frame's page, so that both commits are lost to SQLite.
  ASSERT_GT(FlipBytes(db + "-wal", 32 + 24 + 50), 0u);

  StartDaemon({"--http-plain", "--seal-records", "200"});
  EXPECT_EQ(ExpectEveryAcknowledgedReading(), AcknowledgedCount());
  const std::string health = HealthDetails();
  EXPECT_NE(health.find("period.wal_damaged:sensors/"), std::string::npos) << health;
  EXPECT_NE(health.find("degraded"), std::string::npos) << health;
  EXPECT_TRUE(Contains(daemon_->Stderr(), "the WAL of period file sensors/")) << daemon_->Stderr();
  StopDaemon();
}

}  // namespace
}  // namespace cairn
