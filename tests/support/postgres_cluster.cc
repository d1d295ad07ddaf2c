#include "postgres_cluster.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <string_view>
#include <system_error>

#include <fcntl.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cairn/platform/env.h"

#include "child_process.h"

extern char** environ;

namespace cairn {
namespace {

constexpr const char* kClusterUser = "cairn-pg";
constexpr const char* kDatabase = "cairn";
constexpr int kUserAddTimeoutMs = 60000;
constexpr int kInitdbTimeoutMs = 120000;
// pg_ctl waits for the server itself (-t); our bound covers pg_ctl.
constexpr int kPgCtlWaitSeconds = 60;
constexpr int kPgCtlTimeoutMs = 90000;
constexpr int kReadyTimeoutMs = 60000;
constexpr int kProcessExitTimeoutMs = 30000;
constexpr int kPortAttempts = 5;
constexpr int kConnectTimeoutSeconds = 10;
constexpr int kStatementTimeoutMs = 60000;

std::string ErrnoText(int error) { return std::strerror(error); }

struct ProgramRun {
  int wait_status = 0;
  std::string output;
  bool succeeded() const { return WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0; }
};

// Runs `argv` (argv[0] an absolute path) in `working_directory` with stdin
// from /dev/null, stdout and stderr into `output_path`, and an environment
// without PG* variables (they would override the flags given) in the C
// locale (so the logs we search read in English). The child gets no
// descriptor of ours beyond those three and runs in its own process group,
// which is killed when `timeout_ms` passes; a server it daemonised (pg_ctl
// start) escapes that by design. Errors only when the program could not be
// run or timed out.
Result<ProgramRun> RunProgram(const std::vector<std::string>& argv, const std::string& working_directory,
                              const std::string& output_path, int timeout_ms) {
  ChildOptions options;
  options.working_directory = working_directory;
  options.own_process_group = true;
  options.truncate_output = true;
  for (char** variable = environ; *variable != nullptr; ++variable) {
    const std::string_view text(*variable);
    if (text.starts_with("PG") || text.starts_with("LC_") || text.starts_with("LANG=") ||
        text.starts_with("LANGUAGE="))
      continue;
    options.environment.emplace_back(text);
  }
  options.environment.emplace_back("LC_ALL=C");
  CAIRN_ASSIGN_OR_RETURN(const pid_t pid, SpawnChild(argv, output_path, options));

  Env* env = Env::Default();
  const int64_t deadline = env->MonotonicNanos() + int64_t{timeout_ms} * 1000000;
  ProgramRun run;
  bool timed_out = false;
  while (true) {
    const pid_t done = ::waitpid(pid, &run.wait_status, timed_out ? 0 : WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) return Status::IOError("waitpid: " + ErrnoText(errno));
    if (!timed_out && env->MonotonicNanos() >= deadline) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      timed_out = true;
      continue;
    }
    if (!timed_out) env->SleepForMicros(10000);
  }
  Result<std::string> output = env->ReadFileToString(output_path);
  run.output = output.ok() ? *output : "";
  if (timed_out) {
    return Status::TimedOut(argv[0] + " did not finish within " + std::to_string(timeout_ms / 1000) +
                            " s: " + run.output);
  }
  return run;
}

// "pid (comm) state ppid ...": the command name, state and parent of a
// process, or nothing once it is gone.
struct ProcessStat {
  std::string command;
  char state = '?';
  pid_t parent = 0;
};

std::optional<ProcessStat> ReadProcessStat(pid_t pid) {
  Result<std::string> text = Env::Default()->ReadFileToString("/proc/" + std::to_string(pid) + "/stat");
  if (!text.ok()) return std::nullopt;
  // The command name is in parentheses and may itself contain ") ".
  const size_t open = text->find('(');
  const size_t close = text->rfind(')');
  if (open == std::string::npos || close == std::string::npos || close + 4 >= text->size())
    return std::nullopt;
  ProcessStat stat;
  stat.command = text->substr(open + 1, close - open - 1);
  stat.state = (*text)[close + 2];
  stat.parent = static_cast<pid_t>(std::strtol(text->c_str() + close + 4, nullptr, 10));
  return stat;
}

// A zombie no longer holds ports, files or shared memory.
bool ProcessGone(pid_t pid) {
  std::optional<ProcessStat> stat = ReadProcessStat(pid);
  return !stat || stat->state == 'Z';
}

// Every process below `root` in the process tree.
std::vector<pid_t> Descendants(pid_t root) {
  std::multimap<pid_t, pid_t> children_of;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    const pid_t pid = static_cast<pid_t>(std::strtol(name.c_str(), nullptr, 10));
    std::optional<ProcessStat> stat = ReadProcessStat(pid);
    if (stat) children_of.emplace(stat->parent, pid);
  }
  std::vector<pid_t> found;
  std::vector<pid_t> pending = {root};
  while (!pending.empty()) {
    const pid_t parent = pending.back();
    pending.pop_back();
    auto [first, last] = children_of.equal_range(parent);
    for (auto it = first; it != last; ++it) {
      found.push_back(it->second);
      pending.push_back(it->second);
    }
  }
  return found;
}

// The bin directory of the newest PostgreSQL under /usr/lib/postgresql
// (Debian installs each major version side by side).
Result<std::string> FindPostgresBinDirectory() {
  std::string best;
  double best_version = -1;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/usr/lib/postgresql", error)) {
    const std::string name = entry.path().filename().string();
    char* end = nullptr;
    const double version = std::strtod(name.c_str(), &end);
    if (end == name.c_str() || *end != '\0') continue;
    const std::string bin = (entry.path() / "bin").string();
    if (version > best_version && ::access((bin + "/initdb").c_str(), X_OK) == 0 &&
        ::access((bin + "/pg_ctl").c_str(), X_OK) == 0) {
      best = bin;
      best_version = version;
    }
  }
  if (best.empty())
    return Status::NotFound(
        "no /usr/lib/postgresql/<version>/bin with initdb and pg_ctl (Debian's postgresql)");
  return best;
}

struct UserEntry {
  std::string name;
  uid_t uid;
  gid_t gid;
};

std::optional<UserEntry> LookUpUser(const char* name, std::optional<uid_t> uid) {
  struct passwd entry;
  struct passwd* found = nullptr;
  std::vector<char> buffer(16384);
  const int error = uid ? ::getpwuid_r(*uid, &entry, buffer.data(), buffer.size(), &found)
                        : ::getpwnam_r(name, &entry, buffer.data(), buffer.size(), &found);
  if (error != 0 || found == nullptr) return std::nullopt;
  return UserEntry{found->pw_name, found->pw_uid, found->pw_gid};
}

// A value for postgresql.conf: quoted, quotes doubled.
std::string ConfigString(std::string_view text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'' || c == '\\') quoted += c;
    quoted += c;
  }
  return quoted + "'";
}

std::string TrimTrailingNewlines(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace

PostgresCluster::PostgresCluster() : directory_("cairn-postgres") {}

PostgresCluster::~PostgresCluster() {
  if (running()) static_cast<void>(Stop());
}

std::string PostgresCluster::connection_string() const {
  return "host=127.0.0.1 port=" + std::to_string(port_) + " dbname=" + kDatabase + " user=" + user_;
}

std::string PostgresCluster::data_directory() const { return directory_.PathOf("data"); }

std::string PostgresCluster::log_path() const { return directory_.PathOf("postgresql.log"); }

std::string PostgresCluster::ReadLog() const { return ReadFileFrom(log_path(), 0); }

Result<std::string> PostgresCluster::RunTool(const std::vector<std::string>& argv, int timeout_ms) {
  std::vector<std::string> command;
  if (switch_user_) {
    command = {"/usr/bin/setpriv", "--reuid=" + std::to_string(uid_), "--regid=" + std::to_string(gid_),
               "--clear-groups", "--"};
  }
  command.insert(command.end(), argv.begin(), argv.end());
  CAIRN_ASSIGN_OR_RETURN(
      ProgramRun run, RunProgram(command, directory_.path(), directory_.PathOf("tool-output"), timeout_ms));
  if (!run.succeeded()) {
    return Status::Unavailable(argv[0] + " failed (" + DescribeExit(run.wait_status) +
                               "): " + TrimTrailingNewlines(run.output));
  }
  return run.output;
}

Status PostgresCluster::EnsureUser() {
  if (::geteuid() != 0) {
    std::optional<UserEntry> self = LookUpUser(nullptr, ::geteuid());
    if (!self) return Status::NotFound("no passwd entry for uid " + std::to_string(::geteuid()));
    user_ = self->name;
    uid_ = self->uid;
    gid_ = self->gid;
    switch_user_ = false;
    return Status::Ok();
  }
  std::optional<UserEntry> entry = LookUpUser(kClusterUser, std::nullopt);
  if (!entry) {
    // Clusters started in parallel may race to create the user; whoever
    // loses sees useradd fail and then finds the user the winner made.
    Result<ProgramRun> added = RunProgram(
        {"/usr/sbin/useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", kClusterUser},
        directory_.path(), directory_.PathOf("useradd-output"), kUserAddTimeoutMs);
    CAIRN_RETURN_IF_ERROR(added.status());
    entry = LookUpUser(kClusterUser, std::nullopt);
    if (!entry) {
      return Status::Unavailable(std::string("cannot create the user ") + kClusterUser + " (" +
                                 DescribeExit(added->wait_status) + "): " + added->output);
    }
  }
  user_ = entry->name;
  uid_ = entry->uid;
  gid_ = entry->gid;
  switch_user_ = true;
  if (::chown(directory_.path().c_str(), uid_, gid_) != 0 || ::chmod(directory_.path().c_str(), 0700) != 0)
    return Status::IOError(directory_.path() + ": " + ErrnoText(errno));
  return Status::Ok();
}

Status PostgresCluster::InitializeCluster() {
  CAIRN_ASSIGN_OR_RETURN(bin_directory_, FindPostgresBinDirectory());
  CAIRN_RETURN_IF_ERROR(EnsureUser());
  CAIRN_RETURN_IF_ERROR(RunTool({bin_directory_ + "/initdb", "--pgdata=" + data_directory(),
                                 "--username=" + user_, "--encoding=UTF8", "--locale=C", "--auth-local=trust",
                                 "--auth-host=trust", "--no-instructions"},
                                kInitdbTimeoutMs)
                            .status());
  // The harness's settings live in their own file, rewritten for each start.
  Env* env = Env::Default();
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<File> config,
                         env->OpenFile(JoinPath(data_directory(), "postgresql.conf"), OpenMode::kReadWrite));
  CAIRN_RETURN_IF_ERROR(config->Append("\ninclude 'cairn_test.conf'\n"));
  CAIRN_RETURN_IF_ERROR(config->Sync());
  initialized_ = true;
  return Status::Ok();
}

Status PostgresCluster::StartServer(bool* port_taken) {
  *port_taken = false;
  Env* env = Env::Default();
  const std::string settings_path = JoinPath(data_directory(), "cairn_test.conf");
  std::string settings = "# Written by the test harness before each start.\n";
  settings += "listen_addresses = '127.0.0.1'\n";
  settings += "port = " + std::to_string(port_) + "\n";
  settings += "unix_socket_directories = " + ConfigString(directory_.path()) + "\n";
  settings += "fsync = on\n";
  settings += "synchronous_commit = on\n";
  settings += "max_connections = 20\n";
  settings += "shared_buffers = 16MB\n";
  settings += "logging_collector = off\n";
  settings += "log_line_prefix = '%m [%p] '\n";
  CAIRN_RETURN_IF_ERROR(env->WriteFileAtomically(settings_path, settings));
  if (switch_user_ && ::chown(settings_path.c_str(), uid_, gid_) != 0)
    return Status::IOError(settings_path + ": " + ErrnoText(errno));

  Result<uint64_t> log_size = env->FileSize(log_path());
  const uint64_t log_offset = log_size.ok() ? *log_size : 0;
  Result<std::string> started =
      RunTool({bin_directory_ + "/pg_ctl", "start", "--pgdata=" + data_directory(), "--log=" + log_path(),
               "--wait", "--timeout=" + std::to_string(kPgCtlWaitSeconds)},
              kPgCtlTimeoutMs);
  Result<std::string> pid_file = env->ReadFileToString(JoinPath(data_directory(), "postmaster.pid"));
  pid_t pid = pid_file.ok() ? static_cast<pid_t>(std::strtol(pid_file->c_str(), nullptr, 10)) : -1;
  if (pid > 0) {
    std::optional<ProcessStat> stat = ReadProcessStat(pid);
    if (!stat || stat->state == 'Z' || stat->command != "postgres") pid = -1;
  }
  if (!started.ok()) {
    // pg_ctl gave up, but the server may yet be coming up: do not leave it.
    if (pid > 0) {
      postmaster_pid_ = pid;
      static_cast<void>(Kill());
    }
    const std::string log = ReadFileFrom(log_path(), log_offset);
    *port_taken = log.find("Address already in use") != std::string::npos;
    return Status::Unavailable("PostgreSQL did not start on 127.0.0.1:" + std::to_string(port_) + ": " +
                               started.status().message() + "\nserver log:\n" + log);
  }
  if (pid <= 0) {
    return Status::Unavailable("pg_ctl reported a start but no live postmaster is in postmaster.pid; log:\n" +
                               ReadFileFrom(log_path(), log_offset));
  }
  postmaster_pid_ = pid;
  return Status::Ok();
}

Status PostgresCluster::WaitUntilAcceptingConnections() {
  Env* env = Env::Default();
  const int64_t deadline = env->MonotonicNanos() + int64_t{kReadyTimeoutMs} * 1000000;
  Status last;
  while (true) {
    Result<std::string> ready =
        RunTool({bin_directory_ + "/pg_isready", "--host=127.0.0.1", "--port=" + std::to_string(port_),
                 "--username=" + user_, "--dbname=postgres", "--timeout=5"},
                15000);
    if (ready.ok()) return Status::Ok();
    last = ready.status();
    if (env->MonotonicNanos() >= deadline) {
      return Status::TimedOut("PostgreSQL on port " + std::to_string(port_) + " not ready within " +
                              std::to_string(kReadyTimeoutMs / 1000) + " s: " + last.message());
    }
    env->SleepForMicros(100000);
  }
}

Status PostgresCluster::CreateDatabaseIfMissing() {
  CAIRN_ASSIGN_OR_RETURN(QueryRows existing,
                         QueryDatabase("postgres", "SELECT 1 FROM pg_database WHERE datname = 'cairn'"));
  if (!existing.empty()) return Status::Ok();
  return QueryDatabase("postgres", "CREATE DATABASE cairn").status();
}

Status PostgresCluster::Start() {
  if (running()) return Status::Ok();
  if (!initialized_) CAIRN_RETURN_IF_ERROR(InitializeCluster());
  bool port_taken = false;
  if (port_ == 0) {
    // First start: any free port will do, so a port some other process took
    // between our probe and the server's bind is just replaced.
    Status last;
    for (int attempt = 0; attempt < kPortAttempts; ++attempt) {
      CAIRN_ASSIGN_OR_RETURN(port_, PickFreeLoopbackPort());
      last = StartServer(&port_taken);
      if (last.ok() || !port_taken) break;
    }
    if (!last.ok()) {
      port_ = 0;
      return last;
    }
  } else {
    Status started = StartServer(&port_taken);
    if (!started.ok()) {
      return port_taken ? Status::Unavailable("port " + std::to_string(port_) +
                                              " was taken while the server was down: " + started.message())
                        : started;
    }
  }
  Status ready = WaitUntilAcceptingConnections();
  if (ready.ok()) ready = CreateDatabaseIfMissing();
  if (!ready.ok()) {
    static_cast<void>(Kill());
    return ready.WithContext("log:\n" + ReadLog());
  }
  return Status::Ok();
}

Status PostgresCluster::Stop() {
  if (!running()) return Status::Ok();
  const pid_t pid = postmaster_pid_;
  Result<std::string> stopped =
      RunTool({bin_directory_ + "/pg_ctl", "stop", "--pgdata=" + data_directory(), "--mode=fast", "--wait",
               "--timeout=" + std::to_string(kPgCtlWaitSeconds)},
              kPgCtlTimeoutMs);
  if (!stopped.ok()) {
    Status killed = Kill();
    return stopped.status().WithContext(killed.ok() ? "pg_ctl stop (server killed instead)"
                                                    : "pg_ctl stop (" + killed.ToString() + ")");
  }
  // pg_ctl returns when postmaster.pid is gone, a moment before the
  // postmaster exits and releases its shared memory; a start right after
  // would find that memory still attached.
  Env* env = Env::Default();
  const int64_t deadline = env->MonotonicNanos() + int64_t{kProcessExitTimeoutMs} * 1000000;
  while (!ProcessGone(pid)) {
    if (env->MonotonicNanos() >= deadline) {
      static_cast<void>(Kill());
      return Status::TimedOut("postmaster " + std::to_string(pid) + " still ran after pg_ctl stop; killed");
    }
    env->SleepForMicros(10000);
  }
  postmaster_pid_ = -1;
  return Status::Ok();
}

Status PostgresCluster::Kill() {
  if (!running()) return Status::Ok();
  const pid_t postmaster = postmaster_pid_;
  postmaster_pid_ = -1;
  std::optional<ProcessStat> stat = ReadProcessStat(postmaster);
  if (!stat || stat->state == 'Z' || stat->command != "postgres") return Status::Ok();

  // Stopped, the postmaster cannot start replacements for the children
  // killed below, so the list taken now is complete.
  ::kill(postmaster, SIGSTOP);
  std::vector<pid_t> victims = Descendants(postmaster);
  for (pid_t child : victims) ::kill(child, SIGKILL);
  ::kill(postmaster, SIGKILL);
  victims.push_back(postmaster);

  Env* env = Env::Default();
  const int64_t deadline = env->MonotonicNanos() + int64_t{kProcessExitTimeoutMs} * 1000000;
  for (pid_t victim : victims) {
    while (!ProcessGone(victim)) {
      if (env->MonotonicNanos() >= deadline)
        return Status::TimedOut("PostgreSQL process " + std::to_string(victim) + " survived SIGKILL");
      env->SleepForMicros(10000);
    }
  }
  // The postmaster is not our child; until its new parent reaps it, its
  // zombie makes the lock files naming its pid look current, and the next
  // start would refuse. A dead server's lock files are stale, as after a
  // power cut.
  std::optional<ProcessStat> remains = ReadProcessStat(postmaster);
  if (remains && remains->state == 'Z') {
    for (const std::string& lock_file : {JoinPath(data_directory(), "postmaster.pid"),
                                         directory_.PathOf(".s.PGSQL." + std::to_string(port_) + ".lock")}) {
      Status removed = env->RemoveFile(lock_file);
      if (!removed.ok() && !removed.Is(StatusCode::kNotFound)) return removed;
    }
  }
  return Status::Ok();
}

Result<QueryRows> PostgresCluster::Query(const std::string& sql) { return QueryDatabase(kDatabase, sql); }

Result<QueryRows> PostgresCluster::QueryDatabase(const std::string& database, const std::string& sql) {
  if (port_ == 0) return Status::FailedPrecondition("PostgresCluster::Query before Start");
  const std::string connection_info = "host=127.0.0.1 port=" + std::to_string(port_) + " dbname=" + database +
                                      " user=" + user_ +
                                      " connect_timeout=" + std::to_string(kConnectTimeoutSeconds) +
                                      " sslmode=disable gssencmode=disable options='-c statement_timeout=" +
                                      std::to_string(kStatementTimeoutMs) + "'";
  std::unique_ptr<PGconn, decltype(&PQfinish)> connection(PQconnectdb(connection_info.c_str()), &PQfinish);
  if (connection == nullptr) return Status::ResourceExhausted("libpq could not allocate a connection");
  if (PQstatus(connection.get()) != CONNECTION_OK) {
    return Status::Unavailable("connecting to PostgreSQL on port " + std::to_string(port_) + ": " +
                               TrimTrailingNewlines(PQerrorMessage(connection.get())));
  }
  std::unique_ptr<PGresult, decltype(&PQclear)> result(PQexec(connection.get(), sql.c_str()), &PQclear);
  const ExecStatusType status = result ? PQresultStatus(result.get()) : PGRES_FATAL_ERROR;
  if (status == PGRES_COMMAND_OK || status == PGRES_EMPTY_QUERY) return QueryRows{};
  if (status != PGRES_TUPLES_OK) {
    const std::string message =
        TrimTrailingNewlines(result ? PQresultErrorMessage(result.get()) : PQerrorMessage(connection.get()));
    if (PQstatus(connection.get()) == CONNECTION_BAD)
      return Status::Unavailable("PostgreSQL connection lost: " + message);
    return Status::InvalidArgument(message);
  }
  QueryRows rows;
  const int row_count = PQntuples(result.get());
  const int column_count = PQnfields(result.get());
  rows.reserve(static_cast<size_t>(row_count));
  for (int row = 0; row < row_count; ++row) {
    std::vector<std::string>& columns = rows.emplace_back();
    columns.reserve(static_cast<size_t>(column_count));
    for (int column = 0; column < column_count; ++column) {
      columns.emplace_back(PQgetvalue(result.get(), row, column),
                           static_cast<size_t>(PQgetlength(result.get(), row, column)));
    }
  }
  return rows;
}

}  // namespace cairn
