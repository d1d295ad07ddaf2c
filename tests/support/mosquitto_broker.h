// A real MQTT broker for integration tests: Debian's mosquitto (2.0) started
// by the test on a free loopback port, with its configuration, password file,
// persistence directory and log in a private temporary directory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <sys/types.h>

#include "cairn/platform/status.h"

#include "test_dirs.h"
#include "test_pki.h"

namespace cairn {

// How MosquittoBroker::Start configures the broker. The defaults give a plain
// TCP listener that accepts anonymous clients and keeps nothing on disk.
struct MosquittoBrokerOptions {
  // Serve MQTT over TLS with `pki`'s server certificate instead of plain TCP.
  // Clients must trust pki.ca_certificate_path.
  bool tls = false;
  // The certificates for `tls`, as written by GenerateTestPki; unused without
  // `tls`. Paths must not contain whitespace (mosquitto's configuration
  // syntax has no quoting).
  TestPki pki;
  // With `tls`: refuse clients that present no certificate signed by pki's
  // CA (mosquitto's `require_certificate true`).
  bool require_client_certificate = false;
  // When `username` is non-empty only this user with this password may
  // connect; anonymous clients are refused.
  std::string username;
  std::string password;
  // Keep sessions, subscriptions and queued QoS 1/2 messages on disk, so a
  // graceful Restart() hands them to the clients that reconnect with a clean
  // session off. mosquitto writes its database when it exits on SIGTERM,
  // so messages queued since the last Stop() or Restart() do not survive
  // Kill().
  bool persistence = false;
  // When non-empty, the contents of mosquitto's acl_file: which topics
  // clients may read and write (rules before any `user` line apply to
  // clients without a username). A publish the ACL denies is acknowledged
  // and dropped, as MQTT 3.1.1 brokers do. SetAcl changes it later.
  std::string acl;
};

// One mosquitto process owned by the test, listening on 127.0.0.1 only.
//
// Every wait is bounded (start: 30 s, stop: 15 s before SIGKILL), so a broken
// broker fails the test instead of hanging it. The broker is killed if the
// thread that started it exits (PR_SET_PDEATHSIG), so a test binary that
// crashes or is killed by ctest does not leave it behind: start it from the
// test's main thread or another thread that outlives it.
//
// When the test runs as root, mosquitto keeps running as root (`user root`)
// because its files live in the test's private directory; it never listens
// beyond loopback.
//
// Not thread-safe: one thread at a time calls the methods.
class MosquittoBroker {
 public:
  // Creates the broker's private directory; starts nothing.
  MosquittoBroker();
  // Stops the broker (Stop()) and removes its directory.
  ~MosquittoBroker();

  MosquittoBroker(const MosquittoBroker&) = delete;
  MosquittoBroker& operator=(const MosquittoBroker&) = delete;

  // Writes the configuration for `options` (and the password file), picks a
  // free loopback port and starts mosquitto on it, retrying with another port
  // when some other process took the chosen one meanwhile. Returns once the
  // broker logged that it is running and the port accepts TCP connections.
  // FailedPrecondition when called a second time (use Restart()); Unavailable
  // or TimedOut, with the broker's log, when it did not come up.
  Status Start(const MosquittoBrokerOptions& options);

  // Sends SIGTERM and waits for mosquitto to exit (it saves its persistence
  // database then); after 15 s sends SIGKILL. OK when it exited cleanly on
  // SIGTERM or was not running; otherwise the error says what happened, and
  // the broker is stopped anyway.
  Status Stop();

  // Stops the broker if it runs (as Stop()), then starts it again with the
  // same configuration, port and persistence directory: "the broker was down
  // for a while and came back". Works after Kill() too. FailedPrecondition
  // before Start(); Unavailable when the port was taken while the broker was
  // down.
  Status Restart();

  // Sends SIGKILL and reaps the process: a crash, nothing is saved. No-op
  // when the broker is not running.
  void Kill();

  // Replaces the ACL and has the running broker read it again (SIGHUP);
  // returns once the broker logged the reload. FailedPrecondition unless
  // started with a non-empty MosquittoBrokerOptions::acl.
  Status SetAcl(const std::string& acl);

  // Whether the mosquitto process is alive (reaps it if it exited).
  bool running();

  // The loopback port; 0 before Start().
  uint16_t port() const { return port_; }

  // The URI Paho clients connect to: "tcp://127.0.0.1:<port>" or, with TLS,
  // "ssl://127.0.0.1:<port>".
  std::string server_uri() const;

  // The broker's private directory (configuration, passwords, persistence).
  const std::string& directory() const { return directory_.path(); }

  // mosquitto's stdout and stderr (its log) across all starts; for
  // diagnostics in failure messages.
  std::string log_path() const;
  std::string ReadLog() const;

  // Waits up to `timeout_ms` for `text` to appear in the log; true once it
  // does. For effects the broker reports only in its log, such as the reason
  // it dropped a TLS handshake, which it may write just after the client
  // already saw the connection fail.
  bool WaitForLog(std::string_view text, int timeout_ms) const;

 private:
  // Starts mosquitto on port_ and waits until it runs. Sets *port_taken when
  // it exited because the port was in use.
  Status Launch(bool* port_taken);
  // Waits up to `timeout_ms` for the child to exit; true once it is reaped.
  bool WaitForExit(int timeout_ms);

  ScopedTempDir directory_;
  MosquittoBrokerOptions options_;
  bool started_ = false;
  uint16_t port_ = 0;
  pid_t pid_ = -1;
  // Wait status of the last exit, for Stop()'s verdict.
  int exit_status_ = 0;
};

}  // namespace cairn
