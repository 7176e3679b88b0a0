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
// it sleeps on the futex: sleeping and waking cost microseconds.
class OsLock final : public hal::Lock {
 protected:
  void wait() override {
    for (int i = 0; i < kSpins; i++) {
      if (state_.load(std::memory_order_relaxed) != kContended) return;
      cpu_pause();
    }
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&state_), FUTEX_WAIT_PRIVATE, kContended,
            nullptr, nullptr, 0);
  }
  // The address is computed before the store; waking a futex that was freed meanwhile
  // wakes no one (glibc's mutexes live with the same).
  void unlock_contended() override {
    auto* word = reinterpret_cast<uint32_t*>(&state_);
    state_.store(kUnlocked, std::memory_order_release);
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

void OsExec::spawn(const std::string& name, unsigned cpu, std::function<void()> body) {
  std::lock_guard<std::mutex> g(threads_lock_);
  threads_.emplace_back(std::move(body));
  pthread_t handle = threads_.back().native_handle();
  pthread_setname_np(handle, name.substr(0, 15).c_str());  // the kernel's 16-byte limit
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu % cpus_, &set);
  pthread_setaffinity_np(handle, sizeof set, &set);  // best effort: a restricted mask may refuse
}

std::unique_ptr<hal::Event> OsExec::make_event() { return std::make_unique<OsEvent>(); }
std::unique_ptr<hal::Lock> OsExec::make_lock() { return std::make_unique<OsLock>(); }

}  // namespace backends
