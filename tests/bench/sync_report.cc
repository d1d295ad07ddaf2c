// The report of `cairn-bench sync`: each run's JSON and problems, the
// ratios against the peer, the targets, and the printed table.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <iomanip>
#include <ostream>
#include <string>
#include <vector>

#include "sync_bench_common.h"
#include "system_probe.h"

namespace cairn::bench::sync_bench {

namespace {

// For each write, how long after its acknowledgement the contiguous coverage
// of `events` (LSN ranges, in arrival order) first reached its last LSN.
std::vector<int64_t> CoverageDelays(const std::vector<WriteAck>& writes,
                                    const std::vector<LsnEvent>& events) {
  std::vector<int64_t> delays;
  LsnRangeSet covered;
  uint64_t watermark = 0;
  int64_t reached_at = 0;
  size_t next = 0;
  for (const WriteAck& write : writes) {
    while (watermark < write.last_lsn && next < events.size()) {
      covered.Add(events[next].first_lsn, events[next].last_lsn);
      watermark = covered.ContiguousFrom(1);
      reached_at = events[next].nanos;
      ++next;
    }
    if (watermark < write.last_lsn) break;
    // A batch can leave before its write returns (the log sync runs after
    // the records reach the head); that counts as no delay.
    delays.push_back(std::max<int64_t>(0, reached_at - write.nanos));
  }
  return delays;
}

// When the contiguous coverage of `events` first reached `lsn`, if it did.
std::optional<int64_t> CoverageReached(const std::vector<LsnEvent>& events, uint64_t lsn) {
  LsnRangeSet covered;
  for (const LsnEvent& event : events) {
    covered.Add(event.first_lsn, event.last_lsn);
    if (covered.ContiguousFrom(1) >= lsn) return event.nanos;
  }
  return std::nullopt;
}

JsonValue Milliseconds(const std::vector<int64_t>& nanos, double fraction) {
  if (nanos.empty()) return JsonValue();
  return JsonValue::Number(Round(static_cast<double>(Percentile(nanos, fraction)) / 1e6, 3));
}

// CPU seconds of the run: the whole process (the broker is another), the
// receiver's worker thread (decoding, counting, receipts), and the rest: the
// sender (agent, engine and live writer, or the peer's client) plus every
// MQTT client thread of the process, the receiver's included.
JsonValue CpuJson(int64_t process_nanos, int64_t receiver_nanos, double readings) {
  const int64_t other_nanos = std::max<int64_t>(0, process_nanos - receiver_nanos);
  JsonValue cpu = JsonValue::Object();
  cpu.Set("process_seconds", JsonValue::Number(Round(static_cast<double>(process_nanos) / 1e9, 3)));
  cpu.Set("receiver_worker_seconds", JsonValue::Number(Round(static_cast<double>(receiver_nanos) / 1e9, 3)));
  cpu.Set("other_seconds", JsonValue::Number(Round(static_cast<double>(other_nanos) / 1e9, 3)));
  cpu.Set("readings_per_other_cpu_s",
          other_nanos > 0 ? JsonValue::Number(Round(readings * 1e9 / static_cast<double>(other_nanos), 0))
                          : JsonValue());
  return cpu;
}

double PerSecond(double count, int64_t nanos) {
  return nanos > 0 ? count * 1e9 / static_cast<double>(nanos) : 0;
}

// ---- printing --------------------------------------------------------------

struct Column {
  std::string_view heading;
  std::initializer_list<std::string_view> path;  // inside a run
  int decimals;
};

const Column kRateColumns[] = {
    {"readings/s", {"readings_per_s"}, 0},
    {"messages/s", {"messages_per_s"}, 1},
    {"records/msg", {"records_per_message"}, 1},
    {"payload B/rdg", {"payload_bytes_per_reading"}, 3},
    {"MQTT up B/rdg", {"mqtt_uplink_bytes_per_reading"}, 3},
    {"seconds", {"seconds"}, 2},
};

const Column kCostColumns[] = {
    {"CPU s", {"cpu", "process_seconds"}, 2}, {"receiver s", {"cpu", "receiver_worker_seconds"}, 2},
    {"other s", {"cpu", "other_seconds"}, 2}, {"rdg/other-CPU-s", {"cpu", "readings_per_other_cpu_s"}, 0},
    {"ledger lag ms", {"ledger_lag_ms"}, 1},
};

template <size_t N>
void PrintRow(std::ostream& out, std::string_view label, const JsonValue* run, const Column (&columns)[N]) {
  char cell[64];
  std::snprintf(cell, sizeof(cell), "%-28s", std::string(label).c_str());
  out << cell;
  for (const Column& column : columns) {
    std::snprintf(cell, sizeof(cell), " %15s",
                  FormatNumber(run ? FindPath(*run, column.path) : nullptr, column.decimals).c_str());
    out << cell;
  }
  out << "\n";
}

template <size_t N>
void PrintRuns(const JsonValue& report, std::ostream& out, const Column (&columns)[N]) {
  char cell[64];
  std::snprintf(cell, sizeof(cell), "%-28s", "run");
  out << cell;
  for (const Column& column : columns) {
    std::snprintf(cell, sizeof(cell), " %15s", std::string(column.heading).c_str());
    out << cell;
  }
  out << "\n";
  for (std::string_view lane : {"backfill", "live"}) {
    const JsonValue* runs = FindPath(report, {"cairn", lane});
    if (runs == nullptr) continue;
    for (const auto& member : runs->members()) {
      PrintRow(out, "cairn " + std::string(lane) + " " + member.first, &member.second, columns);
    }
  }
  const JsonValue* peer = report.Find("peer");
  if (peer != nullptr && peer->is_object()) PrintRow(out, std::string(kPeerName), peer, columns);
}

}  // namespace

// The problems of one run: what the receiver got against what was written,
// and what the agent's ledger says.
std::vector<std::string> CheckRun(const std::string& label, const RunResult& run, const DataSummary& data) {
  std::vector<std::string> problems;
  const ReceiverCounts& counts = run.receiver.counts;
  if (counts.distinct_readings != data.distinct_readings) {
    problems.push_back(label + ": the receiver decoded " + std::to_string(counts.distinct_readings) +
                       " distinct readings, " + std::to_string(data.distinct_readings) + " were written");
  }
  if (counts.digest != data.digest)
    problems.push_back(label + ": the received values differ from the written ones");
  if (counts.invalid != 0) {
    problems.push_back(label + ": " + std::to_string(counts.invalid) + " invalid messages or records (" +
                       counts.last_invalid + ")");
  }
  if (counts.receipt_publish_failures != 0) {
    problems.push_back(label + ": " + std::to_string(counts.receipt_publish_failures) +
                       " receipts not published");
  }
  if (run.table.confirmed_through != run.last_lsn || run.table.unsynced.records != 0) {
    problems.push_back(label + ": the ledger confirms through " +
                       std::to_string(run.table.confirmed_through) + " of " + std::to_string(run.last_lsn) +
                       " with " + std::to_string(run.table.unsynced.records) + " records unsynced");
  }
  if (counts.messages != run.link.published || counts.payload_bytes != run.link.bytes_published) {
    problems.push_back(label + ": the agent published " + std::to_string(run.link.published) + " messages (" +
                       std::to_string(run.link.bytes_published) + " bytes), the receiver got " +
                       std::to_string(counts.messages) + " (" + std::to_string(counts.payload_bytes) +
                       " bytes)");
  }
  if (run.receipts_invalid != 0) {
    problems.push_back(label + ": the agent refused " + std::to_string(run.receipts_invalid) + " receipts");
  }
  return problems;
}

JsonValue RunJson(const RunResult& run, const DataSummary& data) {
  const ReceiverCounts& counts = run.receiver.counts;
  const bool receipts = run.spec.confirmation == SyncConfirmation::kReceipt;
  const double readings = static_cast<double>(data.distinct_readings);
  const int64_t nanos = run.confirmed_nanos - run.start_nanos;
  const uint64_t messages = run.link.published;
  // Gateway to broker: its envelope PUBLISH packets and its PUBACKs of the
  // receipts. Broker to gateway: PUBACKs of the envelopes and the receipts.
  const uint64_t uplink = counts.publish_packet_bytes + counts.receipts_published * kPubackBytes;
  const uint64_t downlink = messages * kPubackBytes + counts.receipt_packet_bytes;
  uint64_t batches_confirmed = 0;
  JsonValue lanes = JsonValue::Object();
  for (const SyncLaneStatus& lane : run.table.lanes) {
    batches_confirmed += lane.batches_confirmed;
    lanes.Set(SyncLaneName(lane.lane), JsonValue::Unsigned(lane.records_confirmed));
  }

  JsonValue json = JsonValue::Object();
  json.Set("lane", JsonValue::String(std::string(SyncLaneName(run.spec.lane))));
  json.Set("confirmation", JsonValue::String(std::string(SyncConfirmationName(run.spec.confirmation))));
  json.Set("encoding", JsonValue::String(run.spec.encoding == EnvelopeEncoding::kJson ? "json" : "binary"));
  json.Set("records", JsonValue::Unsigned(data.distinct_records));
  json.Set("readings", JsonValue::Unsigned(data.distinct_readings));
  json.Set("seconds", JsonValue::Number(Round(static_cast<double>(nanos) / 1e9, 3)));
  json.Set("readings_per_s", JsonValue::Number(Round(PerSecond(readings, nanos), 0)));
  json.Set("messages", JsonValue::Unsigned(messages));
  json.Set("messages_per_s", JsonValue::Number(Round(PerSecond(static_cast<double>(messages), nanos), 1)));
  json.Set("records_per_message",
           JsonValue::Number(messages > 0 ? Round(static_cast<double>(counts.records) / messages, 1) : 0));
  json.Set("payload_bytes", JsonValue::Unsigned(counts.payload_bytes));
  json.Set("payload_bytes_per_reading",
           JsonValue::Number(Round(static_cast<double>(counts.payload_bytes) / readings, 4)));
  json.Set("mqtt_uplink_bytes_per_reading",
           JsonValue::Number(Round(static_cast<double>(uplink) / readings, 4)));
  json.Set("mqtt_downlink_bytes_per_reading",
           JsonValue::Number(Round(static_cast<double>(downlink) / readings, 6)));
  json.Set("receipts", JsonValue::Unsigned(counts.receipts_published));
  json.Set("resent_messages",
           JsonValue::Unsigned(messages > batches_confirmed ? messages - batches_confirmed : 0));
  json.Set("records_confirmed_by_lane", std::move(lanes));
  json.Set("cpu", CpuJson(run.process_cpu_nanos, counts.worker_cpu_nanos, readings));
  // Receipt mode: how long after the broker forwarded the last receipt the
  // agent's ledger had everything, within one status poll. (Broker mode
  // has no such moment to observe: the agent may be done before the
  // receiver has decoded the last envelope.)
  const std::optional<int64_t> reached =
      receipts ? CoverageReached(run.receiver.receipts, run.last_lsn) : std::nullopt;
  json.Set("ledger_lag_ms",
           reached ? JsonValue::Number(Round(static_cast<double>(run.confirmed_nanos - *reached) / 1e6, 3))
                   : JsonValue());
  if (run.spec.lane == SyncLane::kLive) {
    const int64_t write_nanos = run.written_nanos - run.start_nanos;
    json.Set("paced_readings_per_s", run.spec.rate > 0 ? JsonValue::Number(run.spec.rate) : JsonValue());
    json.Set("write_seconds", JsonValue::Number(Round(static_cast<double>(write_nanos) / 1e9, 3)));
    json.Set("write_readings_per_s", JsonValue::Number(Round(PerSecond(readings, write_nanos), 0)));
    const std::vector<int64_t> confirm =
        receipts ? CoverageDelays(run.writes, run.receiver.receipts) : std::vector<int64_t>();
    const std::vector<int64_t> delivery = CoverageDelays(run.writes, run.receiver.deliveries);
    json.Set("write_batches", JsonValue::Unsigned(run.writes.size()));
    json.Set("confirm_latency_ms_p50", Milliseconds(confirm, 0.50));
    json.Set("confirm_latency_ms_p99", Milliseconds(confirm, 0.99));
    json.Set("delivery_latency_ms_p50", Milliseconds(delivery, 0.50));
    json.Set("delivery_latency_ms_p99", Milliseconds(delivery, 0.99));
  }
  JsonValue checks = JsonValue::Object();
  checks.Set("expected_distinct_readings", JsonValue::Unsigned(data.distinct_readings));
  checks.Set("received_distinct_readings", JsonValue::Unsigned(counts.distinct_readings));
  checks.Set("received_records", JsonValue::Unsigned(counts.records));
  checks.Set("values_match", JsonValue::Bool(counts.digest == data.digest));
  checks.Set("invalid", JsonValue::Unsigned(counts.invalid));
  checks.Set("last_lsn", JsonValue::Unsigned(run.last_lsn));
  checks.Set("confirmed_through", JsonValue::Unsigned(run.table.confirmed_through));
  checks.Set("unsynced_records", JsonValue::Unsigned(run.table.unsynced.records));
  checks.Set("receipts_observed", JsonValue::Unsigned(counts.receipts_observed));
  checks.Set("receipts_accepted", JsonValue::Unsigned(run.receipts_accepted));
  json.Set("checks", std::move(checks));
  return json;
}

std::vector<std::string> CheckPeer(const PeerResult& peer, const DataSummary& data) {
  std::vector<std::string> problems;
  const ReceiverCounts& counts = peer.receiver.counts;
  if (counts.distinct_readings != data.distinct_readings || counts.digest != data.digest) {
    problems.push_back("peer: the receiver decoded " + std::to_string(counts.distinct_readings) +
                       " distinct readings (values " + (counts.digest == data.digest ? "match" : "differ") +
                       "), " + std::to_string(data.distinct_readings) + " were published");
  }
  if (counts.invalid != 0) {
    problems.push_back("peer: " + std::to_string(counts.invalid) + " invalid messages (" +
                       counts.last_invalid + ")");
  }
  if (peer.failed != 0 || peer.acknowledged != peer.records || counts.messages != peer.records) {
    problems.push_back("peer: " + std::to_string(peer.records) + " published, " +
                       std::to_string(peer.acknowledged) + " acknowledged, " + std::to_string(peer.failed) +
                       " failed, " + std::to_string(counts.messages) + " received");
  }
  return problems;
}

JsonValue PeerJson(const PeerResult& peer, const DataSummary& data) {
  const ReceiverCounts& counts = peer.receiver.counts;
  const double readings = static_cast<double>(data.distinct_readings);
  const int64_t nanos = peer.end_nanos - peer.start_nanos;
  JsonValue json = JsonValue::Object();
  json.Set("name", JsonValue::String(kPeerName));
  json.Set("window", JsonValue::Unsigned(kPeerWindow));
  json.Set("records_published", JsonValue::Unsigned(peer.records));
  json.Set("records", JsonValue::Unsigned(data.distinct_records));
  json.Set("readings", JsonValue::Unsigned(data.distinct_readings));
  json.Set("seconds", JsonValue::Number(Round(static_cast<double>(nanos) / 1e9, 3)));
  json.Set("readings_per_s", JsonValue::Number(Round(PerSecond(readings, nanos), 0)));
  json.Set("messages", JsonValue::Unsigned(peer.records));
  json.Set("messages_per_s",
           JsonValue::Number(Round(PerSecond(static_cast<double>(peer.records), nanos), 1)));
  json.Set("records_per_message", JsonValue::Number(1));
  json.Set("payload_bytes", JsonValue::Unsigned(counts.payload_bytes));
  json.Set("payload_bytes_per_reading",
           JsonValue::Number(Round(static_cast<double>(counts.payload_bytes) / readings, 4)));
  json.Set("mqtt_uplink_bytes_per_reading",
           JsonValue::Number(Round(static_cast<double>(counts.publish_packet_bytes) / readings, 4)));
  json.Set("mqtt_downlink_bytes_per_reading",
           JsonValue::Number(Round(static_cast<double>(peer.records * kPubackBytes) / readings, 4)));
  json.Set("cpu", CpuJson(peer.process_cpu_nanos, counts.worker_cpu_nanos, readings));
  json.Set("puback_seconds", JsonValue::Number(Round(
                                 static_cast<double>(peer.acknowledged_nanos - peer.start_nanos) / 1e9, 3)));
  JsonValue checks = JsonValue::Object();
  checks.Set("expected_distinct_readings", JsonValue::Unsigned(data.distinct_readings));
  checks.Set("received_distinct_readings", JsonValue::Unsigned(counts.distinct_readings));
  checks.Set("values_match", JsonValue::Bool(counts.digest == data.digest));
  checks.Set("acknowledged", JsonValue::Unsigned(peer.acknowledged));
  checks.Set("invalid", JsonValue::Unsigned(counts.invalid));
  json.Set("checks", std::move(checks));
  return json;
}

JsonValue Ratios(const JsonValue& report, std::string_view lane) {
  JsonValue ratios = JsonValue::Object();
  for (std::string_view metric : kRatioMetrics) {
    const std::optional<double> cairn = NumberAt(report, {"cairn", lane, "receipt", metric});
    const std::optional<double> peer = NumberAt(report, {"peer", metric});
    ratios.Set(metric, cairn && peer && *peer != 0 ? JsonValue::Number(RoundSignificant(*cairn / *peer, 4))
                                                   : JsonValue());
  }
  return ratios;
}

JsonValue TargetsJson() {
  JsonValue targets = JsonValue::Object();
  targets.Set("backfill_readings_per_s_min", JsonValue::Number(kTargetBackfillReadingsPerSecond));
  targets.Set("backfill_messages_per_s_max", JsonValue::Number(kTargetBackfillMessagesPerSecond));
  targets.Set("backfill_mqtt_uplink_bytes_per_reading_max",
              JsonValue::Number(kTargetBackfillWireBytesPerReading));
  return targets;
}

// Whether cairn's backfill in the default receipt mode meets each target.
JsonValue TargetsMet(const JsonValue& report) {
  auto check = [&](std::string_view metric, bool at_least, double limit) {
    const std::optional<double> value = NumberAt(report, {"cairn", "backfill", "receipt", metric});
    if (!value) return JsonValue();
    return JsonValue::Bool(at_least ? *value >= limit : *value <= limit);
  };
  JsonValue met = JsonValue::Object();
  met.Set("backfill_readings_per_s", check("readings_per_s", true, kTargetBackfillReadingsPerSecond));
  met.Set("backfill_messages_per_s", check("messages_per_s", false, kTargetBackfillMessagesPerSecond));
  met.Set("backfill_mqtt_uplink_bytes_per_reading",
          check("mqtt_uplink_bytes_per_reading", false, kTargetBackfillWireBytesPerReading));
  return met;
}

std::string MosquittoVersion(const MosquittoBroker& broker) {
  // mosquitto logs "mosquitto version X running" once it listens.
  const std::string log = broker.ReadLog();
  const std::string_view marker = "mosquitto version ";
  const size_t at = log.find(marker);
  if (at == std::string::npos) return "unknown";
  const size_t begin = at + marker.size();
  const size_t end = log.find(' ', begin);
  return log.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

void PrintTable(const JsonValue& report, std::ostream& out) {
  PrintHeading(report, out);
  out << ", mosquitto " << FindPath(report, {"broker", "version"})->text() << " on loopback, data on "
      << report.Find("data_filesystem")->text() << "\n\n";
  PrintRuns(report, out, kRateColumns);
  const JsonValue* peer = report.Find("peer");
  if (peer != nullptr && peer->is_object()) {
    out << "  (" << kPeerName << ": the first " << peer->Find("records_published")->text()
        << " records, one QoS 1 message each, window " << peer->Find("window")->text() << ")\n";
  }
  out << "\n";
  PrintRuns(report, out, kCostColumns);
  out << "  (CPU of this process; other = all but the receiver's worker: the sender and every MQTT client "
         "thread)\n\n";
  for (std::string_view lane : {"live"}) {
    const JsonValue* live = FindPath(report, {"cairn", lane});
    if (live == nullptr) continue;
    for (const auto& member : live->members()) {
      const JsonValue& run = member.second;
      out << "live " << member.first << ": writes at " << FormatNumber(run.Find("write_readings_per_s"), 0)
          << " readings/s; write -> envelope at the receiver p50/p99 "
          << FormatNumber(run.Find("delivery_latency_ms_p50"), 1) << "/"
          << FormatNumber(run.Find("delivery_latency_ms_p99"), 1) << " ms";
      if (const JsonValue* confirm = run.Find("confirm_latency_ms_p50");
          confirm != nullptr && confirm->is_number()) {
        out << "; write -> receipt forwarded by the broker p50/p99 " << FormatNumber(confirm, 1) << "/"
            << FormatNumber(run.Find("confirm_latency_ms_p99"), 1) << " ms";
      }
      out << "\n";
    }
  }
  for (std::string_view lane : {"backfill", "live"}) {
    const JsonValue* ratios = FindPath(report, {"ratios", lane});
    if (ratios == nullptr) continue;
    out << "cairn " << lane << " receipt / peer:";
    for (const auto& member : ratios->members())
      out << " " << member.first << " " << FormatRatio(&member.second);
    out << "\n";
  }
  out << "targets (cairn backfill receipt):";
  const JsonValue* met = report.Find("targets_met");
  const JsonValue* targets = report.Find("targets");
  for (const auto& member : targets->members()) {
    out << " " << member.first << " " << member.second.text();
  }
  out << "\n  met:";
  for (const auto& member : met->members()) {
    out << " " << member.first << " "
        << (member.second.is_null()   ? "-"
            : member.second.boolean() ? "yes"
                                      : "NO");
  }
  out << "\n";
  PrintResults(report,
               "checks: the receiver decoded every distinct reading with its values, and every ledger "
               "confirms everything",
               "checks FAILED:", out);
}

}  // namespace cairn::bench::sync_bench
