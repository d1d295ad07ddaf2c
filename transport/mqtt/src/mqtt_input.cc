#include "cairn/mqtt/mqtt_input.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cairn/mqtt/mqtt_topic.h"
#include "cairn/platform/mutex.h"
#include "cairn/text/json_value.h"

#include "json_reading.h"

namespace cairn {
namespace {

Status CheckFilter(const std::string& filter) {
  if (filter.empty()) return Status::InvalidArgument("empty MQTT topic filter");
  size_t start = 0;
  while (true) {
    const size_t end = std::min(filter.find('/', start), filter.size());
    std::string_view level = std::string_view(filter).substr(start, end - start);
    if (level.find_first_of("#+") != std::string_view::npos && level.size() != 1) {
      return Status::InvalidArgument("MQTT wildcard must fill a whole topic level: " + filter);
    }
    if (level == "#" && end != filter.size()) {
      return Status::InvalidArgument("MQTT '#' wildcard must be the last topic level: " + filter);
    }
    if (end == filter.size()) return Status::Ok();
    start = end + 1;
  }
}

// Adds the counters of `link` to `total`, and takes its state (connection,
// in-flight publishes, last error) as the current one.
void AddLinkStats(const MqttLinkStats& link, MqttLinkStats* total) {
  total->connected = link.connected;
  total->connects += link.connects;
  total->connect_failures += link.connect_failures;
  total->connection_losses += link.connection_losses;
  total->published += link.published;
  total->acknowledged += link.acknowledged;
  total->publish_failures += link.publish_failures;
  total->received += link.received;
  total->bytes_published += link.bytes_published;
  total->inflight = link.inflight;
  if (!link.last_error.empty()) total->last_error = link.last_error;
}

bool IsRefusal(const Status& status) {
  return status.Is(StatusCode::kUnavailable) || status.Is(StatusCode::kResourceExhausted);
}

}  // namespace

Result<MqttInputRoute> ParseMqttInputRoute(std::string_view text) {
  const size_t equals = text.rfind('=');
  if (equals == std::string_view::npos) {
    return Status::InvalidArgument("MQTT input route must be FILTER=TABLE, got '" + std::string(text) + "'");
  }
  MqttInputRoute route{std::string(text.substr(0, equals)), std::string(text.substr(equals + 1))};
  if (route.topic_filter.empty() || route.table.empty()) {
    return Status::InvalidArgument("MQTT input route needs a topic filter and a table: '" +
                                   std::string(text) + "'");
  }
  CAIRN_RETURN_IF_ERROR(CheckFilter(route.topic_filter));
  return route;
}

Status MqttInput::ParsePayload(std::string_view payload, const LineProtocolOptions& options,
                               std::vector<Record>* records, std::vector<std::string>* errors) {
  const size_t first = payload.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && (payload[first] == '{' || payload[first] == '[')) {
    Result<JsonValue> document = JsonValue::Parse(payload);
    if (!document.ok()) return document.status().WithContext("JSON payload");
    std::vector<const JsonValue*> readings;
    if (document->kind() == JsonValue::Kind::kArray) {
      for (const JsonValue& element : document->elements()) readings.push_back(&element);
    } else {
      readings.push_back(&*document);
    }
    for (size_t i = 0; i < readings.size(); ++i) {
      Result<Record> record = mqtt_internal::JsonReadingToRecord(*readings[i], options);
      if (record.ok()) {
        records->push_back(std::move(*record));
      } else {
        errors->push_back("reading " + std::to_string(i + 1) + ": " + record.status().message());
      }
    }
    return Status::Ok();
  }
  LineProtocolBatch batch = ParseLineProtocol(payload, options);
  for (LineProtocolRecord& line : batch.records) records->push_back(std::move(line.record));
  for (const LineProtocolError& error : batch.errors) {
    errors->push_back("line " + std::to_string(error.line_number) + ": " + error.reason);
  }
  return Status::Ok();
}

class MqttInput::Impl {
 public:
  Impl(Env* env, Engine* engine, MqttInputOptions options)
      : env_(env), engine_(engine), options_(std::move(options)) {}

  Status Init() {
    link_options_ = options_.link;
    for (const MqttInputRoute& route : options_.routes)
      link_options_.subscriptions.push_back(route.topic_filter);
    Result<std::unique_ptr<MqttLink>> link = CreateLink();
    if (!link.ok()) return link.status();
    link_ = std::move(*link);
    return Status::Ok();
  }

  Status Start() {
    MutexLock lifecycle(&lifecycle_mutex_);
    {
      MutexLock lock(&mutex_);
      if (stopping_) return Status::FailedPrecondition("MQTT input stopped");
      if (started_) return Status::FailedPrecondition("MQTT input already started");
      started_ = true;
    }
    // Only the input's thread replaces the link, and it does not run yet.
    CAIRN_RETURN_IF_ERROR(link_->Start());
    worker_ = env_->StartThread([this] { RunPauses(); });
    return Status::Ok();
  }

  void Stop() {
    MutexLock lifecycle(&lifecycle_mutex_);
    {
      MutexLock lock(&mutex_);
      if (stopped_) return;
      stopping_ = true;
      link_connected_ = false;
    }
    state_changed_.SignalAll();
    if (worker_.joinable()) worker_.join();
    MqttLink* link;
    {
      MutexLock lock(&mutex_);
      link = link_.get();
    }
    // Handlers still running hold what the engine refuses; none runs after this.
    if (link != nullptr) link->Stop();
    std::deque<HeldMessage> lost;
    {
      MutexLock lock(&mutex_);
      lost.swap(held_);
      stats_.messages += lost.size();
      stats_.messages_failed += lost.size();
      pausing_ = false;
      paused_ = false;
      stopped_ = true;
    }
    for (const HeldMessage& message : lost) {
      Log(message.where + "input stopped while the engine refused this message (" +
          std::to_string(message.records.size()) +
          " records); it was acknowledged to the broker and is lost");
    }
  }

  bool WaitConnected(int64_t timeout_ms) EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    // A wait's deadline: the condition variable's steady clock.
    state_changed_.WaitFor(&mutex_, std::chrono::milliseconds(std::max<int64_t>(timeout_ms, 0)),
                           [this]() REQUIRES(mutex_) { return link_connected_ || stopping_; });
    return link_connected_;
  }

  MqttInputStats stats() const {
    MutexLock lock(&mutex_);
    MqttInputStats copy = stats_;
    copy.paused = paused_;
    copy.messages_held = held_.size();
    copy.link = retired_link_stats_;
    // The link never calls into the input while holding its own lock, so
    // asking it under ours cannot deadlock.
    if (link_ != nullptr) AddLinkStats(link_->stats(), &copy.link);
    return copy;
  }

 private:
  // A message the engine refused, or one that arrived behind it, waiting in
  // memory to be written in arrival order.
  struct HeldMessage {
    std::string where;  // "MQTT input TOPIC -> TABLE: ", to prefix log lines
    std::string table;
    std::vector<Record> records;
    int refusals = 0;  // Engine::Write attempts refused so far
  };

  Result<std::unique_ptr<MqttLink>> CreateLink() {
    return options_.link_factory(
        env_, link_options_,
        [this](std::string_view topic, std::string_view payload) { OnMessage(topic, payload); },
        [this](bool connected, const std::string&) { OnConnection(connected); });
  }

  void Log(const std::string& line) {
    {
      MutexLock lock(&mutex_);
      stats_.last_error = line;
    }
    if (options_.log) options_.log(line);
  }

  const MqttInputRoute* RouteFor(std::string_view topic) const {
    for (const MqttInputRoute& route : options_.routes) {
      if (MqttTopicMatches(route.topic_filter, topic)) return &route;
    }
    return nullptr;
  }

  // Uniform in [0, min(retry_max_ms, retry_min_ms * 2^attempt)].
  int64_t RetryDelayMs(int attempt) {
    int64_t bound = options_.retry_min_ms;
    for (int i = 0; i < attempt && bound < options_.retry_max_ms; ++i) bound *= 2;
    bound = std::min(bound, options_.retry_max_ms);
    uint8_t bytes[8];
    if (!env_->RandomBytes(bytes).ok()) return bound;
    uint64_t random = 0;
    for (uint8_t byte : bytes) random = (random << 8) | byte;
    return static_cast<int64_t>(random % (static_cast<uint64_t>(bound) + 1));
  }

  // On Paho's thread.
  void OnConnection(bool connected) {
    {
      MutexLock lock(&mutex_);
      link_connected_ = connected && !stopping_;
    }
    state_changed_.SignalAll();
  }

  // On Paho's thread: returns without waiting for the engine beyond one
  // Engine::Write, so that Paho's other clients keep going.
  void OnMessage(std::string_view topic, std::string_view payload) {
    if (!HandleMessage(topic, payload)) return;
    MutexLock lock(&mutex_);
    ++stats_.messages;
  }

  // False when the message was held (it is counted once stored or lost).
  bool HandleMessage(std::string_view topic, std::string_view payload) {
    const MqttInputRoute* route = RouteFor(topic);
    if (route == nullptr) {
      // Only possible when the broker delivers beyond our filters (a
      // session subscribed earlier with other routes).
      {
        MutexLock lock(&mutex_);
        ++stats_.messages_failed;
      }
      Log("MQTT input: no route for topic " + std::string(topic) + "; message dropped");
      return true;
    }
    LineProtocolOptions parse_options;
    parse_options.precision = options_.precision;
    parse_options.default_timestamp = env_->NowUnixNanos();
    parse_options.device_tag = options_.device_tag;
    parse_options.max_line_bytes = options_.max_line_bytes;
    std::vector<Record> records;
    std::vector<std::string> errors;
    Status parsed = MqttInput::ParsePayload(payload, parse_options, &records, &errors);
    std::string where = "MQTT input " + std::string(topic) + " -> " + route->table + ": ";
    if (!parsed.ok()) {
      {
        MutexLock lock(&mutex_);
        ++stats_.messages_failed;
      }
      Log(where + parsed.message());
      return true;
    }
    {
      MutexLock lock(&mutex_);
      stats_.records_rejected += errors.size();
    }
    for (const std::string& error : errors) Log(where + error);
    if (records.empty()) return true;
    HeldMessage message{std::move(where), route->table, std::move(records), 0};
    {
      MutexLock lock(&mutex_);
      if (pausing_) {
        // Behind the held ones: written after them, by the input's thread.
        held_.push_back(std::move(message));
        return false;
      }
    }
    Status refusal = TryStore(message.where, message.table, message.records);
    if (refusal.ok()) return true;
    Log(message.where + refusal.ToString() + "; pausing the input and retrying");
    {
      MutexLock lock(&mutex_);
      message.refusals = 1;
      held_.push_back(std::move(message));
      pausing_ = true;
      ++stats_.pauses;
    }
    state_changed_.SignalAll();
    return false;
  }

  // Writes one message's records. OK when the message is settled (stored,
  // partly stored, or failed for good; counted and logged); the engine's
  // status when it refused the records as a whole for now (Unavailable,
  // ResourceExhausted), with nothing counted.
  Status TryStore(const std::string& where, const std::string& table, const std::vector<Record>& records) {
    // Paho acknowledged the message to the broker when it read it, so the
    // sync quota's budget must not turn it away (WriteReceived).
    Result<WriteResult> written = engine_->WriteReceived(table, records);
    if (!written.ok()) {
      if (IsRefusal(written.status())) return written.status();
      {
        MutexLock lock(&mutex_);
        ++stats_.messages_failed;
      }
      Log(where + written.status().ToString());
      return Status::Ok();
    }
    size_t stored = 0;
    std::vector<std::string> refused;
    for (size_t i = 0; i < written->records.size(); ++i) {
      const RecordResult& outcome = written->records[i];
      if (outcome.outcome == WriteOutcome::kStored || outcome.outcome == WriteOutcome::kDuplicate) {
        ++stored;
      } else {
        refused.push_back(where + "record " + std::to_string(i + 1) + " of " + records[i].device_id + "/" +
                          records[i].measure_name + " refused: " + outcome.reason);
      }
    }
    {
      MutexLock lock(&mutex_);
      stats_.records_stored += stored;
      stats_.records_rejected += refused.size();
    }
    for (const std::string& line : refused) Log(line);
    return Status::Ok();
  }

  // The input's thread: waits for a refusal, then pauses until the held
  // messages are stored. Never runs on Paho's threads, so it may stop and
  // start links.
  void RunPauses() EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    while (true) {
      state_changed_.Wait(&mutex_, [this]() REQUIRES(mutex_) { return stopping_ || pausing_; });
      if (stopping_) return;
      Pause();
    }
  }

  // One pause, from stopping the link to resuming with a new one; returns
  // early when Stop begins (Stop then accounts for the held messages).
  // Releases mutex_ while it calls the link and the engine.
  void Pause() REQUIRES(mutex_) {
    // The broker keeps for the session whatever it does not deliver: stop
    // delivering. MqttLink::Stop returns after the last handler call, so
    // the held queue is complete from here on.
    MqttLink* link = link_.get();
    mutex_.Unlock();
    link->Stop();
    mutex_.Lock();
    AddLinkStats(link_->stats(), &retired_link_stats_);
    retired_link_stats_.connected = false;
    retired_link_stats_.inflight = 0;
    std::unique_ptr<MqttLink> stopped = std::move(link_);
    link_connected_ = false;
    paused_ = true;
    mutex_.Unlock();
    // Destroyed before a new client with the same id exists.
    stopped.reset();
    mutex_.Lock();

    // Only this thread removes held messages, and no handler adds any while
    // the link is stopped, so the front stays put while unlocked.
    while (!held_.empty()) {
      if (stopping_) return;
      HeldMessage& message = held_.front();
      if (message.refusals > 0) {
        if (state_changed_.WaitFor(&mutex_, std::chrono::milliseconds(RetryDelayMs(message.refusals - 1)),
                                   [this]() REQUIRES(mutex_) { return stopping_; })) {
          return;
        }
        ++stats_.write_retries;
      }
      mutex_.Unlock();
      Status refusal = TryStore(message.where, message.table, message.records);
      mutex_.Lock();
      if (!refusal.ok()) {
        ++message.refusals;
        continue;
      }
      held_.pop_front();
      ++stats_.messages;
    }

    // A stopped link cannot start again: resume with a new one.
    for (int attempt = 0;; ++attempt) {
      if (stopping_) return;
      mutex_.Unlock();
      Result<std::unique_ptr<MqttLink>> created = CreateLink();
      // Logged once: the options passed at Create, so what fails now (a TLS
      // file gone) tends to last.
      if (!created.ok() && attempt == 0) Log("MQTT input cannot resume: " + created.status().ToString());
      mutex_.Lock();
      if (created.ok()) {
        if (stopping_) {
          mutex_.Unlock();
          created->reset();
          mutex_.Lock();
          return;
        }
        link_ = std::move(*created);
        break;
      }
      if (state_changed_.WaitFor(&mutex_, std::chrono::milliseconds(RetryDelayMs(attempt)),
                                 [this]() REQUIRES(mutex_) { return stopping_; })) {
        return;
      }
    }
    pausing_ = false;
    paused_ = false;
    MqttLink* resumed = link_.get();
    mutex_.Unlock();
    // Refused only for a link started or stopped before, not a new one.
    // Stop waits for this thread before it stops the link.
    Status started = resumed->Start();
    if (!started.ok()) Log("MQTT input cannot resume: " + started.ToString());
    mutex_.Lock();
  }

  Env* const env_;
  Engine* const engine_;
  const MqttInputOptions options_;
  // options_.link with the routes' filters as subscriptions.
  MqttLinkOptions link_options_;

  // Serialises Start and Stop. Never taken by handlers or the input's thread.
  Mutex lifecycle_mutex_ ACQUIRED_BEFORE(mutex_);
  std::thread worker_;

  // Taken briefly by handlers on Paho's thread; never held while calling
  // MqttLink::Stop, Start, Create or a link's destructor, nor the engine.
  mutable Mutex mutex_;
  CondVar state_changed_;
  bool started_ GUARDED_BY(mutex_) = false;
  bool stopping_ GUARDED_BY(mutex_) = false;
  bool stopped_ GUARDED_BY(mutex_) = false;
  // The current link announced its connection.
  bool link_connected_ GUARDED_BY(mutex_) = false;
  // A refusal asked for a pause; handlers hold what arrives (until resumed).
  bool pausing_ GUARDED_BY(mutex_) = false;
  // The link is stopped for the pause (until resumed).
  bool paused_ GUARDED_BY(mutex_) = false;
  std::deque<HeldMessage> held_ GUARDED_BY(mutex_);
  MqttInputStats stats_ GUARDED_BY(mutex_);
  // Counters of the links stopped by pauses.
  MqttLinkStats retired_link_stats_ GUARDED_BY(mutex_);
  // Last: destroyed (and stopped) first, while the members its handler uses
  // still exist. Null during a pause, between two links. Not GUARDED_BY:
  // only the input's thread replaces it (under mutex_), and Init and Start
  // use it before that thread runs; everyone else reads it under mutex_.
  std::unique_ptr<MqttLink> link_;
};

Result<std::unique_ptr<MqttInput>> MqttInput::Create(Env* env, Engine* engine, MqttInputOptions options) {
  if (options.routes.empty())
    return Status::InvalidArgument("MQTT input needs at least one route FILTER=TABLE");
  if (!options.link.subscriptions.empty()) {
    return Status::InvalidArgument(
        "MQTT input subscribes to its routes' filters; give no link subscriptions");
  }
  for (const MqttInputRoute& route : options.routes) {
    CAIRN_RETURN_IF_ERROR(CheckFilter(route.topic_filter));
    if (route.table.empty()) {
      return Status::InvalidArgument("MQTT input route " + route.topic_filter + " has no table");
    }
  }
  if (options.retry_min_ms < 1 || options.retry_max_ms < options.retry_min_ms) {
    return Status::InvalidArgument("MQTT input retry backoff needs 1 <= retry_min_ms <= retry_max_ms");
  }
  if (options.device_tag.empty()) return Status::InvalidArgument("MQTT input device_tag is empty");
  if (!options.link_factory) return Status::InvalidArgument("MQTT input needs an MQTT link factory");
  if (engine == nullptr) return Status::InvalidArgument("MQTT input needs an engine");
  auto impl = std::make_unique<Impl>(env, engine, std::move(options));
  CAIRN_RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<MqttInput>(new MqttInput(std::move(impl)));
}

MqttInput::MqttInput(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MqttInput::~MqttInput() { Stop(); }

Status MqttInput::Start() { return impl_->Start(); }

void MqttInput::Stop() { impl_->Stop(); }

bool MqttInput::WaitConnected(int64_t timeout_ms) { return impl_->WaitConnected(timeout_ms); }

MqttInputStats MqttInput::stats() const { return impl_->stats(); }

}  // namespace cairn
