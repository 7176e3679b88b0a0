// Execution services: time, waiting, workers. In simulation these are SystemC threads of a
// simulated CPU and simulated time; on silicon, OS threads and the wall clock.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace hal {

// A one-shot-or-repeatable wake-up: wait() blocks until signal() has been called since the
// last wait() returned.
class Event {
 public:
  virtual ~Event() = default;
  virtual void signal() = 0;
  virtual void wait() = 0;
  // Returns false on timeout.
  virtual bool wait_for(uint64_t timeout_ns) = 0;
};

// A sleeping lock (what spinlock_t and struct mutex are to the kernel). lock() and unlock()
// are inline atomics while the lock is free, so a hot path (a CQ poll) pays no virtual
// call; only a contended lock reaches the backend, which blocks a caller in wait() and
// lets the next one in from unlock_contended(): on OS threads a FIFO of sleepers, each
// handed the lock in turn, so that no waiter starves as none does on the kernel's queued
// spinlocks; in simulation an event, where a holder may wait with the lock held. Usable
// with std::lock_guard and std::unique_lock.
class Lock {
 public:
  virtual ~Lock() = default;
  void lock() {
    uint32_t free = kUnlocked;
    if (!state_.compare_exchange_strong(free, kLocked, std::memory_order_acquire,
                                        std::memory_order_relaxed))
      lock_contended();
  }
  void unlock() {
    uint32_t held = kLocked;
    if (!state_.compare_exchange_strong(held, kUnlocked, std::memory_order_release,
                                        std::memory_order_relaxed))
      unlock_contended();
  }
  // Someone waits for it (the kernel's spin_is_contended).
  bool is_contended() const { return state_.load(std::memory_order_relaxed) == kContended; }

 protected:
  static constexpr uint32_t kUnlocked = 0, kLocked = 1, kContended = 2;
  // Called with state_ just made kContended by this caller. Returns true once the holder
  // handed the lock to this caller; false when the caller should try again (spurious
  // returns are fine). The backend must not sleep through an unlock_contended() that
  // follows a state_ change.
  virtual bool wait() = 0;
  // Called by the holder of a contended lock: hands it to a waiter, or stores kUnlocked
  // (release) and wakes at least one. After that it may use the addresses it woke but read
  // nothing of the lock: the next holder may free it at once.
  virtual void unlock_contended() = 0;
  std::atomic<uint32_t> state_{kUnlocked};

 private:
  // Drepper's "Futexes Are Tricky" mutex: a waiter marks the lock contended, so the
  // holder's unlock() knows to look for it.
  void lock_contended() {
    while (state_.exchange(kContended, std::memory_order_acquire) != kUnlocked)
      if (wait()) return;
  }
};

class Exec {
 public:
  virtual ~Exec() = default;
  virtual uint64_t now_ns() = 0;
  // One iteration of a busy-poll loop (cpu_relax): costs time, lets the device progress.
  virtual void cpu_relax() = 0;
  virtual void delay_ns(uint64_t ns) = 0;
  // Starts `body` on its own worker, doing the work of CPU `cpu` (modulo the CPUs there
  // are): a simulated CPU in simulation, placed by the scheduler on OS threads.
  virtual void spawn(const std::string& name, unsigned cpu, std::function<void()> body) = 0;
  virtual std::unique_ptr<Event> make_event() = 0;
  virtual std::unique_ptr<Lock> make_lock() = 0;
  virtual unsigned num_cpus() const = 0;
  // Whether the softirqs an interrupt handler raises run as it returns, on its thread, as
  // Linux's irq_exit runs them; false: they are handed to ksoftirqd.
  virtual bool softirqs_at_irq_exit() const { return false; }
};

}  // namespace hal
