#include "pty_pair.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

namespace cairn {
namespace {

int64_t MonotonicNanos() {
  struct timespec now = {};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

Status Failed(std::string_view operation, int error_number) {
  return Status::IOError(std::string(operation) + ": " + std::strerror(error_number));
}

}  // namespace

Result<std::unique_ptr<PtyPair>> PtyPair::Open() {
  int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0) return Failed("posix_openpt", errno);
  char name[128] = {};
  if (grantpt(master) != 0 || unlockpt(master) != 0 || ptsname_r(master, name, sizeof(name)) != 0) {
    int error_number = errno;
    close(master);
    return Failed("grantpt/unlockpt/ptsname_r", error_number);
  }
  int slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (slave < 0) {
    int error_number = errno;
    close(master);
    return Failed(std::string("open ") + name, error_number);
  }
  // Raw from the start: a cooked terminal would echo the test's input back
  // to the master before the code under test configures the line.
  struct termios settings = {};
  if (tcgetattr(slave, &settings) != 0 || (cfmakeraw(&settings), tcsetattr(slave, TCSANOW, &settings)) != 0) {
    int error_number = errno;
    close(slave);
    close(master);
    return Failed("tcsetattr", error_number);
  }
  return std::unique_ptr<PtyPair>(new PtyPair(master, slave, name));
}

PtyPair::PtyPair(int master_fd, int slave_fd, std::string slave_path)
    : master_fd_(master_fd), slave_fd_(slave_fd), slave_path_(std::move(slave_path)) {}

PtyPair::~PtyPair() { CloseMaster(); }

void PtyPair::CloseMaster() {
  if (master_fd_ >= 0) close(master_fd_);
  if (slave_fd_ >= 0) close(slave_fd_);
  master_fd_ = -1;
  slave_fd_ = -1;
}

Status PtyPair::Write(std::string_view data) {
  if (master_fd_ < 0) return Status::FailedPrecondition("PtyPair::Write after CloseMaster");
  while (!data.empty()) {
    ssize_t written = write(master_fd_, data.data(), data.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      return Failed("write to pty master", errno);
    }
    data.remove_prefix(static_cast<size_t>(written));
  }
  return Status::Ok();
}

bool PtyPair::ReadSome(int64_t deadline_nanos) {
  if (master_fd_ < 0) return false;
  for (;;) {
    int64_t remaining_ms = std::max<int64_t>((deadline_nanos - MonotonicNanos() + 999999) / 1000000, 0);
    struct pollfd request = {};
    request.fd = master_fd_;
    request.events = POLLIN;
    int ready = poll(&request, 1, static_cast<int>(remaining_ms));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    char buffer[4096];
    ssize_t got = read(master_fd_, buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    pending_.append(buffer, static_cast<size_t>(got));
    return true;
  }
}

std::string PtyPair::ReadUntil(std::string_view needle, int timeout_ms) {
  const int64_t deadline = MonotonicNanos() + int64_t{timeout_ms} * 1000000;
  size_t found;
  while ((found = pending_.find(needle)) == std::string::npos) {
    if (!ReadSome(deadline)) {
      std::string all = std::move(pending_);
      pending_.clear();
      return all;
    }
  }
  std::string head = pending_.substr(0, found + needle.size());
  pending_.erase(0, found + needle.size());
  return head;
}

std::string PtyPair::ReadAvailable(int timeout_ms) {
  if (pending_.empty()) ReadSome(MonotonicNanos() + int64_t{timeout_ms} * 1000000);
  while (ReadSome(MonotonicNanos())) {
    // Drains what is already there without waiting again.
  }
  std::string all = std::move(pending_);
  pending_.clear();
  return all;
}

}  // namespace cairn
