#include "cairnd/storage_outage.h"

#include "cairn/platform/env.h"

namespace cairn::cairnd {

namespace {

bool Mentions(const Status& status, std::string_view text) {
  return status.message().find(text) != std::string::npos;
}

// The path the failure names: the word before ": <reason>" that starts with
// the data directory, or the directory itself.
std::string PathNamed(const Status& failure, const std::string& data_dir) {
  const std::string& message = failure.message();
  const size_t start = message.find(data_dir);
  if (start == std::string::npos) return data_dir;
  const size_t end = message.find_first_of(": ", start);
  return message.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

}  // namespace

EngineHolder::Outage DescribeStorageOutage(const Status& failure, const std::string& data_dir,
                                           const std::string& user) {
  EngineHolder::Outage outage;
  // A failure to create the directory says so itself.
  outage.problem = failure.message().rfind("cannot ", 0) == 0
                       ? failure.message()
                       : "cannot open data directory " + data_dir + ": " + failure.message();
  // The reasons are strerror's words, which the platform's errors carry
  // (posix_error.cc): the one place that knows errno.
  if (Mentions(failure, "Read-only file system")) {
    outage.remedy = "the file system holding " + data_dir +
                    " is read-only: remount it read-write (mount -o remount,rw on its mount point) or check "
                    "it for errors; cairnd tries again by itself";
  } else if (failure.Is(StatusCode::kCorruption) && Mentions(failure, JoinPath(data_dir, "log") + "/")) {
    // Damage in a log segment is what the log repair mends: it keeps every
    // intact record and reports the readings lost.
    outage.remedy = "to mend the log, stop cairnd and run: cairnd --repair-log --data-dir " + data_dir;
  } else if (Mentions(failure, "Permission denied")) {
    outage.remedy = "cairnd runs as " + user + ", who may not use " + PathNamed(failure, data_dir) +
                    ": give that user the data directory (chown -R) or run cairnd as its owner; cairnd "
                    "tries again by itself";
  } else if (failure.Is(StatusCode::kResourceExhausted) || Mentions(failure, "No space left")) {
    outage.remedy = "free space on the file system holding " + data_dir + "; cairnd tries again by itself";
  } else if (failure.Is(StatusCode::kCorruption)) {
    outage.remedy = "stop cairnd and check the directory: cairnd verify --data-dir " + data_dir;
  } else {
    outage.remedy = "check " + data_dir + " and the file system holding it; cairnd tries again by itself";
  }
  return outage;
}

}  // namespace cairn::cairnd
