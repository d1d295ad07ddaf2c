// Period files under injected I/O errors and simulated power cuts: whatever
// fails, a period file reopens, keeps every committed write and shows each
// WriteChunks or Compact entirely or not at all.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/core/table.h"
#include "cairn/platform/env.h"

#include "fault_injection_env.h"
#include "storage/env_vfs.h"
#include "storage/period_file.h"
#include "test_dirs.h"

namespace cairn {
namespace {

constexpr int kCacheKib = 256;
const int64_t kDayStart = PeriodStart(Period::kDay, int64_t{1'700'000'000} * 1'000'000'000);
constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kDayNs = 86400 * kSecond;
// Every sweep stops long before this; reaching it means faults kept firing.
constexpr int64_t kMaxSweep = 400;

// Real files without real fsyncs: FaultInjectionEnv keeps its own model of
// what is durable, so the disk flushes would only slow the sweeps down.
class UnsyncedFile final : public File {
 public:
  explicit UnsyncedFile(std::unique_ptr<File> file) : file_(std::move(file)) {}
  Result<size_t> ReadAt(uint64_t offset, size_t n, char* dst) override {
    return file_->ReadAt(offset, n, dst);
  }
  Status WriteAt(uint64_t offset, std::string_view data) override { return file_->WriteAt(offset, data); }
  Status Append(std::string_view data) override { return file_->Append(data); }
  Status Truncate(uint64_t size) override { return file_->Truncate(size); }
  Status Sync() override { return Status::Ok(); }
  Result<uint64_t> Size() override { return file_->Size(); }
  const std::string& path() const override { return file_->path(); }

 private:
  std::unique_ptr<File> file_;
};

class UnsyncedEnv final : public EnvWrapper {
 public:
  UnsyncedEnv() : EnvWrapper(Env::Default()) {}
  Result<std::unique_ptr<File>> OpenFile(const std::string& path, OpenMode mode) override {
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<File> file, target()->OpenFile(path, mode));
    return std::unique_ptr<File>(std::make_unique<UnsyncedFile>(std::move(file)));
  }
  Status SyncDir(const std::string&) override { return Status::Ok(); }
};

PeriodSeries MakeSeries(int64_t id) {
  PeriodSeries series;
  series.series_id = id;
  series.device_id = "device-" + std::to_string(id);
  series.measure_name = "env";
  series.fields = {{"temperature", FieldType::kDouble}};
  return series;
}

// `count` chunks of series `series_id` from `first_second` on, tagged with
// `tag` so that tests can tell writes apart.
std::vector<ChunkRow> MakeChunks(int64_t series_id, int first_second, int count, const std::string& tag) {
  std::vector<ChunkRow> chunks;
  for (int i = 0; i < count; ++i) {
    ChunkRow chunk;
    chunk.series_id = series_id;
    chunk.start_ns = kDayStart + (first_second + 10 * i) * kSecond;
    chunk.end_ns = chunk.start_ns + 5 * kSecond;
    chunk.count = 6;
    chunk.min_lsn = static_cast<uint64_t>(first_second + i);
    chunk.max_lsn = chunk.min_lsn;
    chunk.lsns.assign(chunk.count, chunk.min_lsn);
    chunk.stats = tag;
    // Big enough to need overflow pages and several WAL frames.
    chunk.data = tag + std::string(1500 + 300 * i, static_cast<char>('a' + i % 26));
    chunks.push_back(std::move(chunk));
  }
  return chunks;
}

class PeriodFaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    vfs_ =
        std::string("cairn-test-faults-") + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    Status registered = RegisterEnvVfs(&env_, vfs_);
    ASSERT_TRUE(registered.ok()) << registered.ToString();
  }
  void TearDown() override { EXPECT_TRUE(UnregisterEnvVfs(vfs_).ok()); }

  Result<std::unique_ptr<PeriodFile>> OpenWritable(const std::string& path) {
    return PeriodFile::OpenWritable(&env_, vfs_, path, "weather", Period::kDay, kDayStart, kCacheKib);
  }

  // Stats tags of every chunk in the file, per series, opened read-only (so
  // that the check itself changes nothing).
  std::multiset<std::string> TagsIn(const std::string& path) {
    std::multiset<std::string> tags;
    Result<std::unique_ptr<PeriodFile>> file = PeriodFile::OpenReadOnly(&env_, vfs_, path, kCacheKib);
    EXPECT_TRUE(file.ok()) << path << ": " << file.status().ToString();
    if (!file.ok()) return tags;
    Result<std::vector<PeriodSeries>> series = (*file)->ListSeries();
    EXPECT_TRUE(series.ok()) << series.status().ToString();
    if (!series.ok()) return tags;
    for (const PeriodSeries& one : *series) {
      Result<std::vector<ChunkRow>> rows =
          (*file)->ReadChunks(one.series_id, kDayStart, kDayStart + kDayNs, true);
      EXPECT_TRUE(rows.ok()) << rows.status().ToString();
      if (!rows.ok()) continue;
      for (const ChunkRow& row : *rows) {
        EXPECT_EQ(row.data.substr(0, row.stats.size()), row.stats) << "chunk bytes do not match its stats";
        tags.insert(row.stats);
      }
    }
    return tags;
  }

  // A fresh period file holding the committed chunks tagged "base".
  std::string MakeBaseFile(const std::string& name) {
    std::string path = dir_.PathOf(name);
    Result<std::unique_ptr<PeriodFile>> file = OpenWritable(path);
    EXPECT_TRUE(file.ok()) << file.status().ToString();
    if (!file.ok()) return path;
    std::vector<ChunkRow> chunks = MakeChunks(1, 0, 4, "base");
    Status written = (*file)->WriteChunks({MakeSeries(1)}, chunks);
    EXPECT_TRUE(written.ok()) << written.ToString();
    return path;
  }

  static std::multiset<std::string> Tags(std::initializer_list<std::pair<std::string, int>> counts) {
    std::multiset<std::string> tags;
    for (const auto& [tag, count] : counts) {
      for (int i = 0; i < count; ++i) tags.insert(tag);
    }
    return tags;
  }

  ScopedTempDir dir_{"storage-faults"};
  UnsyncedEnv unsynced_env_;
  FaultInjectionEnv env_{&unsynced_env_};
  std::string vfs_;
};

// Fails the n-th write or sync of one WriteChunks call, for every n, with and
// without a power cut afterwards.
TEST_F(PeriodFaultsTest, WriteChunksIsAllOrNothingUnderEveryFault) {
  const std::multiset<std::string> base_only = Tags({{"base", 4}});
  const std::multiset<std::string> with_update = Tags({{"base", 4}, {"update", 5}});
  for (FaultOp op : {FaultOp::kWrite, FaultOp::kSync}) {
    for (bool power_cut : {false, true}) {
      int failures = 0;
      bool completed = false;
      for (int64_t n = 1; n <= kMaxSweep && !completed; ++n) {
        SCOPED_TRACE(std::string(FaultOpName(op)) + " #" + std::to_string(n) +
                     (power_cut ? " then power cut" : ""));
        std::string path = MakeBaseFile(std::string(FaultOpName(op)) + (power_cut ? "-cut-" : "-") +
                                        std::to_string(n) + ".db");
        Status written;
        {
          Result<std::unique_ptr<PeriodFile>> file = OpenWritable(path);
          ASSERT_TRUE(file.ok()) << file.status().ToString();
          env_.ResetCounters();
          env_.FailNth(op, n, Status::IOError("injected failure"));
          std::vector<ChunkRow> chunks = MakeChunks(1, 1000, 5, "update");
          written = (*file)->WriteChunks({MakeSeries(1)}, chunks);
          completed = env_.InjectedCount(op) == 0;
          env_.ClearFaults();
          if (power_cut) {
            ASSERT_TRUE(env_.SimulatePowerCut().ok());
          }
        }
        std::multiset<std::string> tags = TagsIn(path);
        if (completed) {
          EXPECT_TRUE(written.ok()) << written.ToString();
          EXPECT_EQ(tags, with_update);
          continue;
        }
        ++failures;
        if (written.ok()) {
          // The fault hit after the commit was durable (e.g. a later sync).
          EXPECT_EQ(tags, with_update);
        } else {
          EXPECT_TRUE(tags == base_only || tags == with_update) << "partial write visible";
        }
        // The file keeps taking writes afterwards.
        Result<std::unique_ptr<PeriodFile>> file = OpenWritable(path);
        ASSERT_TRUE(file.ok()) << file.status().ToString();
        std::vector<ChunkRow> more = MakeChunks(1, 5000, 1, "after");
        EXPECT_TRUE((*file)->WriteChunks({}, more).ok());
      }
      EXPECT_TRUE(completed) << FaultOpName(op) << ": faults still firing after " << kMaxSweep << " calls";
      EXPECT_GT(failures, 0) << FaultOpName(op) << ": the sweep never hit a " << FaultOpName(op);
    }
  }
}

TEST_F(PeriodFaultsTest, PowerCutKeepsCommittedWritesAndDropsTheUncommitted) {
  std::string path = dir_.PathOf("cut.db");
  {
    Result<std::unique_ptr<PeriodFile>> file = OpenWritable(path);
    ASSERT_TRUE(file.ok());
    std::vector<ChunkRow> first = MakeChunks(1, 0, 3, "first");
    ASSERT_TRUE((*file)->WriteChunks({MakeSeries(1)}, first).ok());
    std::vector<ChunkRow> second = MakeChunks(2, 0, 2, "second");
    ASSERT_TRUE((*file)->WriteChunks({MakeSeries(2)}, second).ok());
    // Committed means durable: nothing is left for a power cut to take.
    EXPECT_EQ(env_.CurrentExposure().unsynced_bytes, 0u);
    // The commit of the third write never reaches the disk: its WAL frames
    // are written, the sync fails, the power goes.
    env_.FailFromNth(FaultOp::kSync, 1, Status::IOError("injected: device gone"));
    std::vector<ChunkRow> third = MakeChunks(3, 0, 3, "third");
    EXPECT_FALSE((*file)->WriteChunks({MakeSeries(3)}, third).ok());
    EXPECT_GT(env_.CurrentExposure().unsynced_bytes, 0u);
    env_.ClearFaults();
    ASSERT_TRUE(env_.SimulatePowerCut().ok());
  }
  EXPECT_EQ(TagsIn(path), Tags({{"first", 3}, {"second", 2}}));
  Result<std::unique_ptr<PeriodFile>> file = PeriodFile::OpenReadOnly(&env_, vfs_, path, kCacheKib);
  ASSERT_TRUE(file.ok());
  Result<std::vector<PeriodSeries>> series = (*file)->ListSeries();
  ASSERT_TRUE(series.ok());
  EXPECT_EQ(series->size(), 2u);
}

TEST_F(PeriodFaultsTest, PowerCutRightAfterCreationLeavesAUsableFile) {
  // Sweep the syncs of creating a period file; after each failure and a power
  // cut, opening again must give a valid, empty period file (or none at all).
  bool completed = false;
  for (int64_t n = 1; n <= kMaxSweep && !completed; ++n) {
    SCOPED_TRACE("sync #" + std::to_string(n));
    std::string path = dir_.PathOf("create-" + std::to_string(n) + ".db");
    env_.ResetCounters();
    env_.FailNth(FaultOp::kSync, n, Status::IOError("injected failure"));
    {
      Result<std::unique_ptr<PeriodFile>> file = OpenWritable(path);
      completed = env_.InjectedCount(FaultOp::kSync) == 0;
      if (completed) {
        ASSERT_TRUE(file.ok()) << file.status().ToString();
      }
      env_.ClearFaults();
      ASSERT_TRUE(env_.SimulatePowerCut().ok());
    }
    Result<std::unique_ptr<PeriodFile>> file = OpenWritable(path);
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    Result<std::vector<PeriodSeries>> series = (*file)->ListSeries();
    ASSERT_TRUE(series.ok());
    EXPECT_TRUE(series->empty());
    std::vector<ChunkRow> chunks = MakeChunks(1, 0, 1, "first");
    EXPECT_TRUE((*file)->WriteChunks({MakeSeries(1)}, chunks).ok());
  }
  EXPECT_TRUE(completed);
}

// Fails the n-th write or sync of Compact (merge, checkpoints, VACUUM), for
// every n, then cuts the power: the file holds either the original chunks or
// the merged ones.
TEST_F(PeriodFaultsTest, CompactIsAllOrNothingUnderEveryFault) {
  auto merge = [](const PeriodSeries&, std::vector<ChunkRow>&& rows) -> Result<std::vector<ChunkRow>> {
    ChunkRow merged = rows.front();
    merged.stats = "merged";
    merged.data = "merged";
    for (const ChunkRow& row : rows) {
      merged.end_ns = std::max(merged.end_ns, row.end_ns);
      merged.count += row.count;
      merged.lsns.insert(merged.lsns.end(), row.lsns.begin(), row.lsns.end());
      merged.max_lsn = std::max(merged.max_lsn, row.max_lsn);
      merged.data += std::to_string(row.data.size()) + ",";
    }
    return std::vector<ChunkRow>{merged};
  };
  const std::multiset<std::string> original = Tags({{"base", 4}, {"other", 3}});
  const std::multiset<std::string> merged = Tags({{"merged", 2}});
  for (FaultOp op : {FaultOp::kWrite, FaultOp::kSync}) {
    int failures = 0;
    bool completed = false;
    for (int64_t n = 1; n <= kMaxSweep && !completed; ++n) {
      SCOPED_TRACE(std::string(FaultOpName(op)) + " #" + std::to_string(n));
      std::string path =
          MakeBaseFile("compact-" + std::string(FaultOpName(op)) + "-" + std::to_string(n) + ".db");
      Status compacted;
      {
        Result<std::unique_ptr<PeriodFile>> file = OpenWritable(path);
        ASSERT_TRUE(file.ok()) << file.status().ToString();
        std::vector<ChunkRow> other = MakeChunks(2, 0, 3, "other");
        ASSERT_TRUE((*file)->WriteChunks({MakeSeries(2)}, other).ok());
        env_.ResetCounters();
        env_.FailNth(op, n, Status::IOError("injected failure"));
        compacted = (*file)->Compact(merge);
        completed = env_.InjectedCount(op) == 0;
        env_.ClearFaults();
        ASSERT_TRUE(env_.SimulatePowerCut().ok());
      }
      std::multiset<std::string> tags = TagsIn(path);
      if (completed) {
        EXPECT_TRUE(compacted.ok()) << compacted.ToString();
        EXPECT_EQ(tags, merged);
        continue;
      }
      ++failures;
      EXPECT_TRUE(tags == original || tags == merged) << "half-compacted file";
      Result<std::unique_ptr<PeriodFile>> file = PeriodFile::OpenReadOnly(&env_, vfs_, path, kCacheKib);
      ASSERT_TRUE(file.ok()) << file.status().ToString();
      Result<bool> is_compacted = (*file)->IsCompacted();
      ASSERT_TRUE(is_compacted.ok()) << is_compacted.status().ToString();
      EXPECT_EQ(*is_compacted, tags == merged);
    }
    EXPECT_TRUE(completed) << FaultOpName(op);
    EXPECT_GT(failures, 0) << FaultOpName(op);
  }
}

TEST_F(PeriodFaultsTest, FullDiskIsResourceExhausted) {
  std::string path = MakeBaseFile("full.db");
  Result<std::unique_ptr<PeriodFile>> file = OpenWritable(path);
  ASSERT_TRUE(file.ok());
  env_.FailFromNth(FaultOp::kWrite, 1, Status::ResourceExhausted("injected: no space left on device"));
  std::vector<ChunkRow> chunks = MakeChunks(1, 1000, 3, "update");
  Status written = (*file)->WriteChunks({}, chunks);
  EXPECT_TRUE(written.Is(StatusCode::kResourceExhausted)) << written.ToString();
  EXPECT_NE(written.message().find("no space left"), std::string::npos) << written.ToString();
  env_.ClearFaults();
  // Space is back: the same write succeeds on the same handle.
  Status retried = (*file)->WriteChunks({}, chunks);
  EXPECT_TRUE(retried.ok()) << retried.ToString();
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(TagsIn(path), Tags({{"base", 4}, {"update", 3}}));
}

}  // namespace
}  // namespace cairn

namespace cairn {
namespace {

// Regression: a sync failure while a new period file switched to WAL went
// unreported (the PRAGMA's statement was finalized before the step that
// commits the header change); OpenWritable and WriteChunks returned OK, and
// after a power cut the header was gone and SQLite dropped the WAL holding
// the committed chunks. Every sync of creation plus one commit is failed in turn:
// either a call reports the error, or the committed chunk survives.
TEST(PeriodCreationFaultsTest, EverySyncFailureIsReportedOrHarmless) {
  for (int n = 1; n <= 12; ++n) {
    SCOPED_TRACE("sync " + std::to_string(n) + " fails");
    ScopedTempDir dir("cairn-period-creation");
    FaultInjectionEnv env(Env::Default());
    const std::string vfs = "period-creation-" + std::to_string(n);
    ASSERT_TRUE(RegisterEnvVfs(&env, vfs).ok());
    env.FailNth(FaultOp::kSync, n, Status::IOError("injected sync failure"));
    const std::string path = dir.PathOf("p.db");
    auto file = PeriodFile::OpenWritable(&env, vfs, path, "t", Period::kHour, 0, 64);
    bool committed = false;
    if (file.ok()) {
      PeriodSeries series{1, "d", "m", 0, {{"v", FieldType::kDouble}}, {}};
      ChunkRow chunk;
      chunk.series_id = 1;
      chunk.start_ns = 10;
      chunk.end_ns = 20;
      chunk.count = 2;
      chunk.min_lsn = 1;
      chunk.max_lsn = 2;
      chunk.lsns = {1, 2};
      chunk.fields = series.fields;
      chunk.stats = "stats";
      chunk.data = "data";
      std::vector<ChunkRow> chunks{chunk};
      committed = (*file)->WriteChunks({series}, chunks).ok();
      file->reset();
    }
    ASSERT_TRUE(env.SimulatePowerCut().ok());
    env.ClearFaults();
    auto reopened = PeriodFile::OpenWritable(&env, vfs, path, "t", Period::kHour, 0, 64);
    ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
    auto chunks = (*reopened)->ReadChunks(1, 0, 100, /*with_data=*/false);
    ASSERT_TRUE(chunks.ok()) << chunks.status().ToString();
    if (committed) {
      EXPECT_EQ(chunks->size(), 1u) << "an acknowledged commit was lost";
    }
    reopened->reset();
    ASSERT_TRUE(UnregisterEnvVfs(vfs).ok());
  }
}

}  // namespace
}  // namespace cairn
