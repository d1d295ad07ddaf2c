// SerialShell: the command shell on a serial line (DESIGN §7), one session
// on one SerialPort, served by its own thread.
//
// The session writes a banner and the prompt, then edits keystrokes into
// lines (line_editor.h), runs each line through a CommandRegistry and writes
// the rendered result, with "\r\n" line endings throughout (the port is raw,
// so the terminal gets exactly what is written). Output is capped per
// `render` so a large answer cannot tie up a slow line.
//
// Reads wait at most `read_timeout_ms`, so Stop() takes effect within about
// that long once the current command has finished. If the port fails (the
// device was unplugged, the pty's other side closed) the session ends by
// itself; ended() and session_status() tell the owner, which may reopen the
// port and start a new shell.
//
// A line that stops draining (a terminal that no longer reads, a cable
// pulled with flow control on) never wedges the session: a write that makes
// no progress for `output_stall_timeout_ms` is dropped with whatever the
// driver still held (SerialPort::Write), the stall is logged, and the
// session goes on reading commands. Once the line drains again the next
// answer reaches the terminal, preceded by a note saying how much output was
// dropped. So Stop() also returns within about output_stall_timeout_ms.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "cairn/platform/env.h"
#include "cairn/platform/mutex.h"
#include "cairn/platform/status.h"
#include "cairn/shell/command_registry.h"
#include "cairn/shell/line_editor.h"
#include "cairn/shell/result_renderer.h"

namespace cairn {

struct SerialShellOptions {
  // Written once when the session starts, on a line of its own; none if empty.
  std::string banner;
  std::string prompt = "cairn> ";
  // Longer lines are refused with an error at Enter (see LineEditor).
  size_t max_line_bytes = 4096;
  // Upper bound of one wait for input, i.e. of how late Stop() is noticed.
  int read_timeout_ms = 100;
  // Caps on one command's output. At 115200 baud 256 KiB take about 23 s.
  RenderOptions render{.max_rows = 1000, .max_bytes = 256 * 1024};
  // How long one write may make no progress before its output is dropped.
  int output_stall_timeout_ms = 2000;
  // Told about output stalls (a line each time output is dropped); may be
  // empty. Called on the session thread.
  std::function<void(const std::string&)> log;
};

class SerialShell {
 public:
  // `env` and `registry` are not owned and must outlive the shell; the shell
  // owns `port`. Nothing happens until Start().
  SerialShell(Env* env, std::unique_ptr<SerialPort> port, const CommandRegistry* registry,
              SerialShellOptions options);

  // Stops the session (see Stop()).
  ~SerialShell();

  SerialShell(const SerialShell&) = delete;
  SerialShell& operator=(const SerialShell&) = delete;

  // Starts the session thread. Precondition: called at most once, and not
  // concurrently with Stop().
  void Start();

  // Asks the session to end and waits until its thread has finished; the
  // command being run, if any, completes first. Idempotent and safe to call
  // from several threads at once. Precondition: not called from a command
  // handler run by this shell (it would wait for itself).
  void Stop();

  // Whether the session thread has finished, by Stop() or by a port failure.
  bool ended() const { return ended_.load(std::memory_order_acquire); }

  // Why the session ended by itself: the port's read or write error. OK while
  // running and after an ordinary Stop().
  Status session_status() const;

  const std::string& port_path() const { return port_->path(); }

 private:
  void Serve();
  Status ServeUntilStopped();
  Status HandleLine(const LineEvent& event);
  // Writes `text` within the stall timeout; a stall drops it and is not an
  // error (the session goes on), any other failure is.
  Status Output(std::string_view text);

  Env* const env_;
  const std::unique_ptr<SerialPort> port_;
  const CommandRegistry* const registry_;
  const SerialShellOptions options_;

  // Bytes dropped by stalls since output last got through.
  uint64_t dropped_bytes_ = 0;
  uint64_t stalls_ = 0;

  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> ended_{false};

  Mutex thread_mutex_;  // serialises Start/Stop's use of thread_
  std::thread thread_ GUARDED_BY(thread_mutex_);

  mutable Mutex status_mutex_;
  Status session_status_ GUARDED_BY(status_mutex_);
};

}  // namespace cairn
