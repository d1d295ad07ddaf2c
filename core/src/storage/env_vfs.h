// A sqlite3_vfs whose every file operation goes through a cairn::Env.
//
// SQLite normally talks to the OS through its own unix VFS. Routing it through
// the Env instead keeps core's promise that only platform/ touches the OS, and
// lets tests put SQLite under the same fault plans as the rest of cairn (fail
// the N-th write or sync, drop unsynced bytes on a simulated power cut).
//
// Locking model. cairn runs one process per data directory (guarded by
// <data_dir>/LOCK) and opens at most one connection per database file, so the
// VFS needs no OS locks and no shared memory (io methods version 1). Each
// connection must run `PRAGMA locking_mode=EXCLUSIVE` before
// `PRAGMA journal_mode=WAL`: without shared memory SQLite allows WAL only in
// exclusive locking mode, and then keeps the WAL index in heap memory.
// Lock levels are still tracked in a process-wide table keyed by path, so a
// second connection to a file that is in use fails with SQLITE_BUSY instead of
// silently reading a WAL whose index lives in another connection's heap.
//
// Read-only connections. The WAL of a main database opened with
// SQLITE_OPEN_READONLY is opened read-only too (or, if absent, seen as an
// empty read-only file), which makes it impossible for such a connection to
// checkpoint or to create files.
//
// Temporary files (SQLite passes no name) live in memory.
//
// Thread-safety: registration functions may be called from any thread. A
// registered VFS may be used by connections on different threads at once.
#pragma once

#include <string>

#include "cairn/platform/env.h"
#include "cairn/platform/status.h"

namespace cairn {

// Registers a VFS named `vfs_name` that forwards to `env` (not made the
// default VFS). OK if `vfs_name` is already registered over the same `env`;
// InvalidArgument if it is registered over a different Env or if the name is
// taken by a VFS that is not an Env VFS. `env` must outlive every connection
// opened through the VFS and the registration itself.
Status RegisterEnvVfs(Env* env, const std::string& vfs_name);

// The name under which cairn registers the VFS that reaches files through
// `env`: one per Env, so that every database opened over one Env shares it.
std::string VfsNameFor(Env* env);

// Unregisters and frees a VFS registered by RegisterEnvVfs. Precondition: no
// connection is open through it. NotFound if no such Env VFS exists.
// Intended for tests that register a fresh fault-injecting Env per case.
Status UnregisterEnvVfs(const std::string& vfs_name);

// The last Env error that an Env VFS turned into a SQLite error code on the
// calling thread (SQLite calls the VFS on the thread that called into SQLite),
// with the operation and path as context. OK if there was none since the last
// ClearEnvVfsLastError() on this thread.
Status EnvVfsLastError();
void ClearEnvVfsLastError();

}  // namespace cairn
