// The world the shell and HTTP fuzzers run commands against: a real engine in
// a private directory (under $TMPDIR, else on tmpfs when there is one), tables `sensors` and
// `other` holding records in sealed chunks and in the head, the builtin and
// engine commands, and a token store with an admin token and a read:sensors
// token whose texts are fixed, so that seed inputs can carry them. Also the
// checks both fuzzers share (Require, IsWellFormedUtf8).
//
// Inputs change the world (writes, new and dropped tables). Between inputs,
// AfterInput() checks that the data directory is still the engine's, seals
// heads now and then, drops the tables inputs created, and builds a fresh
// world when an input dropped an initial table or the world has grown, so
// that most inputs replay the same way and memory stays bounded.
//
// Thread-safety: none; libFuzzer runs inputs one at a time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <stdlib.h>

#include "cairn/core/engine.h"
#include "cairn/core/record.h"
#include "cairn/core/table.h"
#include "cairn/platform/env.h"
#include "cairn/platform/status.h"
#include "cairn/shell/builtin_commands.h"
#include "cairn/shell/command_registry.h"
#include "cairn/shell/engine_commands.h"
#include "cairn/http/token_store.h"

namespace cairn::fuzz {

// Aborts (which libFuzzer reports with the input) when a property fails,
// after printing `context` (the answer that broke it), when given.
inline void Require(bool condition, const char* property, std::string_view context = {}) {
  if (!condition) {
    std::fprintf(stderr, "property violated: %s\n", property);
    if (!context.empty()) std::fprintf(stderr, "%.*s\n", static_cast<int>(context.size()), context.data());
    std::abort();
  }
}

// Well-formed UTF-8: shortest forms, no surrogates, at most U+10FFFF.
inline bool IsWellFormedUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto byte = [&](size_t at) { return static_cast<unsigned char>(text[at]); };
    const unsigned char lead = byte(i);
    size_t length = 0;
    uint32_t code_point = 0, minimum = 0;
    if (lead < 0x80) {
      ++i;
      continue;
    } else if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2, code_point = lead & 0x1F, minimum = 0x80;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3, code_point = lead & 0x0F, minimum = 0x800;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4, code_point = lead & 0x07, minimum = 0x10000;
    } else {
      return false;
    }
    if (i + length > text.size()) return false;
    for (size_t k = 1; k < length; ++k) {
      if ((byte(i + k) & 0xC0) != 0x80) return false;
      code_point = (code_point << 6) | (byte(i + k) & 0x3F);
    }
    if (code_point < minimum || code_point > 0x10FFFF || (code_point >= 0xD800 && code_point <= 0xDFFF)) {
      return false;
    }
    i += length;
  }
  return true;
}

// Aborts when the world cannot be set up: no input can mean anything then.
inline void RequireOk(const Status& status, const char* what) {
  if (!status.ok()) {
    std::fprintf(stderr, "fuzz fixture: %s: %s\n", what, status.ToString().c_str());
    std::abort();
  }
}

// The wall clock as every input sees it: 2026-11-21T09:41:07Z. A fixed "now"
// makes `now`, `-1h` and timestamp-less writes replay identically.
inline constexpr int64_t kFuzzNowUnixNanos = int64_t{1'795'254'067} * 1'000'000'000;

// The token texts the store hands out on a fresh directory (see FuzzEnv).
// Seeds carry them; Initialize aborts if the store's output ever changes, so
// that stale seeds are noticed rather than silently testing only 401s.
inline constexpr std::string_view kAdminToken =
    "cairn_5a95d00b4681bcf7_4BtWkcwHQn248y5ppN8aVZDLBkF8t_ItaKPeGVSPygU";
inline constexpr std::string_view kReadSensorsToken =
    "cairn_66a1dc17528dc803_7CdindgTTonE_zp1sOsmYZzXEk2Iw_45dK_qJWCb1hE";

// A fixed wall clock and a counter-driven byte pattern in place of random
// bytes; everything else is the real POSIX Env. The pattern differs from call
// to call, so token ids never collide, and restarts with the counter.
class FuzzEnv : public EnvWrapper {
 public:
  FuzzEnv() : EnvWrapper(Env::Default()) {}

  int64_t NowUnixNanos() override { return kFuzzNowUnixNanos; }

  Status RandomBytes(std::span<uint8_t> out) override {
    const uint32_t call = random_calls_++;
    for (size_t i = 0; i < out.size(); ++i) {
      out[i] = static_cast<uint8_t>(0x5A + call * 0x86 + static_cast<uint32_t>(i) * 0x3B);
    }
    return Status::Ok();
  }

 private:
  uint32_t random_calls_ = 0;
};

// For LLVMFuzzerInitialize, which libFuzzer calls before it reads its flags:
// adds -entropic=0 unless the command line chooses. libFuzzer 14's entropic
// schedule updates its rare-feature table for every feature of every run,
// which on targets that reach this much code (parser, commands, engine,
// SQLite) costs several times the run itself; the classic schedule reaches
// more coverage in the same short ctest run.
inline void PreferClassicSchedule(int* argc, char*** argv) {
  for (int i = 1; i < *argc; ++i) {
    if (std::string_view((*argv)[i]).rfind("-entropic=", 0) == 0) return;
  }
  static std::vector<char*> arguments;
  static char classic[] = "-entropic=0";
  arguments.assign(*argv, *argv + *argc);
  arguments.push_back(classic);
  arguments.push_back(nullptr);
  *argc = static_cast<int>(arguments.size()) - 1;
  *argv = arguments.data();
}

class EngineFixture {
 public:
  // Inputs between two Maintain() calls, which seal the heads (seal_age_ms
  // is tiny) so that queries cover both the head and sealed chunks.
  static constexpr uint64_t kInputsPerMaintenance = 64;
  // A fresh world after this many inputs at the latest.
  static constexpr uint64_t kInputsPerReset = 4096;
  // A fresh world once the engine holds more than this.
  static constexpr uint64_t kMaxSeries = 2000;
  static constexpr uint64_t kMaxBytesOnDisk = 64ull << 20;

  // Creates the private directory and the world in it. The directory is
  // removed at exit (not after a crash: it is then left for inspection).
  static EngineFixture& Get() {
    static EngineFixture* fixture = [] {
      auto* created = new EngineFixture();
      std::atexit([] { Get().RemoveAll(); });
      return created;
    }();
    return *fixture;
  }

  Engine* engine() const { return world_->engine.get(); }
  Env* env() { return &world_->engine_env; }
  const CommandRegistry& commands() const { return world_->commands; }
  TokenStore* tokens() const { return world_->tokens.get(); }
  const std::string& data_dir() const { return data_dir_; }

  // Properties that hold whatever an input did, then housekeeping.
  void AfterInput() {
    CheckDataDirectory();
    ++inputs_;
    if (inputs_ % kInputsPerMaintenance == 0) RequireOk(engine()->Maintain(), "Maintain");
    const EngineStats stats = engine()->Stats();
    if (inputs_ % kInputsPerReset == 0 || !DropNewTables() || stats.series > kMaxSeries ||
        stats.log_bytes + stats.period_file_bytes > kMaxBytesOnDisk) {
      Reset();
    }
  }

 private:
  struct World {
    FuzzEnv engine_env;
    FuzzEnv tokens_env;
    std::unique_ptr<Engine> engine;
    CommandRegistry commands;
    std::unique_ptr<TokenStore> tokens;
  };

  EngineFixture() {
    // tmpfs unless the caller chose: the engine syncs on every write.
    const char* tmpdir = std::getenv("TMPDIR");
    std::string base = tmpdir != nullptr && tmpdir[0] != '\0'      ? tmpdir
                       : std::filesystem::is_directory("/dev/shm") ? "/dev/shm"
                                                                   : "/tmp";
    std::string pattern = base + "/cairn-fuzz-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      std::perror(("fuzz fixture: mkdtemp " + pattern).c_str());
      std::abort();
    }
    private_dir_ = pattern;
    data_dir_ = JoinPath(private_dir_, "data");
    Build();
  }

  void Build() {
    world_ = std::make_unique<World>();
    EngineOptions options;
    options.maintenance_interval_ms = 0;  // no thread: inputs replay the same way
    options.seal_records = 32;
    options.seal_age_ms = 1;
    options.log_segment_bytes = 256 * 1024;
    options.writer_cache_kib = 256;
    options.reader_cache_kib = 64;
    options.max_open_period_files = 4;
    Result<std::unique_ptr<Engine>> opened = Engine::Open(&world_->engine_env, data_dir_, options);
    RequireOk(opened.status(), "Engine::Open");
    world_->engine = std::move(opened).value();
    TableOptions sensors;
    RequireOk(engine()->CreateTable("sensors", sensors), "create sensors");
    TableOptions other;
    other.period = Period::kHour;
    other.default_ttl_seconds = 365 * 86400;
    RequireOk(engine()->CreateTable("other", other), "create other");
    WriteInitialRecords();

    RequireOk(RegisterBuiltinCommands(&world_->commands), "RegisterBuiltinCommands");
    EngineCommandOptions command_options;
    command_options.data_dir = data_dir_;
    // Small pages, so that the initial records already need several.
    command_options.default_limit = 10;
    command_options.max_limit = 200;
    RequireOk(RegisterEngineCommands(&world_->commands, engine(), env(), command_options),
              "RegisterEngineCommands");

    Result<std::unique_ptr<TokenStore>> tokens = TokenStore::Open(&world_->tokens_env, data_dir_);
    RequireOk(tokens.status(), "TokenStore::Open");
    world_->tokens = std::move(tokens).value();
    Result<std::optional<CreatedToken>> admin = world_->tokens->EnsureAdminToken();
    RequireOk(admin.status(), "EnsureAdminToken");
    Result<CreatedToken> reader = world_->tokens->Create("reader", {"read:sensors"});
    RequireOk(reader.status(), "create the read:sensors token");
    if (!admin->has_value() || (*admin)->token != kAdminToken || reader->token != kReadSensorsToken) {
      std::fprintf(stderr,
                   "fuzz fixture: the token store now creates\n  admin  %s\n  reader %s\n"
                   "update kAdminToken, kReadSensorsToken and the seeds that carry them\n",
                   admin->has_value() ? (*admin)->token.c_str() : "(none)", reader->token.c_str());
      std::abort();
    }
    Result<std::vector<std::string>> entries = Env::Default()->ListDir(data_dir_);
    RequireOk(entries.status(), "list the data directory");
    own_entries_ = std::move(entries).value();
  }

  // Records of several shapes around "now" and at the ends of what the
  // engine accepts (a day ahead, retention behind), with versions, ttls and
  // unicode; the older ones sealed into chunks.
  void WriteInitialRecords() {
    constexpr int64_t kMinute = int64_t{60} * 1'000'000'000;
    std::vector<Record> sealed, head;
    for (int i = 0; i < 48; ++i) {
      const int64_t time = kFuzzNowUnixNanos - (48 - i) * 5 * kMinute;
      std::vector<Record>& batch = i < 32 ? sealed : head;
      Record env_record{.device_id = "d1",
                        .measure_name = "env",
                        .timestamp = time,
                        .fields = {{"temperature", 20.0 + i * 0.25}, {"humidity", int64_t{40 + i}}},
                        .dimensions = {{"site", "lab"}}};
      batch.push_back(env_record);
      if (i % 3 == 0) {
        batch.push_back(Record{.device_id = "d2",
                               .measure_name = "power",
                               .timestamp = time,
                               .fields = {{"watts", 3.5 * i}, {"on", i % 2 == 0}}});
      }
      if (i % 8 == 0) {
        batch.push_back(Record{.device_id = "d1",
                               .measure_name = "env#pressure",
                               .timestamp = time,
                               .fields = {{"hpa", 1013.25 - i}, {"state", std::string("steady")}},
                               .version = static_cast<uint64_t>(i)});
      }
    }
    head.push_back(Record{.device_id = "d\xC3\xA9vice \xE2\x98\x83",
                          .measure_name = "status",
                          .timestamp = kFuzzNowUnixNanos - kMinute,
                          .fields = {{"state", std::string("ok \"quoted\" \\ tab\there")},
                                     {"seen", Timestamp{kFuzzNowUnixNanos - 2 * kMinute}},
                                     {"time", int64_t{7}}},
                          .ttl = kFuzzNowUnixNanos / 1'000'000'000 + 3650 * 86400});
    head.push_back(Record{.device_id = "d1",
                          .measure_name = "env",
                          .timestamp = kFuzzNowUnixNanos + 10 * kMinute,
                          .fields = {{"temperature", -0.0}, {"humidity", INT64_MIN}},
                          .ttl = 9'999'999'999});
    head.push_back(Record{.device_id = "d1",
                          .measure_name = "limits",
                          .timestamp = kFuzzNowUnixNanos + 23 * 60 * kMinute,
                          .fields = {{"max", INT64_MAX}, {"min", INT64_MIN}, {"tiny", 5e-324}}});
    head.push_back(Record{.device_id = "d1",
                          .measure_name = "limits",
                          .timestamp = kFuzzNowUnixNanos - 29 * 24 * 60 * kMinute,
                          .fields = {{"max", int64_t{1}}, {"huge", 1.7976931348623157e308}}});
    RequireOk(Written(engine()->Write("sensors", sealed)), "write sealed records");
    RequireOk(engine()->SealAll(), "SealAll");
    RequireOk(Written(engine()->Write("sensors", head)), "write head records");
    RequireOk(Written(engine()->Write("other", {Record{.device_id = "d1",
                                                       .measure_name = "env",
                                                       .timestamp = kFuzzNowUnixNanos - kMinute,
                                                       .fields = {{"temperature", 5.0}}}})),
              "write other");
  }

  // The write's status, or the first record it refused.
  static Status Written(const Result<WriteResult>& result) {
    if (!result.ok()) return result.status();
    for (const RecordResult& record : result->records) {
      if (record.outcome != WriteOutcome::kStored) return Status::Internal("not stored: " + record.reason);
    }
    return Status::Ok();
  }

  // The engine's log, and the token file beside it, belong to the engine and
  // the store: no command may remove or replace them.
  void CheckDataDirectory() {
    Env* env = Env::Default();
    Result<std::vector<std::string>> segments = env->ListDir(JoinPath(data_dir_, "log"));
    Require(segments.ok() && !segments->empty(), "the write-ahead log directory keeps its segments");
    Require(env->FileExists(JoinPath(data_dir_, TokenStore::kFileName)), "the token file stays");
  }

  // Drops the tables inputs created, which is much cheaper than a fresh
  // world. False when that cannot restore the initial tables: one of them is
  // gone, or a new table is named like an entry the engine or the token
  // store keeps in the data directory (dropping it would delete theirs).
  bool DropNewTables() {
    Result<std::vector<TableInfo>> tables = engine()->ListTables();
    RequireOk(tables.status(), "ListTables");
    size_t initial = 0;
    for (const TableInfo& table : *tables) {
      if (table.name == "sensors" || table.name == "other") {
        ++initial;
      } else if (std::find(own_entries_.begin(), own_entries_.end(), table.name) != own_entries_.end()) {
        return false;
      } else {
        RequireOk(engine()->DropTable(table.name), "drop a table an input created");
      }
    }
    return initial == 2;
  }

  void Reset() {
    Destroy();
    RemoveTree(data_dir_);
    Build();
  }

  void RemoveAll() {
    Destroy();
    RemoveTree(private_dir_);
  }

  void Destroy() {
    if (world_ == nullptr) return;
    RequireOk(world_->engine->Close(), "Engine::Close");
    world_.reset();
  }

  static void RemoveTree(const std::string& path) {
    std::error_code error;
    std::filesystem::remove_all(path, error);
    if (error) {
      std::fprintf(stderr, "fuzz fixture: cannot remove %s: %s\n", path.c_str(), error.message().c_str());
      std::abort();
    }
  }

  std::string private_dir_;  // made by mkdtemp
  std::string data_dir_;     // inside it: the engine's and the token store's
  std::unique_ptr<World> world_;
  // What the data directory held before any input ran.
  std::vector<std::string> own_entries_;
  uint64_t inputs_ = 0;
};

}  // namespace cairn::fuzz
