#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "model/platform/sim_exec.h"

namespace irdma_sim::platform {

using sc_core::sc_time;
using sc_core::SC_NS;

namespace {

// Both notify only when a thread waits: a notification nobody waits for still costs the
// scheduler a delta cycle (and keeps the device from running ahead, see EngineTime). A
// thread that waited resumes seeing the device's writes that have arrived meanwhile.
class SimEvent final : public hal::Event {
 public:
  explicit SimEvent(HostMemory& memory) : memory_(memory) {}
  void signal() override {
    pending_ = true;
    if (waiters_) ev_.notify(sc_core::SC_ZERO_TIME);
  }
  void wait() override {
    while (!pending_) {
      waiters_++;
      sc_core::wait(ev_);
      waiters_--;
      memory_.land_posted_writes();
    }
    pending_ = false;
  }
  bool wait_for(uint64_t timeout_ns) override {
    const sc_time deadline = sc_core::sc_time_stamp() + sc_time(double(timeout_ns), SC_NS);
    while (!pending_) {
      const sc_time now = sc_core::sc_time_stamp();
      if (now >= deadline) return false;
      waiters_++;
      sc_core::wait(deadline - now, ev_);
      waiters_--;
      memory_.land_posted_writes();
    }
    pending_ = false;
    return true;
  }

 private:
  HostMemory& memory_;
  sc_core::sc_event ev_;
  bool pending_ = false;
  unsigned waiters_ = 0;
};

// Threads of one simulated host interleave only where they wait, so the lock is contended
// only by a holder that waits with it held; its waiters wait on an event.
class SimLock final : public hal::Lock {
 public:
  explicit SimLock(HostMemory& memory) : memory_(memory) {}

 protected:
  bool wait() override {
    if (state_.load(std::memory_order_relaxed) != kContended) return false;
    waiters_++;
    sc_core::wait(released_);
    waiters_--;
    memory_.land_posted_writes();
    return false;  // the first to run takes it
  }
  // Nothing runs between the store and the notification: no thread can free the lock there.
  void unlock_contended() override {
    state_.store(kUnlocked, std::memory_order_release);
    if (waiters_) released_.notify(sc_core::SC_ZERO_TIME);
  }

 private:
  HostMemory& memory_;
  sc_core::sc_event released_;
  unsigned waiters_ = 0;
};

}  // namespace

uint64_t SimExec::now_ns() { return uint64_t(sc_core::sc_time_stamp().to_seconds() * 1e9); }

void SimExec::cpu_relax() {
  memory_.wait_for_write(sc_time(cfg_.relax_timeout_ns, SC_NS));
}

void SimExec::delay_ns(uint64_t ns) {
  sc_core::wait(sc_time(double(ns), SC_NS));
  memory_.land_posted_writes();
}

void SimExec::spawn(const std::string& name, unsigned, std::function<void()> body) {
  sc_core::sc_spawn_options opts;
  opts.set_stack_size(int(cfg_.thread_stack));
  sc_core::sc_spawn(
      [this, body = std::move(body)] {
        memory_.land_posted_writes();
        body();
      },
      name.c_str(), &opts);
}

std::unique_ptr<hal::Event> SimExec::make_event() { return std::make_unique<SimEvent>(memory_); }
std::unique_ptr<hal::Lock> SimExec::make_lock() { return std::make_unique<SimLock>(memory_); }

}  // namespace irdma_sim::platform
