// Serial ports through termios for PosixEnv (posix_serial.h): raw 8N1 lines
// read through poll() with exact timeouts and written without blocking.
#include "posix_serial.h"

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <utility>

#include <fcntl.h>
#include <poll.h>
#include <termios.h>
#include <unistd.h>

#include "posix_descriptor.h"
#include "posix_error.h"

namespace cairn::platform_internal {
namespace {

// termios speed constants for the rates cairn accepts.
struct BaudRate {
  int rate;
  speed_t constant;
};
constexpr BaudRate kBaudRates[] = {
    {1200, B1200},       {1800, B1800},       {2400, B2400},       {4800, B4800},       {9600, B9600},
    {19200, B19200},     {38400, B38400},     {57600, B57600},     {115200, B115200},   {230400, B230400},
    {460800, B460800},   {500000, B500000},   {576000, B576000},   {921600, B921600},   {1000000, B1000000},
    {1152000, B1152000}, {1500000, B1500000}, {2000000, B2000000}, {2500000, B2500000}, {3000000, B3000000},
#ifdef B3500000
    {3500000, B3500000},
#endif
#ifdef B4000000
    {4000000, B4000000},
#endif
};

class PosixSerialPort final : public SerialPort {
 public:
  PosixSerialPort(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~PosixSerialPort() override { CloseDescriptor(fd_); }

  PosixSerialPort(const PosixSerialPort&) = delete;
  PosixSerialPort& operator=(const PosixSerialPort&) = delete;

  Result<size_t> Read(char* dst, size_t n, int timeout_ms) override {
    if (n == 0) return size_t{0};
    const int64_t deadline = ClockNanos(CLOCK_MONOTONIC) + int64_t{std::max(timeout_ms, 0)} * 1000000;
    struct pollfd request = {};
    request.fd = fd_;
    request.events = POLLIN;
    for (;;) {
      int64_t remaining_ms = (deadline - ClockNanos(CLOCK_MONOTONIC) + 999999) / 1000000;
      request.revents = 0;
      int ready = ::poll(&request, 1, static_cast<int>(std::max<int64_t>(remaining_ms, 0)));
      if (ready < 0) {
        if (errno == EINTR) continue;
        return PosixError("poll", path_, errno, ErrorSource::kSerialPort);
      }
      if (ready == 0) return size_t{0};
      if ((request.revents & POLLNVAL) != 0)
        return PosixError("poll", path_, EBADF, ErrorSource::kSerialPort);
      ssize_t got = ::read(fd_, dst, n);
      if (got > 0) return static_cast<size_t>(got);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0 && errno != EAGAIN) return PosixError("read", path_, errno, ErrorSource::kSerialPort);
      // Nothing read although poll woke up: either the line hung up or the
      // input was consumed elsewhere; only the former is an error.
      if ((request.revents & (POLLHUP | POLLERR)) != 0) {
        return Status::Unavailable("read " + path_ + ": the other side hung up");
      }
      if (ClockNanos(CLOCK_MONOTONIC) >= deadline) return size_t{0};
    }
  }

  Status Write(std::string_view data, int stall_timeout_ms) override {
    while (!data.empty()) {
      ssize_t written = ::write(fd_, data.data(), data.size());
      if (written < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN) {
          struct pollfd request = {};
          request.fd = fd_;
          request.events = POLLOUT;
          const int ready = ::poll(&request, 1, stall_timeout_ms < 0 ? -1 : stall_timeout_ms);
          if (ready < 0 && errno != EINTR) return PosixError("poll", path_, errno, ErrorSource::kSerialPort);
          if (ready == 0) {
            // Whatever waits in the driver would reach the terminal late and
            // out of context: drop it with the rest.
            ::tcflush(fd_, TCOFLUSH);
            return Status::TimedOut("write " + path_ + ": the line took no output for " +
                                    std::to_string(stall_timeout_ms) + " ms");
          }
          continue;
        }
        return PosixError("write", path_, errno, ErrorSource::kSerialPort);
      }
      data.remove_prefix(static_cast<size_t>(written));
    }
    return Status::Ok();
  }

  const std::string& path() const override { return path_; }

 private:
  const int fd_;
  const std::string path_;
};

Status ConfigureSerial(int fd, const std::string& path, speed_t speed) {
  struct termios settings = {};
  if (::tcgetattr(fd, &settings) != 0)
    return PosixError("tcgetattr", path, errno, ErrorSource::kSerialPort);
  ::cfmakeraw(&settings);
  settings.c_cflag |= CLOCAL | CREAD;
  settings.c_cflag &= ~static_cast<tcflag_t>(CSIZE | PARENB | CSTOPB | CRTSCTS);
  settings.c_cflag |= CS8;
  // VMIN=0, VTIME=0: read never blocks; waiting is poll()'s job, so the
  // timeout is exact and a hang-up is noticed.
  settings.c_cc[VMIN] = 0;
  settings.c_cc[VTIME] = 0;
  if (::cfsetispeed(&settings, speed) != 0 || ::cfsetospeed(&settings, speed) != 0) {
    return PosixError("cfsetspeed", path, errno, ErrorSource::kSerialPort);
  }
  if (::tcsetattr(fd, TCSANOW, &settings) != 0) {
    return PosixError("tcsetattr", path, errno, ErrorSource::kSerialPort);
  }
  // Input that arrived before the line was configured was read with the
  // wrong settings.
  ::tcflush(fd, TCIFLUSH);
  // The descriptor stays non-blocking: reads wait in poll() already, and a
  // write must be able to give up on a line that stopped draining
  // (SerialPort::Write's stall timeout), which a blocking write() cannot.
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<SerialPort>> PosixOpenSerialPort(const std::string& path, int baud) {
  const BaudRate* rate = std::find_if(std::begin(kBaudRates), std::end(kBaudRates),
                                      [baud](const BaudRate& candidate) { return candidate.rate == baud; });
  if (rate == std::end(kBaudRates)) {
    return Status::InvalidArgument("serial port " + path + ": unsupported baud rate " +
                                   std::to_string(baud));
  }
  // O_NONBLOCK so the open does not wait for carrier detect on a modem
  // line (and so that writes can time out, see ConfigureSerial).
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return PosixError("open", path, errno, ErrorSource::kSerialPort);
  Status status = ConfigureSerial(fd, path, rate->constant);
  if (!status.ok()) {
    CloseDescriptor(fd);
    return status;
  }
  return std::unique_ptr<SerialPort>(std::make_unique<PosixSerialPort>(fd, path));
}

}  // namespace cairn::platform_internal
