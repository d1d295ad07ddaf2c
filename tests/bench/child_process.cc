#include "child_process.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace cairn::bench {

namespace {

volatile sig_atomic_t g_child_pid = 0;
volatile sig_atomic_t g_interrupted = 0;

void ForwardSignal(int signal_number) {
  g_interrupted = 1;
  if (g_child_pid > 0) kill(static_cast<pid_t>(g_child_pid), signal_number);
}

Status Errno(const char* what) { return Status::IOError(std::string(what) + ": " + std::strerror(errno)); }

void WriteAll(int fd, const std::string& data) {
  size_t written = 0;
  while (written < data.size()) {
    const ssize_t n = write(fd, data.data() + written, data.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(3);
    written += static_cast<size_t>(n);
  }
}

}  // namespace

bool InterruptRequested() { return g_interrupted != 0; }

Result<std::string> RunInChildProcess(const std::function<std::string()>& body) {
  // Buffered output would otherwise be printed twice, once by each process.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Errno("pipe2");

  struct sigaction forward = {};
  forward.sa_handler = ForwardSignal;
  sigemptyset(&forward.sa_mask);
  struct sigaction old_int = {}, old_term = {};
  sigaction(SIGINT, &forward, &old_int);
  sigaction(SIGTERM, &forward, &old_term);

  // Blocked across fork so that a signal cannot arrive before the parent
  // knows whom to forward it to, nor reach the child's forwarding handler.
  sigset_t block, previous;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  sigprocmask(SIG_BLOCK, &block, &previous);

  const pid_t pid = fork();
  if (pid == 0) {
    struct sigaction default_action = {};
    default_action.sa_handler = SIG_DFL;
    sigemptyset(&default_action.sa_mask);
    sigaction(SIGINT, &default_action, nullptr);
    sigaction(SIGTERM, &default_action, nullptr);
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    close(fds[0]);
    const std::string result = body();
    WriteAll(fds[1], result);
    close(fds[1]);
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    _exit(0);
  }
  const int fork_errno = errno;
  if (pid > 0) g_child_pid = static_cast<sig_atomic_t>(pid);
  sigprocmask(SIG_SETMASK, &previous, nullptr);
  close(fds[1]);

  Status status;
  std::string output;
  if (pid < 0) {
    errno = fork_errno;
    status = Errno("fork");
  } else {
    char buffer[4096];
    while (true) {
      const ssize_t n = read(fds[0], buffer, sizeof(buffer));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        status = Errno("read from child");
        break;
      }
      if (n == 0) break;
      output.append(buffer, static_cast<size_t>(n));
    }
    int wait_status = 0;
    while (waitpid(pid, &wait_status, 0) < 0) {
      if (errno != EINTR) {
        if (status.ok()) status = Errno("waitpid");
        break;
      }
    }
    g_child_pid = 0;
    if (status.ok()) {
      if (WIFSIGNALED(wait_status)) {
        status = Status::Internal("child process died from signal " + std::to_string(WTERMSIG(wait_status)) +
                                  " (" + strsignal(WTERMSIG(wait_status)) + ")");
      } else if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) != 0) {
        status =
            Status::Internal("child process exited with status " + std::to_string(WEXITSTATUS(wait_status)));
      } else if (g_interrupted) {
        status = Status::Unavailable("interrupted");
      }
    }
  }
  close(fds[0]);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  if (!status.ok()) return status;
  return output;
}

}  // namespace cairn::bench
