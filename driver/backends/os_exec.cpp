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
    Sleeper self;
    for (;;) {
      {
        std::lock_guard<std::mutex> g(queue_lock_);
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
        self.grant.store(kNone, std::memory_order_relaxed);
        if (self.starving) {
          self.next = head_;
          head_ = &self;
          if (!tail_) tail_ = &self;
        } else {
          (tail_ ? tail_->next : head_) = &self;
          tail_ = &self;
        }
      }
      uint32_t grant;
      while ((grant = self.grant.load(std::memory_order_acquire)) == kNone)
        syscall(SYS_futex, reinterpret_cast<uint32_t*>(&self.grant), FUTEX_WAIT_PRIVATE, kNone, nullptr, nullptr, 0);
      if (grant == kHandedOver) return true;
      if (state_.exchange(kContended, std::memory_order_acquire) == kUnlocked) return true;
      self.starving = true;  // woken and beaten to it: next time it is handed over
      self.next = nullptr;
    }
  }
  void unlock_contended() override {
    Sleeper* first;
    uint32_t grant;
    {
      std::lock_guard<std::mutex> g(queue_lock_);
      first = head_;
      if (!first) {
        state_.store(kUnlocked, std::memory_order_release);
        return;
      }
      head_ = first->next;
      if (!head_) tail_ = nullptr;
      if (first->starving) {
        // Still held, now by `first`; contended while others queue, so their turn comes.
        grant = kHandedOver;
        state_.store(head_ ? kContended : kLocked, std::memory_order_relaxed);
      } else {
        // Others still queued keep the lock marked contended once `first` takes it.
        grant = kWoken;
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
  static constexpr uint32_t kNone = 0, kWoken = 1, kHandedOver = 2;
  struct Sleeper {
    std::atomic<uint32_t> grant{kNone};
    Sleeper* next = nullptr;
    bool starving = false;
  };
  static constexpr int kSpins = 100;
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "the futex word is the atomic");
  std::mutex queue_lock_;
  Sleeper* head_ = nullptr;
  Sleeper* tail_ = nullptr;
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
