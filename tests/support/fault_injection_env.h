// An Env that fails chosen operations on purpose and can simulate a power cut.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/platform/env.h"

#include "crash_rng.h"
#include "crash_unsynced_writes.h"

namespace cairn {

// The operations whose N-th call can be made to fail. A call may count as
// more than one kind (File::Truncate is a kWrite and a kTruncate); it fails
// when the plan of any of its kinds says so.
enum class FaultOp : uint8_t {
  kWrite,     // File::WriteAt, File::Append, File::Truncate
  kSync,      // File::Sync and Env::SyncDir
  kRename,    // Env::RenameFile
  kOpen,      // Env::OpenFile, in any mode
  kTruncate,  // File::Truncate alone (also a kWrite)
  kRemove,    // Env::RemoveFile
};
inline constexpr int kFaultOpCount = 6;

// "write", "sync", "rename", "open", "truncate" or "remove".
std::string_view FaultOpName(FaultOp op);

// What an injected failure of File::WriteAt or File::Append leaves behind.
enum class FailedWriteEffect : uint8_t {
  kNothing,      // the call has no effect at all
  kHalfWritten,  // the first half of the bytes (rounded down) reach the file
                 // before the error, as when a disk fills up in mid-write
};

// What a simulated power cut does to what no sync made durable (see
// FaultInjectionEnv's model). The seed makes every random choice, so a cut
// is replayed exactly by passing the same options after the same calls.
struct PowerCutOptions {
  enum class Data : uint8_t {
    kDropUnsynced,     // every unsynced write is lost
    kTornWrite,        // per file, the unsynced writes persist in order up to
                       // one that is torn inside a sector (CutWithTornWrite)
    kReorderedWrites,  // per file, a random subset of the sectors the
                       // unsynced writes touched persists (CutWithReorderedWrites)
  };
  Data data = Data::kDropUnsynced;
  // false: every directory entry change not yet made durable by SyncDir is
  // undone. true: each is kept or undone at random, independently of the
  // others, except that a change is undone when an earlier pending change of
  // the same path (or of a directory above it) is undone.
  bool keep_some_entry_changes = false;
  uint32_t sector_bytes = 512;  // > 0; the unit of tearing and reordering
  uint64_t seed = 0;
};

// "drop", "torn" or "reordered".
std::string_view PowerCutDataName(PowerCutOptions::Data data);

// What a power cut did, for assertions and failure messages.
struct PowerCutReport {
  uint64_t files_cut = 0;     // files whose unsynced writes were dropped, torn or reordered
  uint64_t torn_writes = 0;   // writes cut inside a sector
  uint64_t sectors_kept = 0;  // reordered: touched sectors that persisted
  uint64_t sectors_lost = 0;  // reordered: touched sectors that did not
  uint64_t entry_changes_kept = 0;
  uint64_t entry_changes_undone = 0;
  // One line per file and per entry change: what happened to it.
  std::vector<std::string> lines;

  // The counters in one line.
  std::string Summary() const;
};

// Wraps a real Env (normally Env::Default() on a ScopedTempDir) and adds two
// powers to it.
//
// Fault injection: FailNth makes the N-th next call of one kind of operation
// return a chosen Status, FailFromNth makes that call and every later one
// fail. A failing call has no effect (a failing write may be asked to write
// half its bytes first). CallCount and InjectedCount let a test sweep
// N = 1, 2, 3 ... until a workload completes without any fault firing, so
// every failure point is visited once.
//
// A failed sync is modelled after Linux: the writeback error leaves the
// pages clean in the page cache, so what was written since the file's last
// successful sync still reads back but will never reach the disk, not even
// when a later sync succeeds. Only bytes written again after the failure
// can become durable; the rest is lost at the next power cut (and a write
// past a lost range leaves zeros there). Retrying the sync is no remedy.
//
// Power cuts: the env remembers what is durable, and SimulatePowerCut puts
// the files on disk into a state that a reboot at this instant could find:
//   - File data is durable up to the last successful File::Sync of any handle
//     of that file (less what a failed sync lost, above). What was written
//     since is dropped (kDropUnsynced, the default), torn (kTornWrite: the
//     writes reach the disk in order up to one that is cut inside a sector)
//     or reordered (kReorderedWrites: an arbitrary subset of the sectors they
//     touched persists), each file on its own.
//   - A directory entry change (file created, renamed or removed) is durable
//     once Env::SyncDir of its directory succeeded after it; for a rename,
//     both the source and the destination directory must be synced. A power
//     cut undoes the pending changes (all of them, or a random subset with
//     keep_some_entry_changes), newest first: created files disappear,
//     renamed files go back to their old name and a file replaced by a rename
//     comes back with its durable contents, removed files come back with
//     their durable contents.
//   - What is durable of every file written through the env, and every
//     unsynced write, is held in memory: this env is meant for test-sized
//     files.
//   - Not modelled: directories themselves (CreateDirs and RemoveDir are
//     durable at once), damage outside the bytes a write covered (cairn's
//     SQLite VFS declares powersafe overwrite), the unsynced writes of a
//     file removed before the cut (it comes back as its last sync left it),
//     exotic cross-directory rename chains (undone on a best-effort basis),
//     and changes made behind the env's back (other Envs, other processes).
// After a power cut, every File opened before it fails every call with
// IOError("power cut"), so a test cannot keep writing through a handle that
// would not exist after a real reboot. The env itself is usable at once:
// files are reopened as after a reboot.
//
// Paths are compared after lexical normalisation ("a//b/./c" is "a/b/c");
// one file must not be reached through different spellings such as an
// absolute and a relative path, or through symbolic links.
//
// Thread-safe: one mutex guards the model; all calls, including file I/O,
// are serialised through it. This Env must outlive every File it returns.
// Wrapping this Env in a ManualClockEnv (or the reverse) is fine.
class FaultInjectionEnv : public EnvWrapper {
 public:
  // `target` must outlive this object. Files that exist when first opened
  // for writing are taken as durable in their state at that moment.
  explicit FaultInjectionEnv(Env* target);
  ~FaultInjectionEnv() override;

  FaultInjectionEnv(const FaultInjectionEnv&) = delete;
  FaultInjectionEnv& operator=(const FaultInjectionEnv&) = delete;

  // ---- fault injection -----------------------------------------------------

  // The `n`-th call of `op` from now on (1: the very next call) returns
  // `error`, once. Replaces an earlier plan for `op`. Preconditions: n >= 1,
  // !error.ok().
  void FailNth(FaultOp op, int64_t n, Status error, FailedWriteEffect effect = FailedWriteEffect::kNothing);

  // Like FailNth, but the n-th call and every later call of `op` fail, until
  // ClearFaults: a disk that stays full or broken.
  void FailFromNth(FaultOp op, int64_t n, Status error,
                   FailedWriteEffect effect = FailedWriteEffect::kNothing);

  // Removes the plans of every operation; counters are kept.
  void ClearFaults();

  // Calls of `op` since construction or ResetCounters, failed ones included.
  int64_t CallCount(FaultOp op) const;

  // Calls of `op` that failed by injection since construction or
  // ResetCounters.
  int64_t InjectedCount(FaultOp op) const;

  void ResetCounters();

  // Counts one call of `op` made outside this Env and returns the injected
  // error if one is due (OK otherwise), exactly as for the Env's own calls.
  // Lets I/O that bypasses Env (a SQLite VFS shim) share one fault plan and
  // one sweep with it.
  Status ConsultFaultPlan(FaultOp op);

  // ---- power lost in mid-operation -------------------------------------------

  // The `n`-th call of `op` from now on (1: the very next call) finds the
  // power gone: that call and every later open, write, truncate, sync,
  // rename, remove, read and size query through this env fail with
  // IOError("power lost (simulated)") and change nothing, until the next
  // SimulatePowerCut, which then treats what was written before the loss
  // like any unsynced data. This is how a cut lands between a write and its
  // sync (a failed sync would lose the data instead). Other calls (exists,
  // list, create directories, locks) still pass through. Replaces an
  // earlier plan. Precondition: n >= 1.
  void LosePowerAtNth(FaultOp op, int64_t n);

  // True from the call that found the power gone until the next cut.
  bool PowerLost() const;

  // ---- power cut -----------------------------------------------------------

  // Makes the files on disk what a reboot after a power cut at this instant
  // could find (see the model above), invalidates every File opened so far,
  // and starts tracking afresh from the new state, powered again (any plan
  // of LosePowerAtNth is dropped). Returns the first error
  // of the underlying Env while doing so, if any. `report`, when not null,
  // receives what the cut did.
  Status SimulatePowerCut(const PowerCutOptions& options, PowerCutReport* report = nullptr);
  // Drops every unsynced write and undoes every pending entry change.
  Status SimulatePowerCut() { return SimulatePowerCut(PowerCutOptions{}); }

  // Bytes written since their file's last sync or lost to a failed sync,
  // summed over files, plus the number of directory entry changes not yet
  // made durable by SyncDir. Zero means a power cut now would change nothing.
  struct Exposure {
    uint64_t unsynced_bytes = 0;
    uint64_t unsynced_entry_changes = 0;
  };
  Exposure CurrentExposure() const;

  // ---- Env -------------------------------------------------------------------

  Result<std::unique_ptr<File>> OpenFile(const std::string& path, OpenMode mode) override;
  Status RenameFile(const std::string& from, const std::string& to) override;
  Status RemoveFile(const std::string& path) override;
  Status SyncDir(const std::string& path) override;

 private:
  class TrackedFile;
  friend class TrackedFile;

  // What is durable of one file's data and what was written since. Shared
  // between the path table and the open handles, so a handle keeps working
  // on the right file after a rename.
  struct FileData {
    // Until the first change through this env, the file on disk is what is
    // durable and `durable` is not loaded.
    bool loaded = false;
    std::string durable;
    // Changes since the last successful sync (and since the last failed
    // one, which lost those before it), oldest first.
    std::vector<crash::UnsyncedWrite> unsynced;
    // Bytes the changes in `unsynced` carry (for CurrentExposure).
    uint64_t unsynced_bytes = 0;
    // Bytes lost to failed syncs since the last power cut. They still read
    // back, so while this is non-zero a power cut must rewrite the file even
    // with nothing unsynced.
    uint64_t lost_bytes = 0;
  };

  // A directory entry change not yet made durable.
  struct EntryChange {
    enum class Kind : uint8_t { kCreate, kRename, kRemove };
    Kind kind;
    std::string path;  // created or removed path; rename source
    std::string to;    // rename destination
    // kRename: durable contents of the file the rename replaced, if any.
    // kRemove: durable contents of the removed file.
    std::optional<std::string> previous_contents;
    // Directories that must still be synced for this change to be durable.
    std::set<std::string> unsynced_dirs;
  };

  struct FaultPlan {
    bool active = false;
    bool persistent = false;
    FailedWriteEffect effect = FailedWriteEffect::kNothing;
    // Calls left until the one that fails (1: the next call).
    int64_t countdown = 0;
    Status error;
    int64_t calls = 0;
    int64_t injected = 0;
  };

  void Arm(FaultOp op, int64_t n, Status error, FailedWriteEffect effect, bool persistent);

  // IOError when the power is gone or, counting this call of `op`, goes now.
  // Requires mutex_.
  Status CheckPower(FaultOp op);
  // IOError when the power is gone. Requires mutex_.
  Status CheckPowered() const;

  // Counts one call of `op` and returns the injected error, if one is due;
  // `effect`, when not null, receives what the failing plan asks a write to
  // leave. Requires mutex_.
  Status CountCall(FaultOp op, FailedWriteEffect* effect = nullptr);

  // Requires mutex_. The FileData for `key`: a new one for a file created
  // now or not tracked so far (a file that exists is durable until written
  // through this env).
  std::shared_ptr<FileData> DataForWriting(const std::string& key, bool created);

  // Requires mutex_. What a power cut that drops every unsynced write would
  // leave of the file `key`; nullopt if it does not exist.
  Result<std::optional<std::string>> DurableContents(const std::string& key);

  // Requires mutex_. Recreates `path` with `contents` (not counted, not
  // tracked).
  Status WriteWhole(const std::string& path, const std::string& contents);

  // Requires mutex_. Puts each tracked file's data into its state after the
  // cut; the first error goes to `first_error`.
  void CutFileData(const PowerCutOptions& options, crash::Rng& rng, PowerCutReport* report,
                   Status* first_error);

  // Requires mutex_. Undoes the pending entry changes that the cut does not
  // keep, newest first; the first error goes to `first_error`.
  void CutEntryChanges(const PowerCutOptions& options, crash::Rng& rng, PowerCutReport* report,
                       Status* first_error);

  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<FileData>> files_;
  std::vector<EntryChange> pending_changes_;
  FaultPlan plans_[kFaultOpCount];
  // LosePowerAtNth's plan: calls of power_loss_op_ left until the loss (0:
  // none armed), and whether the power is gone.
  FaultOp power_loss_op_ = FaultOp::kWrite;
  int64_t power_loss_countdown_ = 0;
  bool power_lost_ = false;
  // Bumped by every power cut; a TrackedFile from an older generation is
  // dead.
  uint64_t generation_ = 0;
};

}  // namespace cairn
