#include "child_process.h"

#include <cerrno>
#include <csignal>
#include <cstring>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cairn/platform/env.h"

extern char** environ;

namespace cairn {

Result<pid_t> SpawnChild(const std::vector<std::string>& argv, const std::string& output_path,
                         const ChildOptions& options) {
  std::vector<std::string> words = argv;
  std::vector<char*> arguments;
  for (std::string& word : words) arguments.push_back(word.data());
  arguments.push_back(nullptr);
  std::vector<std::string> variables = options.environment;
  std::vector<char*> environment;
  for (std::string& variable : variables) environment.push_back(variable.data());
  environment.push_back(nullptr);
  char** const child_environment = options.environment.empty() ? environ : environment.data();

  const int output_fd =
      ::open(output_path.c_str(),
             O_WRONLY | O_CREAT | O_CLOEXEC | (options.truncate_output ? O_TRUNC : O_APPEND), 0644);
  if (output_fd < 0) return Status::IOError(output_path + ": " + std::strerror(errno));
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) {
    const int error = errno;
    ::close(output_fd);
    return Status::IOError(std::string("/dev/null: ") + std::strerror(error));
  }
  const long open_max = ::sysconf(_SC_OPEN_MAX);
  const int highest_fd = open_max > 0 && open_max < 65536 ? static_cast<int>(open_max) : 65536;
  const pid_t parent = ::getpid();
  const char* const working_directory =
      options.working_directory.empty() ? nullptr : options.working_directory.c_str();

  const pid_t pid = ::fork();
  if (pid == 0) {
    // Only async-signal-safe calls until exec: the parent may run other
    // threads (Paho's, the engine's), whose locks the child inherits in any
    // state.
    if (options.own_process_group) ::setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    struct sigaction default_action = {};
    default_action.sa_handler = SIG_DFL;
    for (int signal_number : {SIGPIPE, SIGTERM, SIGINT, SIGHUP})
      ::sigaction(signal_number, &default_action, nullptr);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    if (working_directory != nullptr && ::chdir(working_directory) != 0) ::_exit(127);
    ::dup2(null_fd, 0);
    ::dup2(output_fd, 1);
    ::dup2(output_fd, 2);
    if (::close_range(3, ~0U, 0) != 0) {
      for (int fd = 3; fd < highest_fd; ++fd) ::close(fd);
    }
    ::execve(arguments[0], arguments.data(), child_environment);
    static constexpr char kExecFailed[] = "exec failed\n";
    [[maybe_unused]] ssize_t written = ::write(2, kExecFailed, sizeof(kExecFailed) - 1);
    ::_exit(127);
  }
  const int fork_error = errno;
  ::close(output_fd);
  ::close(null_fd);
  if (pid < 0) return Status::IOError(std::string("fork: ") + std::strerror(fork_error));
  return pid;
}

std::optional<int> WaitForChild(pid_t pid, int timeout_ms) {
  Env* env = Env::Default();
  const int64_t deadline = env->MonotonicNanos() + int64_t{timeout_ms} * 1000000;
  while (true) {
    int status = 0;
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return status;
    // ECHILD: reaped elsewhere; nothing is left to wait for.
    if (done < 0 && errno == ECHILD) return 0;
    if (env->MonotonicNanos() >= deadline) return std::nullopt;
    env->SleepForMicros(10000);
  }
}

std::string DescribeExit(int wait_status) {
  if (WIFEXITED(wait_status)) return "exit " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) return "killed by signal " + std::to_string(WTERMSIG(wait_status));
  return "wait status " + std::to_string(wait_status);
}

Result<uint16_t> PickFreeLoopbackPort() {
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<TcpListener> listener, Env::Default()->ListenTcp("127.0.0.1", 0));
  return listener->port();
}

std::string ReadFileFrom(const std::string& path, uint64_t offset) {
  Result<std::string> text = Env::Default()->ReadFileToString(path);
  if (!text.ok() || text->size() <= offset) return "";
  return text->substr(static_cast<size_t>(offset));
}

}  // namespace cairn
