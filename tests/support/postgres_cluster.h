// A real PostgreSQL server for integration tests: a fresh cluster made with
// Debian's initdb and run with pg_ctl in a private temporary directory, on a
// free loopback port, with a database `cairn`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <sys/types.h>

#include "cairn/platform/status.h"

#include "test_dirs.h"

namespace cairn {

// The rows of a query's result, each a vector of its columns as text (the
// server's text format; SQL NULL reads as "").
using QueryRows = std::vector<std::vector<std::string>>;

// One PostgreSQL cluster owned by the test.
//
// PostgreSQL refuses to run as root. When the test runs as root, the cluster's
// directory belongs to the system user `cairn-pg` (created with useradd when
// missing) and initdb, pg_ctl and pg_isready run as that user (setpriv);
// otherwise everything runs as the calling user. Either way that user is the
// cluster's superuser, and loopback and Unix-socket connections are trusted
// without a password. fsync stays on, as in production.
//
// The binaries come from the newest /usr/lib/postgresql/<version>/bin
// (Debian's postgresql package). Every step is bounded (initdb 120 s, start
// and stop 90 s, readiness 60 s), so a broken server fails the test instead
// of hanging it. pg_ctl detaches the server from the test process, so a test
// binary that crashes leaves it running; the destructor is what stops it.
//
// Not thread-safe: one thread at a time calls the methods. Several clusters
// may run side by side.
class PostgresCluster {
 public:
  // Creates the cluster's private directory; starts nothing.
  PostgresCluster();
  // Stops the server (Stop(), or Kill() if that fails) and removes the
  // directory with the cluster in it.
  ~PostgresCluster();

  PostgresCluster(const PostgresCluster&) = delete;
  PostgresCluster& operator=(const PostgresCluster&) = delete;

  // The first call runs initdb, picks a free loopback port (another one if
  // a different process took it before the server bound it), starts the
  // server, waits until pg_isready reports it accepting connections and
  // creates the database `cairn`. Later calls (after Stop() or Kill())
  // start the same cluster on the same port; after Kill() the server runs
  // crash recovery from its write-ahead log first. OK when already running.
  // Errors carry the failing tool's output or the server's log.
  Status Start();

  // Stops the server with `pg_ctl stop -m fast` (sessions are disconnected,
  // a shutdown checkpoint is written). Falls back to Kill() when that fails
  // and returns the failure. OK when not running.
  Status Stop();

  // Simulates a crash: SIGKILL to the postmaster and every process it
  // started, nothing flushed or checkpointed. Returns once they are all
  // gone. OK when not running.
  Status Kill();

  // Whether the server started by Start() has not been stopped or killed
  // since (it may have died on its own).
  bool running() const { return postmaster_pid_ > 0; }

  // The loopback port; 0 before the first successful Start().
  uint16_t port() const { return port_; }

  // The name the server knows its superuser by: "cairn-pg" as root.
  const std::string& user() const { return user_; }

  // libpq connection string for the database `cairn`:
  // "host=127.0.0.1 port=<port> dbname=cairn user=<user>".
  std::string connection_string() const;

  // The private directory; the cluster's data directory is its "data", the
  // server's Unix socket lives in it too.
  const std::string& directory() const { return directory_.path(); }
  std::string data_directory() const;

  // The server's log across all starts (pg_ctl -l); for diagnostics.
  std::string log_path() const;
  std::string ReadLog() const;

  // Runs `sql` (one or more statements) in a new connection to the database
  // `cairn` and returns the rows of the last statement's result (none for a
  // statement that returns no rows). Unavailable when the server cannot be
  // reached (10 s connect timeout); InvalidArgument with the server's message
  // when the SQL fails. Statements are cancelled after 60 s.
  Result<QueryRows> Query(const std::string& sql);

 private:
  // Runs one PostgreSQL tool as the cluster's user, bounded by `timeout_ms`;
  // returns its output, or an error with that output.
  Result<std::string> RunTool(const std::vector<std::string>& argv, int timeout_ms);
  // Runs `sql` against `database` (see Query).
  Result<QueryRows> QueryDatabase(const std::string& database, const std::string& sql);
  Status EnsureUser();
  Status InitializeCluster();
  // Writes the settings file with port_ and starts the server; sets
  // *port_taken when it failed because the port was in use.
  Status StartServer(bool* port_taken);
  Status WaitUntilAcceptingConnections();
  Status CreateDatabaseIfMissing();

  ScopedTempDir directory_;
  std::string bin_directory_;
  std::string user_;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  // Run the tools through setpriv as user_ (the test runs as root).
  bool switch_user_ = false;
  bool initialized_ = false;
  uint16_t port_ = 0;
  pid_t postmaster_pid_ = -1;
};

}  // namespace cairn
