#include "posix_error.h"

#include <cerrno>
#include <cstring>

namespace cairn::platform_internal {
namespace {

// strerror_r comes in two flavours (XSI returns int, GNU returns char*); these
// overloads pick whichever the C library declares. strerror itself may share
// one buffer between threads.
[[maybe_unused]] std::string StrerrorResult(int result, const char* buffer, int error_number) {
  if (result != 0) return "errno " + std::to_string(error_number);
  return buffer;
}
[[maybe_unused]] std::string StrerrorResult(const char* result, const char*, int) { return result; }

std::string ErrnoText(int error_number) {
  char buffer[256] = {};
  return StrerrorResult(strerror_r(error_number, buffer, sizeof(buffer)), buffer, error_number);
}

}  // namespace

Status PosixError(std::string_view operation, std::string_view subject, int error_number,
                  ErrorSource source) {
  std::string message(operation);
  if (!subject.empty()) {
    message += ' ';
    message += subject;
  }
  message += ": ";
  message += ErrnoText(error_number);
  switch (error_number) {
    case ENOENT:
      return Status::NotFound(std::move(message));
    case EEXIST:
      return Status::AlreadyExists(std::move(message));
    case ENOSPC:
    case EDQUOT:
      return Status::ResourceExhausted(std::move(message));
    case EACCES:
    case EPERM:
    case EROFS:  // a filesystem remounted read-only refuses writes as permissions would
      return Status::PermissionDenied(std::move(message));
    case EIO:
    case ENXIO:
      if (source == ErrorSource::kSerialPort) return Status::Unavailable(std::move(message));
      return Status::IOError(std::move(message));
    default:
      return Status::IOError(std::move(message));
  }
}

}  // namespace cairn::platform_internal
