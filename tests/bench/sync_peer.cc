// The naive peer of `cairn-bench sync`: one MQTT QoS 1 JSON message per record
// (sync_bench_common.h, PeerResult).
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>

#include <mqtt/async_client.h>

#include "sensor_generator.h"
#include "sync_bench_common.h"
#include "system_probe.h"

namespace cairn::bench::sync_bench {

namespace {

class PeerWindow : public mqtt::iaction_listener {
 public:
  void on_success(const mqtt::token&) override { Done(true); }
  void on_failure(const mqtt::token&) override { Done(false); }

  // Waits until fewer than `window` publishes await PUBACK; false after
  // `timeout_ms` or on interrupt.
  bool WaitBelow(size_t window, int64_t timeout_ms) {
    const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    std::unique_lock<std::mutex> lock(mutex_);
    while (in_flight_ >= window) {
      if (interrupted != 0 || Clock::now() >= deadline) return false;
      changed_.wait_for(lock, std::chrono::milliseconds(100));
    }
    return true;
  }

  void Sent() {
    std::lock_guard<std::mutex> lock(mutex_);
    ++in_flight_;
  }

  // For a publish Paho refused: it will not call back.
  void Unsent() {
    std::lock_guard<std::mutex> lock(mutex_);
    --in_flight_;
  }

  uint64_t acknowledged() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return acknowledged_;
  }
  uint64_t failed() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return failed_;
  }
  int64_t last_done_nanos() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_done_nanos_;
  }

 private:
  void Done(bool ok) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --in_flight_;
      ++(ok ? acknowledged_ : failed_);
      last_done_nanos_ = NowNanos();
    }
    changed_.notify_all();
  }

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  size_t in_flight_ = 0;
  uint64_t acknowledged_ = 0;
  uint64_t failed_ = 0;
  int64_t last_done_nanos_ = 0;
};

void AppendShortest(std::string* out, double value) {
  char buffer[32];
  const std::to_chars_result result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out->append(buffer, result.ptr);
}

void PeerPayload(const SensorRecord& record, std::string* out) {
  out->assign(R"({"fields":{"humidity":)");
  AppendShortest(out, record.humidity_percent());
  out->append(R"(,"pressure":)");
  AppendShortest(out, record.pressure_hectopascals());
  out->append(R"(,"temperature":)");
  AppendShortest(out, record.temperature_celsius());
  out->append(R"(},"name":"env","tags":{"device_id":")");
  out->append(record.device_id);
  out->append(R"("},"timestamp":)");
  out->append(std::to_string(record.timestamp));
  out->push_back('}');
}

}  // namespace

Result<PeerResult> RunPeer(const Plan& plan, const std::string& server_uri, const DataSummary& data,
                           Receiver* receiver) {
  const std::string gateway_id = "bench-peer";
  const std::string topic = std::string(kPeerTopicRoot) + "/" + gateway_id + "/" + kEnvMeasure;
  ReceiverExpectation expectation;
  expectation.peer = true;
  expectation.peer_topic = topic;
  expectation.devices = plan.devices;
  expectation.seconds = plan.seconds;
  expectation.start = plan.start;
  receiver->Begin(std::move(expectation));

  PeerResult result;
  PeerWindow window;
  const int64_t timeout_ms = 60'000;
  try {
    // No persistence, as cairn's link: the comparison is of the wire.
    mqtt::async_client client(server_uri, "cairn-bench-" + gateway_id, nullptr);
    const mqtt::connect_options options = mqtt::connect_options_builder()
                                              .mqtt_version(MQTTVERSION_3_1_1)
                                              .clean_session(true)
                                              .max_inflight(static_cast<int>(kPeerWindow))
                                              .connect_timeout(std::chrono::milliseconds(kConnectTimeoutMs))
                                              .finalize();
    if (!client.connect(options)->wait_for(std::chrono::milliseconds(kConnectTimeoutMs))) {
      return Status::TimedOut("the peer did not connect to " + server_uri);
    }
    Progress(plan, "peer", "publish " + std::to_string(data.delivered) + " records");
    SensorGenerator generator(GeneratorOptions(plan));
    std::vector<SensorRecord> batch;
    std::string payload;
    result.process_cpu_nanos = -ProcessCpuNanos();
    result.start_nanos = NowNanos();
    while (
        result.records < data.delivered &&
        generator.NextBatch(
            static_cast<size_t>(std::min<uint64_t>(plan.batch, data.delivered - result.records)), &batch)) {
      for (const SensorRecord& record : batch) {
        if (!window.WaitBelow(kPeerWindow, timeout_ms)) {
          CAIRN_RETURN_IF_ERROR(CheckInterrupt());
          return Status::TimedOut("no PUBACK for the peer's publishes within " +
                                  std::to_string(timeout_ms / 1000) + " s");
        }
        const uint64_t sent = result.records;
        if (sent >= kPeerReceiverLead) {
          CAIRN_RETURN_IF_ERROR(receiver->WaitFor(
              [sent](const ReceiverState& state) { return state.counts.messages + kPeerReceiverLead > sent; },
              timeout_ms, "the receiver to take the peer's messages"));
        }
        PeerPayload(record, &payload);
        window.Sent();
        try {
          client.publish(topic, payload.data(), payload.size(), 1, false, nullptr, window);
        } catch (...) {
          window.Unsent();
          throw;
        }
        ++result.records;
      }
    }
    if (!window.WaitBelow(1, timeout_ms)) {
      CAIRN_RETURN_IF_ERROR(CheckInterrupt());
      return Status::TimedOut("the peer's last publishes got no PUBACK");
    }
    result.acknowledged_nanos = window.last_done_nanos();
    const uint64_t records = result.records;
    const uint64_t distinct = data.distinct_records;
    CAIRN_RETURN_IF_ERROR(receiver->WaitFor(
        [records, distinct](const ReceiverState& state) {
          return state.counts.messages >= records && state.counts.distinct_records >= distinct;
        },
        WaitTimeoutMs(data.distinct_readings), "the peer's records at the receiver"));
    result.end_nanos = std::max(NowNanos(), result.acknowledged_nanos);
    result.process_cpu_nanos += ProcessCpuNanos();
    client.disconnect()->wait_for(std::chrono::seconds(10));
  } catch (const std::exception& error) {
    return Status::Unavailable(std::string("the peer's MQTT client: ") + error.what());
  }
  result.acknowledged = window.acknowledged();
  result.failed = window.failed();
  result.receiver = receiver->state();
  return result;
}

}  // namespace cairn::bench::sync_bench
