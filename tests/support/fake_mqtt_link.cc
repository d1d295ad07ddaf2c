#include "fake_mqtt_link.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <utility>

namespace cairn {
// A link's state, shared by the MqttLink the factory returns and the
// broker's tasks, which may outlive it. Lock order: callback_mu_, then mu_;
// the broker's mu_ is never held with either.
class FakeMqttBroker::Link {
 public:
  Link(FakeMqttBroker* broker, MqttLinkOptions options, MqttLink::MessageHandler on_message,
       MqttLink::ConnectionHandler on_connection)
      : broker_(broker),
        options_(std::move(options)),
        on_message_(std::move(on_message)),
        on_connection_(std::move(on_connection)) {}

  const MqttLinkOptions& options() const { return options_; }

  Status Start(const std::shared_ptr<Link>& self) EXCLUDES(mu_) {
    {
      MutexLock lock(&mu_);
      if (started_) return Status::FailedPrecondition("MQTT link already started");
      if (stopping_) return Status::FailedPrecondition("MQTT link stopped");
      started_ = true;
    }
    broker_->Post([broker = broker_, self] { broker->Connect(self); });
    return Status::Ok();
  }

  Status Publish(const std::shared_ptr<Link>& self, const std::string& topic, std::string payload,
                 MqttLink::PublishCallback done) EXCLUDES(mu_) {
    CAIRN_RETURN_IF_ERROR(CheckMqttTopicName(topic));
    uint64_t key;
    {
      MutexLock lock(&mu_);
      CAIRN_RETURN_IF_ERROR(CheckPublishAdmission(options_, stopping_, connected_, pending_.size()));
      key = next_key_++;
      pending_.emplace(key, std::move(done));
      ++stats_.published;
      stats_.bytes_published += payload.size();
    }
    FakeMqttMessage message{options_.client_id, topic, std::move(payload)};
    broker_->Post([broker = broker_, self, key, message = std::move(message)]() mutable {
      broker->Route(self, key, std::move(message));
    });
    return Status::Ok();
  }

  bool WaitConnected(int64_t timeout_ms) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    // A test double's wait: the deadline may stay on the steady clock.
    return changed_.WaitFor(&mu_, std::chrono::milliseconds(std::max<int64_t>(timeout_ms, 0)),
                            [this]() REQUIRES(mu_) { return connected_ || stopping_; }) &&
           connected_;
  }

  bool connected() const EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return connected_;
  }

  MqttLinkStats stats() const EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    MqttLinkStats copy = stats_;
    copy.connected = connected_;
    copy.inflight = pending_.size();
    return copy;
  }

  void Stop() EXCLUDES(mu_, callback_mu_) {
    {
      MutexLock lock(&mu_);
      if (stopping_) {
        changed_.Wait(&mu_, [this]() REQUIRES(mu_) { return stopped_; });
        return;
      }
      stopping_ = true;
      connected_ = false;
    }
    changed_.SignalAll();
    std::map<uint64_t, MqttLink::PublishCallback> remaining;
    {
      // Waits for a handler that is running, then shuts the gate on the rest.
      MutexLock callbacks(&callback_mu_);
      MutexLock lock(&mu_);
      callbacks_enabled_ = false;
      up_ = false;
      remaining.swap(pending_);
      stats_.publish_failures += remaining.size();
    }
    broker_->Detach(this);
    for (auto& entry : remaining) {
      MqttLink::PublishCallback& done = entry.second;
      Invoke([&] {
        if (done) done(Status::Unavailable("MQTT link stopped before PUBACK (cancelled)"));
      });
    }
    {
      MutexLock lock(&mu_);
      stopped_ = true;
    }
    changed_.SignalAll();
  }

  // ---- the broker's thread ----------------------------------------------------

  bool stopping() const EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return stopping_;
  }

  void ConnectRefused(const std::string& reason) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    ++stats_.connect_failures;
    stats_.last_error = reason;
  }

  // CONNACK: the link may now receive (the session's kept messages); false
  // when it is stopping.
  bool Up() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    if (stopping_) return false;
    up_ = true;
    ++stats_.connects;
    return true;
  }

  // The subscriptions are in place: the link takes publishes.
  void Announce() EXCLUDES(mu_, callback_mu_) {
    MutexLock callbacks(&callback_mu_);
    {
      MutexLock lock(&mu_);
      if (!up_ || !callbacks_enabled_) return;
      connected_ = true;
    }
    changed_.SignalAll();
    if (on_connection_) Invoke([&] { on_connection_(true, ""); });
  }

  // False when the link cannot take the message (down or stopped).
  bool Deliver(const FakeMqttMessage& message) EXCLUDES(mu_, callback_mu_) {
    MutexLock callbacks(&callback_mu_);
    {
      MutexLock lock(&mu_);
      if (!up_ || !callbacks_enabled_) return false;
      ++stats_.received;
    }
    if (on_message_) Invoke([&] { on_message_(message.topic, message.payload); });
    return true;
  }

  void Acknowledge(uint64_t key) EXCLUDES(mu_, callback_mu_) {
    MutexLock callbacks(&callback_mu_);
    MqttLink::PublishCallback done;
    {
      MutexLock lock(&mu_);
      if (!callbacks_enabled_) return;
      auto it = pending_.find(key);
      if (it == pending_.end()) return;  // failed by a connection loss already
      done = std::move(it->second);
      pending_.erase(it);
      ++stats_.acknowledged;
    }
    Invoke([&] {
      if (done) done(Status::Ok());
    });
  }

  // The connection dropped: in-flight publishes fail, the handler learns it.
  void Lost(const std::string& reason) EXCLUDES(mu_, callback_mu_) {
    MutexLock callbacks(&callback_mu_);
    bool announce = false;
    std::map<uint64_t, MqttLink::PublishCallback> failed;
    {
      MutexLock lock(&mu_);
      up_ = false;
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
    changed_.SignalAll();
    for (auto& entry : failed) {
      MqttLink::PublishCallback& done = entry.second;
      Invoke([&] {
        if (done) done(Status::Unavailable("connection lost before PUBACK"));
      });
    }
    if (announce && on_connection_) Invoke([&] { on_connection_(false, reason); });
  }

 private:
  // Runs user code without letting an exception into the broker's thread.
  template <typename Fn>
  void Invoke(Fn&& fn) EXCLUDES(mu_) {
    try {
      fn();
    } catch (const std::exception& error) {
      MutexLock lock(&mu_);
      stats_.last_error = std::string("MQTT handler threw: ") + error.what();
    }
  }

  FakeMqttBroker* const broker_;
  const MqttLinkOptions options_;
  const MqttLink::MessageHandler on_message_;
  const MqttLink::ConnectionHandler on_connection_;

  // Held while user code runs, so that Stop can wait it out.
  Mutex callback_mu_ ACQUIRED_BEFORE(mu_);
  mutable Mutex mu_;
  CondVar changed_;
  bool started_ GUARDED_BY(mu_) = false;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool stopped_ GUARDED_BY(mu_) = false;
  bool callbacks_enabled_ GUARDED_BY(mu_) = true;
  bool up_ GUARDED_BY(mu_) = false;         // connected, subscriptions or not
  bool connected_ GUARDED_BY(mu_) = false;  // announced
  uint64_t next_key_ GUARDED_BY(mu_) = 1;
  std::map<uint64_t, MqttLink::PublishCallback> pending_ GUARDED_BY(mu_);
  MqttLinkStats stats_ GUARDED_BY(mu_);
};

namespace {

// What the factory returns: the MqttLink face of a shared Link.
class FakeMqttLink final : public MqttLink {
 public:
  explicit FakeMqttLink(std::shared_ptr<FakeMqttBroker::Link> link) : link_(std::move(link)) {}
  ~FakeMqttLink() override { link_->Stop(); }

  Status Start() override { return link_->Start(link_); }
  Status Publish(const std::string& topic, std::string payload, PublishCallback done) override {
    return link_->Publish(link_, topic, std::move(payload), std::move(done));
  }
  bool WaitConnected(int64_t timeout_ms) override { return link_->WaitConnected(timeout_ms); }
  bool connected() const override { return link_->connected(); }
  MqttLinkStats stats() const override { return link_->stats(); }
  void Stop() override { link_->Stop(); }

 private:
  const std::shared_ptr<FakeMqttBroker::Link> link_;
};

}  // namespace

FakeMqttBroker::FakeMqttBroker() : thread_([this] { Run(); }) {}

FakeMqttBroker::~FakeMqttBroker() {
  {
    MutexLock lock(&mu_);
    shutting_down_ = true;
  }
  changed_.SignalAll();
  thread_.join();
}

MqttLinkFactory FakeMqttBroker::factory() {
  return [this](Env*, MqttLinkOptions options, MqttLink::MessageHandler on_message,
                MqttLink::ConnectionHandler on_connection) -> Result<std::unique_ptr<MqttLink>> {
    if (options.client_id.empty()) return Status::InvalidArgument("empty MQTT client id");
    if (options.max_inflight == 0) return Status::InvalidArgument("MQTT max_inflight must be 1..65535, got 0");
    for (const std::string& filter : options.subscriptions) {
      CAIRN_RETURN_IF_ERROR(CheckMqttTopicFilter(filter));
    }
    auto link = std::make_shared<Link>(this, std::move(options), std::move(on_message), std::move(on_connection));
    return std::unique_ptr<MqttLink>(new FakeMqttLink(std::move(link)));
  };
}

void FakeMqttBroker::Post(std::function<void()> task) {
  {
    MutexLock lock(&mu_);
    tasks_.push_back(std::move(task));
  }
  changed_.SignalAll();
}

void FakeMqttBroker::Run() {
  mu_.Lock();
  while (true) {
    busy_ = false;
    changed_.SignalAll();
    changed_.Wait(&mu_, [this]() REQUIRES(mu_) { return shutting_down_ || !tasks_.empty(); });
    if (shutting_down_) break;
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    busy_ = true;
    mu_.Unlock();
    task();
    task = nullptr;
    mu_.Lock();
  }
  mu_.Unlock();
}

void FakeMqttBroker::WaitIdle() {
  MutexLock lock(&mu_);
  changed_.Wait(&mu_, [this]() REQUIRES(mu_) { return shutting_down_ || (tasks_.empty() && !busy_); });
}

void FakeMqttBroker::Publish(const std::string& topic, std::string payload) {
  FakeMqttMessage message{"", topic, std::move(payload)};
  Post([this, message = std::move(message)]() mutable { Route(nullptr, 0, std::move(message)); });
}

void FakeMqttBroker::AddFault(FaultKind kind, const std::string& filter, int count) {
  MutexLock lock(&mu_);
  faults_.push_back(Fault{kind, filter, count, count, {}});
}

void FakeMqttBroker::DropMessages(const std::string& filter, int count) {
  AddFault(FaultKind::kDrop, filter, count);
}
void FakeMqttBroker::WithholdAcks(const std::string& filter, int count) {
  AddFault(FaultKind::kWithholdAck, filter, count);
}
void FakeMqttBroker::DuplicateMessages(const std::string& filter, int count) {
  AddFault(FaultKind::kDuplicate, filter, count);
}
void FakeMqttBroker::ReorderMessages(const std::string& filter, int count) {
  AddFault(FaultKind::kReorder, filter, count);
}

void FakeMqttBroker::DisconnectClient(const std::string& client_id) {
  Post([this, client_id] { Drop(client_id, "connection lost: disconnected by the broker"); });
}

void FakeMqttBroker::RefuseConnects(int count) {
  MutexLock lock(&mu_);
  refuse_connects_ += count;
}

void FakeMqttBroker::SetAcceptingConnects(bool accepting) {
  std::vector<std::shared_ptr<Link>> waiting;
  {
    MutexLock lock(&mu_);
    accepting_ = accepting;
    if (accepting) waiting.swap(waiting_);
  }
  for (std::shared_ptr<Link>& link : waiting) {
    Post([this, link] { Connect(link); });
  }
}

std::vector<FakeMqttMessage> FakeMqttBroker::published(const std::string& filter) const {
  MutexLock lock(&mu_);
  std::vector<FakeMqttMessage> matching;
  for (const FakeMqttMessage& message : published_) {
    if (MqttTopicMatches(filter, message.topic)) matching.push_back(message);
  }
  return matching;
}

bool FakeMqttBroker::WaitForPublished(const std::string& filter, size_t count, int64_t timeout_ms) const {
  auto enough = [&]() REQUIRES(mu_) {
    size_t n = 0;
    for (const FakeMqttMessage& message : published_) n += MqttTopicMatches(filter, message.topic);
    return n >= count;
  };
  MutexLock lock(&mu_);
  // A test double's wait: the deadline may stay on the steady clock.
  return changed_.WaitFor(&mu_, std::chrono::milliseconds(timeout_ms), enough);
}

uint64_t FakeMqttBroker::connects(const std::string& client_id) const {
  MutexLock lock(&mu_);
  auto session = sessions_.find(client_id);
  return session == sessions_.end() ? 0 : session->second.connects;
}

void FakeMqttBroker::Connect(const std::shared_ptr<Link>& link) {
  if (link->stopping()) return;
  const MqttLinkOptions& options = link->options();
  std::shared_ptr<Link> previous;
  bool refused = false;
  {
    MutexLock lock(&mu_);
    if (!accepting_ || refuse_connects_ > 0) {
      refused = true;
      if (accepting_) {
        --refuse_connects_;
        tasks_.push_back([this, link] { Connect(link); });
      } else {
        waiting_.push_back(link);
      }
    } else {
      Session& session = sessions_[options.client_id];
      if (options.clean_session) {
        session.filters.clear();
        session.queue.clear();
      }
      session.clean = options.clean_session;
      previous = std::move(session.link);
      session.link = link;
      ++session.connects;
      for (const std::string& filter : options.subscriptions) {
        if (std::find(session.filters.begin(), session.filters.end(), filter) == session.filters.end()) {
          session.filters.push_back(filter);
        }
      }
    }
  }
  if (refused) {
    link->ConnectRefused("broker refused the connection: server unavailable");
    return;
  }
  changed_.SignalAll();
  if (previous != nullptr && previous != link) previous->Lost("connection lost: session taken over");
  if (!link->Up()) {
    Detach(link.get());
    return;
  }
  // What the session kept arrives before the link counts as connected.
  Deliver(options.client_id);
  link->Announce();
}

void FakeMqttBroker::Route(const std::shared_ptr<Link>& from, uint64_t key, FakeMqttMessage message) {
  bool acknowledge = true;
  std::vector<std::string> clients;
  {
    MutexLock lock(&mu_);
    published_.push_back(message);
    std::vector<FakeMqttMessage> to_route{message};
    int copies = 1;
    for (Fault& fault : faults_) {
      if (fault.remaining == 0 || !MqttTopicMatches(fault.filter, message.topic)) continue;
      switch (fault.kind) {
        case FaultKind::kDrop:
          if (!to_route.empty()) {
            --fault.remaining;
            to_route.clear();
          }
          break;
        case FaultKind::kWithholdAck:
          if (acknowledge) {
            --fault.remaining;
            acknowledge = false;
          }
          break;
        case FaultKind::kDuplicate:
          if (copies == 1) {
            --fault.remaining;
            copies = 2;
          }
          break;
        case FaultKind::kReorder:
          if (to_route.size() == 1) {
            --fault.remaining;
            fault.held.push_back(std::move(to_route.front()));
            to_route.clear();
            if (fault.remaining == 0) to_route.assign(fault.held.rbegin(), fault.held.rend());
          }
          break;
      }
    }
    faults_.erase(std::remove_if(faults_.begin(), faults_.end(), [](const Fault& f) { return f.remaining == 0; }),
                  faults_.end());
    for (const FakeMqttMessage& routed : to_route) {
      for (auto& [client_id, session] : sessions_) {
        const bool subscribed = std::any_of(session.filters.begin(), session.filters.end(),
                                            [&](const std::string& f) { return MqttTopicMatches(f, routed.topic); });
        if (!subscribed) continue;
        for (int i = 0; i < copies; ++i) session.queue.push_back(routed);
        clients.push_back(client_id);
      }
    }
  }
  changed_.SignalAll();
  if (from != nullptr && acknowledge) from->Acknowledge(key);
  for (const std::string& client_id : clients) Deliver(client_id);
}

void FakeMqttBroker::Deliver(const std::string& client_id) {
  while (true) {
    std::shared_ptr<Link> link;
    FakeMqttMessage message;
    {
      MutexLock lock(&mu_);
      auto session = sessions_.find(client_id);
      if (session == sessions_.end() || session->second.link == nullptr || session->second.queue.empty()) return;
      link = session->second.link;
      message = std::move(session->second.queue.front());
      session->second.queue.pop_front();
    }
    if (link->Deliver(message)) continue;
    // Only this thread takes from the queue, so the front is still its place.
    MutexLock lock(&mu_);
    auto session = sessions_.find(client_id);
    if (session != sessions_.end()) session->second.queue.push_front(std::move(message));
    return;
  }
}

void FakeMqttBroker::Drop(const std::string& client_id, const std::string& reason) {
  std::shared_ptr<Link> link;
  {
    MutexLock lock(&mu_);
    auto session = sessions_.find(client_id);
    if (session == sessions_.end() || session->second.link == nullptr) return;
    link = session->second.link;
    DetachLocked(link.get());
  }
  link->Lost(reason);
  if (!link->stopping()) Connect(link);
}

void FakeMqttBroker::Detach(const Link* link) {
  MutexLock lock(&mu_);
  DetachLocked(link);
}

void FakeMqttBroker::DetachLocked(const Link* link) {
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    if (it->second.link.get() == link) {
      it->second.link.reset();
      if (it->second.clean) {
        it = sessions_.erase(it);
        continue;
      }
    }
    ++it;
  }
  waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(),
                                [link](const std::shared_ptr<Link>& w) { return w.get() == link; }),
                 waiting_.end());
}

}  // namespace cairn
