// EngineHolder: where the shell's engine commands, the sync commands and
// the HTTP API find the storage engine.
//
// cairnd starts its serial shell and HTTP API even when its data directory
// cannot be opened (a read-only or damaged partition at boot): an operator
// on the UART must learn why, and a daemon that exits only makes the init
// system restart it in a loop. The holder is then empty and carries the
// outage: what is wrong and what fixes it. Every command or endpoint that
// needs the engine answers that outage (Check) instead of running, while
// `help`, `version` and `health` keep working. Once the daemon manages to
// open the engine it publishes it here, and from then on every user finds
// it: nothing is re-registered and nothing restarts.
//
// There is no stand-in engine behind an empty holder: a command either has
// the real engine or answers the outage.
//
// Thread-safety: every method may be called from any thread. Publish
// happens at most once, while shell and HTTP threads run; engine() pairs
// with it (release/acquire), so whatever the daemon set up before
// publishing (tables, the sync agent) is visible to a thread that sees the
// engine. Once published the holder never empties again: a pointer read
// from engine() stays valid until the holder's owner closes the engine,
// which it does only after stopping every user.
#pragma once

#include <atomic>
#include <string>

#include "cairn/core/engine.h"
#include "cairn/platform/mutex.h"
#include "cairn/platform/status.h"

namespace cairn {

class EngineHolder {
 public:
  // Why the storage is unavailable and how to mend it.
  struct Outage {
    std::string problem;  // "cannot open data directory /d: ...: Read-only file system"
    std::string remedy;   // "the file system holding /d is read-only: remount it read-write"
  };

  // Empty, with the outage "the storage engine is not open yet".
  EngineHolder();
  // Holds `engine` from the start (not owned; may be null for an empty
  // holder as above). For front ends whose engine is open before they are.
  explicit EngineHolder(Engine* engine);

  EngineHolder(const EngineHolder&) = delete;
  EngineHolder& operator=(const EngineHolder&) = delete;

  // The engine, or null while storage is unavailable.
  Engine* engine() const { return engine_.load(std::memory_order_acquire); }

  // OK when the engine is held; otherwise Unavailable with the message
  // "storage unavailable: PROBLEM; REMEDY" (no remedy: without "; ...").
  Status Check() const EXCLUDES(mutex_);

  // The current outage; empty fields once the engine is held.
  Outage outage() const EXCLUDES(mutex_);

  // Records why the engine cannot be opened. Ignored once it is held.
  void SetUnavailable(Outage outage) EXCLUDES(mutex_);

  // Hands the open engine (not owned, not null) to every user. At most once.
  void Publish(Engine* engine) EXCLUDES(mutex_);

 private:
  std::atomic<Engine*> engine_{nullptr};
  mutable Mutex mutex_;
  Outage outage_ GUARDED_BY(mutex_);
};

}  // namespace cairn
