// The naive peer: seed 000's DynamoDB item layout as one SQLite table, with
// SQLite's defaults except what makes it durable and comparable: WAL with
// synchronous=FULL (acknowledged writes survive a power cut, like cairn's
// default durability) and one transaction per gateway batch.
#include <cmath>

#include <sqlite3.h>

#include "bench_store.h"

namespace cairn::bench {

namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;
constexpr int64_t kTtlSeconds = 30 * 86400;  // seed 000: ttl = timestampEpoch + 30 days

constexpr char kSchema[] =
    "CREATE TABLE readings(deviceId TEXT, timestamp INTEGER, temperature REAL, humidity REAL, "
    "pressure REAL, metadata TEXT, ttl INTEGER, PRIMARY KEY (deviceId, timestamp)) WITHOUT ROWID";
constexpr char kInsert[] =
    "INSERT OR REPLACE INTO readings(deviceId, timestamp, temperature, humidity, pressure, metadata, ttl) "
    "VALUES (?1, ?2, ?3, ?4, ?5, NULL, ?6)";
constexpr char kLatest[] =
    "SELECT timestamp, temperature, humidity, pressure FROM readings WHERE deviceId = ?1 "
    "ORDER BY timestamp DESC LIMIT 1";
constexpr char kRange[] =
    "SELECT timestamp, temperature, humidity, pressure FROM readings "
    "WHERE deviceId = ?1 AND timestamp >= ?2 AND timestamp < ?3 ORDER BY timestamp";
// Integer division by an integer literal: written as 3600e9 the literal is
// REAL and every row would become its own group.
constexpr char kHourly[] =
    "SELECT timestamp / 3600000000000 AS hour, min(temperature), max(temperature), avg(temperature), "
    "count(*) FROM readings WHERE deviceId = ?1 AND timestamp >= ?2 AND timestamp < ?3 "
    "GROUP BY hour ORDER BY hour";
constexpr char kCount[] = "SELECT count(*) FROM readings";

class NaiveSqliteStore final : public BenchStore {
 public:
  // A destructor cannot report; callers that care call Close() first.
  ~NaiveSqliteStore() override { static_cast<void>(Close()); }

  std::string_view name() const override { return "naive_sqlite"; }

  Status Open(const std::string& directory) override {
    const std::string path = directory + "/readings.db";
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        nullptr) != SQLITE_OK) {
      return Error("open " + path);
    }
    CAIRN_RETURN_IF_ERROR(Exec("PRAGMA journal_mode=WAL"));
    CAIRN_RETURN_IF_ERROR(Exec("PRAGMA synchronous=FULL"));
    CAIRN_RETURN_IF_ERROR(Exec(kSchema));
    CAIRN_RETURN_IF_ERROR(Prepare(kInsert, &insert_));
    CAIRN_RETURN_IF_ERROR(Prepare(kLatest, &latest_));
    CAIRN_RETURN_IF_ERROR(Prepare(kRange, &range_));
    CAIRN_RETURN_IF_ERROR(Prepare(kHourly, &hourly_));
    CAIRN_RETURN_IF_ERROR(Prepare("BEGIN", &begin_));
    CAIRN_RETURN_IF_ERROR(Prepare("COMMIT", &commit_));
    return Status::Ok();
  }

  Status Write(const std::vector<SensorRecord>& batch) override {
    CAIRN_RETURN_IF_ERROR(StepDone(begin_, "BEGIN"));
    for (const SensorRecord& record : batch) {
      sqlite3_bind_text(insert_, 1, record.device_id.data(), static_cast<int>(record.device_id.size()),
                        SQLITE_STATIC);
      sqlite3_bind_int64(insert_, 2, record.timestamp);
      sqlite3_bind_double(insert_, 3, record.temperature_celsius());
      sqlite3_bind_double(insert_, 4, record.humidity_percent());
      sqlite3_bind_double(insert_, 5, record.pressure_hectopascals());
      sqlite3_bind_int64(insert_, 6, record.timestamp / kNanosPerSecond + kTtlSeconds);
      Status status = StepDone(insert_, "INSERT");
      if (!status.ok()) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        return status;
      }
    }
    return StepDone(commit_, "COMMIT");
  }

  Status Settle() override {
    if (sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr) != SQLITE_OK) {
      return Error("wal_checkpoint(TRUNCATE)");
    }
    return Status::Ok();
  }

  Result<LatestReading> Latest(const std::string& device_id) override {
    sqlite3_bind_text(latest_, 1, device_id.data(), static_cast<int>(device_id.size()), SQLITE_STATIC);
    const int rc = sqlite3_step(latest_);
    LatestReading reading;
    if (rc == SQLITE_ROW) {
      reading.timestamp = sqlite3_column_int64(latest_, 0);
      reading.temperature = sqlite3_column_double(latest_, 1);
      reading.humidity = sqlite3_column_double(latest_, 2);
      reading.pressure = sqlite3_column_double(latest_, 3);
    }
    sqlite3_reset(latest_);
    if (rc == SQLITE_DONE) return Status::NotFound("no reading of " + device_id);
    if (rc != SQLITE_ROW) return Error("latest");
    return reading;
  }

  Result<RangeSummary> ReadRange(const std::string& device_id, int64_t from, int64_t to) override {
    sqlite3_bind_text(range_, 1, device_id.data(), static_cast<int>(device_id.size()), SQLITE_STATIC);
    sqlite3_bind_int64(range_, 2, from);
    sqlite3_bind_int64(range_, 3, to);
    RangeSummary summary;
    int rc;
    while ((rc = sqlite3_step(range_)) == SQLITE_ROW) {
      ++summary.rows;
      summary.timestamp_sum += static_cast<uint64_t>(sqlite3_column_int64(range_, 0));
      summary.temperature_centidegrees_sum += std::llround(sqlite3_column_double(range_, 1) * 100);
      // Read like a client would, so that no column is left undecoded.
      sqlite3_column_double(range_, 2);
      sqlite3_column_double(range_, 3);
    }
    sqlite3_reset(range_);
    if (rc != SQLITE_DONE) return Error("range");
    return summary;
  }

  Result<std::vector<HourlyAggregate>> AggregateTemperatureHourly(const std::string& device_id, int64_t from,
                                                                  int64_t to) override {
    sqlite3_bind_text(hourly_, 1, device_id.data(), static_cast<int>(device_id.size()), SQLITE_STATIC);
    sqlite3_bind_int64(hourly_, 2, from);
    sqlite3_bind_int64(hourly_, 3, to);
    std::vector<HourlyAggregate> hours;
    int rc;
    while ((rc = sqlite3_step(hourly_)) == SQLITE_ROW) {
      HourlyAggregate hour;
      hour.start = sqlite3_column_int64(hourly_, 0) * 3600 * kNanosPerSecond;
      hour.min = sqlite3_column_double(hourly_, 1);
      hour.max = sqlite3_column_double(hourly_, 2);
      hour.avg = sqlite3_column_double(hourly_, 3);
      hour.count = static_cast<uint64_t>(sqlite3_column_int64(hourly_, 4));
      hours.push_back(hour);
    }
    sqlite3_reset(hourly_);
    if (rc != SQLITE_DONE) return Error("hourly aggregate");
    return hours;
  }

  Result<uint64_t> StoredRecords() override {
    sqlite3_stmt* count = nullptr;
    CAIRN_RETURN_IF_ERROR(Prepare(kCount, &count));
    const int rc = sqlite3_step(count);
    const auto rows = static_cast<uint64_t>(sqlite3_column_int64(count, 0));
    sqlite3_finalize(count);
    if (rc != SQLITE_ROW) return Error("count");
    return rows;
  }

  Status Close() override {
    for (sqlite3_stmt** statement : {&insert_, &latest_, &range_, &hourly_, &begin_, &commit_}) {
      sqlite3_finalize(*statement);
      *statement = nullptr;
    }
    if (db_ != nullptr) {
      const int rc = sqlite3_close(db_);
      db_ = nullptr;
      if (rc != SQLITE_OK) return Status::IOError("sqlite3_close failed: " + std::string(sqlite3_errstr(rc)));
    }
    return Status::Ok();
  }

 private:
  Status Error(const std::string& what) const {
    return Status::IOError("SQLite " + what + ": " + (db_ ? sqlite3_errmsg(db_) : "out of memory"));
  }

  Status Exec(const char* sql) {
    if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) return Error(sql);
    return Status::Ok();
  }

  Status Prepare(const char* sql, sqlite3_stmt** statement) {
    if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, statement, nullptr) != SQLITE_OK) {
      return Error(std::string("prepare ") + sql);
    }
    return Status::Ok();
  }

  Status StepDone(sqlite3_stmt* statement, const char* what) {
    const int rc = sqlite3_step(statement);
    sqlite3_reset(statement);
    if (rc != SQLITE_DONE) return Error(what);
    return Status::Ok();
  }

  sqlite3* db_ = nullptr;
  sqlite3_stmt* insert_ = nullptr;
  sqlite3_stmt* latest_ = nullptr;
  sqlite3_stmt* range_ = nullptr;
  sqlite3_stmt* hourly_ = nullptr;
  sqlite3_stmt* begin_ = nullptr;
  sqlite3_stmt* commit_ = nullptr;
};

}  // namespace

std::unique_ptr<BenchStore> NewNaiveSqliteStore() { return std::make_unique<NaiveSqliteStore>(); }

}  // namespace cairn::bench
