// The power-cut modes of FaultInjectionEnv beyond dropping unsynced data:
// torn writes, reordered writes, entry changes kept at random, data lost to
// a failed sync, and the fault kinds added for the I/O-error sweep. Each
// mode is driven over many seeds and must (a) only ever produce states its
// model allows and (b) actually produce the states that make it worth
// having (a torn sector, a kept sector after a lost one, a later entry
// change kept while an earlier one is undone).
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "crash_no_sync_env.h"
#include "fault_injection_env.h"
#include "test_dirs.h"

namespace cairn {
namespace {

constexpr uint32_t kSector = 512;
constexpr uint64_t kSeeds = 64;

class PowerCutModesTest : public ::testing::Test {
 protected:
  ScopedTempDir dir_{"cairn-fault-env-cut"};
  // The env decides what is durable; real syncs would only cost time.
  NoSyncEnv no_sync_{Env::Default()};
  FaultInjectionEnv env_{&no_sync_};

  std::string Path(std::string_view name) const { return dir_.PathOf(name); }

  std::unique_ptr<File> Open(std::string_view name, OpenMode mode) {
    auto file = env_.OpenFile(Path(name), mode);
    EXPECT_TRUE(file.ok()) << file.status().ToString();
    return file.ok() ? std::move(file).value() : nullptr;
  }

  // Creates `name` with `contents`, durably (data synced, directory synced).
  void CreateDurable(std::string_view name, const std::string& contents) {
    std::unique_ptr<File> file = Open(name, OpenMode::kCreateTruncate);
    ASSERT_NE(file, nullptr);
    ASSERT_TRUE(file->Append(contents).ok());
    ASSERT_TRUE(file->Sync().ok());
    ASSERT_TRUE(env_.SyncDir(dir_.path()).ok());
  }

  // Reads through the real filesystem, not the env under test.
  std::string OnDisk(std::string_view name) {
    auto contents = Env::Default()->ReadFileToString(Path(name));
    return contents.ok() ? *contents : "<" + contents.status().ToString() + ">";
  }

  bool ExistsOnDisk(std::string_view name) { return Env::Default()->FileExists(Path(name)); }

  PowerCutReport Cut(PowerCutOptions::Data data, uint64_t seed, bool keep_some_entry_changes = false,
                     uint32_t sector_bytes = kSector) {
    PowerCutOptions options;
    options.data = data;
    options.seed = seed;
    options.keep_some_entry_changes = keep_some_entry_changes;
    options.sector_bytes = sector_bytes;
    PowerCutReport report;
    EXPECT_TRUE(env_.SimulatePowerCut(options, &report).ok());
    return report;
  }
};

// `size` bytes that differ from their neighbours, so a byte out of place is
// seen.
std::string Pattern(char tag, size_t size) {
  std::string bytes(size, tag);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>(tag + static_cast<char>(i % 7));
  return bytes;
}

// ---- torn writes ----------------------------------------------------------------

// Appends several unsynced writes; each cut must leave the durable bytes, the
// writes before the one in flight in full, a prefix of that one, and at most
// the rest of the torn sector in zeros or garbage. Over the seeds the tear
// must land in the newest write and in older ones, inside sectors (not only
// on their boundaries), with each kind of fill.
TEST_F(PowerCutModesTest, TornWriteKeepsWritesInOrderAndTearsOneInsideASector) {
  const std::string durable = Pattern('a', 700);
  std::vector<std::string> writes = {Pattern('A', 300), Pattern('H', 1500), Pattern('O', 90), Pattern('V', 2000)};
  std::string newest = durable;
  for (const std::string& write : writes) newest += write;

  std::set<std::string> torn_positions;
  bool torn_mid_sector = false, torn_zeros = false, torn_garbage = false, torn_old = false;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    CreateDurable("log", durable);
    std::unique_ptr<File> file = Open("log", OpenMode::kReadWrite);
    for (const std::string& write : writes) ASSERT_TRUE(file->Append(write).ok());
    file.reset();
    const PowerCutReport report = Cut(PowerCutOptions::Data::kTornWrite, seed);
    ASSERT_EQ(report.files_cut, 1u);
    ASSERT_EQ(report.torn_writes, 1u);
    ASSERT_EQ(report.lines.size(), 1u);
    const std::string after = OnDisk("log");

    // The first byte that differs from the newest state is the tear (or a
    // garbage byte after it that happens to match).
    size_t tear = 0;
    while (tear < after.size() && tear < newest.size() && after[tear] == newest[tear]) ++tear;
    ASSERT_GE(tear, durable.size()) << "durable bytes damaged";
    ASSERT_LE(after.size(), newest.size());
    if (after.size() > tear) {
      // Only the rest of the torn sector may differ.
      EXPECT_EQ(tear / kSector, (after.size() - 1) / kSector) << report.lines[0];
    }
    const std::string& line = report.lines[0];
    torn_positions.insert(line.substr(line.find("torn write "), 17));
    torn_mid_sector |= tear % kSector != 0;
    torn_zeros |= line.find(" zeros") != std::string::npos;
    torn_garbage |= line.find(" garbage") != std::string::npos;
    torn_old |= line.find(" old bytes") != std::string::npos;
    ASSERT_TRUE(Env::Default()->RemoveFile(Path("log")).ok());
  }
  EXPECT_TRUE(torn_positions.count("torn write 4 of 4")) << "the newest write was never torn";
  EXPECT_GE(torn_positions.size(), 3u) << "the tear never fell in older writes";
  EXPECT_TRUE(torn_mid_sector);
  EXPECT_TRUE(torn_zeros && torn_garbage && torn_old);
}

// An overwrite in the middle of a durable file tears inside its own range
// only: the bytes around it are never damaged.
TEST_F(PowerCutModesTest, TornOverwriteNeverDamagesBytesOutsideTheWrite) {
  const std::string durable = Pattern('a', 4096);
  const std::string overwrite = Pattern('N', 1000);
  constexpr uint64_t kAt = 1300;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    CreateDurable("db", durable);
    std::unique_ptr<File> file = Open("db", OpenMode::kReadWrite);
    ASSERT_TRUE(file->WriteAt(kAt, overwrite).ok());
    file.reset();
    const PowerCutReport report = Cut(PowerCutOptions::Data::kTornWrite, seed);
    const std::string after = OnDisk("db");
    ASSERT_EQ(after.size(), durable.size()) << report.lines[0];
    EXPECT_EQ(after.substr(0, kAt), durable.substr(0, kAt));
    EXPECT_EQ(after.substr(kAt + overwrite.size()), durable.substr(kAt + overwrite.size()));
  }
}

// ---- reordered writes -------------------------------------------------------------

// Eight sectors rewritten one write each, in order. After a cut every sector
// is wholly old or wholly new, and over the seeds some cut keeps a later
// sector while losing an earlier one: what a disk that reorders does and an
// in-order model cannot.
TEST_F(PowerCutModesTest, ReorderedWritesKeepAnArbitrarySubsetOfWholeSectors) {
  constexpr size_t kSectors = 8;
  const std::string durable = Pattern('a', kSectors * kSector);
  bool out_of_order = false;
  std::set<uint64_t> kept_counts;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    CreateDurable("db", durable);
    std::unique_ptr<File> file = Open("db", OpenMode::kReadWrite);
    std::vector<std::string> sectors;
    for (size_t s = 0; s < kSectors; ++s) {
      sectors.push_back(Pattern(static_cast<char>('A' + s), kSector));
      ASSERT_TRUE(file->WriteAt(s * kSector, sectors.back()).ok());
    }
    file.reset();
    const PowerCutReport report = Cut(PowerCutOptions::Data::kReorderedWrites, seed);
    EXPECT_EQ(report.sectors_kept + report.sectors_lost, kSectors);
    const std::string after = OnDisk("db");
    ASSERT_EQ(after.size(), durable.size());
    bool lost_earlier = false;
    uint64_t kept = 0;
    for (size_t s = 0; s < kSectors; ++s) {
      const std::string got = after.substr(s * kSector, kSector);
      const bool is_new = got == sectors[s];
      ASSERT_TRUE(is_new || got == durable.substr(s * kSector, kSector)) << "sector " << s << " is mixed";
      kept += is_new ? 1 : 0;
      if (is_new && lost_earlier) out_of_order = true;
      lost_earlier |= !is_new;
    }
    EXPECT_EQ(kept, report.sectors_kept);
    kept_counts.insert(kept);
  }
  EXPECT_TRUE(out_of_order) << "no cut kept a later sector and lost an earlier one";
  EXPECT_GE(kept_counts.size(), 4u);
}

// Appends grow the file; a cut keeps the new size or the old one, and where
// the new size is kept, sectors that did not persist read as zeros.
TEST_F(PowerCutModesTest, ReorderedAppendsKeepOrLoseTheSizeAndLeaveZerosInHoles) {
  const std::string durable = Pattern('a', 100);
  const std::string appended = Pattern('N', 3 * kSector);
  bool saw_hole = false, saw_old_size = false;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    CreateDurable("wal", durable);
    std::unique_ptr<File> file = Open("wal", OpenMode::kReadWrite);
    ASSERT_TRUE(file->Append(appended).ok());
    file.reset();
    Cut(PowerCutOptions::Data::kReorderedWrites, seed);
    const std::string after = OnDisk("wal");
    const std::string newest = durable + appended;
    ASSERT_TRUE(after.size() == durable.size() || after.size() == newest.size()) << after.size();
    saw_old_size |= after.size() == durable.size();
    for (size_t i = 0; i < after.size(); ++i) {
      const bool from_old = i < durable.size() && after[i] == durable[i];
      const bool from_new = after[i] == newest[i];
      ASSERT_TRUE(from_old || from_new || after[i] == '\0') << "byte " << i;
      saw_hole |= i >= durable.size() && after[i] == '\0' && newest[i] != '\0';
    }
  }
  EXPECT_TRUE(saw_hole);
  EXPECT_TRUE(saw_old_size);
}

TEST_F(PowerCutModesTest, SectorSizeSetsTheUnitOfReordering) {
  constexpr uint32_t kPage = 4096;
  const std::string durable(2 * kPage, 'o');
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    CreateDurable("db", durable);
    std::unique_ptr<File> file = Open("db", OpenMode::kReadWrite);
    ASSERT_TRUE(file->WriteAt(0, std::string(2 * kPage, 'n')).ok());
    file.reset();
    const PowerCutReport report = Cut(PowerCutOptions::Data::kReorderedWrites, seed, false, kPage);
    EXPECT_EQ(report.sectors_kept + report.sectors_lost, 2u);
    const std::string after = OnDisk("db");
    for (size_t page = 0; page < 2; ++page) {
      const std::string got = after.substr(page * kPage, kPage);
      EXPECT_TRUE(got == std::string(kPage, 'o') || got == std::string(kPage, 'n')) << "page " << page;
    }
  }
}

// ---- what every mode shares -------------------------------------------------------

TEST_F(PowerCutModesTest, TheSameSeedReplaysTheSameCut) {
  for (PowerCutOptions::Data data : {PowerCutOptions::Data::kTornWrite, PowerCutOptions::Data::kReorderedWrites}) {
    SCOPED_TRACE(std::string(PowerCutDataName(data)));
    std::set<std::string> outcomes;
    for (uint64_t seed : {7, 7, 8, 9, 10, 11}) {
      CreateDurable("f", Pattern('a', 3000));
      std::unique_ptr<File> file = Open("f", OpenMode::kReadWrite);
      ASSERT_TRUE(file->WriteAt(1000, Pattern('X', 2500)).ok());
      ASSERT_TRUE(file->Append(Pattern('Y', 700)).ok());
      file.reset();
      const PowerCutReport report = Cut(data, seed);
      const std::string after = OnDisk("f");
      if (seed == 7 && !outcomes.empty()) {
        EXPECT_TRUE(outcomes.count(after + report.lines[0])) << "seed 7 cut differently the second time";
      }
      outcomes.insert(after + report.lines[0]);
    }
    EXPECT_GE(outcomes.size(), 3u) << "different seeds should cut differently";
  }
}

TEST_F(PowerCutModesTest, SyncedDataSurvivesEveryMode) {
  for (PowerCutOptions::Data data : {PowerCutOptions::Data::kDropUnsynced, PowerCutOptions::Data::kTornWrite,
                                     PowerCutOptions::Data::kReorderedWrites}) {
    for (uint64_t seed = 1; seed <= 8; ++seed) {
      CreateDurable("f", "old");
      std::unique_ptr<File> file = Open("f", OpenMode::kReadWrite);
      ASSERT_TRUE(file->WriteAt(0, "synced").ok());
      ASSERT_TRUE(file->Sync().ok());
      file.reset();
      const PowerCutReport report = Cut(data, seed, true);
      EXPECT_EQ(report.files_cut, 0u);
      EXPECT_EQ(OnDisk("f"), "synced");
    }
  }
}

// ---- entry changes ----------------------------------------------------------------

// Three files created (data synced, directory not): each is kept or lost on
// its own, so some cut keeps a later one and loses an earlier one. A file
// renamed after its creation never shows up under its new name when its
// creation is lost.
TEST_F(PowerCutModesTest, EntryChangesAreKeptOrLostIndependentlyButNeverOutOfDependency) {
  std::set<std::string> states;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    for (const char* name : {"a", "b", "c", "x"}) {
      std::unique_ptr<File> file = Open(name, OpenMode::kCreateExclusive);
      ASSERT_TRUE(file->Append(name).ok());
      ASSERT_TRUE(file->Sync().ok());
    }
    ASSERT_TRUE(env_.RenameFile(Path("x"), Path("y")).ok());
    const PowerCutReport report = Cut(PowerCutOptions::Data::kDropUnsynced, seed, true);
    EXPECT_EQ(report.entry_changes_kept + report.entry_changes_undone, 5u);
    std::string state;
    for (const char* name : {"a", "b", "c", "x", "y"}) {
      if (!ExistsOnDisk(name)) continue;
      state += name;
      if (name[0] != 'y') {
        EXPECT_EQ(OnDisk(name), name);
      }
    }
    if (ExistsOnDisk("y")) {
      EXPECT_EQ(OnDisk("y"), "x");
    }
    EXPECT_FALSE(ExistsOnDisk("x") && ExistsOnDisk("y"));
    states.insert(state);
    for (const char* name : {"a", "b", "c", "x", "y"}) {
      if (ExistsOnDisk(name)) {
        ASSERT_TRUE(Env::Default()->RemoveFile(Path(name)).ok());
      }
    }
  }
  // Some cut kept c and lost a; some kept the creation of x and undid its
  // rename; some kept both.
  bool later_kept_earlier_lost = false, rename_undone = false, rename_kept = false;
  for (const std::string& state : states) {
    later_kept_earlier_lost |= state.find('c') != std::string::npos && state.find('a') == std::string::npos;
    rename_undone |= state.find('x') != std::string::npos;
    rename_kept |= state.find('y') != std::string::npos;
  }
  EXPECT_TRUE(later_kept_earlier_lost);
  EXPECT_TRUE(rename_undone && rename_kept);
}

// ---- failed syncs -----------------------------------------------------------------

// Linux after a writeback error: the data reads back, a later sync succeeds,
// and yet only what was written after the failure reaches the disk.
TEST_F(PowerCutModesTest, DataBeforeAFailedSyncIsLostEvenAfterALaterSyncSucceeds) {
  CreateDurable("log", "head|");
  std::unique_ptr<File> file = Open("log", OpenMode::kReadWrite);
  ASSERT_TRUE(file->Append("lost|").ok());
  env_.FailNth(FaultOp::kSync, 1, Status::IOError("fdatasync: Input/output error (injected)"));
  EXPECT_FALSE(file->Sync().ok());
  ASSERT_TRUE(file->Append("kept").ok());
  ASSERT_TRUE(file->Sync().ok());
  EXPECT_EQ(*env_.ReadFileToString(Path("log")), "head|lost|kept");
  EXPECT_EQ(env_.CurrentExposure().unsynced_bytes, 5u);

  PowerCutReport report;
  ASSERT_TRUE(env_.SimulatePowerCut(PowerCutOptions{}, &report).ok());
  EXPECT_EQ(OnDisk("log"), std::string("head|") + std::string(5, '\0') + "kept");
  EXPECT_EQ(report.files_cut, 1u);
  EXPECT_NE(report.lines[0].find("lost to a failed sync"), std::string::npos) << report.lines[0];
}

TEST_F(PowerCutModesTest, RewritingAfterAFailedSyncMakesTheDataDurableAgain) {
  CreateDurable("log", "head|");
  std::unique_ptr<File> file = Open("log", OpenMode::kReadWrite);
  ASSERT_TRUE(file->WriteAt(5, "data").ok());
  env_.FailNth(FaultOp::kSync, 1, Status::IOError("injected"));
  EXPECT_FALSE(file->Sync().ok());
  ASSERT_TRUE(file->WriteAt(5, "data").ok());
  ASSERT_TRUE(file->Sync().ok());
  ASSERT_TRUE(env_.SimulatePowerCut().ok());
  EXPECT_EQ(OnDisk("log"), "head|data");
}

// ---- power lost in mid-operation ------------------------------------------------

// Power lost at a sync: the sync and everything after fail without effect,
// and the cut then finds the write before it unsynced, to tear or reorder,
// not lost as a failed sync would leave it.
TEST_F(PowerCutModesTest, PowerLostAtASyncLeavesTheWriteBeforeItToTheCut) {
  bool some_kept = false;
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    CreateDurable("log", "head|");
    std::unique_ptr<File> file = Open("log", OpenMode::kReadWrite);
    env_.LosePowerAtNth(FaultOp::kSync, 1);
    ASSERT_TRUE(file->Append(Pattern('R', 3000)).ok());
    EXPECT_FALSE(env_.PowerLost());
    const Status sync = file->Sync();
    EXPECT_TRUE(sync.Is(StatusCode::kIOError)) << sync.ToString();
    EXPECT_NE(sync.message().find("power lost"), std::string::npos);
    EXPECT_TRUE(env_.PowerLost());
    EXPECT_FALSE(file->Append("more").ok());
    EXPECT_FALSE(env_.OpenFile(Path("other"), OpenMode::kCreateExclusive).ok());
    EXPECT_FALSE(ExistsOnDisk("other"));
    file.reset();
    const PowerCutReport report = Cut(PowerCutOptions::Data::kTornWrite, seed);
    EXPECT_EQ(report.torn_writes, 1u);
    EXPECT_FALSE(env_.PowerLost());
    const std::string after = OnDisk("log");
    EXPECT_EQ(after.substr(0, 5), "head|");
    some_kept |= after.size() > 5 && after[5] == 'R';
    ASSERT_TRUE(Env::Default()->RemoveFile(Path("log")).ok());
  }
  EXPECT_TRUE(some_kept) << "no cut kept any byte written before the loss";
}

// ---- fault kinds -----------------------------------------------------------------

TEST_F(PowerCutModesTest, HalfWrittenFailureLeavesAPrefixAndDoesNotMoveTheAppendOffset) {
  std::unique_ptr<File> file = Open("f", OpenMode::kCreateExclusive);
  ASSERT_TRUE(file->Append("0123").ok());
  env_.FailNth(FaultOp::kWrite, 1, Status::ResourceExhausted("write: No space left on device (injected)"),
               FailedWriteEffect::kHalfWritten);
  EXPECT_TRUE(file->Append("abcdefgh").Is(StatusCode::kResourceExhausted));
  EXPECT_EQ(OnDisk("f"), "0123abcd");
  ASSERT_TRUE(file->Append("XY").ok());
  EXPECT_EQ(OnDisk("f"), "0123XYcd");
}

TEST_F(PowerCutModesTest, OpenRemoveAndTruncateFailOnTheirNthCall) {
  CreateDurable("keep", "data");
  env_.FailNth(FaultOp::kOpen, 2, Status::IOError("open: Read-only file system (injected)"));
  EXPECT_TRUE(env_.OpenFile(Path("keep"), OpenMode::kReadOnly).ok());
  EXPECT_TRUE(env_.OpenFile(Path("new"), OpenMode::kCreateExclusive).status().Is(StatusCode::kIOError));
  EXPECT_FALSE(ExistsOnDisk("new"));
  EXPECT_EQ(env_.InjectedCount(FaultOp::kOpen), 1);

  env_.FailNth(FaultOp::kRemove, 1, Status::IOError("unlink: Input/output error (injected)"));
  EXPECT_FALSE(env_.RemoveFile(Path("keep")).ok());
  EXPECT_TRUE(ExistsOnDisk("keep"));
  EXPECT_EQ(env_.CallCount(FaultOp::kRemove), 1);

  std::unique_ptr<File> file = Open("keep", OpenMode::kReadWrite);
  env_.FailNth(FaultOp::kTruncate, 1, Status::IOError("truncate: Input/output error (injected)"));
  EXPECT_TRUE(file->Append("more").ok());  // a write, not a truncation
  EXPECT_FALSE(file->Truncate(2).ok());
  EXPECT_EQ(OnDisk("keep"), "datamore");
  EXPECT_EQ(env_.CallCount(FaultOp::kTruncate), 1);
  EXPECT_EQ(env_.CallCount(FaultOp::kWrite), 3);  // the durable file's append, this append, the truncation
  EXPECT_EQ(FaultOpName(FaultOp::kTruncate), "truncate");
}

TEST_F(PowerCutModesTest, ReportSummarisesTheCut) {
  CreateDurable("f", Pattern('a', 2000));
  std::unique_ptr<File> file = Open("f", OpenMode::kReadWrite);
  ASSERT_TRUE(file->WriteAt(0, Pattern('N', 2000)).ok());
  file.reset();
  std::unique_ptr<File> fresh = Open("g", OpenMode::kCreateExclusive);
  fresh.reset();
  const PowerCutReport report = Cut(PowerCutOptions::Data::kReorderedWrites, 3);
  EXPECT_EQ(report.files_cut, 1u);
  EXPECT_EQ(report.sectors_kept + report.sectors_lost, 4u);
  EXPECT_EQ(report.entry_changes_undone, 1u);
  EXPECT_NE(report.Summary().find("1 file cut"), std::string::npos) << report.Summary();
  EXPECT_NE(report.Summary().find("of 4 sectors kept"), std::string::npos) << report.Summary();
  EXPECT_EQ(PowerCutDataName(PowerCutOptions::Data::kTornWrite), "torn");
}

}  // namespace
}  // namespace cairn
