// A period file's compaction: merging each series, vacuum, atomic chunk
// replacement, rollback of a failed merge, and a copied file that stands
// alone.
#include "storage/period_file.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/core/sqlite_database.h"

#include "storage_period_file_test_util.h"

namespace cairn::period_file_testing {
namespace {

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
}  // namespace cairn::period_file_testing
