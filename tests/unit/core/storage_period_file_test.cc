// A period file's writes and reads: round trips, stats without data,
// overlap boundaries, series and schemas, refused writes, and what opening
// checks.
#include "storage/period_file.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/core/sqlite_database.h"

#include "storage_period_file_test_util.h"

namespace cairn::period_file_testing {
namespace {

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

}  // namespace
}  // namespace cairn::period_file_testing
