// cairn's runs of `cairn-bench sync`: the gateway (engine, writer, SyncAgent)
// syncing the data through the broker to the receiver, on the backfill and
// the live lane.
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>

#include "cairn/core/engine.h"
#include "cairn/platform/env.h"

#include "sensor_generator.h"
#include "sync_bench_common.h"
#include "system_probe.h"

namespace cairn::bench::sync_bench {

namespace {

// Hands generated records to an engine: each device's three readings at one
// instant are one multi-measure record "env", as in the core benchmark.
class RecordWriter {
 public:
  explicit RecordWriter(Engine* engine) : engine_(engine) {}

  // Writes one batch; every record must be stored or dropped as a duplicate.
  Result<WriteResult> Write(const std::vector<SensorRecord>& batch) {
    ToEnvRecords(batch, &records_);
    CAIRN_ASSIGN_OR_RETURN(WriteResult result, engine_->Write(kBenchTable, records_));
    if (result.invalid != 0 || result.rejected != 0) {
      return Status::Internal("cairn refused " + std::to_string(result.invalid + result.rejected) +
                              " valid records");
    }
    return result;
  }

 private:
  Engine* const engine_;
  std::vector<Record> records_;
};

Status CopyDirectory(const std::string& from, const std::string& to) {
  std::error_code error;
  std::filesystem::copy(from, to, std::filesystem::copy_options::recursive, error);
  if (error) return Status::IOError("copying " + from + " to " + to + ": " + error.message());
  return Status::Ok();
}

// The agent's log lines, kept to explain a run that fails.
class AgentLog {
 public:
  void Add(std::string_view line) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (lines_.size() == kKeep) lines_.erase(lines_.begin());
    lines_.emplace_back(line);
  }
  std::string Joined() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string text;
    for (const std::string& line : lines_) text += "\n  agent: " + line;
    return text;
  }

 private:
  static constexpr size_t kKeep = 5;
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

SyncAgentOptions AgentOptions(const Plan& plan, const RunSpec& spec, const std::string& gateway_id,
                              const std::string& server_uri, const std::shared_ptr<AgentLog>& log) {
  SyncAgentOptions options;
  options.gateway_id = gateway_id;
  options.key = plan.key;
  options.topic_prefix = kTopicPrefix;
  options.encoding = spec.encoding;
  options.confirmation = spec.confirmation;
  options.link.server_uri = server_uri;
  // Backfill as fast as the link and the receiver allow; every other
  // setting is the product's default.
  options.backfill_records_per_second = 0;
  options.log = [log](std::string_view line) { log->Add(line); };
  return options;
}

Result<SyncTableStatus> TableStatus(SyncAgent* agent, SyncStatus* full = nullptr) {
  CAIRN_ASSIGN_OR_RETURN(SyncStatus status, agent->GetStatus());
  for (const SyncTableStatus& table : status.tables) {
    if (table.table == kBenchTable) {
      SyncTableStatus found = table;
      if (full != nullptr) *full = std::move(status);
      return found;
    }
  }
  return Status::NotFound("the agent does not sync table '" + std::string(kBenchTable) + "'");
}

Status WaitConnected(SyncAgent* agent, const AgentLog& log) {
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(kConnectTimeoutMs);
  for (;;) {
    CAIRN_RETURN_IF_ERROR(CheckInterrupt());
    CAIRN_ASSIGN_OR_RETURN(SyncStatus status, agent->GetStatus());
    if (status.connected) return Status::Ok();
    if (Clock::now() >= deadline) {
      return Status::TimedOut("the agent did not connect: " + status.link.last_error + log.Joined());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Waits until the receiver has every distinct record (and, in receipt mode,
// has seen receipts for every LSN), then polls the agent until its ledger
// confirms everything through `last_lsn`. Fills the end of `result`.
Status WaitUntilConfirmed(SyncAgent* agent, Receiver* receiver, const DataSummary& data, uint64_t last_lsn,
                          const AgentLog& log, RunResult* result) {
  const bool receipts = result->spec.confirmation == SyncConfirmation::kReceipt;
  const uint64_t distinct = data.distinct_records;
  Status received = receiver->WaitFor(
      [&](const ReceiverState& state) {
        return state.counts.distinct_records >= distinct &&
               (!receipts || state.receipted.ContiguousFrom(1) >= last_lsn);
      },
      WaitTimeoutMs(data.distinct_readings), "every record at the receiver");
  if (!received.ok()) return Status(received.code(), received.message() + log.Joined());
  // The receiver is done; the agent is at most one receipt delivery and one
  // wake-up behind. Poll closely so the end time is within a poll of it.
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(60);
  for (;;) {
    CAIRN_RETURN_IF_ERROR(CheckInterrupt());
    const int64_t asked = NowNanos();
    CAIRN_ASSIGN_OR_RETURN(SyncTableStatus table, TableStatus(agent));
    if (table.confirmed_through >= last_lsn) {
      result->confirmed_nanos = asked;
      result->process_cpu_nanos += ProcessCpuNanos();
      break;
    }
    if (Clock::now() >= deadline) {
      return Status::TimedOut("the agent confirmed through LSN " + std::to_string(table.confirmed_through) +
                              " of " + std::to_string(last_lsn) + " a minute after the receiver had all" +
                              log.Joined());
    }
    std::this_thread::sleep_for(std::chrono::microseconds(kConfirmPollMicros));
  }
  SyncStatus status;
  CAIRN_ASSIGN_OR_RETURN(result->table, TableStatus(agent, &status));
  result->link = status.link;
  result->receipts_accepted = status.receipts_accepted;
  result->receipts_invalid = status.receipts_invalid;
  result->last_lsn = last_lsn;
  result->receiver = receiver->state();
  return Status::Ok();
}

// What the receiver expects of a cairn run as the gateway `gateway_id`.
ReceiverExpectation RunExpectation(const Plan& plan, const RunSpec& spec, const std::string& gateway_id) {
  ReceiverExpectation expectation;
  expectation.gateway_id = gateway_id;
  expectation.key = plan.key;
  expectation.send_receipts = spec.confirmation == SyncConfirmation::kReceipt;
  expectation.devices = plan.devices;
  expectation.seconds = plan.seconds;
  expectation.start = plan.start;
  return expectation;
}

}  // namespace

// Writes the whole data into a fresh engine at `directory`, seals it and
// closes it: the starting point of every backfill run, copied for each.
// Durability off: only the sealed result counts, not how it was written.
Status WriteBackfillSource(const Plan& plan, const std::string& directory, uint64_t* last_lsn) {
  EngineOptions options;
  options.durability = Durability::kOff;
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::Open(Env::Default(), directory, options));
  CAIRN_RETURN_IF_ERROR(engine->CreateTable(kBenchTable, TableOptions()));
  RecordWriter writer(engine.get());
  SensorGenerator generator(GeneratorOptions(plan));
  std::vector<SensorRecord> batch;
  while (generator.NextBatch(plan.batch, &batch)) {
    CAIRN_RETURN_IF_ERROR(CheckInterrupt());
    CAIRN_RETURN_IF_ERROR(writer.Write(batch).status());
  }
  CAIRN_RETURN_IF_ERROR(engine->SealAll());
  *last_lsn = engine->Stats().last_lsn;
  return engine->Close();
}

std::string RunLabel(const RunSpec& spec) { return std::string(SyncLaneName(spec.lane)) + " " + spec.name; }

int64_t WaitTimeoutMs(uint64_t readings) {
  // Two minutes, plus room for rates down to 20 000 readings/s.
  return 120'000 + static_cast<int64_t>(readings / 20);
}

// Backfill: the data is stored and sealed before the agent starts, so all of
// it lies at or below the live start and goes out on the backfill lane.
Result<RunResult> RunBackfill(const Plan& plan, const RunSpec& spec, const std::string& source,
                              uint64_t source_last_lsn, const std::string& directory,
                              const std::string& server_uri, const DataSummary& data, Receiver* receiver) {
  RunResult result;
  result.spec = spec;
  const std::string label = RunLabel(spec);
  Progress(plan, label, "copy the stored data");
  CAIRN_RETURN_IF_ERROR(CopyDirectory(source, directory));
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine,
                         Engine::Open(Env::Default(), directory, EngineOptions()));
  const uint64_t last_lsn = engine->Stats().last_lsn;
  if (last_lsn != source_last_lsn) {
    return Status::Internal("the copied data ends at LSN " + std::to_string(last_lsn) + ", not " +
                            std::to_string(source_last_lsn));
  }
  const std::string gateway_id = "bench-backfill-" + spec.name;
  receiver->Begin(RunExpectation(plan, spec, gateway_id));

  // The agent connects while the table's sync is off, and the clock starts
  // when it is switched on: the run measures syncing, not the MQTT connect
  // (which also waits for Paho's threads when a second client of the
  // process connects: about 2 s).
  CAIRN_ASSIGN_OR_RETURN(TableInfo table, engine->GetTable(kBenchTable));
  TableOptions sync_off = table.options;
  sync_off.sync = false;
  CAIRN_RETURN_IF_ERROR(engine->AlterTable(kBenchTable, sync_off));
  auto log = std::make_shared<AgentLog>();
  CAIRN_ASSIGN_OR_RETURN(
      std::unique_ptr<SyncAgent> agent,
      SyncAgent::Create(Env::Default(), engine.get(), AgentOptions(plan, spec, gateway_id, server_uri, log)));
  CAIRN_RETURN_IF_ERROR(agent->Start());
  Status confirmed = WaitConnected(agent.get(), *log);
  if (confirmed.ok()) {
    Progress(plan, label, "sync");
    result.process_cpu_nanos = -ProcessCpuNanos();
    result.start_nanos = NowNanos();
    confirmed = engine->AlterTable(kBenchTable, table.options);
  }
  if (confirmed.ok()) {
    agent->Notify();
    confirmed = WaitUntilConfirmed(agent.get(), receiver, data, last_lsn, *log, &result);
  }
  agent->Stop();
  CAIRN_RETURN_IF_ERROR(confirmed);
  CAIRN_RETURN_IF_ERROR(engine->Close());
  return result;
}

// Live: the agent starts on an empty table and the data is written while it
// runs, batch by batch, each write followed by Notify as cairnd does.
Result<RunResult> RunLive(const Plan& plan, const RunSpec& spec, const std::string& directory,
                          const std::string& server_uri, const DataSummary& data, Receiver* receiver) {
  RunResult result;
  result.spec = spec;
  const std::string label = RunLabel(spec);
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine,
                         Engine::Open(Env::Default(), directory, EngineOptions()));
  CAIRN_RETURN_IF_ERROR(engine->CreateTable(kBenchTable, TableOptions()));
  const std::string gateway_id = "bench-live-" + spec.name;
  receiver->Begin(RunExpectation(plan, spec, gateway_id));

  auto log = std::make_shared<AgentLog>();
  CAIRN_ASSIGN_OR_RETURN(
      std::unique_ptr<SyncAgent> agent,
      SyncAgent::Create(Env::Default(), engine.get(), AgentOptions(plan, spec, gateway_id, server_uri, log)));
  CAIRN_RETURN_IF_ERROR(agent->Start());
  // Writes start once the agent is connected, so that none waits for the
  // connection itself.
  if (Status connected = WaitConnected(agent.get(), *log); !connected.ok()) {
    agent->Stop();
    return connected;
  }

  Progress(plan, label, "write and sync");
  RecordWriter writer(engine.get());
  SensorGenerator generator(GeneratorOptions(plan));
  std::vector<SensorRecord> batch;
  uint64_t delivered = 0;
  Status written = Status::Ok();
  result.process_cpu_nanos = -ProcessCpuNanos();
  result.start_nanos = NowNanos();
  while (generator.NextBatch(plan.batch, &batch)) {
    if (spec.rate > 0) {
      // Steady pacing: batch k goes out when k batches' readings are due.
      const double due_seconds = static_cast<double>(delivered * kReadingsPerRecord) / spec.rate;
      const int64_t due = result.start_nanos + static_cast<int64_t>(due_seconds * 1e9);
      const int64_t wait = due - NowNanos();
      if (wait > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
    }
    delivered += batch.size();
    Result<WriteResult> write = writer.Write(batch);
    const int64_t acknowledged = NowNanos();
    if (!write.ok()) {
      written = write.status();
      break;
    }
    agent->Notify();
    if (write->stored > 0) result.writes.push_back({acknowledged, write->first_lsn + write->stored - 1});
    if (interrupted != 0) {
      written = CheckInterrupt();
      break;
    }
  }
  result.written_nanos = NowNanos();
  const uint64_t last_lsn = engine->Stats().last_lsn;
  if (written.ok() && !result.writes.empty() && result.writes.back().last_lsn != last_lsn) {
    written = Status::Internal("the writes' LSNs end at " + std::to_string(result.writes.back().last_lsn) +
                               ", the engine's at " + std::to_string(last_lsn));
  }
  Status confirmed =
      written.ok() ? WaitUntilConfirmed(agent.get(), receiver, data, last_lsn, *log, &result) : written;
  agent->Stop();
  CAIRN_RETURN_IF_ERROR(confirmed);
  CAIRN_RETURN_IF_ERROR(engine->Close());
  return result;
}

}  // namespace cairn::bench::sync_bench
