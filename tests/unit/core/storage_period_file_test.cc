#include <algorithm>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/core/sqlite_database.h"
#include "cairn/core/table.h"
#include "cairn/platform/env.h"

#include "storage/env_vfs.h"
#include "storage/period_file.h"
#include "test_dirs.h"

namespace cairn {
namespace {

constexpr int kCacheKib = 256;
// 2023-11-14, a day period start.
const int64_t kDayStart = PeriodStart(Period::kDay, int64_t{1'700'000'000} * 1'000'000'000);
constexpr int64_t kSecond = 1'000'000'000;

const std::vector<ChunkField> kFields = {{"temperature", FieldType::kDouble}, {"count", FieldType::kInt64}};

PeriodSeries MakeSeries(int64_t id, std::string device, std::string measure) {
  PeriodSeries series;
  series.series_id = id;
  series.device_id = std::move(device);
  series.measure_name = std::move(measure);
  series.fields = kFields;
  series.dimensions = {{"site", "berlin"}, {"rack", "7"}};
  return series;
}

// A chunk over [start, end] seconds into the day, with recognisable bytes.
ChunkRow MakeChunk(int64_t series_id, int64_t start_second, int64_t end_second, std::string data) {
  ChunkRow chunk;
  chunk.series_id = series_id;
  chunk.start_ns = kDayStart + start_second * kSecond;
  chunk.end_ns = kDayStart + end_second * kSecond;
  chunk.count = static_cast<uint32_t>(end_second - start_second + 1);
  chunk.min_lsn = static_cast<uint64_t>(start_second) + 1;
  chunk.max_lsn = static_cast<uint64_t>(end_second) + 1;
  for (uint64_t lsn = chunk.min_lsn; lsn <= chunk.max_lsn; ++lsn) chunk.lsns.push_back(lsn);
  chunk.max_version = 3;
  chunk.min_ttl = 0;
  chunk.stats = "stats:" + data;
  chunk.data = std::move(data);
  return chunk;
}

// What ReadChunks returns for a chunk written without explicit fields.
ChunkRow AsRead(ChunkRow chunk, int64_t seq, bool with_data = true) {
  chunk.seq = seq;
  if (chunk.fields.empty()) chunk.fields = kFields;
  if (!with_data) chunk.data.clear();
  return chunk;
}

class PeriodFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status registered = RegisterEnvVfs(Env::Default(), vfs_);
    ASSERT_TRUE(registered.ok()) << registered.ToString();
    path_ = dir_.PathOf(PeriodFileStem(Period::kDay, kDayStart) + ".db");
  }

  std::unique_ptr<PeriodFile> OpenWritable(const std::string& table = "weather") {
    Result<std::unique_ptr<PeriodFile>> file =
        PeriodFile::OpenWritable(Env::Default(), vfs_, path_, table, Period::kDay, kDayStart, kCacheKib);
    EXPECT_TRUE(file.ok()) << file.status().ToString();
    return file.ok() ? std::move(file).value() : nullptr;
  }

  std::unique_ptr<PeriodFile> OpenReadOnly() {
    Result<std::unique_ptr<PeriodFile>> file =
        PeriodFile::OpenReadOnly(Env::Default(), vfs_, path_, kCacheKib);
    EXPECT_TRUE(file.ok()) << file.status().ToString();
    return file.ok() ? std::move(file).value() : nullptr;
  }

  // Start offsets (in seconds) of the chunks ReadChunks returns.
  std::vector<int64_t> OverlappingStarts(PeriodFile& file, int64_t series_id, int64_t from_second,
                                         int64_t to_second) {
    Result<std::vector<ChunkRow>> rows =
        file.ReadChunks(series_id, kDayStart + from_second * kSecond, kDayStart + to_second * kSecond, false);
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    std::vector<int64_t> starts;
    if (rows.ok()) {
      for (const ChunkRow& row : *rows) starts.push_back((row.start_ns - kDayStart) / kSecond);
    }
    return starts;
  }

  ScopedTempDir dir_{"storage-period"};
  std::string vfs_ = "cairn-test-period";
  std::string path_;
};

TEST_F(PeriodFileTest, RoundTripThroughWriterAndReader) {
  std::vector<PeriodSeries> series = {MakeSeries(1, "dev-a", "env#temperature"),
                                      MakeSeries(2, "dev-b", "env")};
  std::vector<ChunkRow> chunks = {MakeChunk(1, 0, 59, "a0"), MakeChunk(1, 60, 119, "a1"),
                                  MakeChunk(2, 10, 20, std::string("b\0b", 3))};
  {
    std::unique_ptr<PeriodFile> file = OpenWritable();
    ASSERT_NE(file, nullptr);
    EXPECT_EQ(file->table(), "weather");
    EXPECT_EQ(file->period(), Period::kDay);
    EXPECT_EQ(file->period_start_ns(), kDayStart);
    EXPECT_EQ(file->period_end_ns(), NextPeriodStart(Period::kDay, kDayStart));
    EXPECT_FALSE(file->read_only());
    ASSERT_TRUE(file->WriteChunks(series, chunks).ok());
    Result<std::vector<ChunkRow>> rows = file->ReadChunks(1, kDayStart, kDayStart + 86400 * kSecond, true);
    ASSERT_TRUE(rows.ok()) << rows.status().ToString();
    EXPECT_EQ(*rows, (std::vector<ChunkRow>{AsRead(chunks[0], 0), AsRead(chunks[1], 0)}));
    ASSERT_TRUE(file->Close().ok());
    EXPECT_TRUE(file->ReadChunks(1, 0, 1, true).status().Is(StatusCode::kFailedPrecondition));
  }
  std::unique_ptr<PeriodFile> file = OpenReadOnly();
  ASSERT_NE(file, nullptr);
  EXPECT_TRUE(file->read_only());
  EXPECT_EQ(file->table(), "weather");
  EXPECT_EQ(file->period_start_ns(), kDayStart);
  Result<std::vector<ChunkRow>> rows = file->ReadChunks(2, kDayStart, kDayStart + 86400 * kSecond, true);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ(*rows, std::vector<ChunkRow>{AsRead(chunks[2], 0)});
  Result<std::vector<PeriodSeries>> listed = file->ListSeries();
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_EQ(*listed, series);
  Result<bool> compacted = file->IsCompacted();
  ASSERT_TRUE(compacted.ok());
  EXPECT_FALSE(*compacted);
}

TEST_F(PeriodFileTest, WithoutDataReturnsStatsOnly) {
  std::unique_ptr<PeriodFile> file = OpenWritable();
  ASSERT_NE(file, nullptr);
  std::vector<ChunkRow> chunks = {MakeChunk(1, 0, 9, std::string(5000, 'x'))};
  ASSERT_TRUE(file->WriteChunks({MakeSeries(1, "d", "m")}, chunks).ok());
  Result<std::vector<ChunkRow>> rows = file->ReadChunks(1, kDayStart, kDayStart + kSecond, false);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(*rows, std::vector<ChunkRow>{AsRead(chunks[0], 0, /*with_data=*/false)});
  EXPECT_TRUE((*rows)[0].data.empty());
  EXPECT_EQ((*rows)[0].stats, "stats:" + std::string(5000, 'x'));
}

TEST_F(PeriodFileTest, SeqTellsApartChunksWithTheSameStart) {
  std::unique_ptr<PeriodFile> file = OpenWritable();
  ASSERT_NE(file, nullptr);
  std::vector<ChunkRow> first = {MakeChunk(1, 5, 10, "x"), MakeChunk(1, 5, 7, "y"), MakeChunk(1, 6, 8, "z")};
  first[0].seq = 41;  // ignored: seq is assigned
  ASSERT_TRUE(file->WriteChunks({MakeSeries(1, "d", "m")}, first).ok());
  EXPECT_EQ(first[0].seq, 0);
  EXPECT_EQ(first[1].seq, 1);
  EXPECT_EQ(first[2].seq, 0);
  std::vector<ChunkRow> second = {MakeChunk(1, 5, 6, "w")};
  ASSERT_TRUE(file->WriteChunks({}, second).ok());
  EXPECT_EQ(second[0].seq, 2);
  Result<std::vector<ChunkRow>> rows = file->ReadChunks(1, kDayStart, kDayStart + 60 * kSecond, true);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 4u);
  EXPECT_EQ((*rows)[0].data, "x");
  EXPECT_EQ((*rows)[1].data, "y");
  EXPECT_EQ((*rows)[2].data, "w");
  EXPECT_EQ((*rows)[3].data, "z");
}

TEST_F(PeriodFileTest, ReadChunksOverlapBoundaries) {
  std::unique_ptr<PeriodFile> file = OpenWritable();
  ASSERT_NE(file, nullptr);
  // A long chunk, a short one inside it, one far after, and another series.
  std::vector<ChunkRow> chunks = {MakeChunk(1, 0, 1000, "long"), MakeChunk(1, 900, 950, "inner"),
                                  MakeChunk(1, 2000, 2010, "late"), MakeChunk(2, 0, 5000, "other")};
  ASSERT_TRUE(file->WriteChunks({MakeSeries(1, "d", "m"), MakeSeries(2, "e", "m")}, chunks).ok());

  using Starts = std::vector<int64_t>;
  // [from, to) against [start, end]: `to` is exclusive, `end` inclusive.
  EXPECT_EQ(OverlappingStarts(*file, 1, 2010, 3000), Starts{2000});
  EXPECT_EQ(OverlappingStarts(*file, 1, 2011, 3000), Starts{});
  EXPECT_EQ(OverlappingStarts(*file, 1, 1500, 2000), Starts{});
  EXPECT_EQ(OverlappingStarts(*file, 1, 1500, 2001), Starts{2000});
  EXPECT_EQ(OverlappingStarts(*file, 1, 1000, 1001), Starts{0});
  EXPECT_EQ(OverlappingStarts(*file, 1, 1001, 2000), Starts{});
  // Inside the long chunk only: found by looking back over the series' span.
  EXPECT_EQ(OverlappingStarts(*file, 1, 990, 995), Starts{0});
  EXPECT_EQ(OverlappingStarts(*file, 1, 950, 951), (Starts{0, 900}));
  EXPECT_EQ(OverlappingStarts(*file, 1, 951, 960), Starts{0});
  EXPECT_EQ(OverlappingStarts(*file, 1, -100, 0), Starts{});
  EXPECT_EQ(OverlappingStarts(*file, 1, -100, 1), Starts{0});
  EXPECT_EQ(OverlappingStarts(*file, 1, 0, 86400), (Starts{0, 900, 2000}));
  // Empty and inverted ranges, unknown series.
  EXPECT_EQ(OverlappingStarts(*file, 1, 500, 500), Starts{});
  EXPECT_EQ(OverlappingStarts(*file, 1, 600, 500), Starts{});
  EXPECT_EQ(OverlappingStarts(*file, 3, 0, 86400), Starts{});
  // Extreme bounds neither overflow nor miss anything.
  Result<std::vector<ChunkRow>> all =
      file->ReadChunks(1, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), false);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 3u);
}

TEST_F(PeriodFileTest, ListSeriesKeepsLatestFieldsAndDimensions) {
  std::unique_ptr<PeriodFile> file = OpenWritable();
  ASSERT_NE(file, nullptr);
  PeriodSeries series = MakeSeries(7, "pump-1", "hydraulics#pressure");
  std::vector<ChunkRow> chunks = {MakeChunk(7, 0, 1, "a")};
  ASSERT_TRUE(file->WriteChunks({series}, chunks).ok());

  series.fields.push_back({"state", FieldType::kString});
  series.dimensions = {{"site", "hamburg"}, {"firmware", "quote\" back\\slash \x01 ü"}};
  std::vector<ChunkRow> none;
  ASSERT_TRUE(file->WriteChunks({series}, none).ok());
  Result<std::vector<PeriodSeries>> listed = file->ListSeries();
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_EQ(*listed, std::vector<PeriodSeries>{series});

  // The chunk written before keeps the schema it was written with.
  Result<std::vector<ChunkRow>> rows = file->ReadChunks(7, kDayStart, kDayStart + kSecond * 10, false);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].fields, kFields);
}

TEST_F(PeriodFileTest, ChunksCarryTheirOwnSchema) {
  std::unique_ptr<PeriodFile> file = OpenWritable();
  ASSERT_NE(file, nullptr);
  PeriodSeries series = MakeSeries(1, "d", "m");
  std::vector<ChunkRow> chunks = {MakeChunk(1, 0, 1, "default"), MakeChunk(1, 2, 3, "older"),
                                  MakeChunk(1, 4, 5, "also default")};
  chunks[1].fields = {{"temperature", FieldType::kDouble}};
  ASSERT_TRUE(file->WriteChunks({series}, chunks).ok());
  Result<std::vector<ChunkRow>> rows = file->ReadChunks(1, kDayStart, kDayStart + 10 * kSecond, true);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ((*rows)[0].fields, kFields);
  EXPECT_EQ((*rows)[1].fields, chunks[1].fields);
  EXPECT_EQ((*rows)[2].fields, kFields);
  ASSERT_TRUE(file->Close().ok());

  // Identical schemas are stored once.
  Result<std::unique_ptr<SqliteDb>> db = SqliteDb::Open(path_, vfs_, true, kCacheKib);
  ASSERT_TRUE(db.ok());
  Result<Statement*> count = (*db)->Prepare("SELECT count(*) FROM schemas");
  ASSERT_TRUE(count.ok());
  StatementResetter reset(*count);
  ASSERT_TRUE((*count)->Step().ok());
  EXPECT_EQ((*count)->ColumnInt64(0), 2);
}

TEST_F(PeriodFileTest, InvalidWritesChangeNothing) {
  std::unique_ptr<PeriodFile> file = OpenWritable();
  ASSERT_NE(file, nullptr);
  std::vector<ChunkRow> base = {MakeChunk(1, 0, 1, "base")};
  ASSERT_TRUE(file->WriteChunks({MakeSeries(1, "d", "m")}, base).ok());

  auto expect_rejected = [&](std::vector<PeriodSeries> series, std::vector<ChunkRow> chunks) {
    std::vector<ChunkRow> before = chunks;
    Status status = file->WriteChunks(series, chunks);
    EXPECT_TRUE(status.Is(StatusCode::kInvalidArgument)) << status.ToString();
    EXPECT_EQ(chunks, before);  // seqs untouched
  };
  // A valid chunk first, then the bad one: the valid one must not stay.
  ChunkRow outside = MakeChunk(1, 86400, 86401, "next day");
  expect_rejected({}, {MakeChunk(1, 10, 11, "good"), outside});
  ChunkRow before_start = MakeChunk(1, -1, 3, "previous day");
  expect_rejected({}, {before_start});
  ChunkRow backwards = MakeChunk(1, 10, 11, "backwards");
  std::swap(backwards.start_ns, backwards.end_ns);
  expect_rejected({}, {backwards});
  ChunkRow empty = MakeChunk(1, 10, 11, "empty");
  empty.count = 0;
  empty.lsns.clear();
  expect_rejected({}, {empty});
  ChunkRow missing_lsns = MakeChunk(1, 10, 11, "one LSN for two records");
  missing_lsns.lsns.pop_back();
  expect_rejected({}, {missing_lsns});
  ChunkRow stray_lsn = MakeChunk(1, 10, 11, "an LSN outside the range");
  stray_lsn.lsns.back() = stray_lsn.max_lsn + 1;
  expect_rejected({}, {stray_lsn});
  ChunkRow lsn = MakeChunk(1, 10, 11, "lsn");
  std::swap(lsn.min_lsn, lsn.max_lsn);
  expect_rejected({}, {lsn});
  // Unknown series: detected inside the transaction, after a good insert.
  expect_rejected({MakeSeries(2, "e", "m")}, {MakeChunk(2, 10, 11, "good"), MakeChunk(3, 10, 11, "orphan")});
  // Identity of an existing series cannot change.
  expect_rejected({MakeSeries(1, "other-device", "m")}, {MakeChunk(1, 10, 11, "good")});

  Result<std::vector<ChunkRow>> rows = file->ReadChunks(1, kDayStart, kDayStart + 86400 * kSecond, true);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(*rows, std::vector<ChunkRow>{AsRead(base[0], 0)});
  Result<std::vector<PeriodSeries>> listed = file->ListSeries();
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(*listed, std::vector<PeriodSeries>{MakeSeries(1, "d", "m")});
}

TEST_F(PeriodFileTest, OpenWritableChecksTheFileIsWhatItsNameSays) {
  ASSERT_NE(OpenWritable("weather"), nullptr);
  Result<std::unique_ptr<PeriodFile>> other_table =
      PeriodFile::OpenWritable(Env::Default(), vfs_, path_, "traffic", Period::kDay, kDayStart, kCacheKib);
  EXPECT_TRUE(other_table.status().Is(StatusCode::kCorruption)) << other_table.status().ToString();
  int64_t next_day = NextPeriodStart(Period::kDay, kDayStart);
  Result<std::unique_ptr<PeriodFile>> other_day =
      PeriodFile::OpenWritable(Env::Default(), vfs_, path_, "weather", Period::kDay, next_day, kCacheKib);
  EXPECT_TRUE(other_day.status().Is(StatusCode::kCorruption)) << other_day.status().ToString();
  Result<std::unique_ptr<PeriodFile>> not_a_start = PeriodFile::OpenWritable(
      Env::Default(), vfs_, dir_.PathOf("x.db"), "weather", Period::kDay, kDayStart + 1, kCacheKib);
  EXPECT_TRUE(not_a_start.status().Is(StatusCode::kInvalidArgument)) << not_a_start.status().ToString();
  EXPECT_FALSE(Env::Default()->FileExists(dir_.PathOf("x.db")));
}

TEST_F(PeriodFileTest, ForeignDatabaseIsNotAPeriodFile) {
  {
    Result<std::unique_ptr<SqliteDb>> db = SqliteDb::Open(path_, vfs_, false, kCacheKib);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec("CREATE TABLE readings(device, ts, value)").ok());
  }
  Result<std::unique_ptr<PeriodFile>> writable =
      PeriodFile::OpenWritable(Env::Default(), vfs_, path_, "weather", Period::kDay, kDayStart, kCacheKib);
  EXPECT_TRUE(writable.status().Is(StatusCode::kCorruption)) << writable.status().ToString();
  Result<std::unique_ptr<PeriodFile>> readable =
      PeriodFile::OpenReadOnly(Env::Default(), vfs_, path_, kCacheKib);
  EXPECT_TRUE(readable.status().Is(StatusCode::kCorruption)) << readable.status().ToString();

  // Not SQLite at all.
  std::string garbage = dir_.PathOf("garbage.db");
  ASSERT_TRUE(Env::Default()->WriteFileAtomically(garbage, std::string(8192, 'g')).ok());
  Result<std::unique_ptr<PeriodFile>> bytes =
      PeriodFile::OpenReadOnly(Env::Default(), vfs_, garbage, kCacheKib);
  EXPECT_TRUE(bytes.status().Is(StatusCode::kCorruption)) << bytes.status().ToString();
}

TEST_F(PeriodFileTest, ReadOnlyHandleCannotWrite) {
  Result<std::unique_ptr<PeriodFile>> missing =
      PeriodFile::OpenReadOnly(Env::Default(), vfs_, path_, kCacheKib);
  EXPECT_TRUE(missing.status().Is(StatusCode::kNotFound)) << missing.status().ToString();
  {
    std::unique_ptr<PeriodFile> file = OpenWritable();
    ASSERT_NE(file, nullptr);
    std::vector<ChunkRow> chunks = {MakeChunk(1, 0, 1, "a")};
    ASSERT_TRUE(file->WriteChunks({MakeSeries(1, "d", "m")}, chunks).ok());
  }
  Result<uint64_t> size_before = Env::Default()->FileSize(path_);
  ASSERT_TRUE(size_before.ok());
  std::unique_ptr<PeriodFile> file = OpenReadOnly();
  ASSERT_NE(file, nullptr);
  std::vector<ChunkRow> chunks = {MakeChunk(1, 2, 3, "b")};
  EXPECT_TRUE(file->WriteChunks({}, chunks).Is(StatusCode::kFailedPrecondition));
  Status compact =
      file->Compact([](const PeriodSeries&, std::vector<ChunkRow>&& rows) -> Result<std::vector<ChunkRow>> {
        return std::move(rows);
      });
  EXPECT_TRUE(compact.Is(StatusCode::kFailedPrecondition));
  // While the reader is open, no writer can open the file.
  Result<std::unique_ptr<PeriodFile>> writer =
      PeriodFile::OpenWritable(Env::Default(), vfs_, path_, "weather", Period::kDay, kDayStart, kCacheKib);
  EXPECT_TRUE(writer.status().Is(StatusCode::kBusy)) << writer.status().ToString();
  ASSERT_TRUE(file->Close().ok());
  EXPECT_FALSE(Env::Default()->FileExists(path_ + "-wal"));
  EXPECT_EQ(*Env::Default()->FileSize(path_), *size_before);
}

// Merges a series' chunks into one by concatenating their bytes.
Result<std::vector<ChunkRow>> ConcatenateChunks(const PeriodSeries&, std::vector<ChunkRow>&& chunks) {
  ChunkRow merged = chunks.front();
  merged.fields.clear();
  merged.count = 0;
  merged.data.clear();
  merged.lsns.clear();
  merged.stats = "merged";
  for (const ChunkRow& chunk : chunks) {
    merged.start_ns = std::min(merged.start_ns, chunk.start_ns);
    merged.end_ns = std::max(merged.end_ns, chunk.end_ns);
    merged.count += chunk.count;
    merged.min_lsn = std::min(merged.min_lsn, chunk.min_lsn);
    merged.max_lsn = std::max(merged.max_lsn, chunk.max_lsn);
    merged.data += chunk.data;
    merged.lsns.insert(merged.lsns.end(), chunk.lsns.begin(), chunk.lsns.end());
  }
  return std::vector<ChunkRow>{merged};
}

TEST_F(PeriodFileTest, CompactMergesEachSeries) {
  std::unique_ptr<PeriodFile> file = OpenWritable();
  ASSERT_NE(file, nullptr);
  std::vector<PeriodSeries> series = {MakeSeries(1, "d", "m"), MakeSeries(2, "e", "m"),
                                      MakeSeries(3, "f", "m")};
  std::vector<ChunkRow> chunks;
  std::string expected_one, expected_two;
  std::vector<uint64_t> expected_one_lsns;
  for (int i = 0; i < 10; ++i) {
    chunks.push_back(MakeChunk(1, 100 * i, 100 * i + 50, "one" + std::to_string(i) + ";"));
    expected_one += chunks.back().data;
    expected_one_lsns.insert(expected_one_lsns.end(), chunks.back().lsns.begin(), chunks.back().lsns.end());
  }
  for (int i = 0; i < 3; ++i) {
    chunks.push_back(MakeChunk(2, 7, 9 + i, "two" + std::to_string(i) + ";"));
    expected_two += chunks.back().data;
  }
  ASSERT_TRUE(file->WriteChunks(series, chunks).ok());

  std::vector<int64_t> merged_series;
  Status compacted = file->Compact([&](const PeriodSeries& one, std::vector<ChunkRow>&& rows) {
    merged_series.push_back(one.series_id);
    return ConcatenateChunks(one, std::move(rows));
  });
  ASSERT_TRUE(compacted.ok()) << compacted.ToString();
  // Series 3 has no chunks in this file: nothing to merge.
  EXPECT_EQ(merged_series, (std::vector<int64_t>{1, 2}));
  Result<bool> is_compacted = file->IsCompacted();
  ASSERT_TRUE(is_compacted.ok());
  EXPECT_TRUE(*is_compacted);

  ChunkRow one = MakeChunk(1, 0, 950, expected_one);
  one.count = 10 * 51;
  one.min_lsn = 1;
  one.max_lsn = 951;
  one.lsns = expected_one_lsns;
  one.stats = "merged";
  Result<std::vector<ChunkRow>> rows = file->ReadChunks(1, kDayStart, kDayStart + 86400 * kSecond, true);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ(*rows, std::vector<ChunkRow>{AsRead(one, 0)});
  // The merged chunk is found from inside its span.
  EXPECT_EQ(OverlappingStarts(*file, 1, 940, 941), std::vector<int64_t>{0});
  rows = file->ReadChunks(2, kDayStart, kDayStart + 86400 * kSecond, true);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].data, expected_two);
  EXPECT_EQ((*rows)[0].count, 3u + 4u + 5u);
  ASSERT_TRUE(file->Close().ok());

  std::unique_ptr<PeriodFile> reader = OpenReadOnly();
  ASSERT_NE(reader, nullptr);
  is_compacted = reader->IsCompacted();
  ASSERT_TRUE(is_compacted.ok());
  EXPECT_TRUE(*is_compacted);
  rows = reader->ReadChunks(1, kDayStart, kDayStart + 86400 * kSecond, true);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(*rows, std::vector<ChunkRow>{AsRead(one, 0)});
}

TEST_F(PeriodFileTest, CompactVacuumShrinksTheFile) {
  {
    std::unique_ptr<PeriodFile> file = OpenWritable();
    ASSERT_NE(file, nullptr);
    for (int batch = 0; batch < 4; ++batch) {
      std::vector<ChunkRow> chunks;
      for (int i = 0; i < 50; ++i) {
        int start = batch * 1000 + i * 10;
        chunks.push_back(MakeChunk(1, start, start + 5, std::string(4000, static_cast<char>('a' + i % 26))));
      }
      ASSERT_TRUE(file->WriteChunks({MakeSeries(1, "d", "m")}, chunks).ok());
    }
  }
  Result<uint64_t> before = Env::Default()->FileSize(path_);
  ASSERT_TRUE(before.ok());
  ASSERT_GT(*before, 200u * 4000u);
  std::unique_ptr<PeriodFile> file = OpenWritable();
  ASSERT_NE(file, nullptr);
  // Keep only the newest chunk: without VACUUM the freed pages would stay.
  Status compacted = file->Compact([](const PeriodSeries&, std::vector<ChunkRow>&& rows) {
    return Result<std::vector<ChunkRow>>(std::vector<ChunkRow>{rows.back()});
  });
  ASSERT_TRUE(compacted.ok()) << compacted.ToString();
  Result<uint64_t> after = Env::Default()->FileSize(path_);
  ASSERT_TRUE(after.ok());
  EXPECT_LT(*after, *before / 10);
  Result<std::vector<ChunkRow>> rows = file->ReadChunks(1, kDayStart, kDayStart + 86400 * kSecond, true);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ(rows->front().start_ns, kDayStart + 3490 * kSecond);
}

TEST_F(PeriodFileTest, ReplaceChunksIsAtomicAndGivesPagesBack) {
  std::unique_ptr<PeriodFile> file = OpenWritable();
  ASSERT_NE(file, nullptr);
  std::vector<ChunkRow> chunks;
  for (int i = 0; i < 200; ++i) {
    chunks.push_back(MakeChunk(1, i * 10, i * 10 + 5, std::string(4000, static_cast<char>('a' + i % 26))));
  }
  ASSERT_TRUE(file->WriteChunks({MakeSeries(1, "d", "m")}, chunks).ok());
  ASSERT_TRUE(file->Close().ok());
  file = OpenWritable();
  ASSERT_NE(file, nullptr);
  Result<uint64_t> before = Env::Default()->FileSize(path_);
  ASSERT_TRUE(before.ok());
  ASSERT_GT(*before, 200u * 4000u);

  // A missing chunk among the removed: nothing happens at all.
  std::vector<PeriodFile::ChunkKey> removed;
  for (int i = 0; i < 190; ++i) removed.push_back({1, kDayStart + i * 10 * kSecond, 0});
  std::vector<PeriodFile::ChunkKey> with_missing = removed;
  with_missing.push_back({1, kDayStart + 5 * kSecond, 0});
  std::vector<ChunkRow> added = {MakeChunk(2, 3, 4, "new")};
  Status refused = file->ReplaceChunks(with_missing, {MakeSeries(2, "d", "m@60s")}, added);
  EXPECT_TRUE(refused.Is(StatusCode::kNotFound)) << refused.ToString();
  Result<std::vector<ChunkRow>> rows = file->ReadChunks(1, INT64_MIN, INT64_MAX, false);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->size(), 200u);
  Result<std::vector<PeriodSeries>> series = file->ListSeries();
  ASSERT_TRUE(series.ok());
  EXPECT_EQ(series->size(), 1u);

  // The real replacement: 190 chunks out, one chunk of a new series in.
  Status replaced = file->ReplaceChunks(removed, {MakeSeries(2, "d", "m@60s")}, added);
  ASSERT_TRUE(replaced.ok()) << replaced.ToString();
  EXPECT_EQ(added[0].seq, 0);
  rows = file->ReadChunks(1, INT64_MIN, INT64_MAX, false);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 10u);
  EXPECT_EQ(rows->front().start_ns, kDayStart + 1900 * kSecond);
  rows = file->ReadChunks(2, INT64_MIN, INT64_MAX, true);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ(rows->front().data, "new");
  // New files vacuum incrementally: the freed pages leave the file
  // without a VACUUM.
  Result<uint64_t> after = Env::Default()->FileSize(path_);
  ASSERT_TRUE(after.ok());
  EXPECT_LT(*after, *before / 5);
  ASSERT_TRUE(file->Close().ok());
  std::unique_ptr<PeriodFile> reader = OpenReadOnly();
  ASSERT_NE(reader, nullptr);
  rows = reader->ReadChunksByLsn(0, 1'000'000, 1000, false);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->size(), 11u);
}

TEST_F(PeriodFileTest, FailedMergeRollsBackTheWholeCompaction) {
  std::unique_ptr<PeriodFile> file = OpenWritable();
  ASSERT_NE(file, nullptr);
  std::vector<ChunkRow> chunks = {MakeChunk(1, 0, 1, "a"), MakeChunk(1, 2, 3, "b"), MakeChunk(2, 0, 1, "c")};
  ASSERT_TRUE(file->WriteChunks({MakeSeries(1, "d", "m"), MakeSeries(2, "e", "m")}, chunks).ok());
  Status failed = file->Compact([](const PeriodSeries& series, std::vector<ChunkRow>&& rows) {
    if (series.series_id == 2) return Result<std::vector<ChunkRow>>(Status::Corruption("undecodable chunk"));
    return ConcatenateChunks(series, std::move(rows));
  });
  EXPECT_TRUE(failed.Is(StatusCode::kCorruption)) << failed.ToString();
  // A merge may not move chunks to another series either.
  Status moved = file->Compact([](const PeriodSeries&, std::vector<ChunkRow>&& rows) {
    for (ChunkRow& row : rows) row.series_id = 2;
    return Result<std::vector<ChunkRow>>(std::move(rows));
  });
  EXPECT_TRUE(moved.Is(StatusCode::kInvalidArgument)) << moved.ToString();

  Result<std::vector<ChunkRow>> rows = file->ReadChunks(1, kDayStart, kDayStart + 10 * kSecond, true);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(*rows, (std::vector<ChunkRow>{AsRead(chunks[0], 0), AsRead(chunks[1], 0)}));
  Result<bool> is_compacted = file->IsCompacted();
  ASSERT_TRUE(is_compacted.ok());
  EXPECT_FALSE(*is_compacted);
  // The file still takes writes.
  std::vector<ChunkRow> more = {MakeChunk(2, 5, 6, "d")};
  EXPECT_TRUE(file->WriteChunks({}, more).ok());
}

// Runs `command` and returns what it printed on stdout.
std::string RunCommand(const std::string& command) {
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return output;
  char buffer[256];
  size_t got;
  while ((got = fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, got);
  pclose(pipe);
  return output;
}

TEST_F(PeriodFileTest, CopiedFileStandsAlone) {
  {
    std::unique_ptr<PeriodFile> file = OpenWritable();
    ASSERT_NE(file, nullptr);
    std::vector<ChunkRow> chunks = {MakeChunk(1, 0, 59, "a"), MakeChunk(1, 60, 119, "b"),
                                    MakeChunk(2, 0, 9, "c")};
    ASSERT_TRUE(
        file->WriteChunks({MakeSeries(1, "dev-a", "env#temperature"), MakeSeries(2, "dev-b", "env")}, chunks)
            .ok());
    ASSERT_TRUE(file->Close().ok());
  }
  // Close leaves the whole content in the one file.
  EXPECT_FALSE(Env::Default()->FileExists(path_ + "-wal"));
  ScopedTempDir elsewhere("storage-period-copy");
  std::string copy = elsewhere.PathOf("copy.db");
  Result<std::string> bytes = Env::Default()->ReadFileToString(path_);
  ASSERT_TRUE(bytes.ok());
  ASSERT_TRUE(Env::Default()->WriteFileAtomically(copy, *bytes).ok());

  Result<std::unique_ptr<PeriodFile>> file = PeriodFile::OpenReadOnly(Env::Default(), vfs_, copy, kCacheKib);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  Result<std::vector<PeriodSeries>> listed = (*file)->ListSeries();
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), 2u);
  ASSERT_TRUE((*file)->Close().ok());

  if (!Env::Default()->FileExists("/usr/bin/sqlite3")) {
    GTEST_SKIP() << "no sqlite3 shell at /usr/bin/sqlite3";
  }
  EXPECT_EQ(RunCommand("/usr/bin/sqlite3 '" + copy + "' 'select count(*) from chunks' 2>&1"), "3\n");
  // Two of the queries period_format.md shows.
  EXPECT_EQ(RunCommand("/usr/bin/sqlite3 '" + copy + "' \"select value from meta where key = 'table'\" 2>&1"),
            "weather\n");
  EXPECT_EQ(RunCommand("/usr/bin/sqlite3 '" + copy +
                       "' \"select s.device_id, count(*), sum(c.count) from chunks c join series s using "
                       "(series_id) group by s.series_id order by s.series_id\" 2>&1"),
            "dev-a|2|120\ndev-b|1|10\n");
  EXPECT_EQ(
      RunCommand("/usr/bin/sqlite3 '" + copy +
                 "' \"select json_extract(dimensions, '$.site') from series where series_id = 1\" 2>&1"),
      "berlin\n");
}

}  // namespace
}  // namespace cairn
