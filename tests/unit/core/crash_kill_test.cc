// kill -9 test of the engine on the real POSIX Env.
//
// The test binary starts itself again as a writer process (/proc/self/exe
// with a gtest filter selecting CrashKillChild.DISABLED_WriterProcess and the
// environment variables below). The writer opens an engine with durability
// kFull on a shared directory and writes deterministic batches in a loop,
// sometimes sealing everything in between; it reports a batch on a pipe only
// after Write returned OK. The parent kills the writer with SIGKILL at a
// random moment (after some acknowledgements, or before the first one so that
// kills also land in recovery), reopens the directory, and checks that every
// acknowledged record is there exactly once with the right version and
// contents, that the batch in flight at the kill is there in part or not at
// all, and that nothing else appeared. Then the next writer continues on the
// same directory.
//
// Where the binary cannot be executed again (qemu-user without binfmt), the
// forked copy runs the writer itself; the kill is the same.
//
// CAIRN_CRASH_KILLS sets the number of kills (default 50).
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cairn/core/engine.h"
#include "cairn/core/record.h"
#include "cairn/core/table.h"
#include "cairn/platform/env.h"

#include "crash_workload.h"
#include "reference_model.h"
#include "test_dirs.h"

extern char** environ;

namespace cairn::crash {
namespace {

constexpr char kKillTable[] = "kill";
constexpr char kDirVariable[] = "CAIRN_CRASH_CHILD_DIR";
constexpr char kFdVariable[] = "CAIRN_CRASH_CHILD_FD";
constexpr char kRoundVariable[] = "CAIRN_CRASH_CHILD_ROUND";
constexpr char kBaseVariable[] = "CAIRN_CRASH_CHILD_BASE";
constexpr char kChildFilter[] = "--gtest_filter=CrashKillChild.DISABLED_WriterProcess";
// A writer stops writing after this many batches and waits for its kill, so
// the data of one round stays small even when the parent is slow.
constexpr uint64_t kMaxBatchesPerRound = 1500;
constexpr int64_t kMicrosPerMilli = 1000;

struct WriterConfig {
  std::string dir;
  int fd = -1;
  uint64_t round = 0;
  int64_t base = 0;  // timestamp of round 0, batch 0
};

// ---- the deterministic workload -----------------------------------------------

// Every eighth batch from the fourth on retries the previous batch verbatim
// (all duplicates), every eighth from the eighth on writes version 1 of the
// previous batch's records (all stored, replacing version 0).
enum class BatchKind : uint8_t { kFresh, kRetry, kNewVersion };

BatchKind KindOf(uint64_t batch) {
  if (batch % 8 == 3) return BatchKind::kRetry;
  if (batch % 8 == 7) return BatchKind::kNewVersion;
  return BatchKind::kFresh;
}

// The fresh batch whose identities batch `batch` writes.
uint64_t SourceBatch(uint64_t batch) { return KindOf(batch) == BatchKind::kFresh ? batch : batch - 1; }

size_t FreshBatchSize(uint64_t round, uint64_t batch) {
  return static_cast<size_t>(1 + (round * 7919 + batch * 104729) % 12);
}

// Record `index` of fresh batch `batch` of `round`, at `version`. Timestamps
// are a millisecond apart per batch so 50 rounds span more than an hour and
// cross a period boundary.
Record KillRecord(int64_t base, uint64_t round, uint64_t batch, size_t index, uint64_t version) {
  Record record;
  record.device_id = "k" + std::to_string((batch + index) % 4);
  record.measure_name = index % 3 == 0 ? "volts" : "line#amps";
  record.timestamp =
      base + static_cast<int64_t>(round * 100000 + batch) * 1'000'000 + static_cast<int64_t>(index) * 1000;
  const int64_t tag = static_cast<int64_t>((round * 100000 + batch) * 100 + index);
  record.fields = {Field{"tag", version == 0 ? tag : -tag},
                   Field{"level", static_cast<double>(version) + 0.25}};
  record.version = version;
  return record;
}

std::vector<Record> BatchRecords(int64_t base, uint64_t round, uint64_t batch) {
  const uint64_t source = SourceBatch(batch);
  const uint64_t version = KindOf(batch) == BatchKind::kNewVersion ? 1 : 0;
  std::vector<Record> records;
  for (size_t i = 0; i < FreshBatchSize(round, source); ++i)
    records.push_back(KillRecord(base, round, source, i, version));
  return records;
}

EngineOptions WriterOptions() {
  EngineOptions options;
  options.durability = Durability::kFull;
  // Small seals and segments so that kills land in seals, checkpoints and
  // segment rollovers as well as in log writes.
  options.seal_records = 48;
  options.log_segment_bytes = 8 * 1024;
  options.maintenance_interval_ms = 5;
  options.writer_cache_kib = 256;
  options.reader_cache_kib = 64;
  return options;
}

// ---- the writer process ----------------------------------------------------------

void SendLine(int fd, const std::string& line) {
  // One write of less than PIPE_BUF bytes: the parent never sees half a line.
  const std::string text = line.substr(0, 500) + "\n";
  ssize_t written;
  do {
    written = ::write(fd, text.data(), text.size());
  } while (written < 0 && errno == EINTR);
}

// `how` tells the parent whether the binary was executed again ("exec") or
// the forked copy runs the writer ("fork").
int RunWriter(const WriterConfig& config, const char* how) {
  Env* env = Env::Default();
  auto opened = Engine::Open(env, config.dir, WriterOptions());
  if (!opened.ok()) {
    SendLine(config.fd, "E Engine::Open: " + opened.status().ToString());
    return 2;
  }
  std::unique_ptr<Engine> engine = std::move(opened).value();
  auto table = engine->GetTable(kKillTable);
  if (!table.ok()) {
    if (!table.status().Is(StatusCode::kNotFound)) {
      SendLine(config.fd, "E GetTable: " + table.status().ToString());
      return 2;
    }
    TableOptions options;
    options.period = Period::kHour;
    const Status created = engine->CreateTable(kKillTable, options);
    if (!created.ok()) {
      SendLine(config.fd, "E CreateTable: " + created.ToString());
      return 2;
    }
  }
  SendLine(config.fd, std::string("O ") + how);
  Rng rng(config.round * 0x9E3779B97F4A7C15ull + 7);
  for (uint64_t batch = 0; batch < kMaxBatchesPerRound; ++batch) {
    const std::vector<Record> records = BatchRecords(config.base, config.round, batch);
    Result<WriteResult> result = engine->Write(kKillTable, records);
    if (!result.ok()) {
      SendLine(config.fd, "E Write of batch " + std::to_string(batch) + ": " + result.status().ToString());
      return 3;
    }
    const WriteOutcome want =
        KindOf(batch) == BatchKind::kRetry ? WriteOutcome::kDuplicate : WriteOutcome::kStored;
    for (size_t i = 0; i < result->records.size(); ++i) {
      if (result->records[i].outcome != want) {
        SendLine(config.fd, "E batch " + std::to_string(batch) + " record " + std::to_string(i) +
                                " outcome " + std::to_string(static_cast<int>(result->records[i].outcome)) +
                                " (" + result->records[i].reason + "), want " +
                                std::to_string(static_cast<int>(want)));
        return 4;
      }
    }
    SendLine(config.fd, "A " + std::to_string(batch));
    if (rng.Percent(15)) {
      const Status sealed = engine->SealAll();
      if (!sealed.ok()) {
        SendLine(config.fd, "E SealAll after batch " + std::to_string(batch) + ": " + sealed.ToString());
        return 5;
      }
    }
  }
  SendLine(config.fd, "D");
  // Wait for the kill; the parent is gone if it never comes.
  for (int i = 0; i < 600; ++i) env->SleepForMicros(100 * kMicrosPerMilli);
  return 0;
}

std::optional<WriterConfig> WriterConfigFromEnvironment() {
  const char* dir = std::getenv(kDirVariable);
  const char* fd = std::getenv(kFdVariable);
  const char* round = std::getenv(kRoundVariable);
  const char* base = std::getenv(kBaseVariable);
  if (dir == nullptr || fd == nullptr || round == nullptr || base == nullptr) return std::nullopt;
  WriterConfig config;
  config.dir = dir;
  config.fd = std::atoi(fd);
  config.round = std::strtoull(round, nullptr, 10);
  config.base = std::strtoll(base, nullptr, 10);
  return config;
}

// Not a test of its own: the writer half of CrashKillTest, run only in the
// process that test starts.
TEST(CrashKillChild, DISABLED_WriterProcess) {
  std::optional<WriterConfig> config = WriterConfigFromEnvironment();
  if (!config) GTEST_SKIP() << "runs only as the writer process of CrashKillTest";
  std::_Exit(RunWriter(*config, "exec"));
}

// ---- the parent -------------------------------------------------------------------

struct Writer {
  pid_t pid = -1;
  int read_fd = -1;
};

Writer StartWriter(const WriterConfig& config) {
  int fds[2];
  if (::pipe(fds) != 0) {
    ADD_FAILURE() << "pipe: " << std::strerror(errno);
    return {};
  }
  WriterConfig child_config = config;
  child_config.fd = fds[1];

  // Built before fork: the child only calls async-signal-safe functions
  // until exec.
  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    // The parent's gtest settings (output files, filters, shards) are not the writer's.
    if (text.starts_with("GTEST_") || text.starts_with("CAIRN_CRASH_CHILD_")) continue;
    environment.emplace_back(text);
  }
  environment.push_back(std::string(kDirVariable) + "=" + config.dir);
  environment.push_back(std::string(kFdVariable) + "=" + std::to_string(fds[1]));
  environment.push_back(std::string(kRoundVariable) + "=" + std::to_string(config.round));
  environment.push_back(std::string(kBaseVariable) + "=" + std::to_string(config.base));
  std::vector<char*> envp;
  for (std::string& entry : environment) envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::string program = "/proc/self/exe";
  std::string filter = kChildFilter;
  std::string disabled = "--gtest_also_run_disabled_tests";
  std::vector<char*> argv = {program.data(), filter.data(), disabled.data(), nullptr};

  const pid_t pid = ::fork();
  if (pid < 0) {
    ADD_FAILURE() << "fork: " << std::strerror(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    return {};
  }
  if (pid == 0) {
    ::close(fds[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    const int null_fd = ::open("/dev/null", O_WRONLY);
    if (null_fd >= 0) ::dup2(null_fd, STDOUT_FILENO);
    ::execve(program.c_str(), argv.data(), envp.data());
    // This binary cannot be executed again (an emulator without binfmt
    // support): the forked copy is the writer.
    std::_Exit(RunWriter(child_config, "fork"));
  }
  ::close(fds[1]);
  return Writer{pid, fds[0]};
}

// What the parent knows about one identity.
struct Expected {
  // Versions the record may have, with the fields each one carries. Empty
  // (with may_be_absent) means it must never appear.
  std::map<uint64_t, std::vector<Field>> versions;
  bool may_be_absent = false;
};

class KillRun {
 public:
  KillRun() : dir_("cairn-crash-kill"), rng_(20261121) {
    // Three hours ago: inside the default retention, and every timestamp of
    // the run stays in the past.
    base_ = Env::Default()->NowUnixNanos() - int64_t{3} * 3600 * kNanosPerSecond;
  }

  void Run(uint64_t rounds) {
    for (round_ = 0; round_ < rounds && !::testing::Test::HasFailure(); ++round_) {
      RunRound();
      if (::testing::Test::HasFailure()) return;
      // Sometimes the next writer recovers from this crash itself, so
      // that kills also land in a recovery that follows a kill.
      if (round_ + 1 == rounds || rng_.Percent(70)) Verify();
    }
    EXPECT_GT(total_acks_, 0u) << "no writer ever acknowledged a batch";
    std::printf(
        "%llu kills: %llu batches acknowledged, %llu records checked in %llu reopenings; "
        "writers started by exec %llu, by fork %llu\n",
        static_cast<unsigned long long>(rounds), static_cast<unsigned long long>(total_acks_),
        static_cast<unsigned long long>(expected_.size()), static_cast<unsigned long long>(verifications_),
        static_cast<unsigned long long>(writers_executed_), static_cast<unsigned long long>(writers_forked_));
  }

 private:
  std::string Context() const { return "round " + std::to_string(round_) + " in " + dir_.path() + ": "; }

  void RunRound() {
    WriterConfig config;
    config.dir = dir_.path();
    config.round = round_;
    config.base = base_;
    Writer writer = StartWriter(config);
    if (writer.pid < 0) return;

    // Most kills come after some acknowledgements; some before the first,
    // which is usually during the writer's recovery.
    const uint64_t acks_before_kill = rng_.Percent(15) ? 0 : static_cast<uint64_t>(rng_.Between(1, 25));
    const int64_t delay_micros = rng_.Between(0, 50 * kMicrosPerMilli);
    std::string buffer;
    std::vector<std::string> lines;
    uint64_t acks = 0;
    bool eof = false;
    const int64_t deadline = Env::Default()->MonotonicNanos() + int64_t{300} * kNanosPerSecond;
    while (acks < acks_before_kill && !eof) {
      if (Env::Default()->MonotonicNanos() > deadline) {
        ADD_FAILURE() << Context() << "the writer acknowledged " << acks << " batches in 300 s";
        break;
      }
      eof = ReadAvailable(writer.read_fd, 200, &buffer, &lines, &acks);
    }
    if (!eof) {
      Env::Default()->SleepForMicros(delay_micros);
      ::kill(writer.pid, SIGKILL);
    }
    int status = 0;
    while (::waitpid(writer.pid, &status, 0) < 0 && errno == EINTR) {
    }
    // Everything the writer sent before it died is still in the pipe.
    while (!ReadAvailable(writer.read_fd, 1000, &buffer, &lines, &acks)) {
    }
    ::close(writer.read_fd);

    std::optional<uint64_t> last_ack;
    for (const std::string& line : lines) {
      if (line.starts_with("E ")) {
        ADD_FAILURE() << Context() << "the writer failed: " << line.substr(2);
        return;
      }
      if (line == "O exec") ++writers_executed_;
      if (line == "O fork") ++writers_forked_;
      if (line.starts_with("A ")) {
        const uint64_t batch = std::strtoull(line.c_str() + 2, nullptr, 10);
        if (batch != (last_ack ? *last_ack + 1 : 0)) {
          ADD_FAILURE() << Context() << "acknowledgement of batch " << batch << " out of sequence";
          return;
        }
        last_ack = batch;
      }
    }
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
      ADD_FAILURE() << Context() << "the writer ended by itself before the kill (status " << status
                    << (WIFSIGNALED(status) ? ", signal " + std::to_string(WTERMSIG(status)) : std::string())
                    << ")";
      return;
    }
    total_acks_ += last_ack ? *last_ack + 1 : 0;

    const uint64_t acknowledged = last_ack ? *last_ack + 1 : 0;
    for (uint64_t batch = 0; batch < acknowledged; ++batch) Expect(batch, /*in_flight=*/false);
    // The batch after the last acknowledgement may have been written, in
    // part or in whole, when the kill came.
    if (acknowledged < kMaxBatchesPerRound) Expect(acknowledged, /*in_flight=*/true);
  }

  // Reads what the pipe holds, waiting up to `timeout_ms` for something.
  // Returns true at end of file.
  bool ReadAvailable(int fd, int timeout_ms, std::string* buffer, std::vector<std::string>* lines,
                     uint64_t* acks) {
    pollfd poll_fd{fd, POLLIN, 0};
    const int ready = ::poll(&poll_fd, 1, timeout_ms);
    if (ready < 0) return errno != EINTR;
    if (ready == 0) return false;
    char chunk[4096];
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0) return errno != EINTR && errno != EAGAIN;
    if (n == 0) return true;
    buffer->append(chunk, static_cast<size_t>(n));
    size_t newline;
    while ((newline = buffer->find('\n')) != std::string::npos) {
      std::string line = buffer->substr(0, newline);
      buffer->erase(0, newline + 1);
      if (line.starts_with("A ")) ++*acks;
      lines->push_back(std::move(line));
    }
    return false;
  }

  // Adds what batch `batch` of the current round leaves behind.
  void Expect(uint64_t batch, bool in_flight) {
    const uint64_t source = SourceBatch(batch);
    for (size_t i = 0; i < FreshBatchSize(round_, source); ++i) {
      switch (KindOf(batch)) {
        case BatchKind::kFresh: {
          const Record record = KillRecord(base_, round_, source, i, 0);
          Expected& expected = expected_[IdentityOf(record)];
          expected.versions = {{0, SortedFields(record.fields)}};
          expected.may_be_absent = in_flight;
          break;
        }
        case BatchKind::kRetry:
          break;  // duplicates change nothing
        case BatchKind::kNewVersion: {
          const Record record = KillRecord(base_, round_, source, i, 1);
          Expected& expected = expected_[IdentityOf(record)];
          if (!in_flight) expected.versions.clear();
          expected.versions[1] = SortedFields(record.fields);
          break;
        }
      }
    }
  }

  // Opens the directory as the next process would and compares everything
  // in it with what the writers acknowledged, then pins what it found.
  void Verify() {
    EngineOptions options = WriterOptions();
    options.maintenance_interval_ms = 0;
    RecoveryReport report;
    auto opened = Engine::Open(Env::Default(), dir_.path(), options, &report);
    ASSERT_TRUE(opened.ok()) << Context() << "Engine::Open after the kill: " << opened.status().ToString();
    std::unique_ptr<Engine> engine = std::move(opened).value();
    ++verifications_;

    std::map<Identity, const RecordRow*> seen;
    std::vector<RecordRow> all_rows;
    for (int device = 0; device < 4; ++device) {
      RangeQuery query;
      query.table = kKillTable;
      query.device_id = "k" + std::to_string(device);
      query.limit = 0;
      Result<RangeResult> result = engine->Range(query);
      if (!result.ok() && result.status().Is(StatusCode::kNotFound)) {
        // No table or no such device yet: every kill so far came before its
        // first write; any acknowledged record of it is reported missing below.
        continue;
      }
      ASSERT_TRUE(result.ok()) << Context() << "Range: " << result.status().ToString();
      ASSERT_TRUE(result->next_page_token.empty()) << Context() << "a page token without a limit";
      for (RecordRow& row : result->rows) all_rows.push_back(std::move(row));
    }
    for (const RecordRow& row : all_rows) {
      const Identity identity = IdentityOf(row);
      if (!seen.emplace(identity, &row).second) {
        ADD_FAILURE() << Context() << "record (" << row.device_id << ", " << row.measure_name << ", "
                      << row.timestamp << ") is stored more than once";
        continue;
      }
      auto it = expected_.find(identity);
      if (it == expected_.end()) {
        ADD_FAILURE() << Context() << "record (" << row.device_id << ", " << row.measure_name << ", "
                      << row.timestamp << ") v" << row.version << " was never written";
        continue;
      }
      auto version = it->second.versions.find(row.version);
      if (version == it->second.versions.end()) {
        ADD_FAILURE() << Context() << "record (" << row.device_id << ", " << row.measure_name << ", "
                      << row.timestamp << ") has version " << row.version << ", which "
                      << (it->second.versions.empty() ? "was found absent after an earlier kill"
                                                      : "is not the acknowledged one");
        continue;
      }
      if (!SameFields(row.fields, version->second) || row.ttl != 0) {
        ADD_FAILURE() << Context() << "record (" << row.device_id << ", " << row.measure_name << ", "
                      << row.timestamp << ") v" << row.version << " has other fields than were written";
      }
    }
    uint64_t missing = 0;
    for (auto& [identity, expected] : expected_) {
      auto it = seen.find(identity);
      if (it == seen.end()) {
        if (!expected.may_be_absent) {
          if (++missing <= 10) {
            ADD_FAILURE() << Context() << "acknowledged record (" << identity.device_id << ", "
                          << identity.measure_name << ", " << identity.timestamp << ") is missing (replayed "
                          << report.records_replayed << ", torn tail " << report.torn_tail_bytes_truncated
                          << ")";
          }
        }
        // Found absent: it must stay absent.
        expected.versions.clear();
        expected.may_be_absent = true;
      } else {
        const RecordRow& row = *it->second;
        std::vector<Field> fields = row.fields;
        expected.versions = {{row.version, std::move(fields)}};
        expected.may_be_absent = false;
      }
    }
    EXPECT_EQ(missing, 0u) << Context() << "acknowledged records missing";
    EXPECT_TRUE(engine->Close().ok());
  }

  ScopedTempDir dir_;
  Rng rng_;
  int64_t base_ = 0;
  uint64_t round_ = 0;
  uint64_t total_acks_ = 0;
  uint64_t verifications_ = 0;
  uint64_t writers_executed_ = 0;
  uint64_t writers_forked_ = 0;
  std::map<Identity, Expected> expected_;
};

TEST(CrashKillTest, KillNineNeverLosesAcknowledgedWrites) {
  KillRun run;
  run.Run(EnvironmentCount("CAIRN_CRASH_KILLS", 50));
}

}  // namespace
}  // namespace cairn::crash
