// What opening checks before replay: a lost catalog rebuilt from the period
// files and the log (engine_open_checks.cc, catalog_rebuild.cc), the seal
// marks compared with the period files (the coverage check), a damaged
// period -wal, and the log kept until a seal's WAL is checkpointed.
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "cairn/core/sqlite_database.h"

#include "engine/catalog/catalog_rebuild.h"
#include "engine_test_util.h"

namespace cairn::testing {
namespace {

// Every temperature of `device`: timestamp -> value.
std::map<int64_t, double> ReadAll(Engine& engine, const std::string& table, const std::string& device) {
  std::map<int64_t, double> out;
  RangeQuery query;
  query.table = table;
  query.device_id = device;
  query.limit = 0;
  auto result = engine.Range(query);
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  if (!result.ok()) return out;
  for (const RecordRow& row : result->rows) {
    for (const Field& f : row.fields) {
      if (f.name == "temperature") out[row.timestamp] = std::get<double>(f.value);
    }
  }
  return out;
}

bool HasProblem(Engine& engine, const std::string& key_prefix) {
  for (const HealthProblem& p : engine.Health().problems) {
    if (p.key.compare(0, key_prefix.size(), key_prefix) == 0) return true;
  }
  return false;
}

std::vector<std::string> FilesEndingWith(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().string();
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.push_back(name);
  }
  return out;
}

class EngineOpenChecksTest : public EngineFixture {
 protected:
  // Writes `count` readings of each device, value = device_number * 1e6 + i.
  void WriteDevices(const std::string& table, int devices, int count, int first = 0) {
    for (int d = 0; d < devices; ++d) WriteDevice(table, d, count, first);
  }
  void WriteDevice(const std::string& table, int d, int count, int first) {
    std::vector<Record> batch;
    for (int i = first; i < first + count; ++i) {
      const double value = (d + 1) * 1e6 + i;
      batch.push_back(Temperature("dev-" + std::to_string(d), base_ + i * kSecond, value));
      expected_[table]["dev-" + std::to_string(d)][base_ + i * kSecond] = value;
    }
    WriteOk(batch, table);
  }

  void ExpectEverything() {
    for (const auto& [table, devices] : expected_) {
      for (const auto& [device, values] : devices) {
        EXPECT_EQ(ReadAll(*engine_, table, device), values) << table << "/" << device;
      }
    }
  }

  void RemoveCatalog() {
    ASSERT_TRUE(engine_->Close().ok());
    engine_.reset();
    for (const char* suffix : {"", "-wal"}) std::filesystem::remove(dir_.path() + "/catalog.db" + suffix);
  }

  const int64_t base_ = Now() - 3600 * kSecond;
  std::map<std::string, std::map<std::string, std::map<int64_t, double>>> expected_;
};

TEST(CatalogRebuildTest, TableOptionsRoundTripThroughTheirText) {
  TableInfo table;
  table.name = "plant";
  table.options.period = Period::kHour;
  table.options.retention_seconds = 90 * 86400;
  table.options.default_ttl_seconds = 3600;
  table.options.sync = false;
  table.options.max_series = 77;
  table.options.on_conflict = ConflictPolicy::kOverwrite;
  table.created_unix_nanos = 1234567;
  TableInfo decoded;
  decoded.name = "plant";
  ASSERT_TRUE(DecodeTableOptions(EncodeTableOptions(table), &decoded).ok());
  EXPECT_EQ(decoded.options.period, Period::kHour);
  EXPECT_EQ(decoded.options.retention_seconds, 90 * 86400);
  EXPECT_EQ(decoded.options.default_ttl_seconds, 3600);
  EXPECT_FALSE(decoded.options.sync);
  EXPECT_EQ(decoded.options.max_series, 77u);
  EXPECT_EQ(decoded.options.on_conflict, ConflictPolicy::kOverwrite);
  EXPECT_EQ(decoded.created_unix_nanos, 1234567);
  // Unknown members are ignored, missing ones keep what was there.
  TableInfo partial;
  ASSERT_TRUE(DecodeTableOptions(R"({"retention_seconds":600,"from_the_future":"x"})", &partial).ok());
  EXPECT_EQ(partial.options.retention_seconds, 600);
  EXPECT_EQ(partial.options.period, TableOptions{}.period);
  EXPECT_EQ(partial.options.on_conflict, ConflictPolicy::kReject);  // files from before the option
  EXPECT_FALSE(DecodeTableOptions(R"({"on_conflict":"sometimes"})", &partial).ok());
  // Options that fail validation are refused, the table left as it was.
  EXPECT_FALSE(DecodeTableOptions(R"({"retention_seconds":-1})", &partial).ok());
  EXPECT_EQ(partial.options.retention_seconds, 600);
}

TEST_F(EngineOpenChecksTest, ALostCatalogIsRebuiltWithOptionsSeriesAndUnsealedReadings) {
  TableOptions plant;
  plant.period = Period::kHour;
  plant.retention_seconds = 90 * 86400;
  plant.max_series = 77;
  plant.on_conflict = ConflictPolicy::kOverwrite;
  CreateTable("plant", plant);
  CreateTable("t");
  WriteDevices("plant", 2, 300);
  WriteDevices("t", 3, 300);
  ASSERT_TRUE(engine_->SealAll().ok());
  WriteDevices("t", 3, 20, 300);  // in the log only
  // A table no period file names: only the log knows it.
  CreateTable("solo");
  WriteDevices("solo", 1, 10);
  RemoveCatalog();

  Open();
  EXPECT_TRUE(recovery_.catalog_rebuilt);
  EXPECT_EQ(recovery_.catalog_rebuilt_tables, 2u);
  EXPECT_EQ(recovery_.catalog_rebuilt_series, 5u);
  EXPECT_GE(recovery_.catalog_rebuilt_files, 2u);
  EXPECT_EQ(recovery_.tables_with_default_options, std::vector<std::string>{"solo"});
  ASSERT_FALSE(recovery_.notices.empty());
  EXPECT_NE(recovery_.notices.front().find("rebuilt from"), std::string::npos) << recovery_.notices.front();
  EXPECT_TRUE(HasProblem(*engine_, "catalog.rebuilt"));
  auto info = engine_->GetTable("plant");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->options.period, Period::kHour);
  EXPECT_EQ(info->options.retention_seconds, 90 * 86400);
  EXPECT_EQ(info->options.max_series, 77u);
  EXPECT_EQ(info->options.on_conflict, ConflictPolicy::kOverwrite);
  ExpectEverything();

  // New series take ids no period file uses: after sealing and reopening,
  // every device still reads back its own values only.
  WriteDevices("t", 5, 50, 1000);  // dev-3 and dev-4 are new
  ASSERT_TRUE(engine_->SealAll().ok());
  Reopen();
  EXPECT_FALSE(recovery_.catalog_rebuilt);
  EXPECT_FALSE(HasProblem(*engine_, "catalog.rebuilt"));
  ExpectEverything();
}

TEST_F(EngineOpenChecksTest, PeriodFilesThatDisagreeAboutASeriesIdRefuseTheRebuild) {
  CreateTable("t");
  WriteDevices("t", 2, 10);
  ASSERT_TRUE(engine_->SealAll().ok());
  RemoveCatalog();
  // A second period file of the table naming series 1 as another device.
  std::vector<std::string> files = FilesEndingWith(dir_.path() + "/t", ".db");
  ASSERT_EQ(files.size(), 1u);
  const std::string other = dir_.path() + "/t/" + PeriodFileStem(Period::kDay, PeriodStart(Period::kDay, base_) -
                                                                                  86400 * kSecond) + ".db";
  std::filesystem::copy_file(files.front(), other);
  {
    auto db = SqliteDb::Open(other, "unix", /*read_only=*/false, 64, SqliteSynchronous::kFull);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    ASSERT_TRUE((*db)->Exec("UPDATE series SET device_id='intruder' WHERE series_id=1").ok());
    ASSERT_TRUE((*db)->Exec("UPDATE meta SET value=" +
                            std::to_string(PeriodStart(Period::kDay, base_) - 86400 * kSecond) +
                            " WHERE key='period_start_ns'")
                    .ok());
    ASSERT_TRUE((*db)->Close().ok());
  }
  auto opened = Engine::Open(&clock_, dir_.path(), options_, &recovery_);
  ASSERT_FALSE(opened.ok());
  EXPECT_TRUE(opened.status().Is(StatusCode::kFailedPrecondition)) << opened.status().ToString();
  EXPECT_NE(opened.status().message().find("cannot be rebuilt"), std::string::npos);
  EXPECT_NE(opened.status().message().find(".db"), std::string::npos);
  // Nothing half-made is left for the next start to take for a catalog.
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/catalog.db"));
}

// The seal mark says what a period file held once its WAL was checkpointed;
// a file found holding less (here: an older copy put back) gets the rest
// from the log, loudly.
TEST_F(EngineOpenChecksTest, APeriodFileBehindItsSealMarkIsRecoveredFromTheLog) {
  options_.seal_records = 50;
  Open();
  CreateTable("t");
  WriteDevices("t", 2, 100);  // LSNs 1-200
  ASSERT_TRUE(engine_->SealAll().ok());
  std::vector<std::string> files = FilesEndingWith(dir_.path() + "/t", ".db");
  ASSERT_EQ(files.size(), 1u);
  const std::string older = dir_.path() + "/older.db";
  std::filesystem::copy_file(files.front(), older);  // checkpointed: the .db alone holds the seal
  // dev-0's full head is sealed (LSNs 201-300, the file's mark); dev-1's
  // ten readings stay in the head, so the log keeps its segment.
  WriteDevice("t", 0, 100, 100);
  WriteDevice("t", 1, 10, 100);
  ASSERT_TRUE(engine_->Maintain().ok());
  ASSERT_EQ(engine_->Stats().head_records, 10u);
  ASSERT_TRUE(engine_->Close().ok());
  engine_.reset();
  std::filesystem::copy_file(older, files.front(), std::filesystem::copy_options::overwrite_existing);
  std::filesystem::remove(files.front() + "-wal");

  Open();
  ASSERT_EQ(recovery_.period_files_recovered.size(), 1u);
  EXPECT_TRUE(HasProblem(*engine_, "period.recovered:t/"));
  EXPECT_EQ(recovery_.records_replayed, 110u);  // from LSN 201: what the file lost, and the head
  ExpectEverything();
}

TEST_F(EngineOpenChecksTest, APeriodFileBehindItsSealMarkRefusesWhenTheLogNoLongerHoldsIt) {
  options_.log_segment_bytes = 4096;  // sealed records leave the log quickly
  Open();
  CreateTable("t");
  WriteDevices("t", 2, 100);
  ASSERT_TRUE(engine_->SealAll().ok());
  std::vector<std::string> files = FilesEndingWith(dir_.path() + "/t", ".db");
  ASSERT_EQ(files.size(), 1u);
  const std::string older = dir_.path() + "/older.db";
  std::filesystem::copy_file(files.front(), older);
  for (int round = 0; round < 5; ++round) {
    WriteDevices("t", 2, 100, 100 * (round + 1));
    ASSERT_TRUE(engine_->SealAll().ok());
  }
  ASSERT_TRUE(engine_->Close().ok());
  engine_.reset();
  std::filesystem::copy_file(older, files.front(), std::filesystem::copy_options::overwrite_existing);
  std::filesystem::remove(files.front() + "-wal");

  auto opened = Engine::Open(&clock_, dir_.path(), options_, &recovery_);
  ASSERT_FALSE(opened.ok());
  EXPECT_TRUE(opened.status().Is(StatusCode::kFailedPrecondition)) << opened.status().ToString();
  EXPECT_NE(opened.status().message().find(files.front()), std::string::npos) << opened.status().ToString();
  EXPECT_NE(opened.status().message().find("from a backup"), std::string::npos);
}

// Fails every write to a period file's main database file while armed: a
// seal commits to the WAL, and its checkpoint fails.
class FailMainFileWrites : public EnvWrapper {
 public:
  explicit FailMainFileWrites(Env* target) : EnvWrapper(target) {}
  bool armed = false;

  Result<std::unique_ptr<File>> OpenFile(const std::string& path, OpenMode mode) override {
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<File> file, EnvWrapper::OpenFile(path, mode));
    const bool main_period_file = path.size() > 3 && path.compare(path.size() - 3, 3, ".db") == 0 &&
                                  path.find("catalog") == std::string::npos;
    if (!main_period_file) return file;
    return std::unique_ptr<File>(new Failing(std::move(file), &armed));
  }

 private:
  class Failing : public File {
   public:
    Failing(std::unique_ptr<File> file, const bool* armed) : file_(std::move(file)), armed_(armed) {}
    Result<size_t> ReadAt(uint64_t offset, size_t n, char* dst) override { return file_->ReadAt(offset, n, dst); }
    Status WriteAt(uint64_t offset, std::string_view data) override {
      if (*armed_) return Status::IOError(path() + ": write: Input/output error (injected)");
      return file_->WriteAt(offset, data);
    }
    Status Append(std::string_view data) override {
      if (*armed_) return Status::IOError(path() + ": append: Input/output error (injected)");
      return file_->Append(data);
    }
    Status Truncate(uint64_t size) override { return file_->Truncate(size); }
    Status Sync() override { return file_->Sync(); }
    Result<uint64_t> Size() override { return file_->Size(); }
    const std::string& path() const override { return file_->path(); }

   private:
    std::unique_ptr<File> file_;
    const bool* armed_;
  };
};

// A seal whose WAL was not checkpointed keeps its records in the log: with
// that WAL damaged (the files copied as a crash leaves them), every reading
// comes back, and health names the file.
TEST_F(EngineOpenChecksTest, ASealOnlyInADamagedWalComesBackFromTheLog) {
  FailMainFileWrites env(&clock_);
  engine_.reset();
  auto opened = Engine::Open(&env, dir_.path(), options_, &recovery_);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  engine_ = std::move(opened).value();
  CreateTable("t");
  WriteDevices("t", 2, 100);
  ASSERT_TRUE(engine_->SealAll().ok());  // created and checkpointed once
  const uint64_t checkpoint_before = engine_->Stats().checkpoint_lsn;
  WriteDevices("t", 2, 100, 100);
  env.armed = true;
  EXPECT_FALSE(engine_->SealAll().ok());  // committed to the WAL; the checkpoint failed
  EXPECT_FALSE(engine_->Maintain().ok());  // a later round: nothing to seal, the checkpoint fails again
  EXPECT_EQ(engine_->Stats().checkpoint_lsn, checkpoint_before) << "the log let go of a seal that is only in a WAL";
  EXPECT_EQ(engine_->Stats().head_records, 0u);

  // What a crash now leaves on disk, copied aside; the WAL's frames damaged.
  ScopedTempDir crashed("cairn-open-checks");
  std::filesystem::copy(dir_.path(), crashed.path(), std::filesystem::copy_options::recursive |
                                                         std::filesystem::copy_options::overwrite_existing);
  std::filesystem::remove(crashed.path() + "/LOCK");
  std::vector<std::string> wals = FilesEndingWith(crashed.path() + "/t", ".db-wal");
  ASSERT_EQ(wals.size(), 1u);
  ASSERT_GT(std::filesystem::file_size(wals.front()), 32u + 24 + 4096);
  {
    std::fstream wal(wals.front(), std::ios::in | std::ios::out | std::ios::binary);
    wal.seekp(32 + 24 + 100);
    wal.put('\x5a');
  }
  env.armed = false;
  ASSERT_TRUE(engine_->Close().ok());
  engine_.reset();

  RecoveryReport report;
  auto reopened = Engine::Open(&clock_, crashed.path(), options_, &report);
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  engine_ = std::move(reopened).value();
  EXPECT_EQ(report.period_files_recovered.size(), 1u);
  EXPECT_TRUE(HasProblem(*engine_, "period.wal_damaged:t/"));
  ExpectEverything();
}

}  // namespace
}  // namespace cairn::testing
