#include "mosquitto_broker.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cairn/platform/env.h"

#include "child_process.h"

namespace cairn {
namespace {

constexpr const char* kMosquittoPath = "/usr/sbin/mosquitto";
constexpr const char* kMosquittoPasswdPath = "/usr/bin/mosquitto_passwd";
constexpr int kStartTimeoutMs = 30000;
constexpr int kStopTimeoutMs = 15000;
constexpr int kKillTimeoutMs = 30000;
constexpr int kPasswordFileTimeoutMs = 30000;
constexpr int kPortAttempts = 5;
constexpr int kPollIntervalMicros = 20000;

bool HasWhitespace(std::string_view text) { return text.find_first_of(" \t\r\n") != std::string_view::npos; }

}  // namespace

MosquittoBroker::MosquittoBroker() : directory_("cairn-mosquitto") {}

MosquittoBroker::~MosquittoBroker() { static_cast<void>(Stop()); }

std::string MosquittoBroker::server_uri() const {
  return std::string(options_.tls ? "ssl://" : "tcp://") + "127.0.0.1:" + std::to_string(port_);
}

std::string MosquittoBroker::log_path() const { return directory_.PathOf("mosquitto.log"); }

std::string MosquittoBroker::ReadLog() const { return ReadFileFrom(log_path(), 0); }

bool MosquittoBroker::WaitForLog(std::string_view text, int timeout_ms) const {
  Env* env = Env::Default();
  const int64_t deadline = env->MonotonicNanos() + int64_t{timeout_ms} * 1000000;
  while (ReadLog().find(text) == std::string::npos) {
    if (env->MonotonicNanos() >= deadline) return false;
    env->SleepForMicros(kPollIntervalMicros);
  }
  return true;
}

bool MosquittoBroker::running() {
  if (pid_ <= 0) return false;
  return !WaitForExit(0);
}

bool MosquittoBroker::WaitForExit(int timeout_ms) {
  if (pid_ <= 0) return true;
  std::optional<int> status = WaitForChild(pid_, timeout_ms);
  if (!status) return false;
  exit_status_ = *status;
  pid_ = -1;
  return true;
}

Status MosquittoBroker::Start(const MosquittoBrokerOptions& options) {
  if (started_) return Status::FailedPrecondition("MosquittoBroker::Start called twice; use Restart()");
  if (HasWhitespace(directory_.path()))
    return Status::InvalidArgument("mosquitto cannot take paths with whitespace: " + directory_.path());
  if (options.tls) {
    for (const std::string* path : {&options.pki.ca_certificate_path, &options.pki.server_certificate_path,
                                    &options.pki.server_key_path}) {
      if (path->empty()) return Status::InvalidArgument("TLS broker without CA, certificate or key path");
      if (HasWhitespace(*path))
        return Status::InvalidArgument("mosquitto cannot take paths with whitespace: " + *path);
    }
  }
  options_ = options;
  Env* env = Env::Default();

  const std::string password_path = directory_.PathOf("passwords");
  if (!options_.username.empty()) {
    // mosquitto_passwd hashes the password (PBKDF2-SHA512) into the format
    // the broker reads; -b takes it from the command line, -c creates the file.
    CAIRN_ASSIGN_OR_RETURN(pid_t passwd_pid, SpawnChild({kMosquittoPasswdPath, "-b", "-c", password_path,
                                                         options_.username, options_.password},
                                                        directory_.PathOf("mosquitto_passwd.log")));
    std::optional<int> status = WaitForChild(passwd_pid, kPasswordFileTimeoutMs);
    if (!status) {
      ::kill(passwd_pid, SIGKILL);
      static_cast<void>(WaitForChild(passwd_pid, kKillTimeoutMs));
      return Status::TimedOut("mosquitto_passwd did not finish");
    }
    if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0)
      return Status::IOError("mosquitto_passwd failed (" + DescribeExit(*status) +
                             "): " + ReadFileFrom(directory_.PathOf("mosquitto_passwd.log"), 0));
  }
  const std::string persistence_directory = directory_.PathOf("persistence");
  CAIRN_RETURN_IF_ERROR(env->CreateDirs(persistence_directory));

  Status last_error;
  for (int attempt = 0; attempt < kPortAttempts; ++attempt) {
    CAIRN_ASSIGN_OR_RETURN(port_, PickFreeLoopbackPort());
    std::string config = "# One broker for one test: loopback only, files in this directory.\n";
    // As root, mosquitto would switch to the `mosquitto` user, which cannot
    // read this private directory. Ignored when not started as root.
    if (::geteuid() == 0) config += "user root\n";
    config += "per_listener_settings false\n";
    config += "listener " + std::to_string(port_) + " 127.0.0.1\n";
    if (options_.username.empty()) {
      config += "allow_anonymous true\n";
    } else {
      config += "allow_anonymous false\n";
      config += "password_file " + password_path + "\n";
    }
    if (options_.tls) {
      config += "cafile " + options_.pki.ca_certificate_path + "\n";
      config += "certfile " + options_.pki.server_certificate_path + "\n";
      config += "keyfile " + options_.pki.server_key_path + "\n";
      config += std::string("require_certificate ") +
                (options_.require_client_certificate ? "true" : "false") + "\n";
    }
    if (!options_.acl.empty()) {
      CAIRN_RETURN_IF_ERROR(env->WriteFileAtomically(directory_.PathOf("acl"), options_.acl));
      config += "acl_file " + directory_.PathOf("acl") + "\n";
    }
    if (options_.persistence) {
      config += "persistence true\n";
      // mosquitto joins location and file name without a separator.
      config += "persistence_location " + persistence_directory + "/\n";
    } else {
      config += "persistence false\n";
    }
    config +=
        "log_dest stderr\n"
        "log_type error\n"
        "log_type warning\n"
        "log_type notice\n"
        "log_type information\n"
        "connection_messages true\n"
        "log_timestamp true\n"
        "log_timestamp_format %Y-%m-%dT%H:%M:%S\n";
    CAIRN_RETURN_IF_ERROR(env->WriteFileAtomically(directory_.PathOf("mosquitto.conf"), config));

    bool port_taken = false;
    last_error = Launch(&port_taken);
    if (last_error.ok()) {
      started_ = true;
      return Status::Ok();
    }
    if (!port_taken) return last_error;
  }
  return last_error;
}

Status MosquittoBroker::Launch(bool* port_taken) {
  *port_taken = false;
  Env* env = Env::Default();
  Result<uint64_t> log_size = env->FileSize(log_path());
  const uint64_t log_offset = log_size.ok() ? *log_size : 0;
  CAIRN_ASSIGN_OR_RETURN(pid_,
                         SpawnChild({kMosquittoPath, "-c", directory_.PathOf("mosquitto.conf")}, log_path()));

  const std::string where = "mosquitto on 127.0.0.1:" + std::to_string(port_);
  const int64_t deadline = env->MonotonicNanos() + int64_t{kStartTimeoutMs} * 1000000;
  while (true) {
    if (WaitForExit(0)) {
      const std::string log = ReadFileFrom(log_path(), log_offset);
      *port_taken = log.find("Address already in use") != std::string::npos;
      return Status::Unavailable(where + " exited (" + DescribeExit(exit_status_) + ") before running:\n" +
                                 log);
    }
    // mosquitto logs "mosquitto version X running" after it opened every
    // listener and restored its persistence database. Only then does a
    // connection prove that the port is the broker's and not an intruder's.
    if (ReadFileFrom(log_path(), log_offset).find(" running\n") != std::string::npos &&
        env->ConnectTcp("127.0.0.1", port_, 1000).ok()) {
      return Status::Ok();
    }
    if (env->MonotonicNanos() >= deadline) {
      Kill();
      return Status::TimedOut(where + " did not start within " + std::to_string(kStartTimeoutMs / 1000) +
                              " s:\n" + ReadFileFrom(log_path(), log_offset));
    }
    env->SleepForMicros(kPollIntervalMicros);
  }
}

Status MosquittoBroker::Stop() {
  if (pid_ <= 0) return Status::Ok();
  ::kill(pid_, SIGTERM);
  if (WaitForExit(kStopTimeoutMs)) {
    if (WIFEXITED(exit_status_) && WEXITSTATUS(exit_status_) == 0) return Status::Ok();
    return Status::Unavailable("mosquitto ended with " + DescribeExit(exit_status_) + " on SIGTERM; log:\n" +
                               ReadLog());
  }
  Kill();
  return Status::TimedOut("mosquitto did not exit within " + std::to_string(kStopTimeoutMs / 1000) +
                          " s of SIGTERM and was killed");
}

void MosquittoBroker::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  if (!WaitForExit(kKillTimeoutMs)) {
    // Stuck in the kernel; it cannot be reaped now, so it is left to init.
    std::fprintf(stderr, "MosquittoBroker: pid %d survived SIGKILL for %d s\n", static_cast<int>(pid_),
                 kKillTimeoutMs / 1000);
    pid_ = -1;
  }
}

Status MosquittoBroker::SetAcl(const std::string& acl) {
  if (!started_ || options_.acl.empty() || pid_ <= 0) {
    return Status::FailedPrecondition("MosquittoBroker::SetAcl needs a running broker started with an ACL");
  }
  auto reloads = [&] {
    const std::string log = ReadLog();
    size_t count = 0;
    for (size_t at = log.find("Reloading config"); at != std::string::npos;
         at = log.find("Reloading config", at + 1)) {
      ++count;
    }
    return count;
  };
  const size_t before = reloads();
  options_.acl = acl;
  CAIRN_RETURN_IF_ERROR(Env::Default()->WriteFileAtomically(directory_.PathOf("acl"), acl));
  if (::kill(pid_, SIGHUP) != 0)
    return Status::IOError(std::string("SIGHUP to mosquitto: ") + std::strerror(errno));
  Env* env = Env::Default();
  const int64_t deadline = env->MonotonicNanos() + int64_t{kKillTimeoutMs} * 1000000;
  while (reloads() == before) {
    if (env->MonotonicNanos() >= deadline)
      return Status::TimedOut("mosquitto did not reload its configuration");
    env->SleepForMicros(kPollIntervalMicros);
  }
  return Status::Ok();
}

Status MosquittoBroker::Restart() {
  if (!started_) return Status::FailedPrecondition("MosquittoBroker::Restart before Start");
  const Status stopped = Stop();
  bool port_taken = false;
  Status launched = Launch(&port_taken);
  if (!launched.ok()) {
    return port_taken ? Status::Unavailable("port " + std::to_string(port_) +
                                            " was taken while the broker was down: " + launched.message())
                      : launched;
  }
  return stopped;
}

}  // namespace cairn
