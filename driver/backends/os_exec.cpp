#include "driver/backends/os_exec.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>

namespace backends {

namespace {

class OsEvent final : public hal::Event {
 public:
  void signal() override {
    {
      std::lock_guard<std::mutex> g(m_);
      pending_ = true;
    }
    cv_.notify_one();
  }
  void wait() override {
    std::unique_lock<std::mutex> g(m_);
    cv_.wait(g, [&] { return pending_; });
    pending_ = false;
  }
  bool wait_for(uint64_t timeout_ns) override {
    std::unique_lock<std::mutex> g(m_);
    if (!cv_.wait_for(g, std::chrono::nanoseconds(timeout_ns), [&] { return pending_; })) return false;
    pending_ = false;
    return true;
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool pending_ = false;
};

void cpu_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// A lock's sleepers queue in a bucket of a table that outlives every lock (as the kernel's
// futex hash does): an unlock that lets the next holder in may still be releasing the
// bucket's mutex when that holder frees the lock.
struct Sleeper {
  static constexpr uint32_t kNone = 0, kWoken = 1, kHandedOver = 2;
  const void* lock;
  std::atomic<uint32_t> grant{kNone};
  Sleeper* next = nullptr;
  bool starving = false;
};

class SleeperQueues {
 public:
  struct Bucket {
    std::mutex mutex;
    Sleeper* head = nullptr;  // every lock's sleepers of this bucket, each lock's in its order
  };
  static Bucket& bucket_of(const void* lock) {
    static Bucket buckets[kBuckets];
    return buckets[(reinterpret_cast<uintptr_t>(lock) >> 4) % kBuckets];
  }
  // Under the bucket's mutex.
  static void add(Bucket& b, Sleeper& s) {
    if (s.starving) {  // ahead of its lock's others
      s.next = b.head;
      b.head = &s;
      return;
    }
    s.next = nullptr;
    Sleeper** at = &b.head;
    while (*at) at = &(*at)->next;
    *at = &s;
  }
  // Under the bucket's mutex: the lock's first sleeper, taken off, or null; `more` says
  // whether others of the lock still sleep.
  static Sleeper* take_first(Bucket& b, const void* lock, bool& more) {
    Sleeper* first = nullptr;
    more = false;
    for (Sleeper** at = &b.head; *at;) {
      if ((*at)->lock != lock) {
        at = &(*at)->next;
      } else if (!first) {
        first = *at;
        *at = first->next;
      } else {
        more = true;
        break;
      }
    }
    return first;
  }

 private:
  static constexpr size_t kBuckets = 64;
};

// Critical sections are short (a poll batch is ~150 ns), so a waiter spins a little before
// it sleeps: sleeping and waking cost microseconds. Sleepers queue in arrival order. The
// first is woken to compete for the lock, as a futex mutex does, but one that woke and
// found it taken again goes back to the head of the queue and is handed the lock, still
// held, at the next unlock (the kernel mutex's handoff): otherwise a thread that unlocks
// and locks again at once (a posting loop) takes it back every time while the woken waiter
// (a poll context on a loaded CPU) waits to run, and starves it for seconds.
class OsLock final : public hal::Lock {
 protected:
  bool wait() override {
    for (int i = 0; i < kSpins; i++) {
      if (state_.load(std::memory_order_relaxed) == kUnlocked) return false;
      cpu_pause();
    }
    SleeperQueues::Bucket& bucket = SleeperQueues::bucket_of(this);
    Sleeper self{this};
    for (;;) {
      {
        std::lock_guard<std::mutex> g(bucket.mutex);
        // Queued only while the lock is held and marked contended, so that its holder's
        // unlock() comes to the queue.
        uint32_t s = state_.load(std::memory_order_relaxed);
        if (s == kUnlocked) {
          if (self.starving && state_.compare_exchange_strong(s, kContended, std::memory_order_acquire))
            return true;
          if (!self.starving) return false;
          continue;
        }
        if (s == kLocked && !state_.compare_exchange_strong(s, kContended, std::memory_order_relaxed)) continue;
        self.grant.store(Sleeper::kNone, std::memory_order_relaxed);
        SleeperQueues::add(bucket, self);
      }
      uint32_t grant;
      while ((grant = self.grant.load(std::memory_order_acquire)) == Sleeper::kNone)
        syscall(SYS_futex, reinterpret_cast<uint32_t*>(&self.grant), FUTEX_WAIT_PRIVATE, Sleeper::kNone, nullptr,
                nullptr, 0);
      if (grant == Sleeper::kHandedOver) return true;
      if (state_.exchange(kContended, std::memory_order_acquire) == kUnlocked) return true;
      self.starving = true;  // woken and beaten to it: next time it is handed over
    }
  }
  void unlock_contended() override {
    SleeperQueues::Bucket& bucket = SleeperQueues::bucket_of(this);
    Sleeper* first;
    uint32_t grant;
    {
      std::lock_guard<std::mutex> g(bucket.mutex);
      bool more = false;
      first = SleeperQueues::take_first(bucket, this, more);
      if (!first) {
        state_.store(kUnlocked, std::memory_order_release);
        return;
      }
      if (first->starving) {
        // Still held, now by `first`; contended while others queue, so their turn comes.
        grant = Sleeper::kHandedOver;
        state_.store(more ? kContended : kLocked, std::memory_order_relaxed);
      } else {
        // Others still queued keep the lock marked contended once `first` takes it.
        grant = Sleeper::kWoken;
        state_.store(kUnlocked, std::memory_order_release);
      }
    }
    // The sleeper may return, and its frame go, as soon as it sees the grant: the address
    // is taken first, and waking an address nobody sleeps on wakes no one.
    auto* word = reinterpret_cast<uint32_t*>(&first->grant);
    first->grant.store(grant, std::memory_order_release);
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
  }

 private:
  static constexpr int kSpins = 100;
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "the futex word is the atomic");
};

}  // namespace

OsExec::OsExec() : cpus_(std::max(1u, std::thread::hardware_concurrency())) {}

OsExec::~OsExec() {
  for (std::thread& t : threads_) t.join();
}

uint64_t OsExec::now_ns() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

void OsExec::cpu_relax() { cpu_pause(); }

void OsExec::delay_ns(uint64_t ns) { std::this_thread::sleep_for(std::chrono::nanoseconds(ns)); }

// Not pinned to `cpu`: a user process shares its CPUs with others, and a worker pinned to
// a busy one waited seconds to run (two served-device runs at once on a 2-vCPU machine:
// a poll context with its CQ scheduled sat idle for over 3 s, in about 1 run in 5). The
// scheduler places it; `cpu` says only which CPU's work it does.
void OsExec::spawn(const std::string& name, unsigned, std::function<void()> body) {
  std::lock_guard<std::mutex> g(threads_lock_);
  threads_.emplace_back(std::move(body));
  pthread_setname_np(threads_.back().native_handle(), name.substr(0, 15).c_str());  // the kernel's 16-byte limit
}

std::unique_ptr<hal::Event> OsExec::make_event() { return std::make_unique<OsEvent>(); }
std::unique_ptr<hal::Lock> OsExec::make_lock() { return std::make_unique<OsLock>(); }

}  // namespace backends
