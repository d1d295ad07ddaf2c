// A real pseudo-terminal for tests of serial-line code.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "cairn/platform/status.h"

namespace cairn {

// Opens a pseudo-terminal pair. Code under test opens slave_path() as its
// serial port (Env::OpenSerialPort); the test plays the device or the user on
// the master side with Write and ReadUntil.
//
// The pair keeps a descriptor of the slave open (in raw mode, never read) for
// its whole life, so the terminal's settings persist and master reads do not
// fail with EIO between two openings of the slave by the code under test.
// Not thread-safe.
class PtyPair {
 public:
  static Result<std::unique_ptr<PtyPair>> Open();
  ~PtyPair();

  PtyPair(const PtyPair&) = delete;
  PtyPair& operator=(const PtyPair&) = delete;

  // E.g. "/dev/pts/7".
  const std::string& slave_path() const { return slave_path_; }
  // -1 after CloseMaster().
  int master_fd() const { return master_fd_; }

  // Writes all of `data` to the master (it arrives as input on the slave).
  Status Write(std::string_view data);

  // Reads from the master until the text read so far contains `needle` or
  // `timeout_ms` passed. Returns everything read up to and including the
  // first occurrence of `needle`, keeping the rest for the next call; on
  // timeout (or hang-up) returns everything read, without `needle`.
  std::string ReadUntil(std::string_view needle, int timeout_ms);

  // Returns what is buffered (kept from an earlier ReadUntil or already
  // readable); if nothing is, waits up to `timeout_ms` for the first bytes.
  std::string ReadAvailable(int timeout_ms);

  // Closes the master side, which hangs up the terminal: reads on the slave
  // then report end of line (POLLHUP / EIO). Also closes the kept slave
  // descriptor.
  void CloseMaster();

 private:
  PtyPair(int master_fd, int slave_fd, std::string slave_path);

  // Appends to pending_ what arrives before `deadline_nanos` (monotonic);
  // false if nothing could be read before it.
  bool ReadSome(int64_t deadline_nanos);

  int master_fd_;
  int slave_fd_;
  std::string slave_path_;
  std::string pending_;
};

}  // namespace cairn
