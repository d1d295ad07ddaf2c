// Mutex, SharedMutex and CondVar: the locks every cairn layer uses, annotated
// so that Clang's thread-safety analysis (-Wthread-safety) checks at compile
// time that guarded state is touched only under its lock and that locks are
// taken in their declared order.
//
// libstdc++'s std::mutex carries no capability attributes, so the analysis
// cannot see it; these thin wrappers add them and nothing else. Under g++ the
// attributes expand to nothing and the wrappers cost what std::mutex costs.
//
// Use:
//   class Counter {
//    public:
//     void Add(int n) EXCLUDES(mu_) { MutexLock lock(&mu_); total_ += n; }
//    private:
//     void AddLocked(int n) REQUIRES(mu_) { total_ += n; }
//     Mutex mu_;
//     int total_ GUARDED_BY(mu_) = 0;
//   };
//
// Thread-safety: every member is safe to call from any thread (they are the
// synchronisation). A Mutex is not recursive; Lock() while holding it
// deadlocks, which the analysis reports where it can see it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#if defined(__clang__)
#define CAIRN_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define CAIRN_THREAD_ANNOTATION(x)
#endif

// The names follow Clang's documentation (and abseil's), so that readers who
// know them elsewhere read them here without a glossary.
#define CAPABILITY(x) CAIRN_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY CAIRN_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) CAIRN_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) CAIRN_THREAD_ANNOTATION(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) CAIRN_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) CAIRN_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define REQUIRES(...) CAIRN_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) CAIRN_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define ACQUIRE(...) CAIRN_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) CAIRN_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) CAIRN_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) CAIRN_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define RELEASE_GENERIC(...) CAIRN_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) CAIRN_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) CAIRN_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) CAIRN_THREAD_ANNOTATION(assert_capability(x))
#define ASSERT_SHARED_CAPABILITY(x) CAIRN_THREAD_ANNOTATION(assert_shared_capability(x))
#define RETURN_CAPABILITY(x) CAIRN_THREAD_ANNOTATION(lock_returned(x))
// Turns the analysis off for one function. Every use carries a comment
// saying why the analysis cannot follow it (e.g. a lock handed across a
// callback) and what guarantees safety instead.
#define NO_THREAD_SAFETY_ANALYSIS CAIRN_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace cairn {

class CondVar;

// An exclusive lock.
class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  bool TryLock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis the caller holds the lock where it cannot see it
  // (e.g. inside a callback run under the lock). Checks nothing at run time.
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// A reader/writer lock: many shared holders or one exclusive holder.
class CAPABILITY("shared_mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  void LockShared() ACQUIRE_SHARED() { mu_.lock_shared(); }
  void UnlockShared() RELEASE_SHARED() { mu_.unlock_shared(); }
  void AssertHeld() const ASSERT_CAPABILITY(this) {}
  void AssertReaderHeld() const ASSERT_SHARED_CAPABILITY(this) {}

 private:
  std::shared_mutex mu_;
};

// Holds a Mutex for its scope.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// Holds a SharedMutex exclusively for its scope.
class SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~WriterLock() RELEASE() { mu_->Unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  SharedMutex* const mu_;
};

// Holds a SharedMutex shared for its scope.
class SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex* mu) ACQUIRE_SHARED(mu) : mu_(mu) { mu_->LockShared(); }
  ~ReaderLock() RELEASE() { mu_->UnlockShared(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex* const mu_;
};

// A condition variable. Wait* take the Mutex the caller holds; they release
// it while waiting and hold it again on return. Spurious wake-ups happen:
// callers wait in a loop on their condition, or use the predicate forms,
// whose predicate is annotated REQUIRES(the guarded state's mutex), e.g.
//   cv_.Wait(&mu_, [&]() REQUIRES(mu_) { return ready_; });
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  void Wait(Mutex* mu) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // Returns false if the deadline passed before a wake-up.
  bool WaitUntil(Mutex* mu, std::chrono::steady_clock::time_point deadline) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    bool woken = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return woken;
  }

  // The predicate forms. The analysis cannot tie `mu` to the mutex the
  // predicate's REQUIRES names, so it is off inside them; REQUIRES(mu) at the
  // call site and on the predicate still checks both ends.
  template <typename Predicate>
  void Wait(Mutex* mu, Predicate done) REQUIRES(mu) NO_THREAD_SAFETY_ANALYSIS {
    while (!done()) Wait(mu);
  }
  // Returns done() as it stands when the wait ends (by done or by deadline).
  template <typename Predicate>
  bool WaitUntil(Mutex* mu, std::chrono::steady_clock::time_point deadline, Predicate done) REQUIRES(mu)
      NO_THREAD_SAFETY_ANALYSIS {
    while (!done()) {
      if (!WaitUntil(mu, deadline)) return done();
    }
    return true;
  }
  template <typename Rep, typename Period, typename Predicate>
  bool WaitFor(Mutex* mu, std::chrono::duration<Rep, Period> timeout, Predicate done) REQUIRES(mu)
      NO_THREAD_SAFETY_ANALYSIS {
    return WaitUntil(mu, std::chrono::steady_clock::now() + timeout, done);
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace cairn
