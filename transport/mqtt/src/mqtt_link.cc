#include "cairn/mqtt/mqtt_link.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include <mqtt/async_client.h>

#include "cairn/mqtt/mqtt_topic.h"
#include "cairn/platform/mutex.h"
#include "mqtt_link_checks.h"
#include "mqtt_paho_options.h"

namespace cairn {
namespace {

// Paho's disconnect waits this long for in-flight PUBACKs on Stop.
constexpr int kStopDisconnectTimeoutMs = 1000;
// Beyond Paho's own timeouts, how long we wait for one of its tokens before
// deciding it will never complete.
constexpr int64_t kTokenGraceMs = 5000;
// MQTT 3.1.1 SUBACK return code for a refused subscription.
constexpr int kSubackFailure = 0x80;

class MqttLinkImpl;

// Forwards Paho's report on an operation (connect, subscribe, publish) to
// MqttLinkImpl; Paho calls it on its own threads.
class OperationListener : public mqtt::iaction_listener {
 public:
  using Callback = void (MqttLinkImpl::*)(const mqtt::token& token, bool success);
  OperationListener(MqttLinkImpl* link, Callback callback) : link_(link), callback_(callback) {}
  void on_success(const mqtt::token& token) override;
  void on_failure(const mqtt::token& token) override;

 private:
  MqttLinkImpl* link_;
  Callback callback_;
};

class MqttLinkImpl final : public MqttLink {
 public:
  MqttLinkImpl(Env* env, MqttLinkOptions options, std::string paho_uri, MessageHandler on_message,
               ConnectionHandler on_connection)
      : env_(env),
        options_(std::move(options)),
        paho_uri_(std::move(paho_uri)),
        on_message_(std::move(on_message)),
        on_connection_(std::move(on_connection)),
        connect_listener_(this, &MqttLinkImpl::OnConnectResult),
        subscribe_listener_(this, &MqttLinkImpl::OnSubscribeResult),
        publish_listener_(this, &MqttLinkImpl::OnPublishResult) {}

  ~MqttLinkImpl() override {
    Stop();
    // Destroying the client (MQTTAsync_destroy) ends Paho's use of our
    // callbacks before the members they touch go away.
    client_.reset();
  }

  // Builds the Paho client and its options; a Paho exception here means
  // options Paho itself refuses.
  Status Init() {
    try {
      // No persistence object: Paho keeps in-flight messages in memory only.
      client_ = std::make_unique<mqtt::async_client>(paho_uri_, options_.client_id, nullptr);
      connect_options_ = PahoConnectOptions(options_);
      client_->set_message_callback([this](mqtt::const_message_ptr message) { OnMessage(message); });
      client_->set_connection_lost_handler([this](const std::string& cause) { OnConnectionLost(cause); });
    } catch (const std::exception& error) {
      return Status::InvalidArgument(std::string("MQTT client for ") + options_.server_uri +
                                     " rejected: " + error.what());
    }
    return Status::Ok();
  }

  Status Start() override {
    MutexLock lock(&mutex_);
    if (started_) return Status::FailedPrecondition("MQTT link already started");
    if (stopping_) return Status::FailedPrecondition("MQTT link stopped");
    started_ = true;
    thread_ = env_->StartThread([this] { ConnectionLoop(); });
    return Status::Ok();
  }

  Status Publish(const std::string& topic, std::string payload, PublishCallback done) override {
    CAIRN_RETURN_IF_ERROR(CheckMqttTopicName(topic));
    uintptr_t key;
    {
      MutexLock lock(&mutex_);
      CAIRN_RETURN_IF_ERROR(CheckPublishAdmission(options_, stopping_, connected_, pending_.size()));
      key = next_publish_key_++;
      pending_.emplace(key, std::move(done));
      // Counted before Paho has it so that a fast PUBACK never shows more
      // acknowledged than published; taken back below if Paho refuses.
      ++stats_.published;
      stats_.bytes_published += payload.size();
    }
    const size_t payload_bytes = payload.size();
    std::string failure;
    try {
      mqtt::message_ptr message = mqtt::make_message(topic, std::move(payload), 1, false);
      client_->publish(message, reinterpret_cast<void*>(key), publish_listener_);
    } catch (const std::exception& error) {
      failure = error.what();
    }
    if (failure.empty()) return Status::Ok();
    MutexLock lock(&mutex_);
    stats_.last_error = "publish to " + topic + " failed: " + failure;
    // A connection loss may already have failed it (and called `done`): then
    // the publish counts as accepted.
    if (pending_.erase(key) == 0) return Status::Ok();
    --stats_.published;
    stats_.bytes_published -= payload_bytes;
    return Status::Unavailable("MQTT publish to " + topic + " failed: " + failure);
  }

  bool WaitConnected(int64_t timeout_ms) override {
    MutexLock lock(&mutex_);
    // A wait's deadline: the condition variable's steady clock.
    return state_changed_.WaitFor(&mutex_, std::chrono::milliseconds(std::max<int64_t>(timeout_ms, 0)),
                                  [this]() REQUIRES(mutex_) { return connected_ || stopping_; }) &&
           connected_;
  }

  bool connected() const override {
    MutexLock lock(&mutex_);
    return connected_;
  }

  MqttLinkStats stats() const override {
    MutexLock lock(&mutex_);
    MqttLinkStats copy = stats_;
    copy.connected = connected_;
    copy.inflight = pending_.size();
    return copy;
  }

  void Stop() override {
    {
      MutexLock lock(&mutex_);
      if (stopping_) {
        // A concurrent second caller returns when the first is done.
        state_changed_.Wait(&mutex_, [this]() REQUIRES(mutex_) { return stopped_; });
        return;
      }
      stopping_ = true;
      connected_ = false;
    }
    state_changed_.SignalAll();
    if (thread_.joinable()) thread_.join();
    if (client_ != nullptr) {
      bool awaiting_puback;
      {
        MutexLock lock(&mutex_);
        awaiting_puback = !pending_.empty();
      }
      // Paho lets a disconnect with a timeout run to its next cycle even
      // with nothing in flight; without PUBACKs to wait for, do not wait.
      const int timeout_ms = awaiting_puback ? kStopDisconnectTimeoutMs : 0;
      try {
        if (client_->is_connected()) {
          client_->disconnect(timeout_ms)->wait_for(std::chrono::milliseconds(timeout_ms + kTokenGraceMs));
        }
      } catch (const std::exception&) {
        // Already disconnected or the connection broke meanwhile: nothing to close.
      }
    }
    std::map<uintptr_t, PublishCallback> remaining;
    {
      // Waits for a handler that is running, then shuts the gate on the rest.
      std::lock_guard<std::recursive_mutex> callbacks(callback_mutex_);
      MutexLock lock(&mutex_);
      callbacks_enabled_ = false;
      remaining.swap(pending_);
      stats_.publish_failures += remaining.size();
    }
    for (auto& entry : remaining) {
      PublishCallback& done = entry.second;
      // Status has no cancellation code; Unavailable tells the caller to
      // send it again on a later link, which is what a cancelled publish needs.
      Invoke([&] {
        if (done) done(Status::Unavailable("MQTT link stopped before PUBACK (cancelled)"));
      });
    }
    {
      MutexLock lock(&mutex_);
      stopped_ = true;
    }
    state_changed_.SignalAll();
  }

  void OnPublishResult(const mqtt::token& token, bool success) {
    const uintptr_t key = reinterpret_cast<uintptr_t>(token.get_user_context());
    std::lock_guard<std::recursive_mutex> callbacks(callback_mutex_);
    PublishCallback done;
    Status status;
    {
      MutexLock lock(&mutex_);
      if (!callbacks_enabled_) return;
      auto it = pending_.find(key);
      // Already failed by a connection loss; Paho re-sent it afterwards.
      if (it == pending_.end()) return;
      done = std::move(it->second);
      pending_.erase(it);
      if (success) {
        ++stats_.acknowledged;
      } else {
        ++stats_.publish_failures;
        // Paho fails a publish only when the connection ends under it.
        status = Status::Unavailable("connection lost before PUBACK (" +
                                     ConnectFailureReason(token.get_return_code()) + ")");
        stats_.last_error = status.message();
      }
    }
    Invoke([&] {
      if (done) done(status);
    });
  }

 private:
  // Runs user code without letting an exception into Paho's threads.
  template <typename Fn>
  void Invoke(Fn&& fn) {
    try {
      fn();
    } catch (const std::exception& error) {
      MutexLock lock(&mutex_);
      stats_.last_error = std::string("MQTT handler threw: ") + error.what();
    } catch (...) {
      MutexLock lock(&mutex_);
      stats_.last_error = "MQTT handler threw";
    }
  }

  void OnMessage(const mqtt::const_message_ptr& message) {
    if (message == nullptr) return;
    std::lock_guard<std::recursive_mutex> callbacks(callback_mutex_);
    {
      MutexLock lock(&mutex_);
      if (!callbacks_enabled_) return;
      ++stats_.received;
    }
    if (!on_message_) return;
    Invoke([&] {
      const mqtt::binary& payload = message->get_payload();
      on_message_(message->get_topic(), std::string_view(payload.data(), payload.size()));
    });
  }

  void OnConnectionLost(const std::string& cause) {
    std::lock_guard<std::recursive_mutex> callbacks(callback_mutex_);
    const std::string reason = cause.empty() ? "connection to MQTT broker lost" : "connection lost: " + cause;
    bool announce = false;
    std::map<uintptr_t, PublishCallback> failed;
    {
      MutexLock lock(&mutex_);
      link_up_ = false;
      if (!attempt_done_) {
        attempt_done_ = true;
        attempt_failure_ = reason + " while subscribing";
      }
      if (!callbacks_enabled_) return;
      if (connected_) {
        connected_ = false;
        announce = true;
        ++stats_.connection_losses;
        stats_.last_error = reason;
      }
      failed.swap(pending_);
      stats_.publish_failures += failed.size();
    }
    state_changed_.SignalAll();
    for (auto& entry : failed) {
      PublishCallback& done = entry.second;
      Invoke([&] {
        if (done) done(Status::Unavailable("connection lost before PUBACK"));
      });
    }
    if (announce && on_connection_) Invoke([&] { on_connection_(false, reason); });
  }

  // Uniform in [0, min(reconnect_max_ms, reconnect_min_ms * 2^failures)].
  int64_t BackoffMs(int failures) {
    int64_t bound = options_.reconnect_min_ms;
    for (int i = 0; i < failures && bound < options_.reconnect_max_ms; ++i) bound *= 2;
    bound = std::min(bound, options_.reconnect_max_ms);
    uint8_t bytes[8];
    if (!env_->RandomBytes(bytes).ok()) return bound;
    uint64_t random = 0;
    for (uint8_t byte : bytes) random = (random << 8) | byte;
    return static_cast<int64_t>(random % (static_cast<uint64_t>(bound) + 1));
  }

  // Waits for a Paho token, giving up early when Stop begins. Returns the
  // failure reason, or "" on success.
  std::string AwaitToken(const mqtt::token_ptr& token, int64_t timeout_ms, const char* what) {
    const int64_t deadline_ns = env_->MonotonicNanos() + timeout_ms * 1'000'000;
    try {
      while (!token->wait_for(std::chrono::milliseconds(50))) {
        if (env_->MonotonicNanos() >= deadline_ns) return std::string(what) + " timed out";
      }
    } catch (const mqtt::exception& error) {
      const int code = error.get_return_code();
      if (code >= 1 && code <= 5) return std::string(what) + " failed: " + ConnectFailureReason(code);
      return std::string(what) + " failed: " + error.what();
    } catch (const std::exception& error) {
      return std::string(what) + " failed: " + error.what();
    }
    return "";
  }

  // One connect attempt with the subscriptions renewed; "" when the link
  // is up and announced. Runs on the link's thread holding no lock: the
  // subscriptions and the announcement happen in Paho's callbacks
  // (OnConnectResult, OnSubscribeResult, Announce), which run under Paho's
  // library lock. Taking that lock while holding callback_mutex_ on this
  // thread could deadlock against a Paho thread delivering a message.
  std::string ConnectOnce() {
    {
      MutexLock lock(&mutex_);
      attempt_done_ = false;
      attempt_failure_.clear();
    }
    mqtt::token_ptr token;
    try {
      token = client_->connect(connect_options_, nullptr, connect_listener_);
    } catch (const std::exception& error) {
      EndAttempt("");
      return std::string("connect failed: ") + error.what();
    }
    // Paho bounds the attempt by connect_timeout; the grace covers a stuck
    // library.
    std::string failure = AwaitToken(token, options_.connect_timeout_ms + kTokenGraceMs, "connect");
    if (!failure.empty()) {
      EndAttempt("");
      return failure;
    }
    bool stopping;
    {
      MutexLock lock(&mutex_);
      // A wait's deadline: the condition variable's steady clock.
      state_changed_.WaitFor(&mutex_, std::chrono::milliseconds(options_.connect_timeout_ms + kTokenGraceMs),
                             [this]() REQUIRES(mutex_) { return attempt_done_ || stopping_; });
      if (attempt_done_) return attempt_failure_;
      // Timed out subscribing, or stopping: late callbacks of this attempt
      // must find it over.
      attempt_done_ = true;
      stopping = stopping_;
    }
    DisconnectQuietly();
    return stopping ? "stopping" : "subscribe timed out";
  }

  // Marks the attempt over (with `failure`, "" when it already failed
  // elsewhere); false when it was already over.
  bool EndAttempt(const std::string& failure) {
    {
      MutexLock lock(&mutex_);
      if (attempt_done_) return false;
      attempt_done_ = true;
      attempt_failure_ = failure;
    }
    state_changed_.SignalAll();
    return true;
  }

  // On Paho's thread: CONNACK (or the connect's failure, which the link's
  // thread learns from the token).
  void OnConnectResult(const mqtt::token&, bool success) {
    if (!success) return;
    {
      MutexLock lock(&mutex_);
      link_up_ = true;
      ++stats_.connects;
      subscribe_index_ = 0;
    }
    SubscribeNext();
  }

  // On Paho's thread: subscribes to the next filter, or announces the link
  // when all are in place.
  void SubscribeNext() {
    std::string filter;
    uintptr_t key;
    {
      MutexLock lock(&mutex_);
      if (attempt_done_ || stopping_) return;
      if (subscribe_index_ == options_.subscriptions.size()) {
        // Falls through to Announce below, outside this lock.
        key = 0;
      } else {
        filter = options_.subscriptions[subscribe_index_];
        key = subscribe_key_ = next_subscribe_key_++;
      }
    }
    if (key == 0) {
      Announce();
      return;
    }
    try {
      client_->subscribe(filter, 1, reinterpret_cast<void*>(key), subscribe_listener_);
    } catch (const std::exception& error) {
      AbandonConnection(std::string("subscribe to ") + filter + " failed: " + error.what());
    }
  }

  void OnSubscribeResult(const mqtt::token& token, bool success) {
    const uintptr_t key = reinterpret_cast<uintptr_t>(token.get_user_context());
    std::string filter;
    {
      MutexLock lock(&mutex_);
      // A subscription of an attempt that is already over.
      if (key != subscribe_key_ || attempt_done_) return;
      filter = options_.subscriptions[subscribe_index_];
    }
    std::string failure;
    if (!success) {
      failure = "subscribe to " + filter + " failed: " + ConnectFailureReason(token.get_return_code());
    } else {
      try {
        const mqtt::subscribe_response response = token.get_subscribe_response();
        for (mqtt::ReasonCode code : response.get_reason_codes()) {
          if (static_cast<int>(code) >= kSubackFailure) failure = "broker refused subscription to " + filter;
        }
      } catch (const std::exception& error) {
        failure = std::string("subscribe to ") + filter + " failed: " + error.what();
      }
    }
    if (!failure.empty()) {
      AbandonConnection(failure);
      return;
    }
    {
      MutexLock lock(&mutex_);
      ++subscribe_index_;
    }
    SubscribeNext();
  }

  // On Paho's thread: the connection is up but unusable (a subscription
  // failed); drop it so the link's thread tries again after a backoff.
  void AbandonConnection(const std::string& failure) {
    if (!EndAttempt(failure)) return;
    {
      MutexLock lock(&mutex_);
      link_up_ = false;
    }
    try {
      client_->disconnect(0);
    } catch (const std::exception&) {
      // Gone already.
    }
  }

  // On Paho's thread: the subscriptions are in place.
  void Announce() {
    std::lock_guard<std::recursive_mutex> callbacks(callback_mutex_);
    bool up;
    {
      MutexLock lock(&mutex_);
      if (attempt_done_ || stopping_ || !callbacks_enabled_) return;
      attempt_done_ = true;
      up = link_up_;
      if (!up) {
        attempt_failure_ = "connection lost while subscribing";
      } else {
        attempt_failure_.clear();
        connected_ = true;
      }
    }
    state_changed_.SignalAll();
    if (up && on_connection_) Invoke([&] { on_connection_(true, ""); });
  }

  void DisconnectQuietly() {
    try {
      if (client_->is_connected()) {
        client_->disconnect(0)->wait_for(std::chrono::milliseconds(kTokenGraceMs));
      }
    } catch (const std::exception&) {
      // The connection is gone either way.
    }
    MutexLock lock(&mutex_);
    link_up_ = false;
  }

  void ConnectionLoop() EXCLUDES(mutex_) {
    int failures = 0;
    bool first = true;
    MutexLock lock(&mutex_);
    while (!stopping_) {
      if (!first) {
        const int64_t delay_ms = BackoffMs(failures);
        // The backoff is a wait that Stop cuts short: its deadline is the
        // condition variable's steady clock.
        if (state_changed_.WaitFor(&mutex_, std::chrono::milliseconds(delay_ms),
                                   [this]() REQUIRES(mutex_) { return stopping_; })) {
          break;
        }
      }
      first = false;
      mutex_.Unlock();
      std::string failure = ConnectOnce();
      mutex_.Lock();
      if (stopping_) break;
      if (!failure.empty()) {
        ++failures;
        ++stats_.connect_failures;
        stats_.last_error = failure;
        continue;
      }
      failures = 0;
      state_changed_.Wait(&mutex_, [this]() REQUIRES(mutex_) { return stopping_ || !link_up_; });
    }
  }

  Env* const env_;
  const MqttLinkOptions options_;
  const std::string paho_uri_;
  const MessageHandler on_message_;
  const ConnectionHandler on_connection_;
  OperationListener connect_listener_;
  OperationListener subscribe_listener_;
  OperationListener publish_listener_;
  mqtt::connect_options connect_options_;

  // Serialises every call into user code (handlers, publish callbacks) and
  // lets Stop wait out the one that runs. Taken before mutex_; recursive in
  // case Paho ever reports an outcome on the thread of the call it answers.
  // cairn::Mutex is not recursive, so this one stays a std::recursive_mutex,
  // which the thread-safety analysis does not see: the order (this, then
  // mutex_) is kept by hand.
  std::recursive_mutex callback_mutex_;
  mutable Mutex mutex_;
  CondVar state_changed_;
  bool started_ GUARDED_BY(mutex_) = false;
  bool stopping_ GUARDED_BY(mutex_) = false;
  bool stopped_ GUARDED_BY(mutex_) = false;
  bool callbacks_enabled_ GUARDED_BY(mutex_) = true;
  // Paho has a connection (CONNACK seen, no loss since).
  bool link_up_ GUARDED_BY(mutex_) = false;
  // link_up_ with the subscriptions in place and announced.
  bool connected_ GUARDED_BY(mutex_) = false;
  // The current connect attempt has ended (connected, or failed with
  // attempt_failure_); Paho's callbacks of an ended attempt do nothing.
  bool attempt_done_ GUARDED_BY(mutex_) = true;
  std::string attempt_failure_ GUARDED_BY(mutex_);
  // Which subscription the attempt is at, and the key of its request.
  size_t subscribe_index_ GUARDED_BY(mutex_) = 0;
  uintptr_t subscribe_key_ GUARDED_BY(mutex_) = 0;
  uintptr_t next_subscribe_key_ GUARDED_BY(mutex_) = 1;
  uintptr_t next_publish_key_ GUARDED_BY(mutex_) = 1;
  std::map<uintptr_t, PublishCallback> pending_ GUARDED_BY(mutex_);
  MqttLinkStats stats_ GUARDED_BY(mutex_);
  std::thread thread_;

  // Last: destroyed first, so Paho stops calling in while the rest exists.
  std::unique_ptr<mqtt::async_client> client_;
};

void OperationListener::on_success(const mqtt::token& token) { (link_->*callback_)(token, true); }
void OperationListener::on_failure(const mqtt::token& token) { (link_->*callback_)(token, false); }

}  // namespace

Result<std::unique_ptr<MqttLink>> MqttLink::Create(Env* env, MqttLinkOptions options,
                                                   MessageHandler on_message,
                                                   ConnectionHandler on_connection) {
  std::string paho_uri;
  CAIRN_RETURN_IF_ERROR(CheckOptions(env, options, &paho_uri));
  auto link = std::make_unique<MqttLinkImpl>(env, std::move(options), std::move(paho_uri),
                                             std::move(on_message), std::move(on_connection));
  CAIRN_RETURN_IF_ERROR(link->Init());
  return std::unique_ptr<MqttLink>(std::move(link));
}

}  // namespace cairn
