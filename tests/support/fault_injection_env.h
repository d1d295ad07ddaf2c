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

namespace cairn {

// The operations whose N-th call can be made to fail.
enum class FaultOp : uint8_t {
  kWrite,   // File::WriteAt, File::Append, File::Truncate
  kSync,    // File::Sync and Env::SyncDir
  kRename,  // Env::RenameFile
};

// "write", "sync" or "rename".
std::string_view FaultOpName(FaultOp op);

// Wraps a real Env (normally Env::Default() on a ScopedTempDir) and adds two
// powers to it.
//
// Fault injection: FailNth makes the N-th next call of one kind of operation
// return a chosen Status, FailFromNth makes that call and every later one
// fail. A failing call has no effect at all (nothing is written, synced or
// renamed). CallCount and InjectedCount let a test sweep N = 1, 2, 3 ...
// until a workload completes without any fault firing, so every failure point
// is visited once.
//
// Power cuts: the env remembers what is durable and SimulatePowerCut puts
// the files on disk back to exactly that state. The model:
//   - File data is durable up to the last successful File::Sync of any handle
//     of that file. A power cut truncates what was appended since and
//     restores bytes overwritten or truncated away since (from an undo log of
//     pre-images kept per file).
//   - A directory entry change (file created, renamed or removed) is durable
//     once Env::SyncDir of its directory succeeded after it; for a rename,
//     both the source and the destination directory must be synced. A power
//     cut undoes the pending changes, newest first: created files disappear,
//     renamed files go back to their old name and a file replaced by a rename
//     comes back with its durable contents, removed files come back with
//     their durable contents (held in memory from the rename or removal on:
//     this env is meant for test-sized files).
//   - A failed sync makes nothing durable; unsynced data stays at risk.
//   - Not modelled: directories themselves (CreateDirs and RemoveDir are
//     durable at once), torn or reordered writes within unsynced data (all of
//     it is lost, none of it survives), partial persistence of a failed
//     write, exotic cross-directory rename chains (undone on a best-effort
//     basis), and changes made behind the env's back (other Envs, other
//     processes).
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
  void FailNth(FaultOp op, int64_t n, Status error);

  // Like FailNth, but the n-th call and every later call of `op` fail, until
  // ClearFaults: a disk that stays full or broken.
  void FailFromNth(FaultOp op, int64_t n, Status error);

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

  // ---- power cut -----------------------------------------------------------

  // Makes the files on disk what a reboot after a power cut at this instant
  // would find (see the model above), invalidates every File opened so far,
  // and starts tracking afresh from the new state. Returns the first error
  // of the underlying Env while rolling back, if any.
  Status SimulatePowerCut();

  // Bytes written since their file's last sync, summed over files, plus the
  // number of directory entry changes not yet made durable by SyncDir. Zero
  // means a power cut now would change nothing.
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

  // What is durable of one file's data. Shared between the path table and
  // the open handles, so a handle keeps working on the right file after a
  // rename.
  struct FileData {
    uint64_t synced_size = 0;
    // Pre-images of bytes below synced_size overwritten or truncated away
    // since the last sync, oldest first. Restoring them newest first leaves
    // the oldest, i.e. the synced, bytes in place.
    std::vector<std::pair<uint64_t, std::string>> undo;
    // Bytes written or truncated since the last sync (for CurrentExposure).
    uint64_t unsynced_bytes = 0;
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
    // Calls left until the one that fails (1: the next call).
    int64_t countdown = 0;
    Status error;
    int64_t calls = 0;
    int64_t injected = 0;
  };

  // Counts one call of `op` and returns the injected error, if one is due.
  // Requires mutex_.
  Status CountCall(FaultOp op);

  // Requires mutex_. The FileData for `key`, created from the file's current
  // size if the file was untracked (a file that exists is durable until
  // written through this env).
  Result<std::shared_ptr<FileData>> DataForWriting(const std::string& key, bool created);

  // Requires mutex_. What a power cut now would leave of the file `key`;
  // nullopt if it does not exist.
  Result<std::optional<std::string>> DurableContents(const std::string& key);

  // Requires mutex_. Recreates `path` with `contents` (not counted, not
  // tracked).
  Status WriteWhole(const std::string& path, const std::string& contents);

  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<FileData>> files_;
  std::vector<EntryChange> pending_changes_;
  FaultPlan plans_[3];
  // Bumped by every power cut; a TrackedFile from an older generation is
  // dead.
  uint64_t generation_ = 0;
};

}  // namespace cairn
